"""Aggregate episode rows into the per-cell numbers reports show, and the registry of those metrics.

Each metric is one declaration (:class:`Metric`, in :data:`METRICS`): its label, how it prints, whether higher is
better, the gate criteria it allows, its docs line and how it is computed: a value per episode aggregated per cell
(``per_episode``, ``aggregate``, ``interval``: every metric added with :func:`register_metric` and the built-in ones
that are one), or, for a built-in metric that is not, the function that computes it (``computed_by``). The cell
summary, the gate's criterion kinds, the metrics table of docs/metrics.md and the labels and formats of the
report's cells table come from the declarations, so that nothing downstream hard-codes a direction (the
lm-evaluation-harness lesson).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal

from surfbench.bench.analysis.credit_summary import credit_fields, mean_interval
from surfbench.bench.analysis.instance_accuracy import instance_fields
from surfbench.bench.base.proportions import wilson as wilson  # where the reports' callers import it from
from surfbench.bench.base.values import decoded
from surfbench.bench.base.values import missing as _missing
from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.store.tables import CellSummary, as_float, as_int

MetricKind = Literal["pct", "num", "count", "usd"]
Test = Literal["drop", "ratio", "limit"]
"""How a gate criterion judges a metric (bench.report.gate_criteria.CriterionKind)."""
Aggregate = Literal["mean", "sum", "share", "total"]
Interval = Literal["wilson", "t", "bootstrap"]


@dataclass(frozen=True)
class Metric:
    """One number reports and gates show: what it is, how it prints, which way is better, what judges it.

    The whole declaration of a metric: how it is computed (``per_episode``, ``aggregate``, ``interval``, or, for a
    built-in one computed otherwise, ``computed_by``) and, for a registered one (:func:`register_metric`), whether
    the cells table shows it (``column``, ``after``).
    """

    name: str
    """The CellSummary field (for the built-in per-cell metrics; a registered metric's value is in
    ``CellSummary.extra``) and the name criteria and tables refer to it by."""
    label: str
    """Short column label (report and whatif tables, gate lines)."""
    higher_is_better: bool | None
    """None where there is no better direction (latency is lower-better; counts of episodes are neutral)."""
    description: str
    """Its line in docs/metrics.md's metrics table (:func:`metrics_table`)."""
    kind: MetricKind = "num"
    """How values print: ``pct`` (a share, as 42%), ``num`` (1 decimal, thousands separated), ``count`` (as is)."""
    per_cell: bool = True
    """Aggregated per cell by :func:`summarize_cell`; False for a property of the surface (help payload size)."""
    criteria: tuple[Test, ...] = ()
    """The gate tests it allows, each a criterion kind (:meth:`criterion_kinds`): ``drop`` (a paired difference of
    a share), ``ratio`` (the candidate's cell value over the baseline's), ``limit`` (a bound on the value)."""
    criterion_stem: str | None = None
    """The stem of its criterion kinds' names (``first_try`` in ``first_try_drop_max``); None: its name."""
    per_episode: Callable[[Mapping[str, Any]], float | bool | None] | None = None
    """The metric's value for one episode, from its row (a mapping of the EpisodeRow columns; read them with
    ``.get``: older runs and whatif's rescored rows lack some); None or NaN: no value. :func:`summarize_cell`
    aggregates it (:func:`declared_fields`); None for a built-in metric computed otherwise (``computed_by``)."""
    aggregate: Aggregate = "mean"
    """How :func:`summarize_cell` makes the per-episode values one per cell: their ``mean``, their ``sum``, the
    ``share`` of the episodes with a value whose value is true, or their ``total``: the sum of whole numbers, an
    int, 0 for a cell without any (a count: recovered operations, episodes that ended one way)."""
    interval: Interval | None = None
    """The 95% interval the cell summary gives beside it (``NAME_ci_low`` / ``NAME_ci_high``): ``wilson`` for a
    share, ``t`` (Student t) for a mean, ``bootstrap`` (BCa, scipy: within the values' range, as the credit columns'
    intervals) for a mean or a share, None for none."""
    column: bool = False
    """A registered metric: the report's cells table has a column for it when some cell has a value (the built-in
    metrics' columns are bench.report.report_data.CELL_COLUMNS)."""
    after: str | None = None
    """The head of the cells-table column its column follows; None: at the end."""
    computed_by: str | None = None
    """A built-in metric without ``per_episode``: the function that computes it (its dotted name under ``surfbench``,
    e.g. ``bench.analysis.credit_summary.credit_fields``), which docs/metrics.md's table names."""

    def criterion_kinds(self) -> dict[Test, str]:
        """Each test of :attr:`criteria` -> its criterion kind: ``STEM_max`` (limit), ``STEM_drop_max``, ...ratio."""
        stem = self.criterion_stem or self.name
        return {test: f"{stem}_max" if test == "limit" else f"{stem}_{test}_max" for test in self.criteria}

    def format(self, value: float | None) -> str:
        """``value`` as reports print this metric ("-" when missing)."""
        if self.kind == "count":
            return "-" if _missing(value) else str(value)
        if self.kind == "usd":  # cents and fractions of them: four decimals
            return "-" if _missing(value) else f"${as_float(value):,.4f}"
        return fmt(value, "pct" if self.kind == "pct" else "")

    def _direction(self) -> bool:
        if self.higher_is_better is None:
            raise ValueError(f"metric {self.name!r} has no better direction: no criterion can judge it")
        return self.higher_is_better

    def worsening(self, change: float) -> float:
        """How much worse a change (candidate minus baseline) makes this metric: positive is worse."""
        return -change if self._direction() else change

    def worse_ratio(self, candidate: float, baseline: float) -> float:
        """Candidate over baseline, oriented so that above 1 is worse (baseline over candidate if higher is better)."""
        return baseline / candidate if self._direction() else candidate / baseline


