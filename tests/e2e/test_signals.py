"""SIGINT and SIGTERM to a running harness leave no model server behind; so does SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.conftest import require_local_model

pytestmark = pytest.mark.e2e
MODEL = "qwen2.5-coder-0.5b-instruct"  # the default model: the one `make test` pulls


def servers_of(parent: int) -> list[int]:
    """The model servers (either engine) whose parent is ``parent``."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and (b"llama_cpp.server" in cmd or (cmd and cmd[0].endswith(b"/llama-server"))):
            out.append(int(proc.name))
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def default_sigint() -> None:
    """A harness started from a background job inherits SIGINT ignored (POSIX), and Python then keeps
    ignoring it: give the child the default disposition, as a terminal's Ctrl-C would find it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_server_left_after_signal(sig: int, tmp_path: Path):
    require_local_model(MODEL)
    cmd = [
        sys.executable, "-m", "surfbench", "run", "suite=forge", "surface=core", f"model={MODEL}", "split=all",
        "no_cache=true", f"results_dir={tmp_path}", "run=signal",
    ]  # fmt: skip
    log = tmp_path / "harness.log"
    # output goes to a file, not a pipe nobody reads: a full pipe would block the harness mid-write
    with log.open("w") as out:
        harness = subprocess.Popen(
            cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True, preexec_fn=default_sigint
        )
    try:
        deadline = time.monotonic() + 120
        servers: list[int] = []
        while time.monotonic() < deadline and not servers:
            assert harness.poll() is None, log.read_text()
            servers = servers_of(harness.pid)
            time.sleep(0.2)
        assert servers, "the harness never started a server"
        time.sleep(3)  # let it get into the episode loop
        harness.send_signal(sig)
        # the unwind waits for the step in flight (a 0.5B prompt of ~2,000 tokens plus up to 384 out): SIGTERM once
        # took over 60 s in a full fresh-clone run (2026-12-02; 3 of 3 alone took 6-9 s); the cause is not found
        harness.wait(timeout=150)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(alive(p) for p in servers):
            time.sleep(0.2)
        assert not any(alive(p) for p in servers), f"server {servers} outlived the harness after {sig!r}"
        if sig != signal.SIGKILL:
            # 130/143 from our handlers; a shell reports a death by the signal itself the same way (128 + n)
            assert harness.returncode in (128 + sig, -sig), f"exit {harness.returncode}: {log.read_text()[-2000:]}"
    finally:
        if harness.poll() is None:
            harness.kill()
        for pid in servers_of(os.getpid()):
            os.kill(pid, signal.SIGKILL)
