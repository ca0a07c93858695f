"""Partial and efficient credit on hand-built episodes with known answers, and their per-cell means and intervals.

Definitions: docs/metrics.md (partial and efficient credit); code: bench/score/credit.py (per episode),
bench/analysis/credit_summary.py (per cell). The intervals are checked against scipy's bootstrap and to lie in [0, 1].
"""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pytest
from scipy import stats

from surfbench.bench.analysis.credit_summary import mean_interval
from surfbench.bench.analysis.metrics import summarize_cell
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.records import CallRecord, EpisodeTrace, StepRecord
from surfbench.bench.report.gate import _verdict
from surfbench.bench.report.gate_criteria import Criterion, load_criteria
from surfbench.bench.report.report_data import CELL_HEAD, CellRow, ReportData, cell_head, cell_table
from surfbench.bench.score.credit import episode_credit, min_round_trips
from surfbench.bench.suites.checks import CheckContext, calls_check
from surfbench.bench.suites.expected import ExpectedCall, OneOfCall
from surfbench.bench.suites.suite_model import StateCheck, Task


def ok(op: str, **args: Any) -> CallRecord:
    return CallRecord(0, 0, op, args, "operation", op, None, None, True, True, "{}")


def failed(op: str, **args: Any) -> CallRecord:
    return CallRecord(0, 0, op, args, "operation", op, None, ErrorType.BACKEND_ERROR, True, False, "Error: no")


def step(i: int) -> StepRecord:
    return StepRecord(i, 100, "estimated", 10, 10, None, 5, 0.1, 3, 50, "h", 1, False, None, 0, False, "stop", 0.0)


def trace(calls: list[CallRecord], steps: int, **fields: Any) -> EpisodeTrace:
    return EpisodeTrace(steps=[step(i) for i in range(steps)], calls=calls, final_text="done", **fields)


A, B, C = ExpectedCall("a_get", {"id": 1}), ExpectedCall("b_set", {}), ExpectedCall("c_add", {})
ORDERED = Task(id="t", turns=("do it",), expected=(A, B, C))


# -- per episode ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("task", "calls", "share"),
    [
        (ORDERED, [ok("a_get", id=1), ok("b_set"), ok("c_add")], 1.0),
        (ORDERED, [ok("b_set"), ok("c_add")], 2 / 3),  # a_get missing: the rest still count
        (ORDERED, [ok("a_get", id=2), ok("b_set"), ok("c_add")], 2 / 3),  # a_get with the wrong id
        (ORDERED, [ok("c_add"), ok("b_set"), ok("a_get", id=1)], 1 / 3),  # out of order: only a_get, then none after
        (Task(id="t", turns=("x",), expected=(A, B, C), order="any"), [ok("c_add"), ok("b_set"), ok("a_get", id=1)], 1),
        (ORDERED, [failed("a_get", id=1), ok("b_set")], 1 / 3),  # a failed call matches nothing
        (ORDERED, [], 0.0),
        (Task(id="t", turns=("x",), expected=(OneOfCall.of((A, B)),)), [ok("b_set")], 1.0),  # either alternative
        (Task(id="t", turns=("x",)), [ok("b_set")], None),  # no expected call: no share
    ],
)
def test_call_share_is_the_share_of_expected_calls_the_calls_checks_matching_finds(task, calls, share):
    credit = episode_credit(task, trace(calls, 2), success=False)
    assert credit.call_share == (pytest.approx(share) if share is not None else None)
    if task.expected:  # 1.0 exactly when the calls check passes
        executed = tuple(c for c in calls if c.backend_ok)
        passed = calls_check(task, trace(calls, 2), CheckContext(None, executed)).passed  # type: ignore[arg-type]
        assert passed == (credit.call_share == 1.0)


def test_state_share_counts_each_state_check_as_its_check_judges_it():
    checks = (
        StateCheck(("issues", "3", "state"), equals="closed", has_equals=True),
        StateCheck(("issues", "4"), exists=True),
        StateCheck(("labels",), len=2),
        StateCheck(("issues", "3", "state"), equals="open", has_equals=True, turn=0),  # after turn 0: holds
        StateCheck(("issues", "5"), exists=True, turn=1),  # turn 1 never answered: does not hold
    )
    task = Task(id="t", turns=("a", "b"), state=checks)
    final = {"issues": {"3": {"state": "closed"}, "4": {}}, "labels": ["x"]}
    credit = episode_credit(task, trace([], 3, state=final, turn_states=[{"issues": {"3": {"state": "open"}}}]), False)
    assert credit.state_share == pytest.approx(3 / 5)
    assert episode_credit(Task(id="t", turns=("a",)), trace([], 1), False).state_share is None


