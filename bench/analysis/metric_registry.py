"""The metric declarations: what each number reports and gates show is, the built-in ones and :func:`register_metric`.

Each metric is one declaration (:class:`Metric`, in :data:`METRICS`): its label, how it prints, whether higher is
better, the gate criteria it allows, its docs line, how it is computed (a value per episode aggregated per cell:
``per_episode``, ``aggregate``, ``interval``; or, for a built-in metric that is not, the function that computes it:
``computed_by``) and its column in the report's cells table (``column``, ``after``). bench.analysis.metrics computes
and prints them, and its callers import this module's names from there too; the cell summary, the gate's criterion
kinds, the metrics table of docs/metrics.md and the report's cells table come from the declarations, so that nothing
downstream hard-codes a direction (the lm-evaluation-harness lesson).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from surfbench.bench.base.values import missing as _missing
from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.store.tables import CellSummary, as_float

MetricKind = Literal["pct", "num", "count", "usd"]
Test = Literal["drop", "ratio", "limit"]
"""How a gate criterion judges a metric (bench.report.gate_criteria.CriterionKind)."""
Aggregate = Literal["mean", "sum", "share", "total"]
Interval = Literal["wilson", "t", "bootstrap"]
ColumnShape = Literal["value", "beside", "over", "joined", "noted", "per_profile"]
"""How a cells-table column prints its metric (:attr:`MetricColumn.shape`; bench.report.report_data.SHAPES)."""


@dataclass(frozen=True)
class MetricColumn:
    """How the report's cells table shows a metric (:attr:`Metric.column`; where: :attr:`Metric.after`)."""

    shape: ColumnShape = "value"
    """``value``: its value, with its 95% interval where it declares one (headed ``LABEL [95% CI]``). With the metric
    ``other``: ``beside`` (``5.1 (0.3)``), ``over`` (``1/113``), ``joined`` (``6.8 / 0.0``), ``noted`` (``45 (does not
    fit: 3)``: the other by its label, when not 0); ``per_profile``: a column per prompt-cache profile, its effective
    tokens per step and the other's cost per episode (bench.promptcache.prompt_cache_section.effective_text)."""
    other: str | None = None
    """The metric a shape of two shows with this one."""
    head: str | None = None
    """The column's head; None: the shape's (the label; ``LABEL [95% CI]`` with an interval; the profiles')."""
    optional: bool = True
    """Shown only when some cell has a value, so that runs recorded before the metric keep their tables; False: in
    every cells table (``CELL_HEAD``; built-in metrics only)."""


