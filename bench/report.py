"""Comparison tables over result runs: one row per suite x surface x model x calling mode."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.metrics import fmt, summarize_cell
from bench.results import load_runs

CELL_KEYS = ["suite", "surface", "surface_kind", "model", "params_b", "mode"]


@dataclass(frozen=True)
class CellRow:
    keys: dict[str, Any]
    summary: dict[str, Any]
    tool_block_bytes: float | None
    """Mean tool-block wire bytes on the first step."""


def cell_rows(frame: Any, baseline: str = "full") -> list[CellRow]:
    if frame is None or len(frame) == 0:
        return []
    rows = []
    for keys, group in frame.groupby(CELL_KEYS, dropna=False, sort=True):
        records = group.to_dict("records")
        block = group["tool_block_bytes_first"].dropna()
        rows.append(
            CellRow(
                keys=dict(zip(CELL_KEYS, keys, strict=True)),
                summary=summarize_cell(records),
                tool_block_bytes=float(block.mean()) if len(block) else None,
            )
        )
    order = {"full": 0, "core": 1, "dispatcher": 2, "lazy": 3, "search": 4, "preselect": 5}
    rows.sort(
        key=lambda r: (
            str(r.keys["suite"]),
            _num(r.keys["params_b"]),
            str(r.keys["model"]),
            str(r.keys["mode"]),
            order.get(str(r.keys["surface_kind"]), 9),
            str(r.keys["surface"]),
        )
    )
    return rows


def _num(value: Any) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.inf
    return math.inf if math.isnan(out) else out


def markdown_table(rows: Sequence[CellRow], baseline: str = "full") -> str:
    base = {
        (r.keys["suite"], r.keys["model"], r.keys["mode"]): r.tool_block_bytes
        for r in rows
        if r.keys["surface"] == baseline
    }
    head = (
        "| suite | model | mode | surface | episodes | tool block B | x smaller | prompt tok/step | round trips "
        "(overhead) | first-try args [95% CI] | selection | success | recovered | boundary / protocol viol. "
        "| parse fail. | latency s/ep |"
    )
    lines = [head, "|" + "---|" * 16]
    for r in rows:
        s = r.summary
        k = r.keys
        b = base.get((k["suite"], k["model"], k["mode"]))
        ratio = f"{b / r.tool_block_bytes:.1f}" if b and r.tool_block_bytes else "-"
        ci = (
            f"{fmt(s['first_try_accuracy'], 'pct')} [{fmt(s['first_try_ci_low'], 'pct')}, "
            f"{fmt(s['first_try_ci_high'], 'pct')}]"
            if s["first_try_accuracy"] is not None
            else "-"
        )
        lines.append(
            f"| {k['suite']} | {k['model']} | {k['mode']} | {k['surface']} | {s['episodes']} | "
            f"{fmt(r.tool_block_bytes)} | {ratio} | {fmt(s['prompt_tokens_per_step'])} | "
            f"{fmt(s['round_trips'])} ({fmt(s['overhead_round_trips'])}) | {ci} | "
            f"{fmt(s['selection_accuracy'], 'pct')} | {fmt(s['success_rate'], 'pct')} | "
            f"{s['recovered_after_error']}/{s['failed_first_tries']} | "
            f"{fmt(s['boundary_violations'])} / {fmt(s['protocol_violations'])} | {fmt(s['parse_failures'])} | "
            f"{fmt(s['latency_s'])} |"
        )
    return "\n".join(lines)


def table_for_runs(runs: Sequence[str | Path], baseline: str = "full") -> str:
    return markdown_table(cell_rows(load_runs(runs), baseline), baseline)
