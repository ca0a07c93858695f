"""The report's content as data, and the tables built from it.

Cells, paired comparisons, per-operation accuracy and error types; rendered by :mod:`surfbench.bench.report.report`
(markdown, HTML) and :mod:`surfbench.bench.report.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.compare import Paired, paired_comparisons
from surfbench.bench.analysis.funnel import FunnelRow, catalog_sizes, funnel_rows
from surfbench.bench.analysis.metric_registry import BUILTIN, ColumnShape, MetricColumn
from surfbench.bench.analysis.metrics import METRICS, Metric, fmt, per_operation, show, summarize_cell
from surfbench.bench.analysis.multicall import MultiCallRow, multicall_rows
from surfbench.bench.analysis.power import PassK, pass_k
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.values import decoded, signed
from surfbench.bench.catalog.provider_limits import recorded_originals
from surfbench.bench.promptcache.prompt_cache_requests import cache_cells, cell_key
from surfbench.bench.promptcache.prompt_cache_section import PROFILE_NAMES, effective_head, effective_text
from surfbench.bench.report.report_choices import AlternativePicks, access_split, alternative_picks, catalog_facts
from surfbench.bench.report.scale_figure import ScalePoint, scale_points
from surfbench.bench.store.evidence import config_labels, surface_label
from surfbench.bench.store.reader import load
from surfbench.bench.store.tables import CellSummary

if TYPE_CHECKING:
    import pandas as pd

CELL_KEYS = ["suite", "surface", "surface_kind", "model", "params_b", "mode"]
KIND_ORDER = {"full": 0, "core": 1, "dispatcher": 2, "lazy": 3, "search": 4, "preselect": 5}


@dataclass(frozen=True)
class CellRow:
    """One cell of the report: its keys (suite, surface, model, ...) and its numbers."""

    keys: dict[str, Any]
    summary: CellSummary
    tool_block_bytes: float | None
    """Mean tool-block wire bytes on the first step."""
    tools_shown: float | None
    """Mean tools shown on the first step."""
    pass_k: PassK | None = None
    """pass@k and pass^k over the cell's tasks when each ran k > 1 times (else None)."""
    cache: dict[str, Any] = field(default_factory=dict)
    """Profile name -> the cell's CacheCell (bench.promptcache), where its requests could be replayed."""
    tasks: frozenset[str] = frozenset()
    """The ids of the tasks the cell ran (cells with other tasks do not compare row by row)."""


@dataclass
class ReportData:
    """Everything the report shows, before it is rendered."""

    runs: list[str]
    cells: list[CellRow]
    paired: list[Paired]
    per_op: dict[tuple[str, str], dict[str, tuple[int, int]]]
    """(surface, model) -> operation -> (correct, attempts)."""
    op_order: list[str]
    """Operations hottest first (catalog traffic weight)."""
    hot_ops: set[str]
    baseline: str
    scripted: bool = False
    notes: list[str] = field(default_factory=list)
    errors: dict[tuple[str, str], tuple[int, dict[str, int]]] = field(default_factory=dict)
    """(surface, model) -> (episodes, error type -> episodes with it at least once)."""
    picks: list[AlternativePicks] = field(default_factory=list)
    """Which alternative of each ``one_of`` expected call models picked (empty: no suite has one)."""
    access: dict[tuple[str, str], dict[str, tuple[int, int]]] = field(default_factory=dict)
    """(surface, model) -> ``read``/``write`` -> first tries (correct, attempts); empty unless asked for."""
    multicall: list[MultiCallRow] = field(default_factory=list)
    """Round trips on tasks with two or more expected calls, per cell (bench.analysis.multicall)."""
    funnel: list[FunnelRow] = field(default_factory=list)
    """Per retrieval cell: retrieved, MRR, selection, first-try, success, zero shown (bench.analysis.funnel)."""
    scale: list[ScalePoint] = field(default_factory=list)
    """Per surface, model and catalog size N: the scale figure's and table's points (bench.report.scale_figure)."""
    originals: dict[str, str] = field(default_factory=dict)
    """Valid -> original operation name where an importer renamed one (the runs' ``name_map``): tables
    show the catalog's own name (``repos/update-org-ruleset``), the results store keeps the valid one."""
    cache: dict[tuple[str, ...], Any] = field(default_factory=dict)
    """Cell key (bench.promptcache.prompt_cache_requests.cell_key) -> the cell under each cache profile (CellCache)."""


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(out) else out