@pytest.mark.parametrize(
    ("task", "least"),
    [
        (ORDERED, 4),  # three dependent calls, one round trip each, then the answer
        (Task(id="t", turns=("x",), expected=(A, B, C), order="any"), 2),  # all three at once, then the answer
        (Task(id="t", turns=("x", "y"), expected=(ExpectedCall("a", turn=0), ExpectedCall("b", turn=1))), 4),
        (Task(id="t", turns=("x", "y"), expected=(A, ExpectedCall("b", turn=1)), order="any"), 4),  # 2 groups
        (Task(id="t", turns=("x",), refuse=True), 1),  # a refusal: the answer only
    ],
)
def test_min_round_trips_come_from_the_expected_calls(task: Task, least: int):
    assert min_round_trips(task) == least


def test_efficiency_is_minimal_over_taken_round_trips_for_a_solved_episode_only():
    calls = [ok("a_get", id=1), ok("b_set"), ok("c_add")]
    assert episode_credit(ORDERED, trace(calls, 4), success=True).efficiency == 1.0
    assert episode_credit(ORDERED, trace(calls, 8), success=True).efficiency == 0.5
    assert episode_credit(ORDERED, trace(calls, 2), success=True).efficiency == 2.0  # one program made all three
    assert episode_credit(ORDERED, trace(calls, 4), success=False).efficiency is None
    assert episode_credit(ORDERED, trace(calls, 4, error="boom"), success=True).efficiency is None


def test_policy_counts_are_none_without_a_policy_and_count_denied_refused_and_asked_calls():
    denied = ErrorType.POLICY_DENIED
    stopped = CallRecord(0, 0, "x", {}, "rejected", "a_get", None, denied, True, None, "no", policy="deny")
    refused = CallRecord(0, 1, "x", {}, "rejected", "b_set", None, ErrorType.POLICY_REFUSED, True, None, "no",
                         policy="refused")  # fmt: skip
    approved = CallRecord(0, 2, "c_add", {}, "operation", "c_add", None, None, True, True, "{}", policy="approved")
    episode = trace([stopped, refused, approved], 3)
    plain = episode_credit(ORDERED, episode, success=True)
    assert (plain.policy_denials, plain.policy_asked, plain.policy_recovered) == (None, None, None)
    policed = episode_credit(ORDERED, episode, success=True, policed=True)
    assert (policed.policy_denials, policed.policy_asked, policed.policy_recovered) == (2, 2, True)
    clean = episode_credit(ORDERED, trace([approved], 2), success=False, policed=True)
    assert (clean.policy_denials, clean.policy_recovered) == (0, None)  # nothing stopped: recovery does not apply


