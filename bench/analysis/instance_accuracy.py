"""Per-cell instance accuracy: the share of calls that reached the instance their task names (docs/metrics.md).

Pooled over the cell's calls, not averaged over episodes: ``sum(instance_right) / sum(instance_calls)`` over the
episodes whose task wants a pass-through value (bench.suites.instances), with a 95% Wilson score interval; None
for a cell with no such call (a catalog without pass-through parameters, or runs recorded before the metric).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from surfbench.bench.base.proportions import wilson
from surfbench.bench.store.tables import as_int

Z_EXACT = 1.959963984540054
"""The 95% normal quantile unrounded: the instance column has used it since it was added (its reported intervals
stay the same to the last digit)."""


def _count(value: object) -> int | None:
    if value is None or str(value) == "<NA>" or (isinstance(value, float) and math.isnan(value)):
        return None
    return as_int(value)


def instance_fields(rows: Iterable[Mapping[str, object]]) -> dict[str, float | None]:
    """``instance_accuracy`` and its interval for the cell whose episode rows these are."""
    calls = right = 0
    for row in rows:
        n, ok = _count(row.get("instance_calls")), _count(row.get("instance_right"))
        if n is not None and ok is not None:
            calls, right = calls + n, right + ok
    if not calls:
        return {"instance_accuracy": None, "instance_accuracy_ci_low": None, "instance_accuracy_ci_high": None}
    low, high = wilson(right, calls, z=Z_EXACT)
    return {"instance_accuracy": right / calls, "instance_accuracy_ci_low": low, "instance_accuracy_ci_high": high}
