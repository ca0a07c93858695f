"""Every temporary folder surfbench makes is removed by the next run once its owner is gone (issue 49, point 6).

A process killed with SIGKILL cannot delete its temporary folders: the Hydra and failure folders of a run,
an episode's sandbox workspace (``surfbench-ws-*``) and a command's output (``surfbench-out-*``), the scaffold
check's run (``surfbench-check-*``). Each is named for its owner; the sweep every run starts with removes
those whose owner is dead, never a live process's.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from surfbench.bench.base import owned
from surfbench.bench.cli import tempdirs
from tests.conftest import ROOT

KINDS = ("hydra", "failures", "ws", "out", "check")

HOLDER = """
import sys, time
from pathlib import Path
from surfbench.bench.base.owned import owned_tempdir
for kind in sys.argv[2:]:
    owned_tempdir(f"surfbench-{kind}-", root=Path(sys.argv[1]))
print("ready", flush=True)
time.sleep(120)
"""


def _hold(tmp: Path, *kinds: str) -> subprocess.Popen[str]:
    """A process that makes one folder of each kind in ``tmp`` and waits (to be killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp), *kinds], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def test_the_folders_of_a_killed_process_go_and_a_live_ones_stay(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    dead = _hold(tmp, *KINDS)
    dead.send_signal(signal.SIGKILL)
    dead.wait()
    left = {p.name for p in tmp.iterdir()}
    assert sorted(n.split("-")[1] for n in left) == sorted(KINDS)
    live = _hold(tmp, *KINDS)
    try:
        mine = {p.name for p in tmp.iterdir()} - left
        foreign = tmp / "surfbench-ws-old"  # named by an older surfbench: no owner, left alone
        foreign.mkdir()
        removed = tempdirs.remove_stale(tmp)
        assert {p.name for p in removed} == left
        assert {p.name for p in tmp.iterdir()} == mine | {foreign.name}, "a live process's folder was removed"
    finally:
        live.kill()
        live.wait()


FAKE_BWRAP = """#!/bin/sh
echo $$ > "{pidfile}"
exec sleep 60
"""

SANDBOX = """
import sys
from surfbench.bench.sandbox import box
from surfbench.bench.sandbox.limits import Limits
box.bwrap_path = lambda: sys.argv[1]
sandbox = box.Sandbox(Limits(disk_quota_bytes=0, memory_cap_bytes=0, timeout_s=60))
sandbox.uid = sandbox.groups = None  # the fake bubblewrap runs as this user (pytest's folders are private)
sandbox.run(["true"])
"""


def test_a_sandbox_killed_mid_command_leaves_folders_the_next_sweep_removes(tmp_path: Path) -> None:
    """The workspace and the output folder of an episode killed while its command ran (bubblewrap faked)."""
    tmp, pidfile = tmp_path / "tmp", tmp_path / "bwrap.pid"
    tmp.mkdir()
    fake = tmp_path / "bwrap"
    fake.write_text(FAKE_BWRAP.format(pidfile=pidfile))
    fake.chmod(0o755)
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-c", SANDBOX, str(fake)], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (pidfile.exists() and pidfile.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, "the sandbox did not start its command"
            time.sleep(0.05)
    finally:
        proc.kill()  # SIGKILL: no finally, no finalizer
        proc.wait()
        if pidfile.exists() and pidfile.read_text().strip():
            os.kill(int(pidfile.read_text()), signal.SIGKILL)  # the fake bubblewrap, in a session of its own
    left = sorted(p.name.split("-")[1] for p in tmp.iterdir())
    assert left == ["out", "ws"], left
    assert len(tempdirs.remove_stale(tmp)) == 2 and not list(tmp.iterdir())


def test_every_surfbench_temporary_folder_is_named_for_its_owner() -> None:
    """No ``mkdtemp`` / ``TemporaryDirectory`` with a surfbench prefix outside the one that names owners."""
    made = []
    for path in (ROOT / "bench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("mkdtemp", "TemporaryDirectory"):
                prefix = next((k.value for k in node.keywords if k.arg == "prefix"), None)
                if isinstance(prefix, ast.Constant) and str(prefix.value).startswith("surfbench-"):
                    made.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not made, f"temporary folders no sweep can judge: {made}"
    assert {f"surfbench-{k}-" for k in KINDS} <= set(owned.PREFIXES)


def test_a_folder_the_sweep_cannot_judge_is_refused_at_creation(tmp_path: Path) -> None:
    try:
        owned.owned_tempdir("surfbench-other-", root=tmp_path)
    except ValueError as exc:
        assert "surfbench-other-" in str(exc)
    else:
        raise AssertionError("an unknown prefix was accepted")
    assert not list(tmp_path.iterdir())


def test_a_context_folder_is_removed_at_the_end(tmp_path: Path) -> None:
    with owned.owned_temporary("surfbench-out-", root=tmp_path) as folder:
        (folder / "f").write_text("x")
        assert folder.parent == tmp_path
    assert not list(tmp_path.iterdir())