def _column(name: str) -> Callable[[Mapping[str, Any]], Any]:
    """An episode's value of column ``name``; None where the row has no such column (no value: skipped)."""
    return lambda row: row.get(name)


def _holds(name: str) -> Callable[[Mapping[str, Any]], bool]:
    """Whether the episode's column ``name`` is true; None or no such column counts as false, never skipped."""
    return lambda row: bool(row.get(name))


def _stuck(row: Mapping[str, Any]) -> bool | None:
    """Whether the episode got stuck; None for a run recorded before stuck detection (no such column): unknown."""
    return None if _missing(row.get("stuck")) else bool(row["stuck"])


def _ended(outcome: EpisodeOutcome) -> Callable[[Mapping[str, Any]], bool]:
    """Whether the episode's ``outcome`` column is ``outcome`` (never its error text).

    A row without the column (read outside ``load_runs`` from a run before records v8) is typed from its error text,
    bench.store.outcomes' legacy path.
    """

    def ended(row: Mapping[str, Any]) -> bool:
        from surfbench.bench.store.outcomes import typed_outcome

        return typed_outcome(row.get("outcome"), row.get("error")) == outcome

    return ended


_CELL, _COST = "bench.analysis.metrics.summarize_cell", "bench.analysis.metrics.summarize_cost"
_CREDIT, _CACHE = "bench.analysis.credit_summary.credit_fields", "bench.promptcache.prompt_cache_requests.cell_cache"

