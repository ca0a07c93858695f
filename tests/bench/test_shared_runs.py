"""Shared run folders: processes running the same cells into one folder split the work, none twice."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from surfbench.bench.store.claims import HOST, PIDNS, Claims, _proc_stat, retake_errored
from surfbench.bench.store.results import RunStore, key_stem, load_runs
from tests.bench.test_sweep import ORACLE, surfbench
from tests.conftest import ROOT

PROGRESS = re.compile(r"^\[\d+/\d+\] \S+ (.+?): (?:solved|failed)", re.M)


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "slow-oracle.yaml").write_text(ORACLE.format(delay=0.4))  # one part per episode
    (folder / "model" / "quick-oracle.yaml").write_text(ORACLE.format(delay=0.05))  # group commit
    return folder


def ran(output: str) -> list[str]:
    """The task ids of the episodes a process ran (its progress lines; CI=true makes them plain)."""
    return PROGRESS.findall(output)


@pytest.mark.parametrize(
    ("processes", "model"),
    [(2, "slow-oracle"), (4, "slow-oracle"), (2, "quick-oracle")],
    ids=["2 processes", "4 processes", "2 processes, group commit"],
)
def test_concurrent_runs_into_one_folder_run_each_episode_once(
    configs: Path, tmp_path: Path, processes: int, model: str
):
    args = ("suite=forge", "surface=full", f"model={model}", "limit=12", f"results_dir={tmp_path}", "run=s")
    procs = [surfbench(configs, *args, wait=False) for _ in range(processes)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * processes, "\n".join(o[-2000:] for o in outputs)
    episodes = load_runs([tmp_path / "s"])
    assert len(episodes) == 12 and episodes["episode_key"].is_unique
    runs = Counter(task for output in outputs for task in ran(output))
    assert set(runs) == set(episodes["task_id"]) and set(runs.values()) == {1}, f"episodes run more than once: {runs}"
    if model == "slow-oracle":  # episodes of ~1 s: every process starts while there is work left
        assert sum(1 for output in outputs if ran(output)) >= 2, "the work is split"
    for output in outputs:  # each summary counts every episode, those other processes ran included
        assert re.search(r"^episodes +12$", output, re.M), output[-3000:]
    assert len(list((tmp_path / "s" / "transcripts").glob("*.jsonl"))) == 12
    assert not list((tmp_path / "s" / ".claims").glob("*.claim")), "every claim released"
    steps = load_runs([tmp_path / "s"], "steps")
    assert not steps.duplicated(["episode_key", "step"]).any()


def test_a_sigkilled_runs_claims_are_taken_over_by_the_next_run(configs: Path, tmp_path: Path):
    args = ("suite=forge", "surface=full", "model=slow-oracle", "limit=6", f"results_dir={tmp_path}", "run=k")
    proc = surfbench(configs, *args, wait=False)
    claims, parts = tmp_path / "k" / ".claims", tmp_path / "k" / "episodes.parquet"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (
        len(list(parts.glob("part-*.parquet"))) >= 2 and list(claims.glob("*.claim"))
    ):
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)  # mid-episode: its claim stays
    proc.wait()
    left = [json.loads(p.read_text()) for p in claims.glob("*.claim")]
    assert [c["pid"] for c in left] == [proc.pid], left
    done_before = len(list(parts.glob("part-*.parquet")))
    rerun = surfbench(configs, *args)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"took over the claims of processes that are gone: {HOST}:{proc.pid}" in rerun.stderr
    assert len(ran(rerun.stderr)) == 6 - done_before, "only what was not committed runs again"
    episodes = load_runs([tmp_path / "k"])
    assert len(episodes) == 6 and episodes["episode_key"].is_unique
    assert not list(claims.glob("*.claim")) and not list((tmp_path / "k").rglob("*.tmp"))


def _claim(root: Path, key: str, **owner: object) -> Path:
    """A claim file as another process would have left it."""
    path = root / ".claims" / f"{key_stem(key)}.claim"
    path.parent.mkdir(parents=True, exist_ok=True)
    base = {"host": HOST, "pidns": PIDNS, "pid": 1, "start": None, "token": "other", "time": "2026-01-01T00:00:00"}
    path.write_text(json.dumps({**base, **owner}))
    return path


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_claim_is_taken_over_only_when_its_owner_is_gone(tmp_path: Path):
    root = tmp_path / "run"
    exited = subprocess.Popen(["true"])
    exited.wait()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        start = _proc_stat(sleeper.pid)
        assert start is not None
        _claim(root, "dead", pid=exited.pid)
        _claim(root, "live", pid=sleeper.pid, start=start[1])
        _claim(root, "reused", pid=sleeper.pid, start=start[1] - 1)  # same pid, another process
        _claim(root, "remote", host="elsewhere", pid=sleeper.pid)
        _age(_claim(root, "remote-expired", host="elsewhere"), 200)
        (root / ".claims" / "being-written.claim").write_text("")
        (root / ".claims" / "dead-while-writing.claim").write_text("")
        _age(root / ".claims" / "dead-while-writing.claim", 200)
        with Claims(root, lease_s=120) as mine:
            taken = {k: mine.take(k) for k in ("dead", "live", "reused", "remote", "remote-expired")}
            taken |= {k: mine.take(k) for k in ("being-written", "dead-while-writing", "free")}
            assert taken == {
                "dead": "mine", "live": "busy", "reused": "mine", "remote": "busy", "remote-expired": "mine",
                "being-written": "busy", "dead-while-writing": "mine", "free": "mine",
            }  # fmt: skip
            assert f"{HOST}:{exited.pid}" in mine.reclaimed and "elsewhere:1" in mine.reclaimed
            assert json.loads((root / ".claims" / "dead.claim").read_text())["token"] == mine.token
        assert sorted(p.name for p in (root / ".claims").glob("*.claim")) == [
            "being-written.claim", "live.claim", "remote.claim",
        ], "closing releases only its own claims"  # fmt: skip
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_claim_of_an_episode_committed_meanwhile_says_done(tmp_path: Path):
    root = tmp_path / "run"
    store = RunStore(root, commit_interval_s=60)
    store.prepare()
    for key in ("g1", "g2"):  # a group part: its keys are read from the file
        store.write_episode(key, {"episode_key": key}, [], [], ["{}"], took_s=0.01)
    store.flush()
    store.write_episode("single", {"episode_key": "single"}, [], [], ["{}"], took_s=61)
    with Claims(root) as claims:
        assert [claims.take(k) for k in ("g2", "single", "new")] == ["done", "done", "mine"]
        assert claims.by_others == 2
        store.write_episode("g3", {"episode_key": "g3"}, [], [], ["{}"], took_s=0.01)
        store.write_episode("g4", {"episode_key": "g4"}, [], [], ["{}"], took_s=0.01)
        store.flush()  # a new group part after the folder was listed
        assert claims.take("g4") == "done"
    assert not list((root / ".claims").glob("*.claim"))


def test_wait_runs_what_a_closed_holder_left_and_gives_up_on_a_hung_one(tmp_path: Path, capsys):
    root = tmp_path / "run"
    holder, waiter = Claims(root), Claims(root, stall_s=1.0)
    assert holder.take("a") == "mine" and holder.take("b") == "mine"
    assert waiter.take("a") == "busy", "another open Claims of this process is a live owner"
    threading.Timer(0.6, holder.release, [["a"]]).start()  # released uncommitted: the waiter runs it
    assert list(waiter.wait(["a", "b"], "cell")) == ["a"]
    assert waiter.given_up == ["b"]
    err = capsys.readouterr().err
    assert "waiting for 2 episode(s) in other processes' hands" in err and "stopped waiting" in err
    holder.close()
    assert list(waiter.wait(["b"], "cell")) == ["b"]
    waiter.close()


def test_retry_errors_leaves_errored_episodes_another_process_holds(tmp_path: Path):
    root = tmp_path / "run"
    store = RunStore(root)
    store.prepare()
    row = {"episode_key": "e", "error_types": ["harness_error"]}
    store.write_episode("e", row, [], [], ["{}"])
    with Claims(root) as other, Claims(root) as mine:
        assert other.take("e", check=False) == "mine"
        assert retake_errored(mine, store, {"e"}) == set() and store.done_keys() == {"e"}
        other.close()
        assert retake_errored(mine, store, {"e"}) == {"e"} and store.done_keys() == set()
        assert mine.take("e") == "mine", "held for the re-run"


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640)], ids=["umask 022", "umask 027"])
def test_result_files_take_the_umask(tmp_path: Path, umask: int, mode: int):
    old = os.umask(umask)
    try:
        store = RunStore(tmp_path / "run", commit_interval_s=60)
        store.prepare()
        store.write_run_info({"cells": []})
        store.write_episode("one", {"episode_key": "one"}, [{"episode_key": "one", "step": 0}], [], ["{}"], 61)
        for key in ("g1", "g2"):
            store.write_episode(key, {"episode_key": key}, [{"episode_key": key, "step": 0}], [], ["{}"], 0.01)
        store.flush()
        store.discard({"g1"})  # a group part rewritten
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file() and not p.name.startswith(".")]
    assert {p.parent.name for p in files} >= {"run", "transcripts", "episodes.parquet", "steps.parquet"}
    assert {str(p.relative_to(tmp_path)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {
        str(p.relative_to(tmp_path)): oct(mode) for p in files
    }


def test_preparing_a_folder_another_process_is_preparing_succeeds(tmp_path: Path):
    # CI saw the second of two runs refused ("results directory ... is not writable (No such file or
    # directory)"): both wrote and removed one fixed probe name, and one removed the other's probe. A
    # probe name left by another process (here a folder, which cannot be written or unlinked) is no
    # business of this one's.
    root = tmp_path / "shared"
    (root / ".write-probe").mkdir(parents=True)
    RunStore(root).prepare()
    assert [p.name for p in root.iterdir()] == [".write-probe"], "its own probe removed, nothing else"
