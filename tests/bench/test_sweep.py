"""Sweeps through Hydra, the results store, resume after SIGKILL; with the scripted oracle model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT

ORACLE = """
provider: scripted
script_suite: forge
script_delay_s: {delay}
params_b: 0.0
mode: native
"""


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE.format(delay=0.0))
    (folder / "model" / "slow-oracle.yaml").write_text(ORACLE.format(delay=0.4))
    return folder


def surfbench(configs: Path, *args: str, wait: bool = True, **kw):
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"}
    cmd = [sys.executable, "-m", "surfbench", "run", *args]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, **kw)


def test_multirun_writes_every_cell_into_one_run(configs: Path, tmp_path: Path):
    proc = surfbench(
        configs, "-m", "surface=full,dispatcher", "model=oracle", "limit=3", f"results_dir={tmp_path}", "run=t"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    episodes = load_runs([tmp_path / "t"])
    assert len(episodes) == 6
    assert set(episodes["surface"]) == {"full", "dispatcher"}
    assert episodes["success"].all()
    info = json.loads((tmp_path / "t" / "run.json").read_text())
    assert {c["surface"] for c in info["cells"]} == {"full", "dispatcher"}
    assert info["git_commit"] and info["versions"]["surfbench"]
    again = surfbench(
        configs, "-m", "surface=full,dispatcher", "model=oracle", "limit=3", f"results_dir={tmp_path}", "run=t"
    )
    assert again.returncode == 0 and "3/3 episodes already done" in again.stderr
    assert len(load_runs([tmp_path / "t"])) == 6


def test_joblib_launcher_runs_cells_in_parallel_processes(configs: Path, tmp_path: Path):
    proc = surfbench(
        configs, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "surface=full,core", "model=oracle",
        "limit=2", f"results_dir={tmp_path}", "run=j",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    episodes = load_runs([tmp_path / "j"])
    assert sorted(episodes["surface"]) == ["core", "core", "full", "full"]


def test_sigkill_mid_sweep_then_rerun_gives_every_episode_exactly_once(configs: Path, tmp_path: Path):
    args = ("-m", "surface=full,dispatcher", "model=slow-oracle", "limit=6", f"results_dir={tmp_path}", "run=k")
    proc = surfbench(configs, *args, wait=False)
    parts = tmp_path / "k" / "episodes.parquet"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(parts.glob("part-*.parquet"))) < 3:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    killed_at = len(list(parts.glob("part-*.parquet")))
    assert 3 <= killed_at < 12
    rerun = surfbench(configs, *args)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    episodes = load_runs([tmp_path / "k"])
    assert len(episodes) == 12 and episodes["episode_key"].is_unique
    steps = load_runs([tmp_path / "k"], "steps")
    assert not steps.duplicated(["episode_key", "step"]).any()
    calls = load_runs([tmp_path / "k"], "calls")
    assert not calls.duplicated(["episode_key", "step", "index"]).any()
    assert set(steps["episode_key"]) == set(episodes["episode_key"])
    assert not list((tmp_path / "k").rglob("*.tmp"))


def test_bad_override_is_a_clear_error(configs: Path, tmp_path: Path):
    proc = surfbench(configs, "surface=fulll", f"results_dir={tmp_path}")
    assert proc.returncode == 2
    assert "fulll" in proc.stderr and "full" in proc.stderr
    assert not (tmp_path / "forge-dev-fulll-qwen2.5-coder-0.5b-instruct").exists()


def test_group_overrides_reach_the_cell(configs: Path, tmp_path: Path):
    proc = surfbench(
        configs, "surface=core", "surface.params.k=5", "model=oracle", "model.script_delay_s=0.01", "limit=2",
        f"results_dir={tmp_path}", "run=o",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    episodes = load_runs([tmp_path / "o"])
    assert set(episodes["tools_shown_first"]) == {5}


def test_ray_launcher_runs_cells_on_a_local_ray_cluster(configs: Path, tmp_path: Path, monkeypatch):
    pytest.importorskip("hydra_plugins.hydra_ray_launcher", reason="make setup installs hydra-ray-launcher")
    # a private HOME: Ray keeps an auth token in ~/.ray that an earlier in-process Ray may have left
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ray_bin = Path(sys.executable).parent / "ray"
    port = _free_port()
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must stay under 107 bytes
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    start = [
        str(ray_bin), "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
        "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={ray_tmp}",
    ]  # fmt: skip
    try:
        started = subprocess.run(start, env=env, capture_output=True, text=True, timeout=180)
        assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
        proc = surfbench(
            configs, "-m", "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address=127.0.0.1:{port}",
            "surface=full,core", "model=oracle", "limit=2", f"results_dir={tmp_path}", "run=r", timeout=600,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert "Ray Launcher is launching 2 jobs" in proc.stdout + proc.stderr
        episodes = load_runs([tmp_path / "r"])
        assert sorted(episodes["surface"]) == ["core", "core", "full", "full"]
        assert episodes["success"].all() and episodes["episode_key"].is_unique
    finally:
        subprocess.run([str(ray_bin), "stop", "--force"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_cell_failing_in_a_worker_process_fails_the_sweep(configs: Path, tmp_path: Path):
    proc = surfbench(
        configs, "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "surface=full,core", "model=oracle",
        "tasks=[no-such-task]", f"results_dir={tmp_path}", "run=f",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "2 cells failed" in proc.stderr and "no-such-task" in proc.stderr
