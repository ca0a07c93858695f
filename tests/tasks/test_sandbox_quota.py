"""The workspace sandbox bounds what one episode holds on disk and what one command holds in memory
(issue 19). Needs bubblewrap; skipped without it, except under CI=true, where these tests must run."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.sandbox.box import (
    MB,
    Limits,
    MemoryCap,
    Sandbox,
    bwrap_path,
    describe,
    detect_memory_cap,
    memory_cap,
)
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface
from surfbench.tasks.workspace.backend import WorkspaceBackend

CI = os.environ.get("CI", "").lower() == "true"
pytestmark = pytest.mark.skipif(
    bwrap_path() is None and not CI, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
SUITE = load_suite("workspace")
FILL = "i=0; while true; do head -c 30000000 /dev/zero > f$i || break; i=$((i+1)); done"  # the loop
# six processes of 1.4 GB each, all at once; each holds its block for 3 s once it has it
HOLD = """import time
block = b"x" * (1400 * 2**20)
print("held", len(block) // 2**20, flush=True)
time.sleep(3)
"""
SIX = "for i in 1 2 3 4 5 6; do python3 hold.py & done; wait"


def episode(task_id: str, script: list, limits: Limits | None = None) -> tuple[Any, Any, WorkspaceBackend]:
    task = next(t for t in SUITE.tasks if t.id == task_id)
    backend = WorkspaceBackend(limits)
    backend.reset(task.scenario)
    session = build_surface(SUITE.catalog, "four").session(task.turns[0])
    trace = run_episode(
        task, session, backend, ScriptedClient(script), LoopSettings(max_steps=10), SUITE.system_prompt,
        lambda n: SUITE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, SUITE.catalog, SUITE.classifier), backend


def folder_bytes(root: Path) -> int:
    return sum(os.lstat(Path(d) / n).st_size for d, _, files in os.walk(root) for n in files)


def test_writing_many_files_stops_at_the_quota_and_the_episode_goes_on():
    quota = Limits().disk_quota_bytes
    trace, score, backend = episode(
        "config-port",
        [
            [("bash", {"command": FILL + "; echo wrote $i files"})],
            [("write_file", {"path": "notes/more.txt", "content": "x" * 1_000_000})],
            [("bash", {"command": "grep port project/config.ini"})],
            "The port is 8080.",
        ],
    )
    results = [c.result for c in trace.calls]
    assert "No space left on device" in results[0] and "[disk quota: " in results[0].splitlines()[0], results[0]
    assert "wrote 8 files" in results[0]  # 8 x 30 MB fit in 256 MB, the 9th did not
    assert results[1].startswith("Error: [disk quota: ") and "No space left on device" in results[1]
    assert "8080" in results[2] and score.success and trace.error is None
    assert "disk_quota_exceeded" in score.error_types
    assert [c["error_type"] for c in backend.state()["commands"]] == ["disk_quota_exceeded", None]
    assert quota - 30 * MB < folder_bytes(backend.root) <= quota
    st = os.statvfs(backend.root)
    assert st.f_blocks * st.f_frsize == quota  # the folder is on a file system of the quota's size
    usage = backend.state()["usage"]
    assert quota - 30 * MB < usage["disk_peak_bytes"] <= quota and usage["disk_quota_bytes"] == quota
    assert backend.call("run_steps", {"steps": [{"code": "rm f*; echo freed"}]}).startswith("[exit 0]\nfreed")
    assert backend.last_error_type is None and folder_bytes(backend.root) < 2 * MB
    backend.close()
    assert not backend.root.exists()


def test_tmp_has_the_quota_too_and_each_command_gets_a_fresh_one():
    backend = WorkspaceBackend(disk_quota_mb=64)
    backend.reset()
    fill_tmp = "cd /tmp && " + FILL.replace("30000000", "10000000") + "; echo wrote $i files"
    out = backend.call("run_steps", {"steps": [{"code": fill_tmp}]})
    assert "wrote 6 files" in out and "No space left on device" in out
    assert backend.last_error_type == "disk_quota_exceeded"
    out = backend.call("run_steps", {"steps": [{"code": "ls /tmp | wc -l; df -k /work | tail -1"}]})
    assert out.startswith("[exit 0]\n0\n") and backend.last_error_type is None


def test_without_a_quota_the_folder_is_on_the_host_disk_as_before():
    backend = WorkspaceBackend(disk_quota_mb=0, memory_mb=0)
    backend.reset()
    assert backend.root is not None and not str(backend.root).startswith("/proc/")
    backend.call("write_file", {"path": "big.txt", "content": "y" * 300_000})
    usage = backend.state()["usage"]
    assert usage["disk_peak_bytes"] is None and usage["disk_used_bytes"] >= 300_000
    assert usage["memory_mechanism"] is None


def _six_processes(sandbox: Sandbox) -> tuple[Any, int]:
    """Run the six; returns the result and the most anonymous memory they held together, sampled from outside."""
    sandbox.run(["bash", "-c", "cat > hold.py"], stdin=HOLD)
    most, stop = 0, threading.Event()

    def sample() -> None:
        nonlocal most
        while not stop.is_set():
            total = 0
            for pid in filter(str.isdigit, os.listdir("/proc")):
                with contextlib.suppress(OSError):
                    if b"hold.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        status = Path(f"/proc/{pid}/status").read_text()
                        if "RssAnon:" in status:  # a process caught exiting (a zombie) has no memory lines
                            total += int(status.split("RssAnon:")[1].split()[0]) * 1024
            most = max(most, total)
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = sandbox.run(["bash", "-c", SIX])
    finally:
        stop.set()
        sampler.join()
    return result, most


def test_six_processes_of_1_4_gb_share_one_cap_in_a_cgroup():
    cap = memory_cap()
    if cap.mechanism == "rlimit" and not CI:
        pytest.skip(f"no cgroup to cap a command's memory here: {cap.detail}")
    assert cap.mechanism in ("cgroup1", "cgroup2"), f"CI=true needs a cgroup memory cap: {cap.detail}"
    backend = WorkspaceBackend(Limits(timeout_s=40), memory_mb=2048)
    backend.reset()
    assert backend.sandbox is not None
    result, most = _six_processes(backend.sandbox)
    # one holds its 1.4 GB, never two at once (2.8 GB). The outside sampler reads each process's RssAnon in turn, not
    # at one instant, so a sum can catch one process just before the kernel kills it and the next just after it grew:
    # CI once saw 2048 MB + 228 KB. The cgroup's own peak, read atomically below, is held to the cap exactly.
    assert 1400 * MB <= most <= 2048 * MB + 16 * MB, (most, result.summary())
    assert "held 1400" in result.stdout and "Killed" in result.stderr
    assert result.error_type == "memory_exceeded" and result.summary().startswith("[exit ")
    assert "[memory limit: " in result.summary().splitlines()[0]
    assert result.memory_peak_bytes is not None and 1400 * MB <= result.memory_peak_bytes <= 2048 * MB
    assert backend.state()["usage"]["memory_peak_bytes"] == result.memory_peak_bytes
    out = backend.call("run_steps", {"steps": [{"code": "python3 -c 'print(len(b\"x\" * 2**29))'"}]})
    assert out.startswith("[exit 0]\n536870912") and backend.last_error_type is None  # 512 MB still fits
    backend.close()
    assert cap.parent is not None and not list(cap.parent.glob(f"surfbench-{os.getpid()}-*"))  # none left over


def test_six_processes_of_1_4_gb_share_one_cap_without_a_cgroup():
    forced = MemoryCap("rlimit", None, "forced by the test")
    sandbox = Sandbox(Limits(timeout_s=40), seed=None, cap=forced)
    assert sandbox.process_limits() == (16, 128 * MB)  # 16 processes x 128 MB = the 2048 MB cap
    result, most = _six_processes(sandbox)
    assert most <= 2048 * MB and "held" not in result.stdout and "MemoryError" in result.stderr, result.summary()
    assert result.error_type == "memory_exceeded" and "[memory limit: " in result.summary().splitlines()[0]
    ok = sandbox.run(["bash", "-c", "python3 -c 'print(len(b\"x\" * 2**26))' | sort | head -1"])
    assert ok.stdout == "67108864\n" and ok.error_type is None  # ordinary commands still run


@pytest.mark.parametrize(
    ("layout", "mechanism"),
    [("v1", "cgroup1"), ("v2-alone", "cgroup2"), ("v2-shared", "rlimit"), ("none", "rlimit")],
)
def test_the_memory_mechanism_is_chosen_from_what_the_machine_offers(tmp_path: Path, layout: str, mechanism: str):
    mnt = tmp_path / "sys-fs-cgroup"
    own = mnt / "user.slice" / "me"
    own.mkdir(parents=True)
    if layout == "v1":
        lines, mounts = "4:memory:/user.slice/me\n", f"35 31 0:32 / {mnt} rw - cgroup cgroup rw,memory\n"
        (own / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    else:
        lines, mounts = "0::/user.slice/me\n", f"35 31 0:32 / {mnt} rw - cgroup2 cgroup2 rw\n"
        (own / "cgroup.controllers").write_text("cpu memory pids\n" if layout != "none" else "pids\n")
        (own / "cgroup.procs").write_text(f"{os.getpid()}\n" if layout == "v2-alone" else f"{os.getpid()}\n1\n")
    (tmp_path / "cgroup").write_text(lines)
    (tmp_path / "mountinfo").write_text(mounts)
    found = detect_memory_cap(tmp_path / "cgroup", tmp_path / "mountinfo")
    assert found.mechanism == mechanism, found.detail
    if layout == "v2-alone":  # it moved itself into a leaf and gave the memory controller to the children
        assert (own / "surfbench-harness" / "cgroup.procs").read_text() == str(os.getpid())
        assert (own / "cgroup.subtree_control").read_text() == "+memory" and found.parent == own
    if layout == "v2-shared":
        assert "holds other processes" in found.detail and not (own / "surfbench-harness").exists()
    assert memory_cap().mechanism in describe()
