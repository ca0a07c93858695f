"""``surfbench report RUN...``: a markdown report and one self-contained HTML file.

Per suite x surface x model x mode: tools, tool-block bytes and tokens, ratio vs the baseline, prompt
tokens per step, round trips and overhead round trips, first-try argument accuracy with its 95%
interval, tool selection, success, recovered-after-error, violations, latency; a paired comparison
against the baseline surface (McNemar on success, paired bootstrap on first-try accuracy);
per-operation first-try accuracy, hottest operations first; three figures.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare import Paired, paired_comparisons
from bench.metrics import fmt, per_operation, summarize_cell
from bench.results import load_runs

CELL_KEYS = ["suite", "surface", "surface_kind", "model", "params_b", "mode"]
KIND_ORDER = {"full": 0, "core": 1, "dispatcher": 2, "lazy": 3, "search": 4, "preselect": 5}


@dataclass(frozen=True)
class CellRow:
    keys: dict[str, Any]
    summary: dict[str, Any]
    tool_block_bytes: float | None
    """Mean tool-block wire bytes on the first step."""
    tools_shown: float | None
    """Mean tools shown on the first step."""


@dataclass
class ReportData:
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


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(out) else out


def cell_rows(frame: Any) -> list[CellRow]:
    if frame is None or len(frame) == 0:
        return []
    rows = []
    for keys, group in frame.groupby(CELL_KEYS, dropna=False, sort=True):
        block = group["tool_block_bytes_first"].dropna()
        shown = group["tools_shown_first"].dropna()
        rows.append(
            CellRow(
                keys=dict(zip(CELL_KEYS, keys, strict=True)),
                summary=summarize_cell(group.to_dict("records")),
                tool_block_bytes=float(block.mean()) if len(block) else None,
                tools_shown=float(shown.mean()) if len(shown) else None,
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


def collect(runs: Sequence[str | Path], baseline: str = "full", hot_k: int = 15) -> ReportData:
    frame = load_runs(runs)
    cells = cell_rows(frame)
    op_order: list[str] = []
    hot: set[str] = set()
    scripted = False
    for run in runs:
        info = json.loads((Path(run) / "run.json").read_text())
        scripted = scripted or any(c.get("provider") == "scripted" for c in info["cells"])
    if len(frame):
        from bench.suite import load_suite

        for suite_name in sorted(set(frame["suite"])):
            ranked = [op.name for op in load_suite(suite_name).catalog.by_weight()]
            op_order += ranked
            hot |= set(ranked[:hot_k])
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
        runs=[str(r) for r in runs],
        cells=cells,
        paired=paired_comparisons(frame, baseline) if len(frame) else [],
        per_op=per_op,
        op_order=op_order,
        hot_ops=hot,
        baseline=baseline,
        scripted=scripted,
    )


def error_counts(column: Any) -> tuple[int, dict[str, int]]:
    """(episodes, error type -> episodes that had it at least once) from an ``error_types`` column."""
    counts: dict[str, int] = {}
    n = 0
    for raw in column:
        n += 1
        types = json.loads(raw) if isinstance(raw, str) else list(raw if raw is not None else [])
        for name in set(types):
            counts[name] = counts.get(name, 0) + 1
    return n, counts


# -- rendering -----------------------------------------------------------------------------------------
CELL_HEAD = [
    "suite", "model", "mode", "surface", "episodes", "tools", "tool block B", "x smaller", "prompt tok/step",
    "round trips (overhead)", "first-try args [95% CI]", "selection", "success", "recovered",
    "boundary / protocol viol.", "parse fail.", "latency s/ep",
]  # fmt: skip


def cell_table(data: ReportData) -> list[list[str]]:
    base = {
        (r.keys["suite"], r.keys["model"], r.keys["mode"]): r.tool_block_bytes
        for r in data.cells
        if r.keys["surface"] == data.baseline
    }
    out = []
    for r in data.cells:
        s, k = r.summary, r.keys
        b = base.get((k["suite"], k["model"], k["mode"]))
        ratio = f"{b / r.tool_block_bytes:.1f}" if b and r.tool_block_bytes else "-"
        ci = (
            f"{fmt(s['first_try_accuracy'], 'pct')} [{fmt(s['first_try_ci_low'], 'pct')}, "
            f"{fmt(s['first_try_ci_high'], 'pct')}]"
            if s["first_try_accuracy"] is not None
            else "-"
        )
        out.append(
            [
                str(k["suite"]), str(k["model"]), str(k["mode"]), str(k["surface"]), str(s["episodes"]),
                fmt(r.tools_shown), fmt(r.tool_block_bytes), ratio, fmt(s["prompt_tokens_per_step"]),
                f"{fmt(s['round_trips'])} ({fmt(s['overhead_round_trips'])})", ci,
                fmt(s["selection_accuracy"], "pct"), fmt(s["success_rate"], "pct"),
                f"{s['recovered_after_error']}/{s['failed_first_tries']}",
                f"{fmt(s['boundary_violations'])} / {fmt(s['protocol_violations'])}", fmt(s["parse_failures"]),
                fmt(s["latency_s"]),
            ]
        )  # fmt: skip
    return out


PAIRED_HEAD = [
    "model", "candidate", "vs", "pairs", "baseline ok only", "candidate ok only", "McNemar p",
    "first-try baseline", "first-try candidate", "difference [95% CI]",
]  # fmt: skip


def paired_table(data: ReportData) -> list[list[str]]:
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
                "-" if p.mcnemar_p is None else f"{p.mcnemar_p:.3f}", fmt(p.baseline_first_try, "pct"),
                fmt(p.candidate_first_try, "pct"), delta,
            ]
        )  # fmt: skip
    return rows


def per_op_table(data: ReportData) -> tuple[list[str], list[list[str]]]:
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
        rows.append([op, "hot" if op in data.hot_ops else ""] + cells)
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


def _md(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown(data: ReportData, figures: dict[str, str]) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"# surfbench report\n\nRuns: {', '.join(data.runs)}. Made {stamp}. Baseline surface: `{data.baseline}`."]
    if data.scripted:
        parts.append("> **Scripted model in these runs: not a measurement.**")
    parts.append("## Surfaces x models\n\n" + _md(CELL_HEAD, cell_table(data)))
    if data.paired:
        parts.append(
            f"## Paired against `{data.baseline}` (same tasks)\n\nSuccess: McNemar's exact test on discordant "
            "pairs. First-try argument accuracy: difference with a 95% paired-bootstrap interval.\n\n"
            + _md(PAIRED_HEAD, paired_table(data))
        )
    head, rows = per_op_table(data)
    parts.append("## First-try argument accuracy per operation (hottest first)\n\n" + _md(head, rows))
    err_head, err_rows = error_table(data)
    if err_rows:
        parts.append(
            "## Error types: share of episodes with each (at least once)\n\n"
            "Suite-specific failure modes (e.g. the workspace suite's `steps_and_pipe`, `pipe_for_steps`, "
            "`steps_for_pipe`, `inline_reimplementation`) appear here with the scorer's own types.\n\n"
            + _md(err_head, err_rows)
        )
    if figures:
        parts.append("## Figures\n\n" + "\n\n".join(f"![{name}]({path})" for name, path in figures.items()))
    return "\n\n".join(parts) + "\n"


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}"
    "table{border-collapse:collapse;margin:1rem 0;font-size:13px}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}th{background:#f3f3f3}"
    "td:first-child{text-align:left}.warn{background:#fee;padding:.5rem;border:1px solid #c00}"
    "figure{display:inline-block;margin:1rem}img{max-width:640px}"
)


def html_page(data: ReportData, images: dict[str, str]) -> str:
    """One file: tables and figures (PNG as data: URIs), no script, no external resource."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    banner = '<p class="warn">Scripted model in these runs: not a measurement.</p>' if data.scripted else ""
    head, rows = per_op_table(data)
    runs = html.escape(", ".join(data.runs))
    figs = "".join(
        f'<figure><img alt="{html.escape(n)}" src="data:image/png;base64,{b64}"><figcaption>{html.escape(n)}'
        "</figcaption></figure>"
        for n, b64 in images.items()
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>surfbench report</title>
<style>{CSS}</style></head><body>
<h1>surfbench report</h1><p>Runs: {runs}. Made {stamp}. Baseline: {html.escape(data.baseline)}.</p>
{banner}
<h2>Surfaces x models</h2>{_html_table(CELL_HEAD, cell_table(data))}
<h2>Paired against {html.escape(data.baseline)}</h2>{_html_table(PAIRED_HEAD, paired_table(data))}
<h2>First-try argument accuracy per operation (hottest first)</h2>{_html_table(head, rows)}
<h2>Error types: share of episodes with each</h2>{_html_table(*error_table(data))}
<h2>Figures</h2>{figs}
</body></html>
"""


def write_report(runs: Sequence[str | Path], out_dir: Path, baseline: str = "full") -> tuple[Path, Path]:
    """Write report.md, report.html and the figures; return the two report paths."""
    from bench.figures import draw_all

    data = collect(runs, baseline)
    out_dir.mkdir(parents=True, exist_ok=True)
    pngs = draw_all(data, out_dir)
    import base64

    images = {name: base64.b64encode(path.read_bytes()).decode() for name, path in pngs.items()}
    md_path = out_dir / "report.md"
    html_path = out_dir / "report.html"
    md_path.write_text(markdown(data, {n: p.name for n, p in pngs.items()}), encoding="utf-8")
    html_path.write_text(html_page(data, images), encoding="utf-8")
    return md_path, html_path
