"""Per-cell instance accuracy: the share of calls that reached the instance their task names (docs/metrics.md).

Pooled over the cell's calls, not averaged over episodes: ``sum(instance_right) / sum(instance_calls)`` over the
episodes whose task wants a pass-through value (bench.suites.instances), with a 95% Wilson score interval; None
for a cell with no such call (a catalog without pass-through parameters, or runs recorded before the metric).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from surfbench.bench.store.tables import as_int


def _count(value: object) -> int | None:
    if value is None or str(value) == "<NA>" or (isinstance(value, float) and math.isnan(value)):
        return None
    return as_int(value)


def wilson_interval(right: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of ``right`` out of ``n`` (95% by default)."""
    p = right / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def instance_fields(rows: Iterable[Mapping[str, object]]) -> dict[str, float | None]:
    """``instance_accuracy`` and its interval for the cell whose episode rows these are."""
    calls = right = 0
    for row in rows:
        n, ok = _count(row.get("instance_calls")), _count(row.get("instance_right"))
        if n is not None and ok is not None:
            calls, right = calls + n, right + ok
    if not calls:
        return {"instance_accuracy": None, "instance_accuracy_ci_low": None, "instance_accuracy_ci_high": None}
    low, high = wilson_interval(right, calls)
    return {"instance_accuracy": right / calls, "instance_accuracy_ci_low": low, "instance_accuracy_ci_high": high}
