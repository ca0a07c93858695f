"""Aggregate episode rows into the per-cell numbers reports show, and print them.

The metrics are declared in bench.analysis.metric_registry (:class:`Metric`, :data:`METRICS`,
:func:`register_metric`; importable from here too): each one's label, format, direction, gate criteria, docs line,
cells-table column and how it is computed: a value per episode aggregated per cell (``per_episode``, ``aggregate``,
``interval``: every metric added with :func:`register_metric` and the built-in ones that are one), or, for a
built-in metric that is not, the function that computes it (``computed_by``). :func:`summarize_cell` computes the
cell summary from them, :func:`metrics_table` the metrics table of docs/metrics.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from surfbench.bench.analysis.credit_summary import credit_fields, mean_interval
from surfbench.bench.analysis.instance_accuracy import instance_fields
from surfbench.bench.analysis.metric_registry import BUILTIN as BUILTIN
from surfbench.bench.analysis.metric_registry import METRICS as METRICS
from surfbench.bench.analysis.metric_registry import Metric as Metric
from surfbench.bench.analysis.metric_registry import MetricColumn as MetricColumn
from surfbench.bench.analysis.metric_registry import declared as declared
from surfbench.bench.analysis.metric_registry import fmt as fmt
from surfbench.bench.analysis.metric_registry import register_metric as register_metric
from surfbench.bench.analysis.metric_registry import unregister_metric as unregister_metric
from surfbench.bench.base.proportions import wilson as wilson  # where the reports' callers import it from
from surfbench.bench.base.values import decoded
from surfbench.bench.base.values import missing as _missing
from surfbench.bench.store.tables import CellSummary, as_float, as_int


def summarize_cell(rows: list[Mapping[str, object]]) -> CellSummary:
    """The cell's aggregate numbers from its episode rows (dicts or DataFrame records).

    Every metric that declares ``per_episode`` is computed from its declaration (:func:`declared_fields`): a built-in
    one into its CellSummary field, a registered one into ``extra``. The others are computed where their
    ``computed_by`` says: first-try accuracy here (correct first tries over expected calls, summed over the cell,
    with a Wilson interval), the cost, credit and instance fields by their own functions.
    """
    tries = [first_try_part(r) for r in rows]
    correct, expected = sum(c for c, _ in tries), sum(n for _, n in tries)
    low, high = wilson(correct, expected)
    built_in: dict[str, Any] = {}  # CellSummary's fields: an int for a total, else a float or None
    extra: dict[str, float | None] = {}
    for metric in METRICS.values():
        if metric.per_episode is not None:
            (built_in if metric.name in BUILTIN else extra).update(declared_fields(metric, rows))
    computed_by: dict[str, Any] = {
        **_cost_fields(rows),
        **credit_fields(rows),  # partial and efficient credit, the policy (bench.analysis.credit_summary)
        **instance_fields(rows),  # pass-through parameters (bench.analysis.instance_accuracy)
    }
    return CellSummary(
        **built_in,
        first_try_accuracy=correct / expected if expected else None,
        first_try_ci_low=low if expected else None,
        first_try_ci_high=high if expected else None,
        expected_calls=expected,
        **computed_by,
        extra=extra,  # register_metric's
    )


def first_try_part(row: Mapping[str, object]) -> tuple[int, int]:
    """An episode's (correct first tries, expected calls): ``first_try_accuracy`` is their sums' ratio over a cell."""
    return as_int(row["first_try_correct"]), as_int(row["expected_calls"])


RATIOS: dict[str, Callable[[Mapping[str, object]], tuple[int, int]]] = {"first_try_accuracy": first_try_part}
"""The built-in metrics without ``per_episode`` that :func:`summarize_cell` computes as a ratio of sums of
per-episode (numerator, denominator) parts, and those parts (bench.analysis.whatif's paired intervals read them)."""


def declared_fields(metric: Metric, rows: list[Mapping[str, object]]) -> dict[str, float | None]:
    """A metric's cell value (and its interval, if it declares one) from its ``per_episode`` over the cell's rows.

    Missing values (None, NaN, pandas' NA) are skipped; a ``total`` is an int, the others a float or None.
    """
    assert metric.per_episode is not None
    given = [v for v in (metric.per_episode(r) for r in rows) if v is not None and not _missing(v)]
    if metric.aggregate == "total":  # a count: printed as a whole number, 0 for an empty cell
        fractional = [v for v in given if float(v) != int(float(v))]
        if fractional:  # as_int would cut 0.5 to 0 without a word
            raise ValueError(f"metric {metric.name!r}: aggregate total counts whole numbers, got {fractional[0]!r}")
        return {metric.name: sum(as_int(v) for v in given)}
    values = [float(v) for v in given]
    n = len(values)
    if metric.aggregate == "sum":
        value = sum(values) if n else None
    elif metric.aggregate == "share":
        value = sum(1 for v in values if v) / n if n else None
    else:
        value = sum(values) / n if n else None
    if metric.interval is None:
        return {metric.name: value}
    low = high = None
    if metric.interval == "wilson" and n:
        low, high = wilson(sum(1 for v in values if v), n)
    elif metric.interval == "t" and value is not None and n > 1:
        from scipy.stats import t

        half = float(t.ppf(0.975, n - 1)) * math.sqrt(sum((v - value) ** 2 for v in values) / (n - 1) / n)
        low, high = value - half, value + half
    elif metric.interval == "bootstrap":  # of the mean of the values, or of 0/1 for a share: the share
        sample = [float(bool(v)) for v in values] if metric.aggregate == "share" else values
        _, low, high = mean_interval(sample)
    low_end, high_end = metric.interval_ends()
    return {metric.name: value, low_end: low, high_end: high}


def _cost_fields(rows: list[Mapping[str, object]]) -> dict[str, float | None]:
    cost = summarize_cost(rows)
    return {"cached_share": cost.cached_share, "cost_per_episode": cost.cost_per_episode,
            "cost_per_solved": cost.cost_per_solved}  # fmt: skip


@dataclass(frozen=True)
class CostSummary:
    """A cell's prompt-cache share and model cost (the ``cached_share`` / ``cost_*`` metrics)."""

    cached_share: float | None
    """Cached prompt tokens over prompt tokens, over the episodes whose provider reports cached tokens."""
    cost_per_episode: float | None
    """Mean model cost (USD) per episode."""
    cost_per_solved: float | None
    """Total model cost over the solved episodes; None when none was solved."""
    cost_total: float
    """Model cost of the cell (USD)."""


def summarize_cost(rows: list[Mapping[str, object]]) -> CostSummary:
    """Cached share and cost per episode / per solved episode, from episode rows."""
    reported = [r for r in rows if not _missing(r.get("cached_prompt_tokens_total"))]
    prompt = sum(as_int(r["prompt_tokens_total"] or 0) for r in reported if not _missing(r.get("prompt_tokens_total")))
    cached = sum(as_int(r["cached_prompt_tokens_total"]) for r in reported)
    total = sum(as_float(r.get("cost_usd") or 0.0) for r in rows)
    solved = sum(1 for r in rows if r.get("success") and not _missing(r.get("success")))
    return CostSummary(
        cached_share=cached / prompt if prompt else None,
        cost_per_episode=total / len(rows) if rows else None,
        cost_per_solved=total / solved if solved else None,
        cost_total=total,
    )


def per_operation(rows: Iterable[Mapping[str, object]]) -> dict[str, tuple[int, int]]:
    """First-try (correct, attempts) per operation, from the episodes' ``first_tries`` column."""
    out: dict[str, list[int]] = {}
    for r in rows:
        tries = r["first_tries"]
        for ft in decoded(tries):
            slot = out.setdefault(ft["op"], [0, 0])
            slot[0] += 1 if ft["correct"] else 0
            slot[1] += 1
    return {op: (c, n) for op, (c, n) in out.items()}


def show(summary: CellSummary, name: str) -> str:
    """Metric ``name`` of ``summary`` in the metric's own format."""
    return METRICS[name].format(summary.metric(name))


def format_summary(summary: CellSummary) -> str:
    """The cell's numbers as ``surfbench run`` prints them after a sweep."""
    ci = ""
    if summary.first_try_ci_low is not None:
        ci = f" [{fmt(summary.first_try_ci_low, 'pct')}, {fmt(summary.first_try_ci_high, 'pct')}]"
    lines = [
        f"episodes               {show(summary, 'episodes')}",
        f"success                {show(summary, 'success_rate')}",
        f"first-try arg accuracy {show(summary, 'first_try_accuracy')}{ci} over {summary.expected_calls} calls",
        f"tool selection         {show(summary, 'selection_accuracy')}",
        f"round trips / episode  {show(summary, 'round_trips')} (overhead {show(summary, 'overhead_round_trips')})",
        f"prompt tokens / step   {show(summary, 'prompt_tokens_per_step')}",
        f"request bytes / step   {show(summary, 'request_bytes_per_step')}",
        f"recovered after error  {show(summary, 'recovered_after_error')} of {summary.failed_first_tries}",
        f"boundary violations    {show(summary, 'boundary_violations')} / episode",
        f"protocol violations    {show(summary, 'protocol_violations')} / episode",
        f"parse failures         {show(summary, 'parse_failures')} / episode",
        f"stable prefix          {show(summary, 'stable_prefix_rate')}",
        f"model latency          {show(summary, 'latency_s')} s / episode",
    ]
    # partial credit (bench.analysis.credit_summary)
    if summary.call_share is not None or summary.state_share is not None:
        calls, state = show(summary, "call_share"), show(summary, "state_share")
        lines.append(f"partial credit         {calls} of expected calls matched, {state} of state checks hold")
    if summary.efficiency is not None:
        lines.append(f"efficiency             {show(summary, 'efficiency')} (minimal / taken round trips, solved)")
    if summary.policy_denials is not None:
        recovered = show(summary, "policy_recovered")
        lines.append(f"policy denials        {show(summary, 'policy_denials')} / episode (recovered {recovered})")
    if summary.instance_accuracy is not None:  # pass-through parameters (bench.analysis.instance_accuracy)
        lines.append(f"instance accuracy      {show(summary, 'instance_accuracy')} of calls reached the task's one")
    if summary.stuck_rate is not None:
        lines.append(f"stuck                  {show(summary, 'stuck_rate')} of episodes (same failing call 3x)")
    if summary.context_overflows:
        lines.append(f"context overflows      {summary.context_overflows} (the conversation outgrew the model)")
    if summary.does_not_fit:
        lines.append(f"does not fit           {summary.does_not_fit} (first request over the context window: not sent)")
    if summary.harness_errors:
        lines.append(f"harness errors         {summary.harness_errors}")
    for metric in declared():  # register_metric's, where the cell has a value
        value = summary.extra.get(metric.name)
        if not _missing(value):
            low, high = (summary.extra.get(end) for end in metric.interval_ends())
            ci = f" [{metric.format(low)}, {metric.format(high)}]" if not _missing(low) else ""
            lines.append(f"{metric.label:<22} {metric.format(value)}{ci}")
    return "\n".join(lines)


FORMATS = {"pct": "share (%)", "num": "number", "count": "count", "usd": "USD"}
"""How docs/metrics.md names each print format (:attr:`Metric.kind`)."""
DOCS_HEAD = ["metric", "label", "format", "better", "gate criteria", "computed", "meaning"]
HOW = {"mean": "mean per episode", "sum": "sum over episodes", "share": "share of episodes",
       "total": "total over episodes"}  # fmt: skip
"""How docs/metrics.md says a metric with ``per_episode`` is aggregated (:attr:`Metric.aggregate`)."""


def computed(m: Metric) -> str:
    """How ``m`` is computed, as docs/metrics.md's table says it: its aggregate (and interval), or ``computed_by``."""
    if m.per_episode is not None:
        return HOW[m.aggregate] + (f", {m.interval} interval" if m.interval else "")
    return f"`{m.computed_by}`" if m.computed_by else "-"


def metrics_table() -> str:
    """The metrics table of docs/metrics.md (between ``<!-- metrics -->`` and ``<!-- /metrics -->``), from METRICS."""
    from surfbench.bench.base.markdown import markdown_table

    better = {True: "higher", False: "lower", None: "-"}
    rows = [
        [f"`{m.name}`", m.label, FORMATS[m.kind], better[m.higher_is_better],
         ", ".join(f"`{k}`" for k in m.criterion_kinds().values()) or "-", computed(m), m.description]
        for m in METRICS.values()
    ]  # fmt: skip
    return markdown_table(DOCS_HEAD, rows)