def records_of(frame: pd.DataFrame) -> list[Mapping[str, Any]]:
    """``frame.to_dict("records")``, the same values, built from column lists (a tenth of the time on 10,000 rows)."""
    names = list(frame.columns)
    columns = (frame[c].tolist() for c in names)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def cell_rows(frame: pd.DataFrame) -> list[CellRow]:
    """One row per suite x surface x model x mode of the episodes frame, in report order."""
    if frame is None or len(frame) == 0:
        return []
    rows = []
    for keys, group in frame.groupby(CELL_KEYS, dropna=False, sort=True):
        block = group["tool_block_bytes_first"].dropna()
        shown = group["tools_shown_first"].dropna()
        records = records_of(group)
        summary = summarize_cell(records)
        rows.append(
            CellRow(
                keys=dict(zip(CELL_KEYS, keys, strict=True)),
                summary=summary,
                tool_block_bytes=float(block.mean()) if len(block) else None,
                tools_shown=float(shown.mean()) if len(shown) else None,
                pass_k=pass_k(records),
                tasks=frozenset(group["task_id"].astype(str)),
            )
        )
    rows.sort(
        key=lambda r: (
            str(r.keys["suite"]),
            _num(r.keys["params_b"]),
            str(r.keys["model"]),
            str(r.keys["mode"]),
            KIND_ORDER.get(str(r.keys["surface_kind"]), 9),
            str(r.keys["surface"]),
        )
    )
    return rows


DEFAULT_BASELINE = "full"


def resolve_baseline(surfaces: set[str], baseline: str | None) -> tuple[str, list[str]]:
    """The baseline label to pair against, and notes; an explicitly named surface must be in the runs.

    ``None`` means "``full`` if the runs have it": a run without ``full`` (the workspace suite's) still
    gets a report, without the paired section. A name given explicitly that no cell has is a typo,
    and a report silently without pairs would hide it. A surface config name stands for its one
    label (``preselect`` for ``preselect[params.k=10]``); with several labels none is chosen.
    """
    if baseline is None:
        return surface_label(DEFAULT_BASELINE, surfaces), []
    labels = config_labels(baseline, surfaces)
    if not labels:
        raise ConfigError(
            f"--baseline {baseline}: no surface {baseline!r} in the runs (they have {', '.join(sorted(surfaces))})"
        )
    chosen = surface_label(baseline, surfaces)
    if chosen in surfaces:
        return chosen, []
    return baseline, [
        f"baseline {baseline!r} names {len(labels)} cells ({', '.join(labels)}): no paired comparison; "
        "pass one of them with --baseline"
    ]


def collect(
    runs: Sequence[str | Path],
    baseline: str | None = None,
    hot_k: int = 15,
    keep_newest: bool = False,
    by_access: bool = False,
) -> ReportData:
    """The report's content over ``runs``; ``baseline`` None: ``full`` when the runs have it.

    ``by_access``: also split first-try accuracy by read and write operations (bench.report.report_choices).
    """
    view = load(*runs, keep_newest=keep_newest)
    frame = view.episodes
    baseline, baseline_notes = resolve_baseline({str(s) for s in frame["surface"]}, baseline)
    cells = cell_rows(frame)
    cache = cache_cells(view) if len(frame) else {}  # prompt caching per profile (bench.promptcache)
    cells = [replace(c, cache=cache[cell_key(c.keys)].cells) if cell_key(c.keys) in cache else c for c in cells]
    facts = catalog_facts(runs, view.infos, frame, hot_k)  # from the run folders (legacy runs: today's suites)
    scripted = view.scripted
    per_op = {}
    if len(frame):
        for (surface, model), group in frame.groupby(["surface", "model"], sort=True):
            per_op[(str(surface), str(model))] = per_operation(group.to_dict("records"))
    errors = {}
    if len(frame):
        for (surface, model), group in frame.groupby(["surface", "model"], sort=True):
            errors[(str(surface), str(model))] = error_counts(group["error_types"])
    return ReportData(
        errors=errors,
        picks=alternative_picks(frame, facts.choices),
        access=access_split(frame, facts.read_only) if by_access else {},
        runs=[str(r) for r in runs],
        cells=cells,
        cache=cache,
        paired=paired_comparisons(frame, baseline) if len(frame) else [],
        multicall=multicall_rows(frame, baseline) if len(frame) else [],
        funnel=funnel_rows(runs, frame, view.infos) if len(frame) else [],
        scale=scale_points(frame, catalog_sizes(view.infos)) if len(frame) else [],
        per_op=per_op,
        op_order=facts.op_order,
        hot_ops=facts.hot,
        baseline=baseline,
        scripted=scripted,
        notes=[*view.notes, *baseline_notes],
        originals=recorded_originals([c.raw for c in (*view.cells, *view.legacy_cells)]),
    )