# Each built-in metric, as it is computed: ``per_episode`` and ``aggregate`` (summarize_cell's one loop,
# declared_fields, as for a registered metric), or ``computed_by`` naming the function that computes it.
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("episodes", "episodes", None, "episodes in the cell", "count", per_episode=lambda _: 1,
               aggregate="total"),
        Metric("success_rate", "success", True, "share of episodes whose checks all hold", "pct",
               criteria=("drop",), criterion_stem="success", per_episode=_holds("success"), aggregate="share"),
        Metric("first_try_accuracy", "first-try args", True, "micro-average over expected calls", "pct",
               criteria=("drop",), criterion_stem="first_try", computed_by=_CELL),
        Metric("selection_accuracy", "selection", True, "first canonical call names the expected first op", "pct",
               per_episode=_column("selection_correct"), aggregate="share"),
        Metric("round_trips", "round trips", False, "model calls per episode", criteria=("ratio",),
               per_episode=_column("round_trips")),
        Metric("overhead_round_trips", "overhead RT", False, "model calls with only meta calls, per episode",
               per_episode=_column("overhead_round_trips")),
        Metric("prompt_tokens_per_step", "prompt tok/step", False, "provider-reported prompt tokens per model call",
               criteria=("ratio",), criterion_stem="prompt_tokens", per_episode=_column("prompt_tokens_per_step")),
        Metric("request_bytes_per_step", "request B/step", False, "JSON request body bytes per model call",
               per_episode=_column("request_bytes_per_step")),
        Metric("recovered_after_error", "recovered", True, "operations recovered after a failed first call",
               "count", per_episode=_column("recovered_after_error"), aggregate="total"),
        Metric("failed_first_tries", "failed first tries", False, "operations whose first call failed", "count",
               per_episode=_column("failed_first_tries"), aggregate="total"),
        Metric("boundary_violations", "boundary viol.", False, "calls to tools not exposed, per episode",
               per_episode=_column("boundary_violations")),
        Metric("protocol_violations", "protocol viol.", False, "operations called before loading, per episode",
               per_episode=_column("protocol_violations")),
        Metric("parse_failures", "parse fail.", False, "unparseable tool calls, per episode",
               per_episode=_column("parse_failures")),
        Metric("stable_prefix_rate", "stable prefix", True, "share of episodes with an unchanged tool block", "pct",
               per_episode=_holds("stable_prefix"), aggregate="share"),
        Metric("latency_s", "latency s/ep", False, "model time per episode, seconds", per_episode=_column("latency_s")),
        Metric("stuck_rate", "stuck", False, "share of episodes that sent the same failing output 3 times in a row",
               "pct", per_episode=_stuck, aggregate="share"),
        # how episodes ended (their outcome column): counts, no better direction
        Metric("harness_errors", "harness errors", None, "episodes ended by a harness error: not a measurement",
               "count", per_episode=_ended(EpisodeOutcome.HARNESS_ERROR), aggregate="total"),
        Metric("context_overflows", "context overflows", None, "episodes whose conversation outgrew the context",
               "count", per_episode=_ended(EpisodeOutcome.CONTEXT_OVERFLOW), aggregate="total"),
        Metric("does_not_fit", "does not fit", None, "episodes not sent: the first request over the context",
               "count", per_episode=_ended(EpisodeOutcome.DOES_NOT_FIT), aggregate="total"),
        Metric("cached_share", "cached", True, "cached prompt tokens / prompt tokens, where reported", "pct",
               computed_by=_COST),
        Metric("cost_per_episode", "$/episode", False, "model cost per episode (LiteLLM's local price map)", "usd",
               computed_by=_COST),
        Metric("cost_per_solved", "$/solved", False, "model cost of the cell over its solved episodes", "usd",
               computed_by=_COST),
        Metric("help_bytes", "help B", False, "largest help payload of the surface, UTF-8 bytes", "count",
               per_cell=False, criteria=("limit",), computed_by="bench.report.gate._help_sizes"),
        # partial and efficient credit, and the operation policy (bench.score.credit, bench.analysis.credit_summary)
        Metric("call_share", "calls matched", True, "mean share of expected calls matched by successful calls", "pct",
               criteria=("ratio",), computed_by=_CREDIT),
        Metric("state_share", "state checks", True, "mean share of state checks holding", "pct", criteria=("ratio",),
               computed_by=_CREDIT),
        Metric("efficiency", "efficiency", True, "mean minimal / taken round trips, successful episodes", "pct",
               criteria=("ratio",), computed_by=_CREDIT),
        Metric("policy_denials", "policy denials", False, "calls the operation policy kept from the backend, per ep.",
               computed_by=_CREDIT),
        Metric("policy_recovered", "recovered (policy)", True, "episodes with a denied call that succeeded", "pct",
               computed_by=_CREDIT),
        # pass-through parameters (bench.suites.instances, bench.analysis.instance_accuracy)
        Metric("instance_accuracy", "instance acc.", True, "calls that reached the instance the task names", "pct",
               criteria=("ratio",), computed_by="bench.analysis.instance_accuracy.instance_fields"),
        # modelled prompt caching per provider profile (bench.promptcache; not in CellSummary: per profile)
        Metric("effective_input_tokens_per_step", "eff. in tok/step", False,
               "input-price tokens per step once a profile's prompt cache is counted", per_cell=False,
               computed_by=_CACHE),
        Metric("effective_cost_per_episode", "eff. $/episode", False,
               "model cost per episode at a profile's prices with its prompt cache", "usd", per_cell=False,
               criteria=("ratio",), criterion_stem="effective_cost", computed_by=_CACHE),
    )
}  # fmt: skip
"""The metric registry: report tables, gate criteria, whatif and docs/metrics.md read names, labels, formats,
directions and criterion kinds here; :func:`register_metric` adds to it."""
BUILTIN = frozenset(METRICS)
"""The metrics this module declares (:func:`unregister_metric` forgets only registered ones)."""
TESTS: tuple[Test, ...] = ("drop", "ratio", "limit")
AGGREGATES: tuple[Aggregate, ...] = ("mean", "sum", "share", "total")


