"""Paired comparisons of a candidate surface against a baseline on the same tasks.

Success is compared with McNemar's exact test over paired episodes (same task, repeat, model, mode);
first-try argument accuracy with a paired bootstrap over tasks of the difference in micro-averaged
accuracy. Both keep the pairing, which a per-surface interval would throw away.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from surfbench.bench.analysis.metrics import METRICS, Metric, declared
from surfbench.bench.analysis.power import mde_from_interval, mde_paired
from surfbench.bench.base.values import decoded, missing

if TYPE_CHECKING:
    import pandas as pd

PAIR_KEYS = ("suite", "model", "mode", "task_id", "repeat")


def paired_metrics() -> tuple[str, ...]:
    """The registry metrics (bench.analysis.metrics.METRICS) compared on paired episodes.

    Those a drop criterion may judge: ``success_rate``, ``first_try_accuracy``, and any registered one that allows
    ``drop``.
    """
    return tuple(m.name for m in METRICS.values() if "drop" in m.criteria)


@dataclass(frozen=True)
class PairedDelta:
    """One metric compared on the paired tasks: candidate minus baseline, with its 95% interval."""

    metric: str
    """A name of :func:`paired_metrics`."""
    delta: float | None
    low: float | None
    high: float | None
    baseline: float | None
    """The baseline's value on the paired tasks."""
    mde: float | None
    """Smallest difference these pairs detect at 80% power, 5% two-sided."""


@dataclass(frozen=True)
class Paired:
    """A candidate surface against the baseline, per model, on the episodes both ran."""

    candidate: str
    baseline: str
    model: str
    pairs: int
    """Episodes present for both surfaces."""
    only_baseline_ok: int
    """Pairs where the baseline succeeded and the candidate did not (McNemar b)."""
    only_candidate_ok: int
    """Pairs where the candidate succeeded and the baseline did not (McNemar c)."""
    mcnemar_p: float | None
    """Two-sided exact McNemar p-value on success."""
    first_try_delta: float | None
    """Candidate minus baseline first-try argument accuracy on the paired tasks."""
    first_try_delta_low: float | None
    first_try_delta_high: float | None
    """95% paired-bootstrap interval of that difference."""
    baseline_first_try: float | None
    candidate_first_try: float | None
    success_delta: float | None = None
    """Candidate minus baseline success rate on the paired tasks."""
    success_delta_low: float | None = None
    success_delta_high: float | None = None
    """95% paired-bootstrap interval of that difference."""
    baseline_success: float | None = None
    success_mde: float | None = None
    """Smallest success difference these pairs detect at 80% power, 5% two-sided (bench.analysis.power)."""
    first_try_mde: float | None = None
    """Smallest first-try accuracy difference these pairs detect at 80% power, 5% two-sided."""
    extra: Mapping[str, PairedDelta] = field(default_factory=dict)
    """The registered metrics that allow a drop criterion, compared on the same pairs (:func:`declared_delta`)."""

    def delta(self, metric: str) -> PairedDelta:
        """The paired comparison of registry metric ``metric`` (one of :func:`paired_metrics`)."""
        if metric == "first_try_accuracy":
            return PairedDelta(
                metric, self.first_try_delta, self.first_try_delta_low, self.first_try_delta_high,
                self.baseline_first_try, self.first_try_mde,
            )  # fmt: skip
        if metric == "success_rate":
            return PairedDelta(
                metric, self.success_delta, self.success_delta_low, self.success_delta_high, self.baseline_success,
                self.success_mde,
            )  # fmt: skip
        if metric in self.extra:
            return self.extra[metric]
        raise KeyError(f"{metric!r} is not compared on paired episodes (only {', '.join(paired_metrics())})")

    @property
    def discordance(self) -> float:
        """Share of pairs where exactly one surface succeeded."""
        return (self.only_baseline_ok + self.only_candidate_ok) / self.pairs if self.pairs else 0.0


def mcnemar_exact(b: int, c: int) -> float | None:
    """Two-sided exact binomial test of b vs c discordant pairs."""
    n = b + c
    if n == 0:
        return None
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def _tries(row: Mapping[str, object], ops: set[str] | None) -> tuple[int, int]:
    raw = row["first_tries"]
    items = decoded(raw)
    chosen = [ft for ft in items if ops is None or ft["op"] in ops]
    return sum(1 for ft in chosen if ft["correct"]), len(chosen)


