"""A gate criterion scoped to one suite (``suite: forge_instances``): the dsh gate's instance criterion.

The dsh gate judges the forge run on its five criteria and the multi-instance criterion on the forge_instances
suite's episodes only; the suite a criterion names is its own evidence, so adding it changes no other verdict, and a
run without that suite gets "no evidence" (revise) with what to run. Oracle runs (the scripted model).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.report.gate import judge
from surfbench.bench.report.gate_criteria import load_criteria
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore

DSH = Path(__file__).resolve().parents[2] / "configs/gate/dsh.yaml"
MODEL = "qwen2.5-coder-0.5b-instruct"


def oracle_run(root: Path, suite: str, limit: int | None = None) -> Path:
    cells = [resolve_cell(CellSpec(suite, s, MODEL, split="dev", limit=limit)) for s in ("full", "core", "dispatcher")]
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient(suite))
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("scope")
    return oracle_run(base / "forge", "forge", limit=12), oracle_run(base / "instances", "forge_instances")


def test_the_dsh_gate_judges_the_instance_criterion_on_the_instance_suite_only(runs: tuple[Path, Path]):
    forge, instances = runs
    both = judge(DSH, [forge, instances])
    inst = [v for v in both.verdicts if v.criterion.startswith("instance_accuracy_ratio_max")]
    assert {v.candidate for v in inst} == {"dispatcher", "core"}
    assert all(v.outcome == "pass" and "1.00x (over 8 episodes)" in v.observed for v in inst), inst
    assert all(v.criterion == "instance_accuracy_ratio_max [suite forge_instances]" for v in inst)
    # the other criteria see the forge's episodes only: the same verdicts as the gate without the instance criterion
    spec = yaml.safe_load(DSH.read_text())
    spec["criteria"] = [c for c in spec["criteria"] if c["kind"] != "instance_accuracy_ratio_max"]
    plain = Path(forge.parent / "dsh-forge-only.yaml")
    plain.write_text(yaml.safe_dump(spec))
    alone = judge(plain, [forge])
    rest = [(v.candidate, v.criterion, v.observed, v.outcome) for v in both.verdicts if v not in inst]
    assert rest == [(v.candidate, v.criterion, v.observed, v.outcome) for v in alone.verdicts]
    assert any("over 12 tasks" in v.observed for v in alone.verdicts)  # the forge's 12, not 12 + the instances' 8


def test_without_the_instance_suite_the_criterion_has_no_evidence_and_says_what_to_run(runs: tuple[Path, Path]):
    forge, _ = runs
    result = judge(DSH, [forge])
    inst = [v for v in result.verdicts if v.criterion.startswith("instance_accuracy_ratio_max")]
    assert inst and all(v.outcome == "no evidence" for v in inst)
    assert "no episodes of suite forge_instances" in inst[0].observed and "suite=forge_instances" in inst[0].observed
    assert result.decisions["dispatcher"] == "revise"  # missing evidence is never a pass


def test_a_gate_file_suite_is_the_default_and_a_criterion_suite_wins(tmp_path: Path):
    path = tmp_path / "gate.yaml"
    path.write_text(
        "baseline: full\nsuite: forge\ncriteria:\n"
        "  - {kind: round_trips_ratio_max, value: 1.5}\n"
        "  - {kind: instance_accuracy_ratio_max, value: 1.0, suite: forge_instances}\n"
    )
    first, second = load_criteria(path)["criteria"]
    assert (first.suite, second.suite) == ("forge", "forge_instances")
    path.write_text("baseline: full\ncriteria:\n  - {kind: round_trips_ratio_max, value: 1.5, suite: [forge]}\n")
    with pytest.raises(ConfigError, match=r"criteria\[0\]\.suite: \['forge'\] must be a suite name"):
        load_criteria(path)
