"""The metrics of ``surfbench whatif``: an episode's summary row, and every metric before and after a cut.

Each metric of :func:`surfbench.bench.metrics.summarize_cell` is written here as a per-episode
(numerator, denominator), so that a paired bootstrap can resample episodes and recompute the
difference of the cell's value after minus before.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from surfbench.bench.metrics import METRICS, summarize_cell
from surfbench.bench.replay import Rescored
from surfbench.bench.stuck import scan

BOOTSTRAP_ROUNDS = 2000


@dataclass(frozen=True)
class MetricDelta:
    """One metric of a cell before and after the cut."""

    name: str
    label: str
    before: Any
    after: Any
    low: float | None
    high: float | None
    """95% paired-bootstrap interval of after - before (episodes resampled)."""


def model_time(r: Rescored) -> float:
    """The model time of an episode: its steps' latency, summed."""
    return sum(s.latency_s for s in r.trace.steps)


def _mean(values: Sequence[float | int | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return statistics.fmean(clean) if clean else None


def summary_row(r: Rescored) -> dict[str, Any]:
    """The episode's columns that :func:`surfbench.bench.metrics.summarize_cell` reads."""
    s, steps = r.score, r.trace.steps
    stuck = scan(steps, r.trace.calls)
    return {
        "expected_calls": s.expected_calls, "first_try_correct": s.first_try_correct,
        "selection_correct": s.selection_correct, "success": s.success, "round_trips": s.round_trips,
        "overhead_round_trips": s.overhead_round_trips,
        "prompt_tokens_per_step": _mean([x.prompt_tokens for x in steps]),
        "request_bytes_per_step": _mean([x.request_bytes for x in steps]),
        "recovered_after_error": s.recovered_after_error, "failed_first_tries": s.failed_first_tries,
        "boundary_violations": s.boundary_violations, "protocol_violations": s.protocol_violations,
        "parse_failures": s.parse_failures, "stable_prefix": s.stable_prefix, "latency_s": model_time(r),
        "error": r.trace.error, "stuck": stuck.stuck, "stuck_repeats": stuck.repeats,
    }  # fmt: skip


Part = Callable[[Mapping[str, Any]], tuple[float, float]]


def _per_episode(column: str) -> Part:
    def part(row: Mapping[str, Any]) -> tuple[float, float]:
        value = row[column]
        return (0.0, 0.0) if value is None else (float(value), 1.0)

    return part


# Each metric of summarize_cell as a per-episode (numerator, denominator): the cell's value is
# sum(numerators) / sum(denominators), or, for totals, sum(numerators).
PARTS: dict[str, Part] = {
    "success_rate": _per_episode("success"),
    "first_try_accuracy": lambda r: (float(r["first_try_correct"]), float(r["expected_calls"])),
    "selection_accuracy": _per_episode("selection_correct"),
    "round_trips": _per_episode("round_trips"),
    "overhead_round_trips": _per_episode("overhead_round_trips"),
    "prompt_tokens_per_step": _per_episode("prompt_tokens_per_step"),
    "request_bytes_per_step": _per_episode("request_bytes_per_step"),
    "recovered_after_error": _per_episode("recovered_after_error"),
    "boundary_violations": _per_episode("boundary_violations"),
    "protocol_violations": _per_episode("protocol_violations"),
    "parse_failures": _per_episode("parse_failures"),
    "stable_prefix_rate": _per_episode("stable_prefix"),
    "latency_s": _per_episode("latency_s"),
    "stuck_rate": _per_episode("stuck"),
}
TOTALS = {"recovered_after_error"}


def paired_deltas(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]], seed: int = 0) -> list[MetricDelta]:
    """Every metric before and after, with a 95% paired-bootstrap interval of the difference."""
    import numpy as np

    sb, sa = summarize_cell(before), summarize_cell(after)
    rng = np.random.default_rng(seed)
    n = len(before)
    picks = rng.integers(0, n, size=(BOOTSTRAP_ROUNDS, n)) if n else None
    out = []
    for name in METRICS:
        if name not in PARTS:
            continue
        low = high = None
        if picks is not None:
            parts_b = np.array([PARTS[name](r) for r in before])
            parts_a = np.array([PARTS[name](r) for r in after])
            with np.errstate(invalid="ignore", divide="ignore"):
                if name in TOTALS:
                    diff = parts_a[picks, 0].sum(1) - parts_b[picks, 0].sum(1)
                else:
                    diff = parts_a[picks, 0].sum(1) / parts_a[picks, 1].sum(1) - (
                        parts_b[picks, 0].sum(1) / parts_b[picks, 1].sum(1)
                    )
            diff = diff[~np.isnan(diff)]
            if len(diff):
                low, high = float(np.percentile(diff, 2.5)), float(np.percentile(diff, 97.5))
        out.append(MetricDelta(name, METRICS[name].label, sb.get(name), sa.get(name), low, high))
    return out