def error_counts(column: pd.Series) -> tuple[int, dict[str, int]]:
    """(episodes, error type -> episodes that had it at least once) from an ``error_types`` column."""
    counts: dict[str, int] = {}
    n = 0
    for raw in column:
        n += 1
        types = list(decoded(raw) if raw is not None else [])
        for name in set(types):
            counts[name] = counts.get(name, 0) + 1
    return n, counts


# -- rendering -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CellColumn:
    """One column of the cells table: its head, and its text for a cell."""

    head: str
    text: Callable[[CellRow, float | None], str]
    """(the cell, the baseline's tool-block bytes on the same suite, model and mode) -> the cell's text."""
    optional: bool = False
    """Shown only when some cell has a value (runs recorded before the metric existed keep their tables)."""


def _key(name: str) -> CellColumn:
    return CellColumn(name, lambda r, _: str(r.keys[name]))


def _ratio(r: CellRow, base: float | None) -> str:
    return f"{base / r.tool_block_bytes:.1f}" if base and r.tool_block_bytes else "-"


REPORT_COLUMNS = [
    _key("suite"), _key("model"), _key("mode"), _key("surface"),
    CellColumn("tools", lambda r, _: fmt(r.tools_shown)),
    CellColumn("tool block B", lambda r, _: fmt(r.tool_block_bytes)),
    CellColumn("x smaller", _ratio),
]  # fmt: skip
"""The cells table's columns that are no metric's: the cell's keys, the tools and tool block its first step showed,
and how many times smaller that block is than the baseline's; the metrics' columns go between and after them."""


def _value(metric: Metric, column: MetricColumn) -> list[CellColumn]:
    """Its value, with its 95% interval where it declares one."""
    name = metric.name
    if metric.interval is None:
        return [CellColumn(column.head or metric.label, lambda r, _: show(r.summary, name), column.optional)]
    low_end, high_end = metric.interval_ends()

    def text(r: CellRow, _: float | None) -> str:
        value, low, high = (r.summary.metric(f) for f in (name, low_end, high_end))
        if value is None:
            return "-"
        return metric.format(value) + (f" [{metric.format(low)}, {metric.format(high)}]" if low is not None else "")

    return [CellColumn(column.head or f"{metric.label} [95% CI]", text, column.optional)]


def _two(template: str) -> Callable[[Metric, MetricColumn], list[CellColumn]]:
    """Its value and the other metric's, as ``template`` puts them (``{} ({})``: the other in parentheses)."""

    def shape(metric: Metric, column: MetricColumn) -> list[CellColumn]:
        name, other = metric.name, str(column.other)

        def text(r: CellRow, _: float | None) -> str:
            return template.format(show(r.summary, name), show(r.summary, other))

        return [CellColumn(column.head or metric.label, text, column.optional)]

    return shape


def _noted(metric: Metric, column: MetricColumn) -> list[CellColumn]:
    """Its value, and the other metric by its label in parentheses when not 0 (``45 (does not fit: 3)``)."""
    name, other = metric.name, METRICS[str(column.other)]

    def text(r: CellRow, _: float | None) -> str:
        value = r.summary.metric(other.name)
        note = f" ({other.label}: {other.format(value)})" if value else ""
        return show(r.summary, name) + note

    return [CellColumn(column.head or metric.label, text, column.optional)]


