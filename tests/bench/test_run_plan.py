"""A run's cell planned once (bench/run/plan.py): its settings checked in one place, its spec made from them whole.

A setting refused on the command line is refused with the same words when a CellSpec is made in Python, and the
settings a run gives its cells are passed by name, never copied one by one (issue 53, "one run plan"). The whole
run is planned before any cell runs (a cell whose plan fails reported at its turn), and the run stage runs the plan
and records its cells in run.json without the front ends (bench/run/execute.py), with the scripted oracle.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import ModelPool
from surfbench.bench.run.cell import CellSpec
from surfbench.bench.run.execute import CellResult, run_plan
from surfbench.bench.run.overrides import RunSettings, run_settings
from surfbench.bench.run.plan import SHARED_SETTINGS, RunPlan, cell_spec, plan_cell, plan_run

CHOICES = {"suite": "notes_mcp", "surface": "full", "model": "oracle"}


def composed(tmp_path: Path, **settings: object) -> DictConfig:
    """A cell's config as Hydra composes it (the settings of configs/config.yaml that matter here)."""
    return OmegaConf.create({"results_dir": str(tmp_path), "suite": {"name": "notes_mcp"}, **settings})


def test_the_settings_a_cell_takes_from_its_run_are_every_setting_both_records_name():
    shared = {f.name for f in fields(RunSettings)} & {f.name for f in fields(CellSpec)}
    assert set(SHARED_SETTINGS) == shared
    assert shared == {
        "split", "tasks", "limit", "tags", "repeats", "mode", "max_steps", "order", "episode_retries",
        "retry_errors", "stop_on_repeat", "concurrency",
    }  # fmt: skip


def test_a_planned_cell_carries_the_checked_settings_and_the_folder(tmp_path: Path):
    cfg = composed(tmp_path, limit=2, repeats=3, tags=["hot"], mode="prompted", concurrency=4)
    plan = plan_cell(cfg, CHOICES, multirun=False)
    spec = plan.spec
    assert (spec.suite, spec.surface, spec.model) == ("notes_mcp", "full", "oracle")
    assert (spec.limit, spec.repeats, spec.tags, spec.mode, spec.concurrency) == (2, 3, ("hot",), "prompted", 4)
    assert plan.settings == run_settings(cfg)
    assert spec == cell_spec(plan.settings, "notes_mcp", "full", "oracle")
    assert plan.run_name == "notes_mcp-dev-full-oracle" and plan.folder == tmp_path / plan.run_name
    swept = plan_cell(composed(tmp_path, split="all"), CHOICES, multirun=True)
    assert swept.run_name == "sweep-notes_mcp-all"


@pytest.mark.parametrize(
    ("setting", "words"),
    [
        ({"limit": 0}, "limit=0: must be a whole number, 1 or more, or null (every task)"),
        ({"repeats": 0}, "repeats=0: must be a whole number, 1 or more"),
        ({"episode_retries": -1}, "episode_retries=-1: must be a whole number, 0 or more"),
        ({"concurrency": 1000}, "concurrency=1000: must be a whole number, 1 or more and at most 256"),
        ({"mode": "chat"}, "mode=chat: must be one of native, prompted or null"),
        ({"order": "random"}, "order=random: must be one of cache, naive"),
    ],
)
def test_a_setting_is_refused_with_the_same_words_from_the_command_line_and_from_python(
    tmp_path: Path, setting: dict[str, object], words: str
):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        plan_cell(composed(tmp_path, **setting), CHOICES, multirun=False)
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        CellSpec("notes_mcp", "full", "oracle", **setting)  # type: ignore[arg-type]


def test_a_spec_refuses_a_stop_that_is_not_a_positive_number_of_repeats():
    with pytest.raises(ConfigError, match="stop_on_repeat=0: must be a positive number of repeats"):
        CellSpec("notes_mcp", "full", "oracle", stop_on_repeat=0)
    assert CellSpec("notes_mcp", "full", "oracle", stop_on_repeat=2).stop_on_repeat == 2


def test_a_planned_cell_refuses_a_run_name_leaving_the_results_folder(tmp_path: Path):
    with pytest.raises(ConfigError, match=r"run=\.\./x: must be a folder name inside results_dir"):
        plan_cell(composed(tmp_path, run="../x"), CHOICES, multirun=False)
    assert plan_cell(composed(tmp_path, run="mine"), CHOICES, multirun=False).folder == tmp_path / "mine"


def planned_cells(tmp_path: Path, surfaces: str = "full,dispatcher") -> list[tuple[DictConfig, dict[str, str]]]:
    """A sweep's cells as Hydra composes them: forge with the scripted oracle, two tasks each, one run folder."""
    from surfbench.bench.base.config import SHIPPED_CONFIGS
    from surfbench.bench.cli.compose import compose_run

    overrides = ["suite=forge", f"surface={surfaces}", "model=oracle", "limit=2", f"results_dir={tmp_path}", "run=p"]
    return [(c.task(), c.choices) for c in compose_run(SHIPPED_CONFIGS, overrides, multirun=True).cells]


