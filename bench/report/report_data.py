"""The report's content as data, and the tables built from it.

Cells, paired comparisons, per-operation accuracy and error types; rendered by :mod:`surfbench.bench.report.report`
(markdown, HTML) and :mod:`surfbench.bench.report.figures`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.compare import Paired, paired_comparisons
from surfbench.bench.analysis.funnel import FunnelRow, catalog_sizes, funnel_rows
from surfbench.bench.analysis.metrics import METRICS, Metric, declared, fmt, per_operation, show, summarize_cell
from surfbench.bench.analysis.multicall import MultiCallRow, multicall_rows
from surfbench.bench.analysis.power import PassK, pass_k
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.values import decoded
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
    does_not_fit: int = 0
    """Episodes not run: their first request could not fit the model's context window (bench.run.fit)."""
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
                does_not_fit=summary.does_not_fit,  # from the episodes' outcome column
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


def _metric(name: str) -> CellColumn:
    """A registry metric as a column: its label heads it, its format prints it."""
    return CellColumn(METRICS[name].label, lambda r, _: show(r.summary, name))


def _ratio(r: CellRow, base: float | None) -> str:
    return f"{base / r.tool_block_bytes:.1f}" if base and r.tool_block_bytes else "-"


def _effective(profile: str) -> CellColumn:
    """A cache profile's effective input tokens per step and cost per episode (bench.promptcache)."""
    return CellColumn(effective_head(profile), lambda r, _: effective_text(r.cache.get(profile)), optional=True)


def _first_try(r: CellRow, _: float | None) -> str:
    s, metric = r.summary, METRICS["first_try_accuracy"]
    if s.first_try_accuracy is None:
        return "-"
    return f"{show(s, metric.name)} [{metric.format(s.first_try_ci_low)}, {metric.format(s.first_try_ci_high)}]"


def _with_interval(name: str) -> CellColumn:
    """A registry metric with its 95% interval (``NAME_ci_low`` / ``NAME_ci_high``), shown only when measured."""
    metric = METRICS[name]

    def text(r: CellRow, _: float | None) -> str:
        value, low, high = (r.summary.metric(f) for f in (name, f"{name}_ci_low", f"{name}_ci_high"))
        if value is None:
            return "-"
        return metric.format(value) + (f" [{metric.format(low)}, {metric.format(high)}]" if low is not None else "")

    return CellColumn(f"{metric.label} [95% CI]", text, optional=True)


def _episodes(r: CellRow, _: float | None) -> str:
    text = show(r.summary, "episodes")
    return f"{text} (does not fit: {r.does_not_fit})" if r.does_not_fit else text


CELL_COLUMNS = [
    _key("suite"), _key("model"), _key("mode"), _key("surface"),
    CellColumn(METRICS["episodes"].label, _episodes),
    CellColumn("tools", lambda r, _: fmt(r.tools_shown)),
    CellColumn("tool block B", lambda r, _: fmt(r.tool_block_bytes)),
    CellColumn("x smaller", _ratio), _metric("prompt_tokens_per_step"),
    *(_effective(p) for p in PROFILE_NAMES),  # prompt caching per provider profile (bench.promptcache)
    CellColumn(
        f"{METRICS['round_trips'].label} (overhead)",
        lambda r, _: f"{show(r.summary, 'round_trips')} ({show(r.summary, 'overhead_round_trips')})",
    ),
    CellColumn(f"{METRICS['first_try_accuracy'].label} [95% CI]", _first_try),
    _metric("selection_accuracy"), _metric("success_rate"),
    *(_with_interval(name) for name in ("call_share", "state_share", "efficiency")),  # bench.analysis.credit_summary
    CellColumn(METRICS["policy_denials"].label, lambda r, _: show(r.summary, "policy_denials"), optional=True),
    CellColumn(METRICS["policy_recovered"].label, lambda r, _: show(r.summary, "policy_recovered"), optional=True),
    _with_interval("instance_accuracy"),  # pass-through parameters (bench.analysis.instance_accuracy)
    CellColumn(
        METRICS["recovered_after_error"].label,
        lambda r, _: f"{show(r.summary, 'recovered_after_error')}/{r.summary.failed_first_tries}",
    ),
    CellColumn(
        "boundary / protocol viol.",
        lambda r, _: f"{show(r.summary, 'boundary_violations')} / {show(r.summary, 'protocol_violations')}",
    ),
    _metric("parse_failures"), _metric("latency_s"), _metric("stuck_rate"),
    *(_metric(name) for name in ("cached_share", "cost_per_episode", "cost_per_solved")),
]  # fmt: skip
"""The cells table: keys, tool-block size, then registry metrics (METRICS) by label and format; a registered
metric that asks for a column adds it (:func:`all_cell_columns`). Heads and texts come from the declarations;
the layout stays this list, not a field of theirs: its order is not the declarations' (which the docs table and
the paired metrics keep), five columns join two numbers or a number and its interval, and some metrics have none
(request B/step, stable prefix, the outcome counts)."""
CELL_HEAD = [c.head for c in CELL_COLUMNS if not c.optional]
"""The head of the columns every cells table has (:func:`cell_table`'s by default)."""


def _declared_column(metric: Metric) -> CellColumn:
    """A registered metric's column (bench.analysis.metrics.register_metric): optional, with its interval if any."""
    if metric.interval:
        return _with_interval(metric.name)
    return CellColumn(metric.label, lambda r, _: show(r.summary, metric.name), optional=True)


def all_cell_columns() -> list[CellColumn]:
    """CELL_COLUMNS, and a column for each registered metric that asks for one, after the column it names."""
    out = list(CELL_COLUMNS)
    for metric in (m for m in declared() if m.column):
        heads = [c.head for c in out]
        if metric.after is not None and metric.after not in heads:
            raise ValueError(f"metric {metric.name!r}: after={metric.after!r} is no column ({' | '.join(heads)})")
        out.insert(heads.index(metric.after) + 1 if metric.after is not None else len(out), _declared_column(metric))
    return out


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
    columns = cell_columns(data) if optional else [c for c in CELL_COLUMNS if not c.optional]
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
                f"{100 * p.first_try_delta:+.0f} pts [{100 * (p.first_try_delta_low or 0):+.0f}, "
                f"{100 * (p.first_try_delta_high or 0):+.0f}]"
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
