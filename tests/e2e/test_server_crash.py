"""The real model server killed mid-run: surfbench starts a new one and the run completes, nothing lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT
from tests.e2e.conftest import require_local_model
from tests.e2e.test_signals import servers_of

pytestmark = pytest.mark.e2e
MODEL = "qwen2.5-coder-0.5b-instruct"


def test_a_killed_server_is_restarted_and_no_episode_is_lost(tmp_path: Path):
    require_local_model(MODEL)
    cmd = [
        sys.executable, "-m", "surfbench", "run", "suite=forge", "surface=core", f"model={MODEL}", "split=dev",
        "limit=2", "max_steps=2", "no_cache=true", f"results_dir={tmp_path}", "run=crash",
    ]  # fmt: skip
    log = tmp_path / "harness.log"
    with log.open("w") as out:
        harness = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "CI": "true"}
        )
    killed: list[int] = []
    try:
        parts = tmp_path / "crash" / "episodes.parquet"
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and harness.poll() is None:
            servers = servers_of(harness.pid)
            if servers and not killed and len(list(parts.glob("part-*.parquet"))) >= 1:
                os.kill(servers[0], signal.SIGKILL)  # mid-run: one episode saved, one to go
                killed.append(servers[0])
            time.sleep(0.2)
        harness.wait(timeout=60)
    finally:
        if harness.poll() is None:
            harness.kill()
        for pid in servers_of(os.getpid()):
            os.kill(pid, signal.SIGKILL)
    text = log.read_text()
    assert killed, "the run ended before the server could be killed"
    assert harness.returncode == 0, text[-3000:]
    assert "server had died" in text and "restarted" in text, text[-3000:]
    episodes = load_runs([tmp_path / "crash"])
    assert len(episodes) == 2 and episodes["episode_key"].is_unique
    assert episodes["error"].isna().all(), episodes["error"].tolist()
