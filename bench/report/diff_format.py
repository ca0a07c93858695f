"""``surfbench diff``'s output: the same sections as text, as markdown for a pull-request comment, and as JSON.

Text and markdown share the tables (pipe tables, as ``surfbench gate`` prints); markdown adds headings, puts the
decision first (what a reviewer reads) and folds the per-operation table, which can be long, into ``<details>``.
JSON holds every number with its unit in the key, for a script.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from surfbench.bench.base.markdown import markdown_table
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.catalog_diff import format_markdown, to_json
from surfbench.bench.report.diff_gate import DiffGateResult
from surfbench.bench.report.diff_report import ChangeReport, PrefixChange, PrefixOutcome, SuiteChange, SurfaceChange
from surfbench.bench.report.surface_report import SurfaceRow

FORMATS = ("text", "markdown", "json")


def _n(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:,.1f}"


def _signed(value: float | None, before: float | None = None) -> str:
    if value is None:
        return "-"
    text = (
        "0" if value == 0 else f"{value:+,.0f}" if float(value).is_integer() or abs(value) >= 100 else f"{value:+,.1f}"
    )
    if before:
        text += f" ({value / before:+.1%})"
    return text


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _catalog_line(c: Catalog) -> str:
    return f"{c.source} ({len(c)} operations, hash {c.content_hash})"


def _tools(s: SurfaceChange) -> str:
    b = _n(s.before.tools) if s.before else "-"
    a = _n(s.after.tools) if s.after else "-"
    return b if a == b else f"{b} -> {a}"


def _help(row: SurfaceRow | None) -> str:
    return "-" if row is None or row.help_max_bytes is None else f"{row.help_max_bytes:,}"


def surfaces_table(report: ChangeReport) -> str:
    """One row per surface: tools, o200k tokens and bytes before, after and the change; the largest help payload."""
    rows = []
    for s in report.surfaces:
        before, after = s.before, s.after
        rows.append([
            s.surface,
            _tools(s),
            _n(s.tokens_before),
            _n(s.tokens_after),
            _signed(s.token_change, s.tokens_before),
            _n(before.total_bytes if before else None),
            _n(after.total_bytes if after else None),
            _signed(s.bytes_change),
            f"{_help(before)} -> {_help(after)}" if _help(before) != _help(after) else _help(after),
            _cell(", ".join(s.new_over_budget)) or "-",
        ])  # fmt: skip
    head = ["surface", "tools", "tokens before", "tokens after", "change", "bytes before", "bytes after", "change",
            "largest help B", f"newly over {report.help_budget:,} B"]  # fmt: skip
    return markdown_table(head, rows)


def _outcome(o: PrefixOutcome) -> str:
    if o.cached_before == 0:
        return "nothing cached"
    if o.survives:
        return "survives"
    text = f"loses {o.lost:,} of {o.cached_before:,}"
    return text + " + history" if o.history_lost else text


def prefix_table(prefixes: Sequence[PrefixChange]) -> str:
    """One row per surface, one column per cache profile: what a conversation in progress loses on its next request."""
    profiles = next((tuple(o.profile for o in p.outcomes) for p in prefixes if p.outcomes), ())
    rows = []
    for p in prefixes:
        if not p.outcomes:
            rows.append([p.surface, "-", _cell(p.note), *["-" for _ in profiles]])
            continue
        head = _n(p.head_before) if p.head_before == p.head_after else f"{_n(p.head_before)} -> {_n(p.head_after)}"
        rows.append([p.surface, head, _cell(p.first_change or "identical"), *[_outcome(o) for o in p.outcomes]])
    return markdown_table(["surface", "head tokens", "first change", *profiles], rows)


def _suite_lines(suite: SuiteChange, markdown: bool) -> list[str]:
    lines = [
        f"suite {suite.suite}: {suite.tasks} tasks with expected calls; {len(suite.broken_tasks)} no longer validate "
        "against the new catalog"
    ]
    if suite.broken:  # one row per operation and reason: a required argument added breaks every task calling it
        groups: dict[tuple[str, str], list[str]] = {}
        for b in suite.broken:
            tasks = groups.setdefault((b.op, b.why), [])
            if b.task not in tasks:
                tasks.append(b.task)
        rows = [
            [f"`{op}`" if markdown else op, _cell(why), str(len(tasks)), _cell(", ".join(tasks[:3]))
             + (" ..." if len(tasks) > 3 else "")]
            for (op, why), tasks in groups.items()
        ]  # fmt: skip
        lines += ["", markdown_table(["operation", "why its expected calls fail", "tasks", "for example"], rows)]
    if suite.retrieval:
        ks = list(suite.retrieval[0].recall_before)
        rows = []
        for r in suite.retrieval:
            cells = [f"{r.recall_before[k]:.3f} -> {r.recall_after[k]:.3f}" for k in ks]
            rows.append([r.retriever, str(r.tasks), *cells, f"{r.mrr_before:.3f} -> {r.mrr_after:.3f}"])
        lines += ["", markdown_table(["retriever", "tasks", *[f"R@{k}" for k in ks], "MRR"], rows)]
        missed = [
            f"{r.retriever}: no expected operation within the top {k} any more for {len(names)} task(s): "
            + ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
            for r in suite.retrieval
            for k, names in r.newly_missed.items()
            if names
        ]  # fmt: skip
        lines += ["", *missed] if missed else []
    lines += ["", *[f"note: {n}" for n in suite.notes]] if suite.notes else []
    return lines


def gate_table(gate: DiffGateResult) -> str:
    rows = [[v.criterion, v.threshold, _cell(v.observed), v.outcome, v.decision, _cell(v.detail) or "-"]
            for v in gate.verdicts]  # fmt: skip
    return markdown_table(["criterion", "threshold", "observed", "outcome", "decision", "detail"], rows)


def _decision(gate: DiffGateResult) -> str:
    return f"decision: {gate.decision.upper()} (exit {gate.exit_code}; gate {gate.name}, {gate.path})"


PREFIX_NOTE = (
    "head: the surface's tool block and system text, in o200k_base tokens. Per cache profile, what a conversation "
    "whose head was cached loses on its next request after the change; `+ history`: its messages past the head are "
    "computed again too (prefix and slot caches). Request-dependent surfaces have no one head."
)


def format_diff(report: ChangeReport, gate: DiffGateResult | None, markdown: bool = False) -> str:
    """The report as text (``markdown``: headings, the decision first, the operation table folded)."""
    title = f"surfbench diff: {_catalog_line(report.old)} -> {_catalog_line(report.new)}"

    def heading(text: str) -> str:
        return f"### {text}" if markdown else f"{text}:"

    ops = format_markdown(report.diff).rstrip()
    out = [f"## {title}" if markdown else title, ""]
    if markdown and gate is not None:
        out += [f"**{_decision(gate)}**", ""]
    if markdown and report.diff.changes:
        summary, _, table = ops.partition("\n\n")
        out += [heading("Operations"), "", summary, "", "<details><summary>per operation</summary>", "", table, "",
                "</details>"]  # fmt: skip
    else:
        out += [heading("Operations"), "", ops]
    out += ["", heading("Surfaces"), "", surfaces_table(report)]
    out += ["", heading("Cached prefix"), "", prefix_table(report.prefixes), "", PREFIX_NOTE]
    if report.suite is not None:
        out += ["", heading(f"Suite {report.suite.suite}"), "", *_suite_lines(report.suite, markdown)]
    out += ["", *[f"note: {n}" for n in report.notes]] if report.notes else []
    if gate is not None:
        out += ["", heading("Gate"), "", gate_table(gate), "", _decision(gate)]
    return "\n".join(out) + "\n"


def _number(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(value, 4)


def _row(row: SurfaceRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "tools": row.tools,
        "tool_block_bytes": row.tool_block_bytes,
        "system_bytes": row.system_bytes,
        "total_bytes": row.total_bytes,
        "tokens_o200k": row.tokens_o200k,
        "tokens_cl100k": row.tokens_cl100k,
        "help_max_bytes": row.help_max_bytes,
        "help_max_operation": row.help_max_operation,
        "help_over_budget": list(row.help_over_budget),
    }


def diff_json(report: ChangeReport, gate: DiffGateResult | None) -> str:
    """Everything as one JSON object (``exit_code``: the gate's, 0 without a gate)."""
    suite = report.suite
    out: dict[str, Any] = {
        "old": {"source": report.old.source, "operations": len(report.old), "hash": report.old.content_hash},
        "new": {"source": report.new.source, "operations": len(report.new), "hash": report.new.content_hash},
        "operations": to_json(report.diff),
        "help_budget_bytes": report.help_budget,
        "surfaces": [
            {
                "surface": s.surface,
                "kind": s.kind,
                "before": _row(s.before),
                "after": _row(s.after),
                "token_change_o200k": s.token_change,
                "token_ratio_o200k": _number(s.token_ratio),
                "bytes_change": s.bytes_change,
                "newly_over_help_budget": list(s.new_over_budget),
            }
            for s in report.surfaces
        ],
        "prefix": [
            {
                "surface": p.surface,
                "head_tokens_before": p.head_before,
                "head_tokens_after": p.head_after,
                "first_change": p.first_change,
                "note": p.note,
                "profiles": {
                    o.profile: {
                        "cached_before": o.cached_before,
                        "kept": o.kept,
                        "lost": o.lost,
                        "survives": o.survives,
                        "history_lost": o.history_lost,
                        "note": o.note,
                    }
                    for o in p.outcomes
                },  # fmt: skip
            }
            for p in report.prefixes
        ],
        "suite": None
        if suite is None
        else {
            "suite": suite.suite,
            "tasks": suite.tasks,
            "broken_tasks": list(suite.broken_tasks),
            "broken_calls": [asdict(b) for b in suite.broken],
            "retrieval": [
                {
                    "retriever": r.retriever,
                    "tasks": r.tasks,
                    "recall_before": {str(k): round(v, 4) for k, v in r.recall_before.items()},
                    "recall_after": {str(k): round(v, 4) for k, v in r.recall_after.items()},
                    "mrr_before": round(r.mrr_before, 4),
                    "mrr_after": round(r.mrr_after, 4),
                    "newly_missed": {str(k): list(v) for k, v in r.newly_missed.items()},
                }
                for r in suite.retrieval
            ],
            "notes": list(suite.notes),
        },
        "notes": list(report.notes),
        "gate": None if gate is None else gate.to_json(),
        "exit_code": 0 if gate is None else gate.exit_code,
    }
    return json.dumps(out, indent=2, ensure_ascii=False)
