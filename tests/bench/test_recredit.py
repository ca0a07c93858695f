"""The fewest round trips within a suite's step budget, and ``surfbench migrate --credit`` on a recorded run.

A BFCL single-turn episode is one model call (``max_steps: 1``) with no answer after it: solved in that call, its
efficiency is 1 (the CI run of 2026-12-06 found 2.0 in the BFCL reference, outside the metric's range). A run recorded
before the fix gets today's values back from ``surfbench migrate --credit`` (bench/analysis/recredit.py), and
``--dry-run`` writes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.score.credit import min_round_trips
from surfbench.bench.store.results import load_runs, rewrite_episode_values
from surfbench.bench.suites.expected import ExpectedCall
from surfbench.bench.suites.suite_model import Task
from tests.conftest import ROOT

ONE = Task(id="t", turns=("x",), expected=(ExpectedCall("a"),))
TWO_TURNS = Task(
    id="t", turns=("x", "y"), expected=(ExpectedCall("a", turn=0), ExpectedCall("b", turn=0), ExpectedCall("c", turn=1))
)


@pytest.mark.parametrize(
    ("task", "budget", "least"),
    [
        (ONE, (None, "episode"), 2),  # the call, then the answer
        (ONE, (1, "episode"), 1),  # a one-call suite asks for no answer
        (ONE, (6, "episode"), 2),
        (TWO_TURNS, (None, "episode"), 5),  # a, b, answer; c, answer
        (TWO_TURNS, (2, "turn"), 4),  # the first turn's three capped at two
        (TWO_TURNS, (4, "episode"), 4),
    ],
)
def test_the_step_budget_caps_the_fewest_round_trips(task: Task, budget: tuple[int | None, str], least: int):
    assert min_round_trips(task, *budget) == least


ORACLE = "provider: scripted\nscript_suite: bfcl:simple_python\nparams_b: 0.0\nmode: native\n"


@pytest.fixture(scope="module")
def bfcl_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three BFCL simple_python episodes solved by the scripted oracle, through ``surfbench run``."""
    tmp = tmp_path_factory.mktemp("recredit")
    shutil.copytree(ROOT / "configs", tmp / "configs")
    (tmp / "configs" / "model" / "oracle.yaml").write_text(ORACLE)
    env = {**os.environ, "SURFBENCH_CONFIGS": str(tmp / "configs"), "CI": "true"}
    args = ["suite=bfcl_simple_python", "surface=full", "model=oracle", "limit=3", f"results_dir={tmp}", "run=bfcl"]
    proc = subprocess.run([sys.executable, "-m", "surfbench", "run", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return tmp / "bfcl"


def migrate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "surfbench", "migrate", *args], cwd=ROOT, capture_output=True,
                          text=True)  # fmt: skip


def test_a_solved_one_call_episode_has_efficiency_one_and_migrate_credit_mends_an_old_run(bfcl_run: Path):
    episodes = load_runs([bfcl_run])
    assert list(episodes.success) == [True] * 3
    assert list(episodes.min_round_trips) == [1] * 3 and list(episodes.efficiency) == [1.0] * 3
    old = {k: {"min_round_trips": 2, "efficiency": 2.0} for k in episodes.episode_key}  # as recorded before the fix
    assert rewrite_episode_values(bfcl_run, old) >= 1  # the part files holding them
    assert list(load_runs([bfcl_run]).efficiency) == [2.0] * 3

    dry = migrate(str(bfcl_run), "--credit", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "credit of 3 of 3 episode(s) differs from today's (efficiency 3, min_round_trips 3)" in dry.stdout
    assert list(load_runs([bfcl_run]).efficiency) == [2.0] * 3  # nothing written

    done = migrate(str(bfcl_run), "--credit")
    assert done.returncode == 0, done.stderr
    mended = load_runs([bfcl_run])
    assert list(mended.efficiency) == [1.0] * 3 and list(mended.min_round_trips) == [1] * 3
    cols = [c for c in episodes.columns if c not in ("efficiency", "min_round_trips")]
    assert mended[cols].astype(str).equals(episodes[cols].astype(str))  # nothing else touched
    again = migrate(str(bfcl_run), "--credit")
    assert "credit of 0 of 3 episode(s) differs" in again.stdout


def test_migrate_says_what_is_wrong_with_a_folder_that_is_not_a_run(tmp_path: Path):
    bad = migrate(str(tmp_path / "nothing"), "--credit")
    assert bad.returncode != 0
    assert "nothing" in bad.stderr + bad.stdout
