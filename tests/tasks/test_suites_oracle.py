"""Every shipped suite is solvable: the scripted oracle, replaying each task's expected calls through
the real loop, scorer and store, succeeds on every task (a task it cannot replay is a suite bug)."""

from __future__ import annotations

from pathlib import Path

import pytest

from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import load_suite, suite_names


@pytest.mark.parametrize("suite", suite_names())
def test_the_oracle_solves_every_task_of_every_suite(suite: str, tmp_path: Path):
    if suite == "bfcl":
        pytest.skip("n/a: bfcl is generated per category (bfcl:<category>); tests/tasks/test_bfcl.py replays each")
    if suite == "git":
        pytest.skip("n/a: git starts a real server per episode; tests/tasks/test_git_suite.py replays every task")
    if not any(t.expected for t in load_suite(suite).tasks):
        pytest.skip(f"n/a: {suite}: no task has expected calls to replay; its own test replays reference solutions")
    cell = resolve_cell(CellSpec(suite, "full", "qwen2.5-coder-0.5b-instruct", split="all"))
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient(suite))
    episodes = load_runs([tmp_path / "run"])
    assert len(episodes) == len(cell.tasks) and episodes["episode_key"].is_unique
    failed = episodes[~episodes["success"].astype(bool)]
    assert failed.empty, failed[["task_id", "failures", "error"]].to_string()
