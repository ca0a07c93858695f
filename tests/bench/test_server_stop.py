"""Stopping local model servers (bench.models.server.stop_servers): every server is sent SIGTERM before any is
waited for, a server that does not exit in time is killed, and a wait of over a second is said on stderr.

The servers are stand-ins: processes in their own group that, like a llama-server in the middle of a prompt batch,
honour SIGTERM only after a while (or never).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from surfbench.bench.models.server import stop_servers

SLOW = """
import signal, sys, time
path = sys.argv[1]
def on_term(*_):
    open(path, "a").write(f"term {time.time()}\\n")
    if sys.argv[2] == "ignore":
        return
    time.sleep(float(sys.argv[2]))
    open(path, "a").write(f"exit {time.time()}\\n")
    sys.exit(0)
signal.signal(signal.SIGTERM, on_term)
open(path, "a").write("ready\\n")
while True:
    time.sleep(0.05)
"""


class StandIn:
    """What stop_servers asks of a LocalServer: signal it, then close its log."""

    def __init__(self, tmp: Path, name: str, delay: str) -> None:
        self.path = tmp / f"{name}.txt"
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", SLOW, str(self.path), delay], start_new_session=True
        )
        self.closed = False

    def _signal(self) -> subprocess.Popen[bytes] | None:
        import os
        import signal

        proc, self.proc = self.proc, None
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
        return proc

    def _close_log(self) -> None:
        self.closed = True

    def events(self) -> dict[str, float]:
        found = {}
        for line in self.path.read_text().splitlines():
            word, _, value = line.partition(" ")
            if value:
                found[word] = float(value)
        return found


def _ready(servers: list[StandIn]) -> None:
    deadline = time.monotonic() + 30
    while not all(s.path.exists() for s in servers):
        assert time.monotonic() < deadline, "stand-in servers did not start"
        time.sleep(0.05)


def test_every_server_is_signalled_before_any_is_waited_for(tmp_path: Path):
    servers = [StandIn(tmp_path, "a", "1.0"), StandIn(tmp_path, "b", "1.0")]
    procs = [s.proc for s in servers]
    _ready(servers)
    stop_servers(servers, wait_s=20)  # type: ignore[arg-type]
    a, b = (s.events() for s in servers)
    assert b["term"] < a["exit"], (a, b)  # b was told before a had finished: they stop together
    assert all(p is not None and p.returncode == 0 for p in procs)  # both exited on their own
    assert all(s.closed for s in servers)


def test_a_server_that_does_not_exit_in_time_is_killed_and_the_wait_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    server = StandIn(tmp_path, "stuck", "ignore")
    proc = server.proc
    _ready([server])
    stop_servers([server], wait_s=1.5)  # type: ignore[list-item]
    assert proc is not None and proc.returncode == -9  # SIGKILL after the wait
    assert "term" in server.events()
    assert "waiting up to 2 s for 1 model server(s) to stop" in capsys.readouterr().err


def test_a_pool_stops_its_servers_and_the_members_of_a_server_group(tmp_path: Path):
    from types import SimpleNamespace

    from surfbench.bench.models import ModelPool

    single, a, b = StandIn(tmp_path, "single", "0.1"), StandIn(tmp_path, "a", "0.1"), StandIn(tmp_path, "b", "0.1")
    procs = [s.proc for s in (single, a, b)]
    _ready([single, a, b])
    pool = ModelPool(None)
    pool.servers["m1"] = single  # type: ignore[assignment]
    pool.servers["m2"] = SimpleNamespace(members=[a, b])  # type: ignore[assignment]  # n_parallel > 1
    pool.close()
    assert all(p is not None and p.poll() is not None for p in procs)
    assert pool.servers == {} and all(s.closed for s in (single, a, b))
