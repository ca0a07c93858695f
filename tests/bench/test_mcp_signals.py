"""No server outlives the harness: SIGINT, SIGTERM or SIGKILL of the harness leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.bench.mcp_helpers import TINY, processes_with, server_pid, tiny

HARNESS = f"""
import sys, time
from surfbench.bench.mcp.mcp_client import McpClient
from surfbench.bench.mcp.mcp_spec import from_command
client = McpClient(from_command({tiny("ok")!r}))
client.start()
client.call_tool("pid", {{}})
print(client.log.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def default_sigint() -> None:
    """A harness started from a background job inherits SIGINT ignored (POSIX), and Python then keeps
    ignoring it: give the child the default disposition, as a terminal's Ctrl-C would find it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_killing_the_harness_stops_the_server_and_its_guard(signum: signal.Signals):
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS], stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    try:
        assert harness.stdout is not None
        guard_pid = int(harness.stdout.readline())
        server = server_pid(guard_pid)  # its host pid: in its PID namespace the server sees only its own /proc
        assert server is not None and alive(server) and alive(guard_pid)
        os.kill(harness.pid, signum)
        harness.wait(timeout=20)
        deadline = time.monotonic() + 10
        while (alive(server) or alive(guard_pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(server) and not alive(guard_pid)
        assert processes_with(str(TINY)) == []
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
