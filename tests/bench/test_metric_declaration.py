"""One declaration per metric (issue 53): a metric declared in one place is in a run's summary, the report's cells
table, the gate's criterion kinds and the docs' metrics table, and the built-in metrics' declarations give exactly
the criterion kinds and paired metrics there were before."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.analysis.compare import paired_metrics
from surfbench.bench.analysis.metrics import (
    METRICS,
    Metric,
    MetricColumn,
    format_summary,
    metrics_table,
    register_metric,
    summarize_cell,
    unregister_metric,
)
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.report.gate import judge
from surfbench.bench.report.gate_criteria import KINDS, CriterionKind, load_criteria
from surfbench.bench.report.report import markdown
from surfbench.bench.report.report_data import CELL_HEAD, cell_head, cell_table, collect
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from tests.conftest import ROOT

SUITE, MODEL = "notes_mcp", "qwen2.5-coder-0.5b-instruct"  # the model's config only: the oracle answers


def _text(row: Mapping[str, Any]) -> str | None:
    text = row.get("final_text")
    return text if isinstance(text, str) else None


def answer_chars(row: Mapping[str, Any]) -> float | None:
    """Characters of the episode's final answer (None: it gave none)."""
    text = _text(row)
    return None if text is None else float(len(text))


# The whole declaration of each new metric: nothing else in the code base names them.
ANSWER_CHARS = Metric(
    "answer_chars", "answer chars", False, "characters of the episode's final text answer",
    per_episode=answer_chars, aggregate="mean", interval="t", criteria=("ratio", "limit"), column=True,
    after="success",
)  # fmt: skip
ANSWERED = Metric(
    "answered", "answered", True, "share of episodes that end with a text answer", "pct",
    per_episode=lambda row: _text(row) is not None, aggregate="share", interval="wilson", criteria=("drop",),
    column=True,
)  # fmt: skip