@dataclass(frozen=True)
class Metric:
    """One number reports and gates show: what it is, how it prints, which way is better, what judges it.

    The whole declaration of a metric: how it is computed (``per_episode``, ``aggregate``, ``interval``, or, for a
    built-in one computed otherwise, ``computed_by``) and whether and where the cells table shows it (``column``,
    ``after``).
    """

    name: str
    """The CellSummary field (for the built-in per-cell metrics; a registered metric's value is in
    ``CellSummary.extra``) and the name criteria and tables refer to it by."""
    label: str
    """Short column label (report and whatif tables, gate lines)."""
    higher_is_better: bool | None
    """None where there is no better direction (latency is lower-better; counts of episodes are neutral)."""
    description: str
    """Its line in docs/metrics.md's metrics table (bench.analysis.metrics.metrics_table)."""
    kind: MetricKind = "num"
    """How values print: ``pct`` (a share, as 42%), ``num`` (1 decimal, thousands separated), ``count`` (as is)."""
    per_cell: bool = True
    """Aggregated per cell by bench.analysis.metrics.summarize_cell; False for a property of the surface (help
    payload size)."""
    criteria: tuple[Test, ...] = ()
    """The gate tests it allows, each a criterion kind (:meth:`criterion_kinds`): ``drop`` (a paired difference of
    a share), ``ratio`` (the candidate's cell value over the baseline's), ``limit`` (a bound on the value)."""
    criterion_stem: str | None = None
    """The stem of its criterion kinds' names (``first_try`` in ``first_try_drop_max``); None: its name."""
    per_episode: Callable[[Mapping[str, Any]], float | bool | None] | None = None
    """The metric's value for one episode, from its row (a mapping of the EpisodeRow columns; read them with
    ``.get``: older runs and whatif's rescored rows lack some); None or NaN: no value. summarize_cell aggregates it
    (bench.analysis.metrics.declared_fields); None for a built-in metric computed otherwise (``computed_by``)."""
    aggregate: Aggregate = "mean"
    """How summarize_cell makes the per-episode values one per cell: their ``mean``, their ``sum``, the ``share`` of
    the episodes with a value whose value is true, or their ``total``: the sum of whole numbers, an int, 0 for a
    cell without any (a count: recovered operations, episodes that ended one way)."""
    interval: Interval | None = None
    """The 95% interval the cell summary gives beside it (:meth:`interval_ends`): ``wilson`` for a share, ``t``
    (Student t) for a mean, ``bootstrap`` (BCa, scipy: within the values' range, as the credit columns' intervals)
    for a mean or a share, None for none. A built-in metric with ``computed_by`` names the one its function gives."""
    interval_stem: str | None = None
    """The stem of its interval's ends' names (``NAME_ci_low`` / ``NAME_ci_high``); None: its name (first-try
    accuracy's are the records' ``first_try_ci_low`` / ``first_try_ci_high``)."""
    column: bool | MetricColumn = False
    """Whether the report's cells table shows it, and how: True is ``MetricColumn()`` (its value, with its interval
    where it declares one, shown when some cell has a value), a :class:`MetricColumn` another shape, head or a
    column every table has; False: none."""
    after: str | None = None
    """The head of the cells-table column its column goes right after (a column declared later that names the same
    head goes between them); None: at the end. The report's own columns (keys, tool block) are
    bench.report.report_data.REPORT_COLUMNS."""
    computed_by: str | None = None
    """A built-in metric without ``per_episode``: the function that computes it (its dotted name under ``surfbench``,
    e.g. ``bench.analysis.credit_summary.credit_fields``), which docs/metrics.md's table names."""

    def criterion_kinds(self) -> dict[Test, str]:
        """Each test of :attr:`criteria` -> its criterion kind: ``STEM_max`` (limit), ``STEM_drop_max``, ...ratio."""
        stem = self.criterion_stem or self.name
        return {test: f"{stem}_max" if test == "limit" else f"{stem}_{test}_max" for test in self.criteria}

    def interval_ends(self) -> tuple[str, str]:
        """The names of its interval's low and high ends in the cell summary (a registered metric's: in ``extra``)."""
        stem = self.interval_stem or self.name
        return f"{stem}_ci_low", f"{stem}_ci_high"

    def cell_column(self) -> MetricColumn | None:
        """Its column in the report's cells table as :attr:`column` declares it; None for none."""
        if isinstance(self.column, MetricColumn):
            return self.column
        return MetricColumn() if self.column else None

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


