"""``surfbench gate --sequential`` and ``surfbench run ... until_decided=GATE`` over real (scripted-model) runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from surfbench.bench.cli.cli import main as cli
from surfbench.bench.sequential.sequential import decide
from surfbench.bench.sequential.sequential_pairs import read_record
from surfbench.bench.store.results import load_runs
from tests.bench.test_sweep import ORACLE, surfbench
from tests.conftest import ROOT

GATE = """
name: seq
baseline: full
candidates: [dispatcher, core]
criteria:
  - {kind: success_drop_max, value: VALUE, on_fail: close, sequential: true}
"""
TASKS = 60


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cfg") / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE.format(delay=0.0))
    return folder


@pytest.fixture(scope="module")
def three(configs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """full, core and dispatcher on 60 forge tasks; full and core always succeed, dispatcher never (edited rows)."""
    where = tmp_path_factory.mktemp("runs")
    proc = surfbench(
        configs, "-m", "surface=full,core,dispatcher", "model=oracle", "split=all", f"limit={TASKS}",
        f"results_dir={where}", "run=s",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    for part in (where / "s" / "episodes.parquet").glob("part-*.parquet"):
        frame = pd.read_parquet(part)
        frame["success"] = frame["surface"] != "dispatcher"
        frame.to_parquet(part, index=False)
    return where / "s"


def _gate(tmp_path: Path, value: float) -> Path:
    path = tmp_path / "seq.yaml"
    path.write_text(GATE.replace("VALUE", str(value)))
    return path


def _row(out: str, cand: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(f"| {cand} | oracle | success_drop_max | "))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_collapse_fails_early_and_a_tie_passes_a_generous_threshold(three: Path, tmp_path: Path, capsys):
    code = cli(["gate", "--criteria", str(_gate(tmp_path, 0.2)), str(three), "--sequential", "--allow-scripted"])
    out = capsys.readouterr().out
    assert code == 2, out  # dispatcher closes
    fail, tie = _row(out, "dispatcher"), _row(out, "core")
    want_fail, want_pass = decide([1.0] * TASKS, 0.2, "diff"), decide([0.0] * TASKS, 0.2, "diff")
    assert fail[3:] == ["fail", str(want_fail.pairs), str(TASKS)] and want_fail.pairs <= 20
    assert tie[3:] == ["pass", str(want_pass.pairs), str(TASKS)] and want_pass.pairs < TASKS
    assert "decision for dispatcher: CLOSE" in out and "decision for core: SHIP" in out
    assert "seeded random order (seed 0; the runs record none)" in out and "2 of 2 sequential criteria decided" in out


def test_a_tight_threshold_is_underpowered_at_budget_or_continues_below_it(three: Path, tmp_path: Path, capsys):
    gate = str(_gate(tmp_path, 0.05))
    assert cli(["gate", "--criteria", gate, str(three), "--sequential", "--allow-scripted"]) == 2
    out = capsys.readouterr().out
    assert _row(out, "core")[3:] == ["underpowered at budget", str(TASKS), str(TASKS)]
    assert "decision for core: REVISE" in out
    assert cli(["gate", "--criteria", gate, str(three), "--sequential", "--allow-scripted", "--budget", "200"]) == 2
    out = capsys.readouterr().out
    assert _row(out, "core")[3:] == ["continues", str(TASKS), str(TASKS)] and f"over {TASKS} of 200 pairs" in out
    # the fixed-N gate reads the same file, its sequential flags aside, as before
    assert cli(["gate", "--criteria", gate, str(three), "--allow-scripted"]) == 2
    fixed = capsys.readouterr().out
    assert "pairs taken" not in fixed and "decision for dispatcher: CLOSE" in fixed


def test_sequential_gates_refuse_what_they_cannot_judge(three: Path, tmp_path: Path, capsys):
    plain = tmp_path / "plain.yaml"
    plain.write_text(GATE.replace("VALUE", "0.2").replace(", sequential: true", ""))
    assert cli(["gate", "--criteria", str(plain), str(three), "--sequential", "--allow-scripted"]) == 2
    assert "no criterion is marked sequential" in capsys.readouterr().err
    assert cli(["gate", "--criteria", str(_gate(tmp_path, 0.2)), str(three), "--sequential"]) == 2  # scripted
    assert "no decision (exit 2)" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(GATE.replace("success_drop_max, value: VALUE", "help_bytes_max, value: 1536"))
    assert cli(["gate", "--criteria", str(bad), str(three), "--sequential", "--allow-scripted"]) == 2
    assert "judged on the surface, not on task pairs" in capsys.readouterr().err


TOKENS = """
name: tokens
baseline: full
candidates: [dispatcher]
criteria:
  - {kind: prompt_tokens_ratio_max, value: 1.0, sequential: true}