@pytest.fixture
def declared() -> Iterator[None]:
    register_metric(ANSWER_CHARS)
    register_metric(ANSWERED)
    try:
        yield
    finally:
        unregister_metric("answer_chars")
        unregister_metric("answered")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle on full and dispatcher over four notes tasks, recorded as `surfbench run` records a run."""
    root = tmp_path_factory.mktemp("declared") / "run"
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    cells = [resolve_cell(CellSpec(SUITE, s, MODEL, split="all", limit=4)) for s in ("full", "dispatcher")]
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, None, store, root.name, client=OracleClient(SUITE))  # type: ignore[arg-type]
    return root


def test_a_declared_metric_is_in_the_runs_summary(run: Path, declared: None):
    frame = load_runs([run])
    rows = frame[frame["surface"] == "dispatcher"].to_dict("records")
    summary = summarize_cell(rows)  # as `surfbench run` summarizes a cell (bench.cli.sweep.finish_job)
    lengths = [len(r["final_text"]) for r in rows if isinstance(r["final_text"], str)]
    assert lengths and summary.metric("answer_chars") == pytest.approx(sum(lengths) / len(lengths))
    low, high = summary.metric("answer_chars_ci_low"), summary.metric("answer_chars_ci_high")
    assert low is not None and high is not None and low <= summary.metric("answer_chars") <= high
    assert summary.metric("answered") == len(lengths) / len(rows)
    *_, chars, answered = format_summary(summary).splitlines()  # what `surfbench run` prints, the new ones last
    assert chars.startswith(f"answer chars           {ANSWER_CHARS.format(summary.metric('answer_chars'))} [")
    assert answered.startswith(f"answered               {ANSWERED.format(summary.metric('answered'))} [")


def test_a_declared_metric_is_a_column_of_the_reports_cells_table(run: Path, declared: None):
    data = collect([run])
    head = cell_head(data)
    assert head.index("answer chars [95% CI]") == head.index("success") + 1  # after= places it
    assert head[-1] == "answered [95% CI]" and [h for h in head if h in CELL_HEAD] == CELL_HEAD
    for cell, row in zip(data.cells, cell_table(data, optional=True), strict=True):
        value = cell.summary.metric("answer_chars")
        assert row[head.index("answer chars [95% CI]")].startswith(ANSWER_CHARS.format(value) + " [")
    assert "| answer chars [95% CI] |" in markdown(data, {})
    assert cell_table(data) == [[c for h, c in zip(head, row, strict=True) if h in CELL_HEAD] for row in
                                cell_table(data, optional=True)]  # fmt: skip


def test_every_metric_column_is_laid_by_its_declaration():
    """The cells table's metric columns come from the declarations (column, after), each in a shape the report
    prints; an after that names no column is refused when the table is laid."""
    from dataclasses import replace
    from typing import get_args

    from surfbench.bench.analysis.metric_registry import ColumnShape
    from surfbench.bench.report.report_data import REPORT_COLUMNS, SHAPES, all_cell_columns

    assert set(SHAPES) == set(get_args(ColumnShape))
    heads = [c.head for c in all_cell_columns()]
    assert len(heads) == len(set(heads)) and [h for h in heads if h in CELL_HEAD] == CELL_HEAD
    assert [h for h in heads if h in {c.head for c in REPORT_COLUMNS}] == [c.head for c in REPORT_COLUMNS]
    assert heads.index("round trips (overhead)") == heads.index("eff. tok/step, $/ep (local)") + 1
    register_metric(replace(ANSWERED, name="misplaced", after="no such column"))
    try:
        with pytest.raises(ValueError, match="after='no such column' is no column"):
            all_cell_columns()
    finally:
        unregister_metric("misplaced")


def test_a_declared_metric_is_a_gate_criterion_kind_judged_by_its_test(run: Path, declared: None, tmp_path: Path):
    assert KINDS["answer_chars_ratio_max"] == CriterionKind("answer_chars", "ratio")
    assert KINDS["answer_chars_max"] == CriterionKind("answer_chars", "limit")
    assert KINDS["answered_drop_max"] == CriterionKind("answered", "drop")
    path = tmp_path / "gate.yaml"
    criteria = [
        {"kind": "answer_chars_ratio_max", "value": 1.5},
        {"kind": "answer_chars_max", "value": 1},
        {"kind": "answered_drop_max", "value": 0.05, "on_fail": "close"},
    ]
    path.write_text(
        yaml.safe_dump({"name": "t", "baseline": "full", "candidates": ["dispatcher"], "criteria": criteria})
    )
    assert [c.kind for c in load_criteria(path)["criteria"]] == [c["kind"] for c in criteria]
    ratio, limit, drop = judge(path, [run]).verdicts
    # the oracle answers alike on both surfaces: the same mean, a ratio of 1
    assert ratio.outcome == "pass" and ratio.observed.startswith("answer chars ") and "= 1.00x" in ratio.observed
    assert limit.outcome == "fail" and limit.observed.endswith("(at most 1)")  # answers are longer than 1 character
    # a paired difference of 0 on 4 pairs: no drop seen, but too few pairs for a pass (as success_drop_max)
    assert drop.outcome == "underpowered" and drop.observed.startswith("drop +0.0 pts [95% CI +0.0, +0.0] over 4 tasks")
    criteria[2]["value"] = 5  # points, not a fraction: refused as for success_drop_max
    path.write_text(yaml.safe_dump({"name": "t", "baseline": "full", "criteria": criteria}))
    with pytest.raises(Exception, match="must be a fraction from 0 to 1"):
        load_criteria(path)


def test_a_declared_metric_is_not_judged_sequentially(run: Path, declared: None, tmp_path: Path):
    """The sequential gate takes its pairs from episode columns: a registered metric's criteria are refused there."""
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.sequential.sequential_gate import judge_sequential

    path = tmp_path / "gate.yaml"
    criteria = [{"kind": "answered_drop_max", "value": 0.05, "sequential": True}]
    path.write_text(
        yaml.safe_dump({"name": "t", "baseline": "full", "candidates": ["dispatcher"], "criteria": criteria})
    )
    with pytest.raises(ConfigError, match="answered_drop_max has no per-task value in the episodes"):
        judge_sequential(path, [run])


def test_a_declared_metric_has_its_row_in_the_docs_table(declared: None):
    row = next(line for line in metrics_table().splitlines() if line.startswith("| `answer_chars` |"))
    assert row == (
        "| `answer_chars` | answer chars | number | lower | `answer_chars_ratio_max`, `answer_chars_max` | "
        "mean per episode, t interval | characters of the episode's final text answer |"
    )
    assert (
        "| `answered` | answered | share (%) | higher | `answered_drop_max` | share of episodes, wilson interval |"
        in (metrics_table())
    )