def _per_profile(metric: Metric, column: MetricColumn) -> list[CellColumn]:
    """A column per cache profile: effective input tokens per step and cost per episode (bench.promptcache)."""

    def effective(profile: str) -> CellColumn:
        return CellColumn(effective_head(profile), lambda r, _: effective_text(r.cache.get(profile)), column.optional)

    return [effective(p) for p in PROFILE_NAMES]


SHAPES: dict[ColumnShape, Callable[[Metric, MetricColumn], list[CellColumn]]] = {
    "value": _value, "beside": _two("{} ({})"), "over": _two("{}/{}"), "joined": _two("{} / {}"),
    "noted": _noted, "per_profile": _per_profile,
}  # fmt: skip
"""Each column shape a metric may declare (bench.analysis.metric_registry.MetricColumn) -> its column(s)."""


def all_cell_columns(metrics: Iterable[Metric] | None = None) -> list[CellColumn]:
    """Every column the cells table may have: REPORT_COLUMNS, and each metric's that declares one, by one rule.

    In declaration order (METRICS: the built-in metrics, then the registered ones), each metric that declares a
    column (:attr:`Metric.column`, made by the shape of :data:`SHAPES` it names) has it go right after the column
    whose head its ``after`` names (one laid before or after it), or at the end (None): a column declared later that
    names the same head goes between them, as a registered metric's ``after="success"`` goes before calls matched.
    ``metrics``: these instead of every declared one. A ValueError names an ``after`` that is no column's head,
    or a head two columns have.
    """
    following: dict[str | None, list[tuple[Metric, list[CellColumn]]]] = {}
    for metric in METRICS.values() if metrics is None else metrics:
        column = metric.cell_column()
        if column is not None:
            following.setdefault(metric.after, []).append((metric, SHAPES[column.shape](metric, column)))
    out: list[CellColumn] = []

    def lay(columns: list[CellColumn]) -> None:
        for c in columns:
            out.append(c)
            for _, group in reversed(following.pop(c.head, [])):  # the one declared last first
                lay(group)

    lay(REPORT_COLUMNS)
    for _, group in following.pop(None, []):  # at the end, in declaration order
        lay(group)
    unplaced = [metric for pairs in following.values() for metric, _ in pairs]
    if unplaced:
        laid = " | ".join(c.head for c in out)
        raise ValueError(f"metric {unplaced[0].name!r}: after={unplaced[0].after!r} is no column ({laid})")
    heads = [c.head for c in out]
    twice = sorted({h for h in heads if heads.count(h) > 1})
    if twice:
        raise ValueError(f"cells table: two columns headed {twice[0]!r}: give a registered metric another label")
    return out


CELL_HEAD = [c.head for c in all_cell_columns(m for m in METRICS.values() if m.name in BUILTIN) if not c.optional]
"""The head of the columns every cells table has (:func:`cell_table`'s by default)."""


def cell_columns(data: ReportData) -> list[CellColumn]:
    """Every column that is not optional, and each optional one some cell has a value in (what the report shows)."""
    return [c for c in all_cell_columns() if not c.optional or any(c.text(r, None) != "-" for r in data.cells)]


def cell_head(data: ReportData) -> list[str]:
    """The head of ``cell_table(data, optional=True)``: CELL_HEAD with the optional columns some cell has."""
    return [c.head for c in cell_columns(data)]


def cell_table(data: ReportData, optional: bool = False) -> list[list[str]]:
    """The cells table's rows; the tool-block ratio is against the baseline surface's cell.

    The columns of CELL_HEAD; with ``optional``, those of :func:`cell_head` (partial credit, the policy: shown
    when some cell has them, so that runs recorded before them keep their tables).
    """
    base = {
        (r.keys["suite"], r.keys["model"], r.keys["mode"]): r.tool_block_bytes
        for r in data.cells
        if r.keys["surface"] == data.baseline
    }
    columns = cell_columns(data) if optional else [c for c in all_cell_columns() if not c.optional]
    out = []
    for r in data.cells:
        b = base.get((r.keys["suite"], r.keys["model"], r.keys["mode"]))
        out.append([c.text(r, b) for c in columns])
    return out