# -- per cell: means and bootstrap intervals -----------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 7, 40])
def test_the_mean_interval_is_scipys_bca_bootstrap_and_stays_within_the_values(n: int):
    rng = random.Random(n)
    values = [rng.choice([0.2, 0.25, 1 / 3, 0.5, 1.0]) for _ in range(n - 1)] + [1.0]
    mean, low, high = mean_interval(values)
    assert mean == pytest.approx(sum(values) / n)
    assert low is not None and high is not None and min(values) <= low <= mean <= high <= max(values)
    if len(set(values)) > 1 and n > 3:
        ref = stats.bootstrap((values,), np.mean, n_resamples=9999, method="BCa", random_state=0).confidence_interval
        assert (low, high) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_an_efficiency_of_a_handful_of_episodes_has_no_interval_past_100_percent():
    # a reference run's full: efficiency 54% with Student's t interval [4%, 104%]; a share cannot pass 0 or 1
    values = [1.0, 0.2, 0.25, 1.0, 0.25]
    t_high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))[1]
    assert t_high > 1.0  # the old interval
    mean, low, high = mean_interval(values)
    assert 0.0 <= low <= mean <= high <= 1.0  # type: ignore[operator]
    assert mean_interval([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)  # every value the same: that value
    assert mean_interval([0.5]) == (0.5, None, None) and mean_interval([]) == (None, None, None)


def test_the_95_percent_interval_covers_the_true_mean_about_95_percent_of_the_time():
    rng = random.Random(7)
    hits = 0
    for _ in range(300):
        _, low, high = mean_interval([min(1.0, max(0.0, rng.gauss(0.5, 0.2))) for _ in range(20)])
        hits += low is not None and high is not None and low <= 0.5 <= high
    assert 0.9 <= hits / 300 <= 0.99


ROW = {
    "expected_calls": 3, "first_try_correct": 2, "success": True, "round_trips": 4, "overhead_round_trips": 0,
    "prompt_tokens_per_step": 10.0, "request_bytes_per_step": 10.0, "recovered_after_error": 0,
    "failed_first_tries": 0, "boundary_violations": 0, "protocol_violations": 0, "parse_failures": 0,
    "stable_prefix": True, "latency_s": 1.0, "stuck": False, "error": None,
}  # fmt: skip


def rows() -> list[dict[str, Any]]:
    credit = [(1.0, 1.0, 1.0, 0), (2 / 3, 0.5, None, 1), (1 / 3, None, 0.5, 2), (None, 1.0, 0.75, 0)]
    return [
        {**ROW, "call_share": c, "state_share": s, "efficiency": e, "policy_denials": d,
         "policy_recovered": None if not d else e is not None}
        for c, s, e, d in credit
    ]  # fmt: skip


def test_the_cell_summary_holds_each_mean_over_the_episodes_that_have_it_with_its_interval():
    summary = summarize_cell(rows())
    assert summary.call_share == pytest.approx(2 / 3) and summary.state_share == pytest.approx(2.5 / 3)
    assert summary.efficiency == pytest.approx(0.75)
    _, low, high = mean_interval([1.0, 0.5, 0.75])  # the bootstrap interval, within the values: [0.5, 1.0]
    assert (summary.efficiency_ci_low, summary.efficiency_ci_high) == (low, high) and 0.5 <= low < high <= 1.0
    assert summary.policy_denials == pytest.approx(0.75) and summary.policy_recovered == pytest.approx(0.5)
    assert summary.success_rate == 1.0 and summary.first_try_accuracy == pytest.approx(2 / 3)  # unchanged
    old = summarize_cell([ROW, ROW])  # rows recorded before these columns
    assert (old.call_share, old.efficiency_ci_low, old.policy_denials, old.policy_recovered) == (None,) * 4


def test_the_report_shows_partial_credit_beside_success_only_where_measured():
    keys = {"suite": "forge", "surface": "full", "surface_kind": "full", "model": "m", "params_b": 0.5}
    keys["mode"] = "native"
    measured = CellRow(keys, summarize_cell(rows()), 100.0, 3.0)
    data = ReportData(["r"], [measured], [], {}, [], set(), "full")
    head, table = cell_head(data), cell_table(data, optional=True)
    after = head[head.index("success") + 1 : head.index("success") + 6]
    assert after == ["calls matched [95% CI]", "state checks [95% CI]", "efficiency [95% CI]", "policy denials",
                     "recovered (policy)"]  # fmt: skip
    cells = dict(zip(head, table[0], strict=True))
    assert cells["efficiency [95% CI]"] == "75% [50%, 100%]" and cells["policy denials"] == "0.8"
    assert cell_table(data) == [[c for h, c in zip(head, table[0], strict=True) if h in CELL_HEAD]]
    old = ReportData(["r"], [CellRow(keys, summarize_cell([ROW]), 100.0, 3.0)], [], {}, [], set(), "full")
    assert cell_head(old) == CELL_HEAD  # runs without the metrics keep their table


def test_a_gate_criterion_can_judge_efficiency_against_the_baseline(tmp_path: Any):
    path = tmp_path / "gate.yaml"
    kinds = ("{kind: efficiency_ratio_max, value: 1.25}", "{kind: call_share_ratio_max, value: 1.1}")
    path.write_text("criteria:\n" + "".join(f"  - {k}\n" for k in kinds))
    crits = load_criteria(path)["criteria"]
    base = summarize_cell([{**ROW, "efficiency": 0.9, "call_share": 1.0}] * 2)
    worse = summarize_cell([{**ROW, "efficiency": 0.6, "call_share": 0.95}])
    close = summarize_cell([{**ROW, "efficiency": 0.8, "call_share": 0.8}])
    assert _verdict(crits[0], "code", "m", base, worse, None, {}).outcome == "fail"  # 0.9 / 0.6 = 1.5x
    assert _verdict(crits[0], "code", "m", base, close, None, {}).outcome == "pass"  # 1.125x
    assert _verdict(crits[1], "code", "m", base, worse, None, {}).outcome == "pass"  # 1.05x
    assert _verdict(crits[1], "code", "m", base, close, None, {}).outcome == "fail"  # 1.25x
    assert math.isclose(worse.efficiency or 0, 0.6)
    assert _verdict(Criterion("efficiency_ratio_max", 1.25), "c", "m", base, summarize_cell([ROW]), None, {}).outcome \
        == "no evidence"  # fmt: skip
