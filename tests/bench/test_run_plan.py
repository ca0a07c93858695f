"""A run's cell planned once (bench/run/plan.py): its settings checked in one place, its spec made from them whole.

A setting refused on the command line is refused with the same words when a CellSpec is made in Python, and the
settings a run gives its cells are passed by name, never copied one by one (issue 53, "one run plan").
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from surfbench.bench.base.config import ConfigError
from surfbench.bench.run.cell import CellSpec
from surfbench.bench.run.overrides import RunSettings, run_settings
from surfbench.bench.run.plan import SHARED_SETTINGS, cell_spec, plan_cell

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
