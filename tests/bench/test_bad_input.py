"""Malformed suites, tasks, configs and results folders: one clear error naming the file and the field,
exit code 2, and nothing written into results.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.results import ResultsError, RunStore, load_runs
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"


def run(tmp_path: Path, *args: str, configs: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": "true", "SURFBENCH_CACHE": str(tmp_path / "cache"), "SURFBENCH_SUITES": str(tmp_path)}
    if configs is not None:
        env["SURFBENCH_CONFIGS"] = str(configs)
    cmd = [sys.executable, "-m", "bench.cli", "run", *args, f"results_dir={tmp_path / 'results'}", "run=bad"]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def broken_suite(tmp_path: Path, file: str, old: str, new: str) -> Path:
    folder = tmp_path / "suite"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", folder)
    path = folder / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return folder


SUITE_CASES = [
    ("tasks.yaml", "  tags: [single, read]\n", "  tags: [single, read]\n  expectd: []\n", ["tasks.yaml", "expectd"]),
    ("tasks.yaml", "- id: read-note\n", "- idx: read-note\n", ["tasks.yaml", "id"]),
    ("tasks.yaml", "  split: dev\n", "  split: [dev\n", ["tasks.yaml"]),
    ("tasks.yaml", "split: dev", "split: devv", ["tasks.yaml", "split"]),
    ("suite.yaml", "catalog: catalog.json", "catalog: nowhere.json", ["nowhere.json"]),
    ("suite.yaml", "max_steps: 4", "max_steps: 4\nmax_step: 5", ["suite.yaml", "max_step"]),
    ("suite.yaml", "max_steps: 4", "max_steps: 4\nsteps_per: turns", ["suite.yaml", "steps_per"]),
    ("catalog.json", '"name"', '"nome"', ["catalog.json"]),
    ("tasks.yaml", "{op: notes_get, args: {id: n7}}", "{op: notes_get, args: {id: n7}, turn: 1}",
     ["tasks.yaml", "read-note", "turn"]),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "named"), SUITE_CASES)
def test_a_malformed_suite_is_refused_before_anything_is_written(tmp_path, file, old, new, named):
    broken_suite(tmp_path, file, old, new)
    configs = tmp_path / "configs"  # a user's own suite: a folder (SURFBENCH_SUITES) and a config naming it
    shutil.copytree(ROOT / "configs", configs)
    (configs / "suite" / "suite.yaml").write_text("name: suite\n")
    proc = run(tmp_path, "suite=suite", "surface=full", "model=qwen2.5-coder-0.5b-instruct", configs=configs)
    assert proc.returncode == 2, proc.stderr[-2000:]
    first = [line for line in proc.stderr.splitlines() if "error" in line]
    assert first and all(n in proc.stderr for n in named), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results" / "bad").exists()


def test_malformed_model_and_surface_configs_are_refused(tmp_path: Path):
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "typo.yaml").write_text(ORACLE + "temprature: 0.5\n")
    (configs / "surface" / "odd.yaml").write_text("name: odd\nkind: core\nparams: {k: many}\n")
    for args, named in (
        (("suite=notes_mcp", "surface=full", "model=typo"), ["typo", "temprature"]),
        (("suite=notes_mcp", "surface=odd", "model=qwen2.5-coder-0.5b-instruct"), ["odd", "k"]),
        (("suite=notes_mcp", "surface=full", "model=qwen2.5-coder-0.5b-instruct", "limit=-3"), ["limit"]),
    ):
        proc = run(tmp_path, *args, configs=configs)
        assert proc.returncode == 2, (args, proc.stderr[-2000:])
        assert all(n in proc.stderr for n in named) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert not (tmp_path / "results" / "bad").exists()


def test_an_unusable_results_folder_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the results folder should be")
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "oracle.yaml").write_text(ORACLE)
    proc = run(tmp_path, "suite=notes_mcp", "surface=full", "model=oracle", configs=configs)
    assert proc.returncode == 2
    assert "results directory" in proc.stderr and "results_dir=" in proc.stderr and "Traceback" not in proc.stderr


def test_a_full_disk_mid_episode_leaves_no_corrupt_table(tmp_path: Path, monkeypatch):
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"cells": []})
    row = {"episode_key": "e1", "run": "r", "task_id": "t", "surface": "full", "model": "m", "mode": "native"}
    store.write_episode("e1", row, [{"episode_key": "e1", "step": 0}], [], ["{}"])
    assert store.done_keys() == {"e1"}, "without group commit an episode is written at once"
    real = pq.write_table
    writes = {"n": 0}

    def fill_up(table, path, *a, **kw):
        writes["n"] += 1
        if writes["n"] == 2:  # steps written, then the disk is full
            real(table, path, *a, **kw)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(table, path, *a, **kw)

    monkeypatch.setattr(pq, "write_table", fill_up)
    with pytest.raises(ResultsError, match="No space left"):
        store.write_episode("e2", {**row, "episode_key": "e2"}, [{"episode_key": "e2", "step": 0}], [], ["{}"])
    monkeypatch.undo()
    episodes = load_runs([tmp_path / "run"])
    assert list(episodes["episode_key"]) == ["e1"], "a half-written episode must not count as done"
    assert store.done_keys() == {"e1"}
    assert not list((tmp_path / "run").rglob("*.tmp"))
    for table in ("steps", "calls"):
        load_runs([tmp_path / "run"], table)  # every part still reads


def test_group_commit_holds_quick_episodes_briefly_and_resume_reads_groups(tmp_path: Path):
    store = RunStore(tmp_path / "run", commit_interval_s=60)
    store.prepare()
    store.write_run_info({"cells": []})
    for i in range(5):  # quick episodes (a scripted model): held
        key = f"e{i}"
        store.write_episode(
            key, {"episode_key": key, "round_trips": i}, [{"episode_key": key, "step": 0}], [], ["{}"], 0.01
        )
    assert store.done_keys() == set(), "held, not yet committed"
    store.write_episode("slow", {"episode_key": "slow", "round_trips": 9}, [], [], ["{}"], took_s=61)  # commits all
    assert store.done_keys() == {"e0", "e1", "e2", "e3", "e4", "slow"}
    parts = list((tmp_path / "run" / "episodes.parquet").glob("part-*.parquet"))
    assert len(parts) == 1, "one group, one part per table"
    assert len(load_runs([tmp_path / "run"])) == 6 and len(load_runs([tmp_path / "run"], "steps")) == 5
    assert len(list((tmp_path / "run" / "transcripts").glob("*.jsonl"))) == 6