def fmt(value: float | None, kind: str = "") -> str:
    """A number as reports print it: ``pct`` a share as 42%; else 1 decimal (none from 1,000), "-" if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "pct":
        return f"{100 * value:.0f}%"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


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
_SHOWN = MetricColumn(optional=False)  # its value (and interval), in every cells table

# Each built-in metric, as it is computed: ``per_episode`` and ``aggregate`` (summarize_cell's one loop,
# declared_fields, as for a registered metric), or ``computed_by`` naming the function that computes it; and its
# column of the cells table, if any, after the one ``after`` names (so that their order is not this one).
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("episodes", "episodes", None, "episodes in the cell", "count", per_episode=lambda _: 1,
               aggregate="total", column=MetricColumn("noted", "does_not_fit", optional=False), after="surface"),
        Metric("success_rate", "success", True, "share of episodes whose checks all hold", "pct",
               criteria=("drop",), criterion_stem="success", per_episode=_holds("success"), aggregate="share",
               column=_SHOWN, after="selection"),
        Metric("first_try_accuracy", "first-try args", True, "micro-average over expected calls", "pct",
               criteria=("drop",), criterion_stem="first_try", computed_by=_CELL, interval="wilson",
               interval_stem="first_try", column=_SHOWN, after="round trips (overhead)"),
        Metric("selection_accuracy", "selection", True, "first canonical call names the expected first op", "pct",
               per_episode=_column("selection_correct"), aggregate="share", column=_SHOWN,
               after="first-try args [95% CI]"),
        Metric("round_trips", "round trips", False, "model calls per episode", criteria=("ratio",),
               per_episode=_column("round_trips"), after="prompt tok/step",
               column=MetricColumn("beside", "overhead_round_trips", "round trips (overhead)", optional=False)),
        Metric("overhead_round_trips", "overhead RT", False, "model calls with only meta calls, per episode",
               per_episode=_column("overhead_round_trips")),
        Metric("prompt_tokens_per_step", "prompt tok/step", False, "provider-reported prompt tokens per model call",
               criteria=("ratio",), criterion_stem="prompt_tokens", per_episode=_column("prompt_tokens_per_step"),
               column=_SHOWN, after="x smaller"),
        Metric("request_bytes_per_step", "request B/step", False, "JSON request body bytes per model call",
               per_episode=_column("request_bytes_per_step")),
        Metric("recovered_after_error", "recovered", True, "operations recovered after a failed first call",
               "count", per_episode=_column("recovered_after_error"), aggregate="total",
               column=MetricColumn("over", "failed_first_tries", optional=False), after="instance acc. [95% CI]"),
        Metric("failed_first_tries", "failed first tries", False, "operations whose first call failed", "count",
               per_episode=_column("failed_first_tries"), aggregate="total"),
        Metric("boundary_violations", "boundary viol.", False, "calls to tools not exposed, per episode",
               per_episode=_column("boundary_violations"), after="recovered",
               column=MetricColumn("joined", "protocol_violations", "boundary / protocol viol.", optional=False)),
        Metric("protocol_violations", "protocol viol.", False, "operations called before loading, per episode",
               per_episode=_column("protocol_violations")),
        Metric("parse_failures", "parse fail.", False, "unparseable tool calls, per episode",
               per_episode=_column("parse_failures"), column=_SHOWN, after="boundary / protocol viol."),
        Metric("stable_prefix_rate", "stable prefix", True, "share of episodes with an unchanged tool block", "pct",
               per_episode=_holds("stable_prefix"), aggregate="share"),
        Metric("latency_s", "latency s/ep", False, "model time per episode, seconds", per_episode=_column("latency_s"),
               column=_SHOWN, after="parse fail."),
        Metric("stuck_rate", "stuck", False, "share of episodes that sent the same failing output 3 times in a row",
               "pct", per_episode=_stuck, aggregate="share", column=_SHOWN, after="latency s/ep"),
        # how episodes ended (their outcome column): counts, no better direction
        Metric("harness_errors", "harness errors", None, "episodes ended by a harness error: not a measurement",
               "count", per_episode=_ended(EpisodeOutcome.HARNESS_ERROR), aggregate="total"),
        Metric("context_overflows", "context overflows", None, "episodes whose conversation outgrew the context",
               "count", per_episode=_ended(EpisodeOutcome.CONTEXT_OVERFLOW), aggregate="total"),
        Metric("does_not_fit", "does not fit", None, "episodes not sent: the first request over the context",
               "count", per_episode=_ended(EpisodeOutcome.DOES_NOT_FIT), aggregate="total"),
        Metric("cached_share", "cached", True, "cached prompt tokens / prompt tokens, where reported", "pct",
               computed_by=_COST, column=_SHOWN, after="stuck"),
        Metric("cost_per_episode", "$/episode", False, "model cost per episode (LiteLLM's local price map)", "usd",
               computed_by=_COST, column=_SHOWN, after="cached"),
        Metric("cost_per_solved", "$/solved", False, "model cost of the cell over its solved episodes", "usd",
               computed_by=_COST, column=_SHOWN, after="$/episode"),
        Metric("help_bytes", "help B", False, "largest help payload of the surface, UTF-8 bytes", "count",
               per_cell=False, criteria=("limit",), computed_by="bench.report.gate._help_sizes"),
        # partial and efficient credit, and the operation policy (bench.score.credit, bench.analysis.credit_summary):
        # columns shown when some cell has them
        Metric("call_share", "calls matched", True, "mean share of expected calls matched by successful calls", "pct",
               criteria=("ratio",), computed_by=_CREDIT, interval="bootstrap", column=True, after="success"),
        Metric("state_share", "state checks", True, "mean share of state checks holding", "pct", criteria=("ratio",),
               computed_by=_CREDIT, interval="bootstrap", column=True, after="calls matched [95% CI]"),
        Metric("efficiency", "efficiency", True, "mean minimal / taken round trips, successful episodes", "pct",
               criteria=("ratio",), computed_by=_CREDIT, interval="bootstrap", column=True,
               after="state checks [95% CI]"),
        Metric("policy_denials", "policy denials", False, "calls the operation policy kept from the backend, per ep.",
               computed_by=_CREDIT, column=True, after="efficiency [95% CI]"),
        Metric("policy_recovered", "recovered (policy)", True, "episodes with a denied call that succeeded", "pct",
               computed_by=_CREDIT, column=True, after="policy denials"),
        # pass-through parameters (bench.suites.instances, bench.analysis.instance_accuracy)
        Metric("instance_accuracy", "instance acc.", True, "calls that reached the instance the task names", "pct",
               criteria=("ratio",), computed_by="bench.analysis.instance_accuracy.instance_fields",
               interval="wilson", column=True, after="recovered (policy)"),
        # modelled prompt caching per provider profile (bench.promptcache; not in CellSummary: per profile): one
        # column per profile, both numbers, after prompt tokens (declared after round trips: before its column)
        Metric("effective_input_tokens_per_step", "eff. in tok/step", False,
               "input-price tokens per step once a profile's prompt cache is counted", per_cell=False,
               computed_by=_CACHE, column=MetricColumn("per_profile", "effective_cost_per_episode"),
               after="prompt tok/step"),
        Metric("effective_cost_per_episode", "eff. $/episode", False,
               "model cost per episode at a profile's prices with its prompt cache", "usd", per_cell=False,
               criteria=("ratio",), criterion_stem="effective_cost", computed_by=_CACHE),
    )
}  # fmt: skip
"""The metric registry: report tables, gate criteria, whatif and docs/metrics.md read names, labels, formats,
directions, criterion kinds and columns here; :func:`register_metric` adds to it."""
BUILTIN = frozenset(METRICS)
"""The metrics this module declares (:func:`unregister_metric` forgets only registered ones)."""
TESTS: tuple[Test, ...] = ("drop", "ratio", "limit")
AGGREGATES: tuple[Aggregate, ...] = ("mean", "sum", "share", "total")


def register_metric(metric: Metric) -> Metric:
    """Declare a new metric in this process: its cell value, report column, criterion kinds and docs line follow.

    It needs ``per_episode`` (what summarize_cell aggregates) and a name no metric, CellSummary field or criterion
    kind has; a ValueError says what is wrong. Call it where the metric is declared (a module the run, report and
    gate import), e.g. ``register_metric(Metric("answer_chars", "answer chars", False, "...",
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
    column = m.cell_column()
    if column is not None and column.shape not in get_args(ColumnShape):
        return f"column shape {column.shape!r} must be one of {', '.join(get_args(ColumnShape))}"
    if column is not None and m.after is not None and m.after in (m.label, f"{m.label} [95% CI]"):
        return f"after={m.after!r} names its own column"
    if column is not None and (not column.optional or column.shape == "per_profile"):
        return "a registered metric's column is optional (runs without it keep their tables), not per profile"
    if column is not None and column.shape != "value" and column.other not in METRICS:
        return f"column shape {column.shape!r} shows another metric: its other must name one"
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
