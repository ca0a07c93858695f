"""``surfbench.run(RunSpec(...))``: a run from Python is the command line's run (same cells, same folder,
either resumes the other), with its guards; sweeps expand as Hydra's basic sweeper does. Scripted model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import surfbench
from surfbench.bench.base.config import SHIPPED_CONFIGS, ConfigError
from surfbench.bench.cli.compose import compose_run
from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    """A config folder holding only a scripted model: the shipped configs stay in force for the rest."""
    folder = tmp_path / "configs"
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "notes-oracle.yaml").write_text(ORACLE)
    return folder


def cell_ids(run: Path) -> set[str]:
    return {c["cell_id"] for c in json.loads((run / "run.json").read_text())["cells"]}


def test_a_run_from_python_is_the_command_lines_run(configs: Path, tmp_path: Path):
    results = tmp_path / "results"
    spec = surfbench.RunSpec(
        suite="notes_mcp", surfaces=["full", "dispatcher"], models=["notes-oracle"], limit=2,
        results_dir=results, run="api", configs=[configs],
    )  # fmt: skip
    done = surfbench.run(spec)
    assert [c.surface for c in done.cells] == ["full", "dispatcher"]
    assert [(c.episodes, c.new_episodes) for c in done.cells] == [(2, 2), (2, 2)]
    assert done.folder == results / "api" and all(c.summary.success_rate == 1.0 for c in done.cells)
    assert {c.cell_id for c in done.cells} == cell_ids(results / "api")
    assert len(load_runs([results / "api"])) == 4
    assert os.environ.get("SURFBENCH_CONFIGS") is None, "the run's config folders stay the run's"

    # the same settings typed on the command line: the same cells, resumed, nothing run again
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", "-m", "suite=notes_mcp", "surface=full,dispatcher",
         "model=notes-oracle", "limit=2", f"results_dir={results}", "run=api"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("2/2 episodes already done") == 2, proc.stderr[-3000:]
    assert cell_ids(results / "api") == {c.cell_id for c in done.cells}
    assert len(load_runs([results / "api"])) == 4
    again = surfbench.run(spec)
    assert again.new_episodes == 0 and [c.cell_id for c in again.cells] == [c.cell_id for c in done.cells]
    assert sorted(again.runs.episodes["surface"]) == ["dispatcher", "dispatcher", "full", "full"]


def test_a_spec_is_the_overrides_the_command_line_takes():
    from hydra.core.override_parser.overrides_parser import OverridesParser

    spec = surfbench.RunSpec(
        suite="forge", surfaces="full,core", models=["oracle"], tasks=["read it", "x"], limit=3, no_cache=True,
        run="2024", results_dir=Path("/tmp/my results"), overrides=["surface.params.k=5"],
    )  # fmt: skip
    overrides = spec.overrides_list()
    assert overrides[:3] == ["suite=forge", "surface=full,core", "model=oracle"]
    parser = OverridesParser.create()
    values = {o.key_or_group: o.value() for o in map(parser.parse_override, overrides[3:])}
    assert values == {
        "tasks": ["read it", "x"], "limit": 3, "no_cache": True, "run": "2024", "results_dir": "/tmp/my results",
        "surface.params.k": 5,
    }  # fmt: skip


def test_an_unknown_name_is_one_line_and_nothing_is_written(configs: Path, tmp_path: Path):
    results = tmp_path / "results"
    spec = surfbench.RunSpec(
        suite="notes_mcp", surfaces=["full", "fulll"], models=["notes-oracle"], results_dir=results, configs=[configs]
    )
    with pytest.raises(ConfigError) as caught:
        surfbench.run(spec)
    message = str(caught.value)
    assert "surface=fulll" in message and "did you mean full" in message and "\n" not in message
    assert not results.exists(), "every cell is composed before the first runs"


def test_a_failed_cell_is_raised_after_the_others_ran(configs: Path, tmp_path: Path):
    spec = surfbench.RunSpec(
        suite="notes_mcp", surfaces=["full"], models=["notes-oracle"], tasks=["no-such-task"],
        results_dir=tmp_path / "results", run="f", configs=[configs],
    )  # fmt: skip
    with pytest.raises(surfbench.RunFailed) as caught:
        surfbench.run(spec)
    assert len(caught.value.failures) == 1 and "no-such-task" in caught.value.failures[0]
    assert caught.value.result.cells == ()


def test_a_sweep_preset_expands_as_hydras_basic_sweeper_does(tmp_path: Path):
    # configs/sweep/dsh.yaml sweeps suite x surface x model; the command line wins a key both name
    cells = compose_run(SHIPPED_CONFIGS, ["+sweep=dsh"], multirun=True).cells
    small, large = "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"
    grid = [(s, m) for s in ("full", "core", "dispatcher") for m in (small, large)]
    assert [(c.choices["suite"], c.choices["surface"], c.choices["model"]) for c in cells] == [
        (suite, s, m) for suite in ("forge", "forge_instances") for s, m in grid
    ]
    one = compose_run(SHIPPED_CONFIGS, ["+sweep=dsh", "model=gemma-3-270m", "limit=2"], multirun=True).cells
    assert [c.choices["model"] for c in one] == ["gemma-3-270m"] * 6
    assert {c.task().limit for c in one} == {2} and all(c.task().run == "sweep-dsh" for c in one)
    joblib = compose_run(SHIPPED_CONFIGS, ["hydra/launcher=joblib", "surface=full,core"], multirun=True)
    assert joblib.cells == () and joblib.driver and "joblib" in joblib.driver.lower()
    with pytest.raises(ConfigError, match="hydra/launcher"):
        surfbench.run(
            surfbench.RunSpec(surfaces="full,core", results_dir=tmp_path, overrides=["hydra/launcher=joblib"])
        )


@pytest.mark.parametrize(
    "overrides",
    [
        ["+sweep=dsh"],
        ["+sweep=dsh", "model=gemma-3-270m", "limit=2"],
        ["surface=full,core", "limit=range(1,3)", "model=oracle", "surface=dispatcher,full"],
        ["surface=choice(full,core)", "repeats=1", "catalog.grow=null,64"],
    ],
)
def test_a_sweep_expands_to_the_jobs_hydras_basic_sweeper_gives(overrides: list[str]):
    # compose.expand writes the basic sweeper's split_arguments over Hydra's public override types (its own
    # lives in hydra._internal); here it is compared with that method itself, on presets, ranges, choice(),
    # a key named twice and a null
    from hydra import initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.types import RunMode

    from surfbench.bench.cli.compose import CONFIG_NAME, expand

    with initialize_config_dir(config_dir=str(SHIPPED_CONFIGS.resolve()), job_name="t", version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None
        master = hydra.compose_config(CONFIG_NAME, overrides, run_mode=RunMode.MULTIRUN)
        params = master.hydra.sweeper.get("params") or {}
        lines = [f"{k}={v}" for k, v in params.items()] + [str(o) for o in master.hydra.overrides.task]
        parsed = OverridesParser.create(config_loader=hydra.config_loader).parse_overrides(lines)
        theirs = [job for batch in BasicSweeper.split_arguments(parsed, max_batch_size=None) for job in batch]
        ours = expand(master, hydra.config_loader)
    assert ours == theirs and len(ours) > 1
