"""Round trips on tasks with two or more expected calls, per cell and paired against the baseline.

These are the tasks where one program (code mode) or parallel calls should save model calls.

``round_trips`` is model calls per episode (metrics.md). The ratio is taken over the tasks both cells
ran (same model): the candidate's mean round trips over the baseline's, so a cell that ran fewer
tasks is not compared with a different set. The gate's ``round_trips_ratio_max`` with
``tasks: {tags: [multi]}`` decides on the same quantity for tagged tasks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from surfbench.bench.base.sections import Section

if TYPE_CHECKING:
    import pandas as pd

MULTI_HEAD = ["model", "surface", "tasks", "round trips / episode", "vs baseline (same tasks)", "success"]


@dataclass(frozen=True)
class MultiCallRow:
    """One cell's episodes on tasks with two or more expected calls."""

    model: str
    surface: str
    tasks: int
    round_trips: float
    ratio: float | None
    """Mean round trips over the baseline's on the tasks both ran (None: the baseline, or no shared task)."""
    success: float


def multicall_rows(frame: pd.DataFrame, baseline: str) -> list[MultiCallRow]:
    """Per (model, surface) cell, its episodes whose task expects two or more calls."""
    multi = frame[frame["expected_calls"] >= 2]
    if multi.empty:
        return []
    # sorted: .loc on a partial key of an unsorted MultiIndex warns (PerformanceWarning) in every report
    per_task = multi.groupby(["model", "surface", "task_id"])["round_trips"].mean()
    rows = []
    for (model, surface), group in multi.groupby(["model", "surface"], sort=False):
        ratio = None
        if surface != baseline and (model, baseline) in per_task.index.droplevel(2):
            mine, base = per_task.loc[(model, surface)], per_task.loc[(model, baseline)]
            shared = mine.index.intersection(base.index)
            if len(shared) and base.loc[shared].mean() > 0:
                ratio = float(mine.loc[shared].mean() / base.loc[shared].mean())
        rows.append(
            MultiCallRow(
                str(model),
                str(surface),
                int(group["task_id"].nunique()),
                float(group["round_trips"].mean()),
                ratio,
                float(group["success"].mean()),
            )  # fmt: skip
        )
    return sorted(rows, key=lambda r: (r.model, r.surface != baseline, r.surface))


def multicall_section(rows: Sequence[MultiCallRow], baseline: str) -> list[Section]:
    """The report's section, or nothing when no task expects two or more calls."""
    if not rows:
        return []
    body = []
    for r in rows:
        ratio = "baseline" if r.surface == baseline else ("n/a" if r.ratio is None else f"{r.ratio:.2f}x")
        body.append([r.model, r.surface, str(r.tasks), f"{r.round_trips:.1f}", ratio, f"{r.success:.0%}"])
    text = (
        "Round trips (model calls) per episode on the tasks that "
        "expect two or more calls, where one program (code mode) or parallel calls can save model calls; "
        f"the ratio is against `{baseline}` on the tasks both ran."
    )
    return [Section("Tasks with two or more expected calls", text, (MULTI_HEAD, body))]