PAIRED_HEAD = [
    "model", "candidate", "vs", "pairs", "baseline ok only", "candidate ok only", "McNemar p",
    "success MDE", "first-try baseline", "first-try candidate", "difference [95% CI]", "first-try MDE",
]  # fmt: skip


PASS_K_HEAD = ["suite", "model", "surface", "k", "tasks", "pass@k [95% CI]", "pass^k [95% CI]"]


def pass_k_table(data: ReportData) -> list[list[str]]:
    """One row per cell whose tasks ran k > 1 times: pass@k (any repeat succeeds), pass^k (all do)."""
    rows = []
    for cell in data.cells:
        pk = cell.pass_k
        if pk is None:
            continue
        rows.append(
            [
                str(cell.keys["suite"]), str(cell.keys["model"]), str(cell.keys["surface"]), str(pk.k), str(pk.tasks),
                f"{fmt(pk.pass_at_k, 'pct')} [{fmt(pk.pass_at_k_low, 'pct')}, {fmt(pk.pass_at_k_high, 'pct')}]",
                f"{fmt(pk.pass_hat_k, 'pct')} [{fmt(pk.pass_hat_k_low, 'pct')}, {fmt(pk.pass_hat_k_high, 'pct')}]",
            ]
        )  # fmt: skip
    return rows


def _pts(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f} pts"


def paired_table(data: ReportData) -> list[list[str]]:
    """One row per candidate surface and model, against the baseline on the same tasks."""
    first_try = METRICS["first_try_accuracy"]
    rows = []
    for p in data.paired:
        delta = "-"
        if p.first_try_delta is not None:
            delta = (
                f"{signed(100 * p.first_try_delta, 0)} pts [{signed(100 * (p.first_try_delta_low or 0), 0)}, "
                f"{signed(100 * (p.first_try_delta_high or 0), 0)}]"
            )
        rows.append(
            [
                p.model, p.candidate, p.baseline, str(p.pairs), str(p.only_baseline_ok), str(p.only_candidate_ok),
                "-" if p.mcnemar_p is None else f"{p.mcnemar_p:.3f}", _pts(p.success_mde),
                first_try.format(p.baseline_first_try), first_try.format(p.candidate_first_try), delta,
                _pts(p.first_try_mde),
            ]
        )  # fmt: skip
    return rows


def per_op_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    """First-try (correct/attempts) per operation (rows, hottest first) and surface x model (columns).

    Operations are named as their catalog spells them (the runs' ``name_map``), not as the tables store them.
    """
    columns = sorted(
        data.per_op,
        key=lambda sm: (sm[1], KIND_ORDER.get(sm[0], 9), sm[0]),
    )
    seen = {op for table in data.per_op.values() for op in table}
    ops = [op for op in data.op_order if op in seen] + sorted(seen - set(data.op_order))
    head = ["operation", "hot"] + [f"{s} / {m}" for s, m in columns]
    rows = []
    for op in ops:
        cells = []
        for col in columns:
            c, n = data.per_op[col].get(op, (0, 0))
            cells.append(f"{c}/{n}" if n else "")
        rows.append([data.originals.get(op, op), "hot" if op in data.hot_ops else ""] + cells)
    return head, rows


def error_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
    """Share of episodes with each error type (at least once), per surface x model; commonest first."""
    columns = sorted(data.errors, key=lambda sm: (sm[1], KIND_ORDER.get(sm[0], 9), sm[0]))
    totals: dict[str, int] = {}
    for _, counts in data.errors.values():
        for name, k in counts.items():
            totals[name] = totals.get(name, 0) + k
    head = ["error type"] + [f"{s} / {m}" for s, m in columns]
    rows = []
    for name in sorted(totals, key=lambda e: (-totals[e], e)):
        cells = []
        for col in columns:
            n, counts = data.errors[col]
            k = counts.get(name, 0)
            cells.append(f"{100 * k / n:.0f}% ({k})" if n else "")
        rows.append([name] + cells)
    return head, rows