def test_a_run_is_planned_whole_each_cell_in_its_order(tmp_path: Path):
    cells = planned_cells(tmp_path)
    plan = plan_run(cells, multirun=True)
    assert isinstance(plan, RunPlan) and plan.multirun and not plan.sequential and plan.failures == ()
    assert plan.cells == plan.planned and len(plan.cells) == 2
    assert [c.label for c in plan.planned] == ["forge/full/oracle", "forge/dispatcher/oracle"]
    assert [c.spec.surface for c in plan.planned] == ["full", "dispatcher"]
    assert all(c.folder == tmp_path / "p" and c.spec.limit == 2 for c in plan.planned)
    assert plan.planned[0] == plan_cell(*cells[0], multirun=True)  # each cell planned as on its own
    # a sequential setting is refused unless the run is planned sequential (Hydra's other launchers run cells alone)
    gate = [(OmegaConf.merge(cfg, {"until_decided": "gate.yaml"}), choices) for cfg, choices in cells]
    refused = plan_run(gate, multirun=True)
    assert [f.label for f in refused.failures] == ["forge/full/oracle", "forge/dispatcher/oracle"]
    assert "until_decided=gate.yaml" in str(refused.failures[0].error)
    assert plan_run(gate, multirun=True, sequential=True).failures == ()


def _pool(pools: list[ModelPool]):
    def pool(no_cache: bool) -> ModelPool:
        if not pools:
            pools.append(ModelPool(None))
        return pools[0]

    return pool


def test_a_planned_run_runs_without_the_front_ends_and_records_its_cells(tmp_path: Path):
    from surfbench.bench.store.reader import load
    from surfbench.bench.store.results import load_runs

    plan = plan_run(planned_cells(tmp_path), multirun=True)
    pools: list[ModelPool] = []
    after: list[CellResult] = []
    failures: list[tuple[str, Exception]] = []
    try:
        result = run_plan(plan, _pool(pools), lambda label, exc: failures.append((label, exc)), after.append)
        again = run_plan(plan, _pool(pools), lambda label, exc: failures.append((label, exc)))
    finally:
        for pool in pools:
            pool.close()
    assert not failures and result.failed == () and after == list(result.cells)
    assert [(r.cell.surface_cfg.name, r.new_episodes) for r in result.cells] == [("full", 2), ("dispatcher", 2)]
    assert [r.job.plan for r in result.cells] == list(plan.planned)
    assert {r.store.root for r in result.cells} == {tmp_path / "p"}
    # run.json written by the run stage itself: the folder reads back as a run
    runs = load(tmp_path / "p", suites=False)
    assert {c.cell_id for c in runs.cells} == {r.cell.cell_id for r in result.cells}
    assert len(load_runs([tmp_path / "p"])) == 4 and runs.episodes["success"].all()
    assert [r.new_episodes for r in again.cells] == [0, 0]  # a re-run resumes


def test_a_cell_whose_plan_fails_is_reported_at_its_turn_and_the_others_run(tmp_path: Path):
    cells = planned_cells(tmp_path, "full,dispatcher,core")
    cells[0] = (OmegaConf.merge(cells[0][0], {"repeats": 0}), cells[0][1])  # refused by its plan
    cells[2] = (OmegaConf.merge(cells[2][0], {"tasks": ["no-such-task"]}), cells[2][1])  # planned, fails to resolve
    plan = plan_run(cells, multirun=True)
    assert [type(c).__name__ for c in plan.cells] == ["PlanFailure", "CellPlan", "CellPlan"]
    events: list[tuple[str, str]] = []
    pools: list[ModelPool] = []
    try:
        result = run_plan(
            plan,
            _pool(pools),
            lambda label, exc: events.append(("failed", f"{label}: {exc}")),
            lambda ran: events.append(("ran", ran.cell.label())),
        )
    finally:
        for pool in pools:
            pool.close()
    assert [kind for kind, _ in events] == ["failed", "ran", "failed"]
    assert events[0][1].startswith("forge/full/oracle: repeats=0: must be a whole number, 1 or more")
    assert events[1][1] == "forge/dispatcher/oracle" and "no-such-task" in events[2][1]
    assert result.failed == ("forge/full/oracle", "forge/core/oracle")
    assert [r.cell.surface_cfg.name for r in result.cells] == ["dispatcher"]
    info = json.loads((tmp_path / "p" / "run.json").read_text())
    assert [c["surface"] for c in info["cells"]] == ["dispatcher"]


def test_a_sequential_run_names_every_cell_that_cannot_be_planned(tmp_path: Path):
    # the pairing needs every cell: one failure is raised as it is, several are named together (as a plain run does)
    from surfbench.bench.sequential.until_decided import _check_design

    cells = planned_cells(tmp_path, "full,core,dispatcher")
    bad = [
        (OmegaConf.merge(cfg, {"until_decided": "configs/gate/dsh-sequential.yaml", "repeats": 0 if i else 1}), ch)
        for i, (cfg, ch) in enumerate(cells)
    ]
    plan = plan_run(bad, multirun=True, sequential=True)
    with pytest.raises(
        ConfigError, match=r"^2 cells cannot be planned: forge/core/oracle: repeats=0.*forge/dispatcher"
    ):
        _check_design(plan)
    one = plan_run(bad[:2], multirun=True, sequential=True)
    with pytest.raises(ConfigError, match=r"^repeats=0"):
        _check_design(one)
