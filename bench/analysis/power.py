"""Power: the smallest difference a paired comparison can detect, and the tasks x repeats a plan needs.

Every paired comparison (candidate vs baseline on the same tasks) states its **minimum detectable
difference** (MDE): the smallest true difference it would detect at 80% power with a 5% two-sided
test, for its N. For success (paired binary outcomes, McNemar) the normal approximation is

    MDE = (z_0.975 + z_0.8) * sqrt(p_d / n)

where n is the number of pairs and p_d the share of discordant pairs (one surface succeeds, the
other does not). For first-try accuracy (a ratio of sums, compared with a paired bootstrap) it is
``(z_0.975 + z_0.8) * SE`` with SE read off the 95% bootstrap interval. A gate threshold below the
MDE cannot be judged by that run: the criterion is ``underpowered``, with the N that would do.

With repeats at temperature > 0 a cell also reports **pass@k** (share of tasks where at least one of
k repeats succeeds) and **pass^k** (tau-bench: share of tasks where all k succeed), with Wilson
intervals over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from surfbench.bench.analysis.metrics import wilson
from surfbench.bench.store.tables import as_int

Z_ALPHA = 1.959963984540054  # two-sided 5%
Z_POWER = 0.8416212335729143  # 80% power
Z_SUM = Z_ALPHA + Z_POWER


def mde_paired(n: int, discordance: float) -> float | None:
    """MDE of a paired difference in proportions over ``n`` pairs with this share of discordant pairs.

    A discordance of 0 (the surfaces agreed on every pair) is taken as one pair in ``n``: no run can
    promise to see a difference smaller than one pair's worth.
    """
    if n <= 0:
        return None
    p_d = max(discordance, 1.0 / n)
    return Z_SUM * math.sqrt(p_d / n)


def mde_from_interval(low: float | None, high: float | None, n: int) -> float | None:
    """MDE from a 95% interval of a difference (its width gives the standard error), floored at one in n."""
    if low is None or high is None or n <= 0:
        return None
    se = max((high - low) / (2 * Z_ALPHA), 1.0 / n)
    return Z_SUM * se


def pairs_needed(drop: float, discordance: float) -> int:
    """Pairs needed to detect a paired difference of ``drop`` at 80% power, 5% two-sided."""
    if drop <= 0:
        raise ValueError(f"drop must be > 0, got {drop}")
    if not 0 < discordance <= 1:
        raise ValueError(f"discordance must be in (0, 1], got {discordance}")
    return math.ceil(Z_SUM**2 * discordance / drop**2)


def independent_discordance(baseline: float, drop: float) -> float:
    """Discordant share when the two surfaces' outcomes on a task are independent (a conservative default)."""
    other = baseline - drop
    return baseline * (1 - other) + other * (1 - baseline)


@dataclass(frozen=True)
class Plan:
    baseline: float
    drop: float
    discordance: float
    """Share of discordant pairs assumed (given, or independent outcomes)."""
    pairs: int
    """Paired episodes needed per surface (tasks x repeats)."""

    def options(self, repeats: Iterable[int] = (1, 3, 5)) -> list[tuple[int, int]]:
        """(tasks, repeats) combinations giving at least ``pairs`` paired episodes."""
        return [(math.ceil(self.pairs / r), r) for r in repeats]

    def text(self) -> str:
        lines = [
            f"detect a drop of {100 * self.drop:.1f} pts from a baseline of {100 * self.baseline:.0f}% "
            f"(80% power, 5% two-sided, paired; discordant pairs {100 * self.discordance:.0f}%):",
            f"  {self.pairs} paired episodes per surface",
        ]
        lines += [f"  = {t} tasks x {r} repeat(s)" for t, r in self.options()]
        lines.append(
            "  repeats of one task are not independent draws: prefer tasks; repeats count fully only at "
            "temperature > 0 with little task-to-task correlation"
        )
        return "\n".join(lines)


def plan(baseline: float, drop: float, discordance: float | None = None) -> Plan:
    """What a comparison needs to detect ``drop`` from ``baseline`` (both proportions in [0, 1])."""
    if not 0 < baseline <= 1:
        raise ValueError(f"--baseline must be a proportion in (0, 1], got {baseline}")
    if not 0 < drop <= baseline:
        raise ValueError(f"--drop must be in (0, baseline], got {drop}")
    p_d = discordance if discordance is not None else independent_discordance(baseline, drop)
    return Plan(baseline, drop, p_d, pairs_needed(drop, p_d))


@dataclass(frozen=True)
class PassK:
    k: int
    """Repeats per task (the smallest over the cell's tasks)."""
    tasks: int
    pass_at_k: float
    pass_at_k_low: float
    pass_at_k_high: float
    pass_hat_k: float
    """pass^k: all k repeats succeed."""
    pass_hat_k_low: float
    pass_hat_k_high: float


def pass_k(rows: Iterable[Mapping[str, object]]) -> PassK | None:
    """pass@k and pass^k over a cell's tasks, or None when no task has more than one repeat."""
    by_task: dict[str, list[bool]] = {}
    for r in sorted(rows, key=lambda r: as_int(r.get("repeat") or 0)):
        by_task.setdefault(str(r["task_id"]), []).append(bool(r["success"]))
    if not by_task:
        return None
    k = min(len(v) for v in by_task.values())
    if k < 2:
        return None
    any_ok = sum(1 for v in by_task.values() if any(v[:k]))
    all_ok = sum(1 for v in by_task.values() if all(v[:k]))
    n = len(by_task)
    a_low, a_high = wilson(any_ok, n)
    h_low, h_high = wilson(all_ok, n)
    return PassK(k, n, any_ok / n, a_low, a_high, all_ok / n, h_low, h_high)
