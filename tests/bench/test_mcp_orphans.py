"""No process an MCP server starts outlives surfbench: a child in the server's group that ignores SIGTERM and a
``setsid`` daemon are gone after a normal run and after SIGINT, SIGTERM or SIGKILL of ``surfbench run``; with
the guard's PID namespace (where the kernel allows it) and without it (``SURFBENCH_MCP_PIDNS=0``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from surfbench.bench.mcp import guard
from surfbench.bench.mcp.mcp_client import McpClient
from surfbench.bench.mcp.mcp_spec import from_command
from tests.bench.mcp_helpers import TINY, processes_with, server_pid, tiny
from tests.conftest import ROOT

FORKING = TINY.with_name("forking_server.py")
ORACLE = "provider: scripted\nscript_suite: orphans\nparams_b: 0.0\nmode: native\n"
TASKS = [
    {"id": "quick", "turns": ["Echo hi."], "expected": [{"op": "echo", "args": {"text": "hi"}}]},
    {"id": "slow", "turns": ["Sleep."], "expected": [{"op": "sleep", "args": {"s": 60}}]},
]


def _can_unshare_pid() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if guard.new_pid_namespace() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


PIDNS = _can_unshare_pid()
needs_pidns = pytest.mark.skipif(not PIDNS, reason="n/a: this kernel refuses PID namespaces (the fallback is tested)")


def recorded(pidfile: Path) -> list[tuple[str, int]]:
    """The (kind, pid) lines the forking server's children wrote (pids as they see them: their namespace's)."""
    if not pidfile.exists():
        return []
    lines = [line.split() for line in pidfile.read_text().splitlines()]
    return [(kind, int(pid)) for kind, pid in lines if kind in ("group", "setsid")]


def survivors(pidfile: Path, timeout_s: float = 5.0) -> list[int]:
    """Host pids of the server's processes still alive once the run has ended (waiting up to ``timeout_s``).

    Found by command line (the server's and its children's name ``pidfile``): the pids the children recorded
    are their namespace's (their /proc is their own) where the guard's PID namespace is used.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        left = processes_with(str(pidfile))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where the children write their pids; whatever survives a test is killed after it, so none leaks."""
    path = tmp_path / "children.pids"
    yield path
    for pid in processes_with(str(path)):
        os.kill(pid, signal.SIGKILL)


def surfbench_run(tmp_path: Path, pidfile: Path, task: str, pidns: bool) -> tuple[list[str], dict[str, str]]:
    """``surfbench run`` of one task of a suite over the forking server, with the scripted oracle."""
    suite = tmp_path / "suites" / "orphans"
    suite.mkdir(parents=True)
    server = {"command": "python", "args": [str(FORKING), str(pidfile)], "call_timeout_s": 120}
    doc = {"name": "orphans", "catalog": {"mcp": server}, "backend": "mcp", "tasks": ["tasks.yaml"], "max_steps": 3}
    (suite / "suite.yaml").write_text(yaml.safe_dump(doc))
    (suite / "tasks.yaml").write_text(yaml.safe_dump(TASKS))
    configs = tmp_path / "configs"
    (configs / "suite").mkdir(parents=True)
    (configs / "model").mkdir()
    (configs / "suite" / "orphans.yaml").write_text("name: orphans\n")
    (configs / "model" / "oracle.yaml").write_text(ORACLE)
    env = {
        **os.environ,
        "CI": "true",
        "SURFBENCH_SUITES": str(suite.parent),
        "SURFBENCH_CONFIGS": str(configs),
        "SURFBENCH_CACHE": str(tmp_path / "cache"),
        "SURFBENCH_MCP_PIDNS": "1" if pidns else "0",
    }
    cmd = [sys.executable, "-m", "surfbench", "run", "suite=orphans", "surface=full", "model=oracle", "split=all"]
    return [*cmd, f"tasks=[{task}]", f"results_dir={tmp_path / 'results'}", "run=r"], env


def default_sigint() -> None:
    """A background job inherits SIGINT ignored: give surfbench the default, as a terminal's Ctrl-C finds it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for(pidfile: Path, what: str, proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while what not in (pidfile.read_text() if pidfile.exists() else ""):
        assert proc.poll() is None, f"surfbench ended ({proc.returncode}) before {what!r}"
        assert time.monotonic() < deadline, f"no {what!r} in {pidfile} within {timeout_s} s"
        time.sleep(0.05)


ISOLATION = [pytest.param(True, id="pidns", marks=needs_pidns), pytest.param(False, id="no-pidns")]
ENDINGS = [  # without the namespace, SIGKILL is the hardest ending (SIGINT and SIGTERM take the same path)
    *(
        pytest.param(s, True, id=f"{s.name}-pidns", marks=needs_pidns)
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
    ),
    pytest.param(signal.SIGKILL, False, id="SIGKILL-no-pidns"),
]


@pytest.mark.parametrize("pidns", ISOLATION)
def test_after_a_normal_run_no_child_of_the_server_is_left(tmp_path: Path, pidfile: Path, pidns: bool) -> None:
    cmd, env = surfbench_run(tmp_path, pidfile, "quick", pidns)
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    kinds = {kind for kind, _ in recorded(pidfile)}
    assert kinds == {"group", "setsid"}, "the server started both children"
    assert survivors(pidfile) == []


@pytest.mark.parametrize(("signum", "pidns"), ENDINGS)
def test_killing_surfbench_mid_call_leaves_no_child_of_the_server(
    tmp_path: Path, pidfile: Path, signum: signal.Signals, pidns: bool
) -> None:
    cmd, env = surfbench_run(tmp_path, pidfile, "slow", pidns)
    proc = subprocess.Popen(
        cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=default_sigint
    )
    try:
        wait_for(pidfile, "call sleep", proc)  # the episode's server is inside the 60 s tool call
        assert len(processes_with(str(pidfile))) >= 3  # the server and both children: found as the check finds them
        os.kill(proc.pid, signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert {kind for kind, _ in recorded(pidfile)} == {"group", "setsid"}
    assert survivors(pidfile) == []


@needs_pidns
def test_the_server_runs_in_a_pid_namespace_of_its_own_with_the_same_files_and_network() -> None:
    with McpClient(from_command(tiny("ok"))) as client:
        assert client.call_tool("pid", {}).value == "2"  # its /proc is its namespace's: /proc/self is 2
        host_pid = server_pid(client.log.pid)
        assert host_pid is not None
        status = Path(f"/proc/{host_pid}/status").read_text()
        nspids = next(line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:"))
        assert nspids == [str(host_pid), "2"]  # pid 2 below the guard's init, in a namespace of its own
        assert os.readlink(f"/proc/{host_pid}/ns/net") == os.readlink("/proc/self/ns/net")
        assert os.readlink(f"/proc/{host_pid}/cwd") == os.getcwd()
        assert Path(f"/proc/{host_pid}/root{TINY}").read_bytes() == TINY.read_bytes()  # the host's files
