"""Aggregate episode rows into the per-cell numbers reports show.

Each metric declares whether higher is better and how it aggregates, so that nothing downstream
hard-codes a direction (the lm-evaluation-harness lesson).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from surfbench.bench.scorer import is_context_overflow


@dataclass(frozen=True)
class Metric:
    name: str
    label: str
    higher_is_better: bool | None
    """None where there is no better direction (latency is lower-better; counts of tools are neutral)."""
    description: str


METRICS = {
    m.name: m
    for m in (
        Metric("episodes", "episodes", None, "episodes in the cell"),
        Metric("success_rate", "success", True, "share of episodes whose checks all hold"),
        Metric("first_try_accuracy", "first-try args", True, "micro-average over expected calls"),
        Metric("selection_accuracy", "selection", True, "first canonical call names the expected first op"),
        Metric("round_trips", "round trips", False, "model calls per episode"),
        Metric("overhead_round_trips", "overhead RT", False, "model calls with only meta calls, per episode"),
        Metric("prompt_tokens_per_step", "prompt tok/step", False, "provider-reported prompt tokens per model call"),
        Metric("request_bytes_per_step", "request B/step", False, "JSON request body bytes per model call"),
        Metric("recovered_after_error", "recovered", True, "operations recovered after a failed first call"),
        Metric("boundary_violations", "boundary viol.", False, "calls to tools not exposed, per episode"),
        Metric("protocol_violations", "protocol viol.", False, "operations called before loading, per episode"),
        Metric("parse_failures", "parse fail.", False, "unparseable tool calls, per episode"),
        Metric("stable_prefix_rate", "stable prefix", True, "share of episodes with an unchanged tool block"),
        Metric("latency_s", "latency s", False, "model time per episode"),
        Metric("stuck_rate", "stuck", False, "share of episodes that sent the same failing output 3 times in a row"),
    )
}


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _mean(values: Iterable[Any]) -> float | None:
    clean = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(clean) / len(clean) if clean else None


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) == "<NA>"


def summarize_cell(rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The cell's aggregate numbers from its episode rows (dicts or DataFrame records)."""
    expected = sum(int(r["expected_calls"]) for r in rows)
    correct = sum(int(r["first_try_correct"]) for r in rows)
    low, high = wilson(correct, expected)
    selections = [r["selection_correct"] for r in rows if r.get("selection_correct") is not None]
    sel = [bool(x) for x in selections if not (isinstance(x, float) and math.isnan(x))]
    return {
        "episodes": len(rows),
        "success_rate": _mean(1.0 if r["success"] else 0.0 for r in rows),
        "first_try_accuracy": correct / expected if expected else None,
        "first_try_ci_low": low if expected else None,
        "first_try_ci_high": high if expected else None,
        "expected_calls": expected,
        "selection_accuracy": sum(sel) / len(sel) if sel else None,
        "round_trips": _mean(r["round_trips"] for r in rows),
        "overhead_round_trips": _mean(r["overhead_round_trips"] for r in rows),
        "prompt_tokens_per_step": _mean(r["prompt_tokens_per_step"] for r in rows),
        "request_bytes_per_step": _mean(r["request_bytes_per_step"] for r in rows),
        "recovered_after_error": sum(int(r["recovered_after_error"]) for r in rows),
        "failed_first_tries": sum(int(r["failed_first_tries"]) for r in rows),
        "boundary_violations": _mean(r["boundary_violations"] for r in rows),
        "protocol_violations": _mean(r["protocol_violations"] for r in rows),
        "parse_failures": _mean(r["parse_failures"] for r in rows),
        "stable_prefix_rate": _mean(1.0 if r["stable_prefix"] else 0.0 for r in rows),
        "latency_s": _mean(r["latency_s"] for r in rows),
        # runs recorded before stuck detection have no such column: unknown, not 0
        "stuck_rate": _mean(None if _missing(r.get("stuck")) else float(bool(r["stuck"])) for r in rows),
        "harness_errors": sum(1 for r in rows if r.get("error") and not is_context_overflow(r.get("error"))),
        "context_overflows": sum(1 for r in rows if is_context_overflow(r.get("error"))),
    }


def per_operation(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """First-try (correct, attempts) per operation, from the episodes' ``first_tries`` column."""
    out: dict[str, list[int]] = {}
    for r in rows:
        tries = r["first_tries"]
        for ft in json.loads(tries) if isinstance(tries, str) else tries:
            slot = out.setdefault(ft["op"], [0, 0])
            slot[0] += 1 if ft["correct"] else 0
            slot[1] += 1
    return {op: (c, n) for op, (c, n) in out.items()}


def fmt(value: Any, kind: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if kind == "pct":
        return f"{100 * value:.0f}%"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def format_summary(summary: Mapping[str, Any]) -> str:
    ci = ""
    if summary.get("first_try_ci_low") is not None:
        ci = f" [{fmt(summary['first_try_ci_low'], 'pct')}, {fmt(summary['first_try_ci_high'], 'pct')}]"
    lines = [
        f"episodes               {summary['episodes']}",
        f"success                {fmt(summary['success_rate'], 'pct')}",
        f"first-try arg accuracy {fmt(summary['first_try_accuracy'], 'pct')}{ci}"
        f" over {summary['expected_calls']} calls",
        f"tool selection         {fmt(summary['selection_accuracy'], 'pct')}",
        f"round trips / episode  {fmt(summary['round_trips'])} (overhead {fmt(summary['overhead_round_trips'])})",
        f"prompt tokens / step   {fmt(summary['prompt_tokens_per_step'])}",
        f"request bytes / step   {fmt(summary['request_bytes_per_step'])}",
        f"recovered after error  {summary['recovered_after_error']} of {summary['failed_first_tries']}",
        f"boundary violations    {fmt(summary['boundary_violations'])} / episode",
        f"protocol violations    {fmt(summary['protocol_violations'])} / episode",
        f"parse failures         {fmt(summary['parse_failures'])} / episode",
        f"stable prefix          {fmt(summary['stable_prefix_rate'], 'pct')}",
        f"model latency          {fmt(summary['latency_s'])} s / episode",
    ]
    if summary.get("stuck_rate") is not None:
        lines.append(f"stuck                  {fmt(summary['stuck_rate'], 'pct')} of episodes (same failing call 3x)")
    if summary.get("context_overflows"):
        lines.append(f"context overflows      {summary['context_overflows']} (the conversation outgrew the model)")
    if summary.get("harness_errors"):
        lines.append(f"harness errors         {summary['harness_errors']}")
    return "\n".join(lines)
