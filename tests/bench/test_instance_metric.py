"""Instance accuracy on hand-built episodes with known answers, its interval against statsmodels, and its gate kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from surfbench.bench.analysis.instance_accuracy import instance_fields
from surfbench.bench.analysis.metrics import METRICS, summarize_cell
from surfbench.bench.contracts.records import CallRecord
from surfbench.bench.report.gate import _ratio_verdict
from surfbench.bench.report.gate_criteria import Criterion, load_criteria
from surfbench.bench.suites.instances import instance_tally
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Task

CATALOG = load_suite("forge_instances").catalog
ROOT = Path(__file__).resolve().parents[2]


def call(kind: str, **args: object) -> CallRecord:
    return CallRecord(0, 0, "issue_get", {"owner": "acme", "repo": "web", "index": 1, **args}, kind, "issue_get")


def test_each_call_that_reached_the_backend_counts_once():
    oss = Task(id="o", turns=("x",), meta={"instance": "oss"})
    default = Task(id="d", turns=("x",))
    calls = [
        call("operation", instance="oss"),
        call("operation"),  # no instance: the default, work
        call("operation", instance="work"),
        call("rejected", instance="oss"),  # refused at dispatch: never reached a forge
    ]
    named = instance_tally(oss, calls, CATALOG)
    assert named is not None and (named.calls, named.right) == (3, 1)
    assert named.wrong == ("issue_get went to instance='work' (the task wants instance='oss')",) * 2
    unnamed = instance_tally(default, calls, CATALOG)
    assert unnamed is not None and (unnamed.calls, unnamed.right) == (3, 2)
    assert instance_tally(default, calls, load_suite("forge").catalog) is None  # no pass-through: nothing to judge


def test_the_cell_pools_calls_with_a_wilson_interval():
    rows = [{"instance_calls": 3, "instance_right": 1}, {"instance_calls": 4, "instance_right": 4},
            {"instance_calls": None, "instance_right": None}, {}]  # fmt: skip
    fields = instance_fields(rows)
    assert fields["instance_accuracy"] == pytest.approx(5 / 7)  # pooled over calls, not a mean of 1/3 and 1
    low, high = proportion_confint(5, 7, alpha=0.05, method="wilson")
    assert fields["instance_accuracy_ci_low"] == pytest.approx(low, abs=1e-9)
    assert fields["instance_accuracy_ci_high"] == pytest.approx(high, abs=1e-9)
    assert instance_fields([{}, {"instance_calls": 0, "instance_right": 0}])["instance_accuracy"] is None


def test_summarize_cell_and_the_registry_carry_it():
    base = {"expected_calls": 1, "first_try_correct": 1, "success": True, "round_trips": 1, "overhead_round_trips": 0,
            "prompt_tokens_per_step": 1, "request_bytes_per_step": 1, "recovered_after_error": 0,
            "failed_first_tries": 0, "boundary_violations": 0, "protocol_violations": 0, "parse_failures": 0,
            "stable_prefix": True, "latency_s": 0.0}  # fmt: skip
    summary = summarize_cell([{**base, "instance_calls": 2, "instance_right": 1}])
    assert summary.instance_accuracy == 0.5 and summary.metric("instance_accuracy") == 0.5
    assert METRICS["instance_accuracy"].higher_is_better is True


def test_the_gate_kind_judges_dispatcher_against_full_and_a_zero_is_a_fail():
    spec = load_criteria(ROOT / "configs/gate/dsh-instances.yaml")
    (criterion,) = spec["criteria"]
    assert criterion.kind == "instance_accuracy_ratio_max" and criterion.value == 1.0
    metric = METRICS["instance_accuracy"]
    c = Criterion("instance_accuracy_ratio_max", 1.0)
    assert _ratio_verdict(c, "dispatcher", "m", metric, 1.0, 1.0).outcome == "pass"
    assert _ratio_verdict(c, "dispatcher", "m", metric, 0.9, 1.0).outcome == "fail"  # lower than full
    lost = _ratio_verdict(c, "dispatcher", "m", metric, 0.0, 1.0)  # every call to the wrong instance
    assert lost.outcome == "fail" and "inf" in lost.observed
    assert _ratio_verdict(c, "dispatcher", "m", metric, 0.0, 0.0).outcome == "pass"  # as bad as full, not worse
    assert _ratio_verdict(c, "dispatcher", "m", metric, None, 1.0).outcome == "no evidence"