def test_unregistering_leaves_the_built_in_registry(declared: None):
    unregister_metric("answer_chars")
    assert "answer_chars" not in METRICS and "answer_chars_ratio_max" not in KINDS
    register_metric(ANSWER_CHARS)  # for the fixture to forget again
    with pytest.raises(ValueError, match="built in"):
        unregister_metric("success_rate")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"name": "success_rate"}, "no metric or CellSummary field"),
        ({"name": "harness_errors"}, "no metric or CellSummary field"),
        ({"per_episode": None}, "give per_episode"),
        ({"computed_by": "bench.analysis.metrics.summarize_cell"}, "computed_by names where a built-in"),
        ({"interval": "wilson"}, "wilson goes with aggregate share"),
        ({"interval": "bootstrap", "aggregate": "sum"}, "bootstrap with mean or share"),
        ({"criteria": ("drop",)}, "needs kind pct"),
        ({"criteria": ("most",)}, "must be among drop, ratio, limit"),
        ({"criterion_stem": "round_trips"}, "exist already"),
        ({"column": MetricColumn(optional=False)}, "column is optional"),
        ({"column": MetricColumn("over", "no_such_metric")}, "its other must name one"),
        ({"column": MetricColumn("values")}, "must be one of value, beside"),  # type: ignore[arg-type]
        ({"column": True, "after": "answer chars"}, "names its own column"),
    ],
)
def test_a_declaration_that_cannot_work_is_refused(changes: dict[str, Any], problem: str):
    from dataclasses import replace

    with pytest.raises(ValueError, match=problem):
        register_metric(replace(ANSWER_CHARS, **changes))
    assert "answer_chars" not in METRICS


def test_a_registered_column_headed_as_another_is_refused_when_the_table_is_laid():
    from dataclasses import replace

    from surfbench.bench.report.report_data import all_cell_columns

    register_metric(replace(ANSWER_CHARS, label="success", interval=None, after=None))  # success_rate's head
    try:
        with pytest.raises(ValueError, match="two columns headed 'success'"):
            all_cell_columns()
    finally:
        unregister_metric("answer_chars")


def test_the_built_in_declarations_give_the_criterion_kinds_and_paired_metrics_there_were():
    assert dict(KINDS) == {
        "help_bytes_max": CriterionKind("help_bytes", "limit"),
        "prompt_tokens_ratio_max": CriterionKind("prompt_tokens_per_step", "ratio"),
        "first_try_drop_max": CriterionKind("first_try_accuracy", "drop"),
        "round_trips_ratio_max": CriterionKind("round_trips", "ratio"),
        "success_drop_max": CriterionKind("success_rate", "drop"),
        "call_share_ratio_max": CriterionKind("call_share", "ratio"),
        "state_share_ratio_max": CriterionKind("state_share", "ratio"),
        "efficiency_ratio_max": CriterionKind("efficiency", "ratio"),
        "instance_accuracy_ratio_max": CriterionKind("instance_accuracy", "ratio"),
        "effective_cost_ratio_max": CriterionKind("effective_cost_per_episode", "ratio"),
    }
    assert list(KINDS)[:5] == ["help_bytes_max", "prompt_tokens_ratio_max", "first_try_drop_max",
                               "round_trips_ratio_max", "success_drop_max"]  # fmt: skip
    assert paired_metrics() == ("success_rate", "first_try_accuracy")


def test_the_docs_metrics_table_is_the_one_the_declarations_give():
    """docs/metrics.md's table, between its markers, is ``metrics_table()``; after changing a declaration, paste
    ``python -c "from surfbench.bench.analysis.metrics import metrics_table; print(metrics_table())"``."""
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    block = text.split("<!-- metrics -->\n")[1].split("\n<!-- /metrics -->")[0]
    assert block == metrics_table()
    assert len(block.splitlines()) == 2 + len(METRICS)  # every built-in metric has its row


@pytest.mark.parametrize("aggregate", ["mean", "share"])
def test_a_bootstrap_interval_is_the_credit_columns_bca_interval_within_the_values_range(aggregate: str):
    from dataclasses import replace

    from surfbench.bench.analysis.credit_summary import mean_interval
    from surfbench.bench.analysis.metrics import declared_fields

    metric = replace(ANSWER_CHARS, name="answer_boot", interval="bootstrap", aggregate=aggregate, criteria=())
    rows = [{"final_text": "x" * n} for n in (3, 5, 0, 8, 13, 2)]
    got = declared_fields(metric, rows)
    values = [float(answer_chars(r)) for r in rows]  # type: ignore[arg-type]
    if aggregate == "share":
        values = [float(bool(v)) for v in values]
    mean, low, high = mean_interval(values)
    assert got == {"answer_boot": mean, "answer_boot_ci_low": low, "answer_boot_ci_high": high}
    assert low is not None and high is not None and min(values) <= low <= mean <= high <= max(values)


