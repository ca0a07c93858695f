"""A gate criterion judged on a subset of tasks (``tasks: {tags: [multi]}``): both sides see only those
tasks, the table names the subset, and a malformed subset is refused with the field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.report.gate import judge
from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT

RUN = ROOT / "results" / "reference" / "forge-dev-qwen0.5b"
CRITERIA = """
name: t
baseline: full
candidates: [dispatcher]
criteria:
  - {kind: round_trips_ratio_max, value: 5}
  - {kind: round_trips_ratio_max, value: 5, tasks: {tags: [multi]}}
"""


def mean_round_trips(surface: str, multi_only: bool) -> float:
    frame = load_runs([RUN])  # the stored episodes (one compacted part per table)
    frame = frame[frame["surface"] == surface]
    if multi_only:
        frame = frame[["multi" in json.loads(t) for t in frame["tags"]]]
    return float(frame["round_trips"].mean())


def test_a_criterion_on_tasks_tagged_multi_compares_only_those_tasks(tmp_path: Path):
    path = tmp_path / "g.yaml"
    path.write_text(CRITERIA)
    every, multi = [v for v in judge(path, [RUN]).verdicts]
    assert every.criterion == "round_trips_ratio_max"
    assert multi.criterion == "round_trips_ratio_max [tasks tagged multi]"
    for verdict, only in ((every, False), (multi, True)):  # the numbers, recomputed from the stored episodes
        mine, base = mean_round_trips("dispatcher", only), mean_round_trips("full", only)
        assert f"{mine:,.1f} vs {base:,.1f}" in verdict.observed
    assert every.observed != multi.observed


@pytest.mark.parametrize("tasks", ["multi", "{tags: []}", "{tag: [multi]}", "{tags: [1]}"])
def test_a_malformed_task_subset_is_refused_naming_the_field(tmp_path: Path, tasks: str):
    path = tmp_path / "g.yaml"
    path.write_text(CRITERIA.replace("tasks: {tags: [multi]}", f"tasks: {tasks}"))
    with pytest.raises(ConfigError, match=r"criteria\[1\]\.tasks: .* must be \{tags: \[TAG, \.\.\.\]\}"):
        judge(path, [RUN])