"""


def _run(configs: Path, where: Path, gate: Path, *extra: str):
    return surfbench(
        configs, "-m", "surface=full,dispatcher", "model=oracle", "split=all", f"limit={TASKS}", f"results_dir={where}",
        "run=u", f"until_decided={gate}", "batch=10", *extra,
    )  # fmt: skip


def test_a_run_until_decided_stops_once_every_criterion_is_decided(configs: Path, tmp_path: Path, capsys):
    gate = tmp_path / "tokens.yaml"
    gate.write_text(TOKENS)
    proc = _run(configs, tmp_path, gate, "budget=50")
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = read_record(tmp_path / "u")
    assert record is not None and record.budget == 50 and record.batch == 10 and len(record.order) == TASKS
    assert record.stopped is not None and record.stopped.startswith("every criterion decided after")
    pairs = record.looks[-1]["pairs"]
    assert pairs < 50 and f"until_decided: stopped: every criterion decided after {pairs} pairs" in proc.stdout
    episodes = load_runs([tmp_path / "u"])
    assert len(episodes) == 2 * pairs  # the run stopped: not every task ran
    ran = {f"forge/{t}" for t in episodes["task_id"]}
    assert ran == set(record.order[:pairs])  # the first tasks of the seeded order, on both surfaces
    # the gate reads the recorded order back and finds the same decision at the same look
    assert cli(["gate", "--criteria", str(gate), str(tmp_path / "u"), "--sequential", "--allow-scripted"]) == 0
    out = capsys.readouterr().out
    taken = record.looks[-1]["decided"]["dispatcher/oracle/prompt_tokens_ratio_max"]["pairs"]
    assert "| dispatcher | oracle | prompt_tokens_ratio_max | pass |" in out and "recorded by the run" in out
    assert f"| pass | {taken} | {pairs} |" in out


def test_a_run_until_decided_stops_at_its_budget_and_resumes(configs: Path, tmp_path: Path):
    gate = _gate(tmp_path, 0.05)
    gate.write_text(GATE.replace("VALUE", "0.05").replace("candidates: [dispatcher, core]", "candidates: [dispatcher]"))
    proc = _run(configs, tmp_path, gate, "budget=20")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "until_decided: stopped: budget of 20 pairs spent; undecided: dispatcher/oracle success_drop_max" in (
        proc.stdout
    )
    assert "underpowered at budget" in proc.stdout and len(load_runs([tmp_path / "u"])) == 40
    # before the first batch, how many episodes at most; after the first look, how long the rest may take
    # (issue 50: a newcomer's run showed no estimate)
    assert "budget 20 pairs per comparison: at most 40 episodes (20 pairs x 2 cells)" in proc.stderr
    assert re.search(
        r"until_decided: at most 20 more episodes \(10 pairs x 2 cells\) to the budget, about \d+ min at this "
        r"run's pace \(\d+ s per episode\)",
        proc.stderr,
    ), proc.stderr[-2000:]
    again = _run(configs, tmp_path, gate, "budget=20")
    assert again.returncode == 0 and "budget of 20 pairs spent" in again.stdout
    assert len(load_runs([tmp_path / "u"])) == 40
    other = _run(configs, tmp_path, gate, "budget=30")  # another design into the same folder: refused
    assert other.returncode == 2 and "records another sequential design" in other.stderr
    record = json.loads((tmp_path / "u" / "sequential.json").read_text())
    assert record["budget"] == 20 and record["stopped"].startswith("budget of 20 pairs spent")


def test_a_resumed_run_until_decided_records_the_looks_of_an_uninterrupted_one(configs: Path, tmp_path: Path):
    """Issue 49, point 7: each look is judged on the pairs up to it, not on every pair stored by then.

    The interrupted run is one killed after storing pairs beyond its last look (here: every task on both
    surfaces, stored first), then run again with the same command: its sequential.json must be the
    uninterrupted run's, look for look.
    """
    gate = tmp_path / "tokens.yaml"
    gate.write_text(TOKENS)
    whole = _run(configs, tmp_path / "a", gate, "budget=50")
    assert whole.returncode == 0, whole.stderr[-3000:]
    ahead = surfbench(
        configs, "-m", "surface=full,dispatcher", "model=oracle", "split=all", f"limit={TASKS}",
        f"results_dir={tmp_path / 'b'}", "run=u",
    )  # fmt: skip
    assert ahead.returncode == 0, ahead.stderr[-3000:]
    resumed = _run(configs, tmp_path / "b", gate, "budget=50")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    first, again = read_record(tmp_path / "a" / "u"), read_record(tmp_path / "b" / "u")
    assert first is not None and again is not None and len(first.looks) > 1  # decided after the first look
    assert again.looks == first.looks and again.stopped == first.stopped
    for look in again.looks:
        assert all(d["pairs"] <= look["pairs"] for d in look["decided"].values()), look
    lines = [line for line in resumed.stderr.splitlines() if line.startswith("until_decided: after ")]
    assert lines == [line for line in whole.stderr.splitlines() if line.startswith("until_decided: after ")]


def test_a_run_until_decided_needs_every_compared_surface(configs: Path, tmp_path: Path):
    gate = tmp_path / "tokens.yaml"
    gate.write_text(TOKENS)
    proc = surfbench(
        configs, "-m", "surface=full,core", "model=oracle", "limit=3", f"results_dir={tmp_path}", "run=x",
        f"until_decided={gate}",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "missing: dispatcher" in proc.stderr and not (tmp_path / "x").exists()
    # reported as every run's failures are (bench.cli.sweep._report_failure): one line, no traceback for a user error
    assert [line for line in proc.stderr.splitlines() if line.startswith("surfbench: error")] == [
        next(line for line in proc.stderr.splitlines() if line.startswith("surfbench: error: until_decided: "))
    ]
    assert "Traceback" not in proc.stderr


def test_each_cell_of_a_run_until_decided_has_its_own_model_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Alternating batches on one single-slot server would evict the baseline's tool block every batch (260 s to
    recompute at 1.5B): each cell gets a pool of its own, sharing one response cache, and every pool is closed."""
    import surfbench as api
    from surfbench.bench import models

    made: list[models.ModelPool] = []
    closed: list[models.ModelPool] = []
    used: dict[int, list[str]] = {}  # the model clients each pool had made, when it was closed

    class Recording(models.ModelPool):
        def __init__(self, cache):
            super().__init__(cache)
            made.append(self)

        def close(self) -> None:
            closed.append(self)
            used.setdefault(id(self), list(self.clients))
            super().close()

    monkeypatch.setattr(models, "ModelPool", Recording)
    gate = tmp_path / "tokens.yaml"
    gate.write_text(TOKENS)
    done = api.run(
        api.RunSpec(
            suite="forge",
            surfaces=["full", "dispatcher"],
            models=["oracle"],
            split="all",
            limit=20,
            results_dir=tmp_path,
            run="own",
            overrides=[f"until_decided={gate}", "batch=10"],
        )  # fmt: skip
    )
    assert [c.surface for c in done.cells] == ["full", "dispatcher"] and done.new_episodes > 0
    shared, *cells = made  # the process's pool (bench.cli.session.model_pool), then one per cell
    assert len(cells) == 2 and cells[0] is not cells[1], "one pool per cell"
    assert shared.cache is cells[0].cache is cells[1].cache, "one response cache for the run"
    assert [used[id(p)] for p in cells] == [["oracle"], ["oracle"]], "each cell's model client is its pool's own"
    assert all(any(c is p for c in closed) for p in made), "every pool (and so every server) is closed"