# -- the built-in metrics are computed from their declarations too ------------------------------------------
def _episode(**changes: Any) -> dict[str, Any]:
    row = {
        "expected_calls": 2, "first_try_correct": 1, "selection_correct": True, "success": True, "round_trips": 3,
        "overhead_round_trips": 1, "prompt_tokens_per_step": 100.5, "request_bytes_per_step": 10.0,
        "recovered_after_error": 1, "failed_first_tries": 2, "boundary_violations": 0, "protocol_violations": 1,
        "parse_failures": 0, "stable_prefix": True, "latency_s": 1.25, "stuck": False, "error": None, "outcome": "ran",
    }  # fmt: skip
    return {**row, **changes}


def test_a_built_in_metrics_cell_value_comes_from_its_declaration(monkeypatch: pytest.MonkeyPatch):
    from dataclasses import replace

    rows = [_episode(latency_s=1.0, round_trips=2), _episode(latency_s=3.0, round_trips=5)]
    before = summarize_cell(rows)
    assert (before.latency_s, before.round_trips, before.failed_first_tries) == (2.0, 3.5, 4)
    monkeypatch.setitem(METRICS, "latency_s", replace(METRICS["latency_s"], per_episode=lambda r: 10 * r["latency_s"]))
    monkeypatch.setitem(METRICS, "round_trips", replace(METRICS["round_trips"], aggregate="sum"))
    monkeypatch.setitem(METRICS, "failed_first_tries", replace(METRICS["failed_first_tries"], per_episode=lambda _: 1))
    after = summarize_cell(rows)
    assert (after.latency_s, after.round_trips, after.failed_first_tries) == (20.0, 7.0, 2)
    assert after.extra == {} and after.success_rate == before.success_rate  # a built-in one fills its own field


def test_the_built_in_aggregates_keep_their_types_and_missing_values():
    """Counts are ints (0 for an empty cell); a missing stable prefix counts as not stable, a missing stuck is
    skipped (a run recorded before stuck detection), a missing selection is skipped."""
    rows = [_episode(), _episode(stable_prefix=None, selection_correct=None, outcome="harness_error", success=False)]
    rows.append(
        {k: v for k, v in _episode(error="does not fit: 9,000 tokens").items() if k not in ("stuck", "outcome")}
    )
    s = summarize_cell(rows)
    counts = (s.episodes, s.recovered_after_error, s.failed_first_tries, s.harness_errors, s.does_not_fit)
    assert counts == (3, 3, 6, 1, 1) and s.context_overflows == 0
    assert all(type(v) is int for v in (s.episodes, s.recovered_after_error, s.harness_errors, s.context_overflows))
    assert (s.stable_prefix_rate, s.selection_accuracy, s.stuck_rate, s.success_rate) == (2 / 3, 1.0, 0.0, 2 / 3)
    empty = summarize_cell([])
    assert (empty.episodes, empty.recovered_after_error, empty.harness_errors) == (0, 0, 0)
    assert empty.success_rate is None and empty.latency_s is None and empty.stuck_rate is None


def test_every_built_in_metric_declares_how_it_is_computed():
    """Each built-in metric either declares its value per episode or names the function that computes it, and
    every field of the cell summary is a metric, an end of a metric's interval, or first-try's denominator."""
    import importlib
    from dataclasses import fields

    from surfbench.bench.analysis.metrics import BUILTIN
    from surfbench.bench.store.tables import CellSummary

    for name in BUILTIN:
        metric = METRICS[name]
        assert (metric.per_episode is None) != (metric.computed_by is None), name
        if metric.computed_by is not None:
            module, function = metric.computed_by.rsplit(".", 1)
            assert callable(getattr(importlib.import_module(f"surfbench.{module}"), function)), metric.computed_by
    ends = {
        f"{stem}_ci_{end}" for m in METRICS.values() for stem in {m.name, m.criterion_stem} for end in ("low", "high")
    }
    for f in fields(CellSummary):
        assert f.name in METRICS or f.name in ends or f.name in ("expected_calls", "extra"), f.name


def test_a_total_of_a_fractional_value_is_refused_not_cut():
    # aggregate "total" counts whole numbers: a per-episode 0.5 would print as 0
    from surfbench.bench.analysis.metrics import Metric, declared_fields

    metric = Metric("halves", "halves", True, "a test metric", "count", per_episode=lambda r: 0.5, aggregate="total")
    with pytest.raises(ValueError, match="whole numbers"):
        declared_fields(metric, [{"x": 1}])
    whole = Metric("ones", "ones", True, "a test metric", "count", per_episode=lambda r: 1.0, aggregate="total")
    assert declared_fields(whole, [{"x": 1}, {"x": 2}]) == {"ones": 2}