def bootstrap_delta(
    pairs: Sequence[tuple[tuple[float, float], tuple[float, float]]], rounds: int = 2000, seed: int = 0
) -> tuple[float | None, float | None, float | None]:
    """Difference (candidate - baseline) in micro-averaged accuracy with a 95% percentile interval.

    ``pairs``: per task, ((baseline correct, baseline attempts), (candidate correct, candidate attempts)).
    Tasks are resampled with replacement ``rounds`` times (seeded: the same input gives the same interval). The
    interval lies within [-1, 1], a difference of two shares. Kept in numpy rather than scipy.stats.bootstrap: the
    statistic is a ratio of sums over resampled tasks, computed for all rounds at once here, and the power analysis
    (bench.analysis.power) reads its standard error off this same interval.
    """
    import numpy as np

    if not pairs:
        return None, None, None
    data = np.asarray([[b_ok, b_n, c_ok, c_n] for (b_ok, b_n), (c_ok, c_n) in pairs], dtype=float)
    if not data[:, 1].sum() or not data[:, 3].sum():
        return None, None, None
    point = data[:, 2].sum() / data[:, 3].sum() - data[:, 0].sum() / data[:, 1].sum()
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(data), size=(rounds, len(data)))
    sums = data[picks].sum(axis=1)  # rounds x 4
    ok = (sums[:, 1] > 0) & (sums[:, 3] > 0)
    stats = np.sort(sums[ok, 2] / sums[ok, 3] - sums[ok, 0] / sums[ok, 1])
    if not len(stats):
        return float(point), None, None
    return float(point), float(stats[int(0.025 * (len(stats) - 1))]), float(stats[int(0.975 * (len(stats) - 1))])


def paired_comparisons(frame: pd.DataFrame, baseline: str, ops: set[str] | None = None) -> list[Paired]:
    """Every surface of the frame against ``baseline``, per model (and mode)."""
    if frame is None or len(frame) == 0 or baseline not in set(frame["surface"]):
        return []
    out = []
    base = frame[frame["surface"] == baseline]
    base_by = {tuple(r[k] for k in PAIR_KEYS): r for r in base.to_dict("records")}
    for surface in sorted(set(frame["surface"]) - {baseline}):
        cand = frame[frame["surface"] == surface]
        for model in sorted(set(cand["model"])):
            rows = [r for r in cand[cand["model"] == model].to_dict("records")]
            matched = [(base_by[key], r) for r in rows if (key := tuple(r[k] for k in PAIR_KEYS)) in base_by]
            if not matched:
                continue
            b = sum(1 for x, y in matched if x["success"] and not y["success"])
            c = sum(1 for x, y in matched if y["success"] and not x["success"])
            tries = [(_tries(x, ops), _tries(y, ops)) for x, y in matched]
            point, low, high = bootstrap_delta(tries)
            wins = [((int(bool(x["success"])), 1), (int(bool(y["success"])), 1)) for x, y in matched]
            s_point, s_low, s_high = bootstrap_delta(wins)
            bn = sum(t[0][1] for t in tries)
            cn = sum(t[1][1] for t in tries)
            out.append(
                Paired(
                    candidate=surface,
                    baseline=baseline,
                    model=model,
                    pairs=len(matched),
                    only_baseline_ok=b,
                    only_candidate_ok=c,
                    mcnemar_p=mcnemar_exact(b, c),
                    first_try_delta=point,
                    first_try_delta_low=low,
                    first_try_delta_high=high,
                    baseline_first_try=sum(t[0][0] for t in tries) / bn if bn else None,
                    candidate_first_try=sum(t[1][0] for t in tries) / cn if cn else None,
                    success_delta=s_point,
                    success_delta_low=s_low,
                    success_delta_high=s_high,
                    baseline_success=sum(w[0][0] for w in wins) / len(wins),
                    success_mde=mde_paired(len(matched), (b + c) / len(matched)),
                    first_try_mde=mde_from_interval(low, high, len(matched)),
                    extra={m.name: declared_delta(m, matched) for m in declared() if "drop" in m.criteria},
                )
            )
    return out


def declared_delta(metric: Metric, matched: Sequence[tuple[Mapping[str, object], Mapping[str, object]]]) -> PairedDelta:
    """A registered metric on the paired episodes (baseline, candidate): candidate minus baseline, with its interval.

    The mean paired difference of its per-episode values over the pairs where both have one, with the 95%
    paired-bootstrap interval success has (:func:`bootstrap_delta`).
    """
    assert metric.per_episode is not None
    values = [(metric.per_episode(x), metric.per_episode(y)) for x, y in matched]
    both = [
        (float(b), float(c)) for b, c in values if b is not None and c is not None and not (missing(b) or missing(c))
    ]
    point, low, high = bootstrap_delta([((b, 1.0), (c, 1.0)) for b, c in both])
    baseline = sum(b for b, _ in both) / len(both) if both else None
    return PairedDelta(metric.name, point, low, high, baseline, mde_from_interval(low, high, len(both)))