def register_metric(metric: Metric) -> Metric:
    """Declare a new metric in this process: its cell value, report column, criterion kinds and docs line follow.

    It needs ``per_episode`` (what :func:`summarize_cell` aggregates) and a name no metric, CellSummary field or
    criterion kind has; a ValueError says what is wrong. Call it where the metric is declared (a module the
    run, report and gate import), e.g. ``register_metric(Metric("answer_chars", "answer chars", False, "...",
    per_episode=lambda row: len(row.get("final_text") or ""), criteria=("ratio",), column=True))``.
    """
    problem = _problem(metric)
    if problem:
        raise ValueError(f"metric {metric.name!r}: {problem}")
    METRICS[metric.name] = metric
    return metric


def _problem(m: Metric) -> str | None:
    """What keeps ``m`` from being registered, or None."""
    summary = {f.name for f in fields(CellSummary)}
    if not m.name.isidentifier() or m.name in METRICS or m.name in summary:
        return "the name must be an identifier that no metric or CellSummary field has"
    if m.computed_by is not None:
        return "computed_by names where a built-in metric is computed; a registered one gives per_episode instead"
    if m.per_episode is None or not callable(m.per_episode) or not m.per_cell:
        return "a registered metric is computed per episode: give per_episode (a function of an episode row)"
    if m.aggregate not in AGGREGATES:
        return f"aggregate {m.aggregate!r} must be mean, sum, share or total"
    fits = {None: AGGREGATES, "wilson": ("share",), "t": ("mean",), "bootstrap": ("mean", "share")}
    if m.aggregate not in fits.get(m.interval, ()):
        return (
            f"interval {m.interval!r}: wilson goes with aggregate share, t with mean, bootstrap with mean or share, "
            "None with any"
        )
    if not set(m.criteria) <= set(TESTS):
        return f"criteria {m.criteria!r} must be among {', '.join(TESTS)}"
    if m.criteria and m.higher_is_better is None:
        return "a metric without a better direction allows no criterion"
    if "drop" in m.criteria and m.kind != "pct":
        return "a drop is a difference of shares: a drop criterion needs kind pct"
    taken = {kind for other in METRICS.values() for kind in other.criterion_kinds().values()}
    clash = sorted(set(m.criterion_kinds().values()) & taken)
    return f"criterion kind(s) {clash} exist already (set criterion_stem)" if clash else None


def unregister_metric(name: str) -> None:
    """Forget a metric :func:`register_metric` added (tests); the built-in ones stay."""
    if name in BUILTIN:
        raise ValueError(f"metric {name!r} is built in: it cannot be unregistered")
    METRICS.pop(name, None)


def declared() -> list[Metric]:
    """The registered metrics (:func:`register_metric`'s, each computed from its ``per_episode``), in that order."""
    return [m for m in METRICS.values() if m.name not in BUILTIN]


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
    return {metric.name: value, f"{metric.name}_ci_low": low, f"{metric.name}_ci_high": high}


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


def fmt(value: float | None, kind: str = "") -> str:
    """A number as reports print it: ``pct`` a share as 42%; else 1 decimal (none from 1,000), "-" if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "pct":
        return f"{100 * value:.0f}%"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


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
            low, high = summary.extra.get(f"{metric.name}_ci_low"), summary.extra.get(f"{metric.name}_ci_high")
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
