"""Sequential gates: an always-valid test of a paired difference or ratio, checked after every batch of pairs.

A fixed-N gate judges its criteria once, on every pair it was given; looked at after every batch and
stopped at the first interval clear of the threshold, its 95% intervals would be wrong far more often
than 5% of the time. A **confidence sequence** (CS) is an interval that holds at every sample size at
once with probability 95%, so that stopping whenever it is clear of the threshold keeps the error rate
(Howard, Ramdas, McAuliffe & Sekhon 2021, "Time-uniform, nonparametric, nonasymptotic confidence
sequences", Ann. Statist. 49(2)).

The CS here is the **betting CS** of Waudby-Smith & Ramdas (2024, "Estimating means of bounded random
variables by betting", JRSS-B 86(1); arXiv:2010.09686), section 4: the hedged capital process with
predictable plug-in bets. Each pair gives one number ``y`` in [0, 1]; for a candidate mean ``m``

    K+_t(m) = prod_i (1 + l+_i (y_i - m)),    K-_t(m) = prod_i (1 - l-_i (y_i - m)),
    l+_i = min(l_i, c/m),  l-_i = min(l_i, c/(1-m)),  c = 1/2,

with ``l_i`` a bet computed from y_1 .. y_{i-1} only. Two bettors play, and each capital is the mean of
their wealth: one with WSR's ``l_i = sqrt(2 log(2/alpha) / (s2_{i-1} i log(1 + i)))``, tuned to every
sample size at once (quick on a large effect), one with ``sqrt(2 log(2/alpha) / (s2_{i-1} N))``, tuned to
the budget N (their choice for a known sample size; it decides more often by the budget). ``s2`` is the
regularised running variance (1/4 + sum (y_j - mu_j)^2) / (i + 1), ``mu`` the regularised running mean
(1/2 + sum y_j) / (i + 1). Under the null "the mean is m" each wealth, and so their mean, is a
nonnegative martingale starting at 1 (a supermartingale when the mean is on the other side), so by
Ville's inequality the chance that K+ or K- ever reaches 2/alpha is at most alpha: the CS is every m
where both stay below. The bets do not depend on m (the truncation aside), so K+ falls and K- rises with
m: the CS is an interval, and it lies wholly on one side of a threshold exactly when the test at the
threshold rejects. That test is what decides a criterion:

- ``fail``: K+ at the threshold reaches 2/alpha (the mean is worse than the threshold);
- ``pass``: K- at the threshold reaches 2/alpha (the mean is better);
- else the criterion continues, and once its budget of pairs is spent it is ``underpowered at budget``.

A wrong ``pass`` (the truth at or beyond the threshold) happens with probability at most alpha/2, a
wrong ``fail`` likewise, whenever the sequence is stopped: after every pair, every batch, or never.

**What a pair is.** Differences (success, first-try accuracy) are one task's candidate value minus its
baseline value, oriented so that positive is worse (a drop), in [-1, 1]: ``y = (d + 1) / 2``. A ratio
``r`` (prompt tokens per step, round trips: one task's candidate over baseline, oriented so that above 1
is worse) is scored against the criterion's threshold ``c`` as ``y = r / (r + c)``, a bounded transform
(``2y - 1 = tanh(log(r / c) / 2)``) that is 1/2 exactly at the threshold: the criterion "at most c" is
judged as "the mean score is at most 1/2". For a ratio that is about the same on every task this is the
ratio itself against c; for ratios that vary it is a location of the log ratios with bounded influence
(a task 100x over counts about as much as one 10x over), not the ratio of the two cells' means that the
fixed-N gate compares. Its mean and CS are shown back as ratios, ``c y / (1 - y)``. Tasks are assumed
to be independent draws from the population of tasks the suite stands for, taken in a seeded random
order (an order by topic or difficulty would break this); repeats of one task are averaged into its pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from surfbench.bench.report.gate_criteria import BATCH, threshold_to_unit

if TYPE_CHECKING:
    import numpy as np

ALPHA = 0.05
"""Chance of a wrong decision per criterion (each direction alpha/2), under any stopping rule."""
TRUNCATION = 0.5
"""c in the bets' truncation (Waudby-Smith & Ramdas use 1/2 or 3/4): a larger c bets more of the capital."""
PASS, FAIL, CONTINUES, AT_BUDGET = "pass", "fail", "continues", "underpowered at budget"
OUTCOMES = (PASS, FAIL, CONTINUES, AT_BUDGET)


def to_unit(values: np.ndarray, kind: str, threshold: float = 1.0) -> np.ndarray:
    """Per-pair values on the test's [0, 1]: differences in [-1, 1] (``diff``), or ratios r / (r + threshold)."""
    import numpy as np

    v = np.asarray(values, dtype=float)
    if kind == "diff":
        if v.size and (np.nanmin(v) < -1 - 1e-12 or np.nanmax(v) > 1 + 1e-12):
            raise ValueError("a paired difference of proportions must be in [-1, 1]")
        return np.clip((v + 1.0) / 2.0, 0.0, 1.0)
    if kind == "ratio":
        if v.size and not np.all(v > 0):
            raise ValueError("a ratio must be above 0")
        return v / (v + threshold)
    raise ValueError(f"kind must be 'diff' or 'ratio', not {kind!r}")


def unit_to_value(y: float, kind: str, threshold: float = 1.0) -> float:
    """A point of the [0, 1] scale back in the criterion's own units (a difference, or a ratio)."""
    if kind == "diff":
        return 2.0 * y - 1.0
    return threshold * y / (1.0 - y) if y < 1 else math.inf


def bets(y: np.ndarray, horizon: int, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """The two predictable plug-in bet sequences for ``y`` (shape (..., n)): each l_i uses only y_1 .. y_{i-1}.

    The first is tuned to every sample size at once (the ``i log(1 + i)`` of WSR's eq. for l^PrPl), the
    second to ``horizon`` pairs (their choice for a known sample size: ``sqrt(2 log(2/alpha) / (s2 n))``).
    """
    import numpy as np

    y = np.asarray(y, dtype=float)
    n = y.shape[-1]
    t = np.arange(1, n + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)  # mu_i: regularised mean after i values
    s2 = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)  # s2_i, as WSR define it (y_j - mu_j)
    s2_before = np.concatenate([np.full(y.shape[:-1] + (1,), 0.25), s2[..., :-1]], axis=-1)
    spend = 2.0 * math.log(2.0 / alpha)
    return np.sqrt(spend / (s2_before * t * np.log1p(t))), np.sqrt(spend / (s2_before * max(horizon, 1)))


def _log_wealth(y: np.ndarray, m: np.ndarray | float, lam: tuple[np.ndarray, np.ndarray]) -> tuple[Any, Any]:
    """Per-pair log factors of K+ and K- at m, each the average of the two bettors' wealth (log-sum-exp)."""
    import numpy as np

    ups, downs = [], []
    for bet in lam:
        ups.append(np.log1p(np.minimum(bet, TRUNCATION / m) * (y - m)))
        downs.append(np.log1p(-np.minimum(bet, TRUNCATION / (1.0 - m)) * (y - m)))
    return ups, downs


def log_capital(
    y: np.ndarray, m: float, horizon: int | None = None, alpha: float = ALPHA
) -> tuple[np.ndarray, np.ndarray]:
    """The log capitals log K+_t(m) and log K-_t(m) for every t, for sequences ``y`` (shape (..., n), in [0, 1]).

    Each capital is the mean of two bettors' wealth (:func:`bets`): the mean of two test martingales
    that start at 1 is one, so Ville's inequality holds for it as for each.
    """
    import numpy as np

    y = np.asarray(y, dtype=float)
    lam = bets(y, horizon or y.shape[-1], alpha)
    ups, downs = _log_wealth(y, m, lam)
    half = math.log(2.0)
    up = np.logaddexp(np.cumsum(ups[0], axis=-1), np.cumsum(ups[1], axis=-1)) - half
    down = np.logaddexp(np.cumsum(downs[0], axis=-1), np.cumsum(downs[1], axis=-1)) - half
    return up, down


def looks(n: int, batch: int, budget: int | None = None) -> np.ndarray:
    """The pair counts at which the test is looked at: every ``batch`` pairs, and at the last pair."""
    import numpy as np

    last = min(n, budget) if budget is not None else n
    marks = list(range(batch, last + 1, batch))
    if last and (not marks or marks[-1] != last):
        marks.append(last)
    return np.asarray(marks, dtype=int)


def decide_many(
    y: np.ndarray, threshold: float, batch: int, budget: int, alpha: float = ALPHA, horizon: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Decisions for many sequences at once (``y``: shape (sequences, n >= budget), on the [0, 1] scale).

    Returns (outcome codes: 1 fail, -1 pass, 0 undecided at budget; pairs taken: the look that decided,
    or ``budget``), looking every ``batch`` pairs up to ``budget``. ``horizon``: the budget the bets are
    tuned to, when the sequences hold fewer pairs than it (default ``budget``).
    """
    import numpy as np

    y = np.asarray(y, dtype=float)[:, :budget]
    up, down = log_capital(y, threshold, horizon or budget, alpha)
    marks = looks(y.shape[1], batch, budget)
    level = math.log(2.0 / alpha)
    fail = up[:, marks - 1] >= level
    good = down[:, marks - 1] >= level
    hit = fail | good
    first = np.where(hit.any(axis=1), hit.argmax(axis=1), len(marks) - 1)
    rows = np.arange(len(y))
    code = np.where(fail[rows, first], 1, np.where(good[rows, first], -1, 0))
    return code, marks[first]


@dataclass(frozen=True)
class SequentialResult:
    """One criterion's sequential test on one ordered sequence of pairs."""

    outcome: str
    """``pass``, ``fail``, ``continues`` (undecided, fewer pairs than the budget) or ``underpowered at budget``."""
    pairs: int
    """Pairs taken: the look that decided, else every pair looked at (at most the budget)."""
    available: int
    """Pairs the sequence holds."""
    budget: int
    mean: float | None
    """Mean of the pairs taken, in the criterion's units (a difference; a ratio: the ratio of the mean score)."""
    low: float | None
    high: float | None
    """The 95% confidence sequence at ``pairs`` (time-uniform), in the criterion's units."""


def confidence_sequence(y: np.ndarray, horizon: int, alpha: float = ALPHA, grid: int = 2000) -> tuple[float, float]:
    """The CS of one sequence after all of ``y`` (on the [0, 1] scale): its lowest and highest grid points.

    On a grid of ``grid`` steps (1/1000 of a difference in [-1, 1]): the bounds are points the CS holds,
    so a CS decided ``pass`` shows its upper bound below the threshold, as the test at the threshold says.
    """
    import numpy as np

    y = np.asarray(y, dtype=float)
    if not len(y):
        return 0.0, 1.0
    lam = bets(y, horizon, alpha)
    cm = ((np.arange(grid - 1) + 1.0) / grid)[:, None]  # strictly inside (0, 1)
    ups, downs = _log_wealth(y[None, :], cm, (lam[0][None, :], lam[1][None, :]))
    half = math.log(2.0)
    up = np.logaddexp(ups[0].sum(axis=1), ups[1].sum(axis=1)) - half
    down = np.logaddexp(downs[0].sum(axis=1), downs[1].sum(axis=1)) - half
    level = math.log(2.0 / alpha)
    inside = cm[:, 0][(up < level) & (down < level)]
    if not len(inside):  # every grid point excluded (possible only on a coarse grid): the mean's cell
        mid = float(np.mean(y))
        return mid, mid
    return float(inside[0]), float(inside[-1])


def decide(
    values: list[float], threshold: float, kind: str, batch: int = BATCH, budget: int | None = None,
    alpha: float = ALPHA,
) -> SequentialResult:  # fmt: skip
    """Judge one criterion on its ordered pairs (``values``: oriented so that positive / above 1 is worse).

    ``kind`` ``diff`` (per-pair differences in [-1, 1], ``threshold`` the allowed drop) or ``ratio``
    (per-pair ratios, ``threshold`` the allowed ratio). Looks after every ``batch`` pairs; ``budget``:
    at most this many pairs (None: every pair given counts as the budget).
    """
    import numpy as np

    if batch < 1:
        raise ValueError(f"batch must be 1 or more, not {batch}")
    goal = len(values) if budget is None else budget
    y = to_unit(np.asarray(values, dtype=float), kind, threshold)[:goal]
    m = threshold_to_unit(threshold, kind)
    if not len(y):
        return SequentialResult(CONTINUES if goal else AT_BUDGET, 0, 0, goal, None, None, None)
    code, taken = decide_many(y[None, :], m, batch, len(y), alpha, horizon=goal)
    pairs = int(taken[0])
    if code[0] == 1:
        outcome = FAIL
    elif code[0] == -1:
        outcome = PASS
    else:
        outcome = AT_BUDGET if pairs >= goal else CONTINUES
    low, high = confidence_sequence(y[:pairs], goal, alpha)
    mean = float(np.mean(y[:pairs]))
    return SequentialResult(
        outcome, pairs, len(values), goal, unit_to_value(mean, kind, threshold), unit_to_value(low, kind, threshold),
        unit_to_value(high, kind, threshold),
    )  # fmt: skip


def paired_draws(rng: np.random.Generator, sequences: int, n: int, drop: float, discordance: float) -> np.ndarray:
    """Simulated per-pair drops (baseline minus candidate success) in {-1, 0, 1}: a true mean ``drop``.

    A pair is discordant with probability ``discordance``; a discordant pair is a loss for the candidate
    with probability (discordance + drop) / (2 discordance) (so ``discordance`` must be at least ``|drop|``).
    """
    import numpy as np

    if not abs(drop) <= discordance <= 1:
        raise ValueError(f"the discordant share ({discordance}) must be at least the drop ({drop}) and at most 1")
    u = rng.random((sequences, n))
    lose = (discordance + drop) / 2.0
    return np.where(u < lose, 1.0, np.where(u < discordance, -1.0, 0.0))


def simulate(
    drop: float, discordance: float, threshold: float, batch: int, budget: int, sims: int = 2000, seed: int = 0,
    alpha: float = ALPHA,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(outcome codes, pairs taken) of ``sims`` simulated sequential success comparisons (see :func:`decide_many`).

    Pairs as :func:`paired_draws` makes them (a true drop ``drop``, this discordant share), judged against
    an allowed drop ``threshold``; in chunks, so that memory stays small at any budget. Seeded.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    chunk = max(1, 400_000 // max(budget, 1))
    codes, taken = [], []
    m = threshold_to_unit(threshold, "diff")
    for start in range(0, sims, chunk):
        y = (paired_draws(rng, min(chunk, sims - start), budget, drop, discordance) + 1.0) / 2.0
        code, took = decide_many(y, m, batch, budget, alpha)
        codes.append(code)
        taken.append(took)
    return np.concatenate(codes), np.concatenate(taken)


@dataclass(frozen=True)
class SequentialPlan:
    """What a sequential gate takes to decide, for a true drop, by simulation (``surfbench plan``)."""

    drop: float
    threshold: float
    discordance: float
    batch: int
    budget: int
    sims: int
    seed: int
    fail: float
    """Share of simulated runs that ended ``fail``."""
    passed: float
    """Share that ended ``pass``."""
    median: float
    mean: float
    p90: float
    """Pairs to a decision (the budget, for a run that did not decide): median, mean, 90th percentile."""

    def line(self) -> str:
        truth = f"true drop {100 * self.drop:.1f} pts" if self.drop else "no true drop"
        right = "pass" if self.drop < self.threshold else ("fail" if self.drop > self.threshold else None)
        word = f"right ({right}) {100 * (self.passed if right == 'pass' else self.fail):.1f}%" if right else ""
        wrong = f"wrong {100 * (self.fail if right == 'pass' else self.passed):.1f}%" if right else ""
        shares = f"{word}, {wrong}" if right else f"any decision is wrong here: {100 * (self.fail + self.passed):.1f}%"
        return (
            f"  {truth}: decided by {self.budget} pairs in {100 * (self.fail + self.passed):.0f}% ({shares}); pairs "
            f"to a decision: median {self.median:.0f}, mean {self.mean:.0f}, 90% within {self.p90:.0f}"
        )


def sequential_plan(
    drop: float, discordance: float, threshold: float = 0.0, batch: int = BATCH, budget: int = 500,
    sims: int = 2000, seed: int = 0,
) -> SequentialPlan:  # fmt: skip
    """Simulate the sequential success gate: a true drop ``drop`` judged against an allowed drop ``threshold``."""
    import numpy as np

    codes, taken = simulate(drop, discordance, threshold, batch, budget, sims, seed)
    return SequentialPlan(
        drop, threshold, discordance, batch, budget, sims, seed, float(np.mean(codes == 1)),
        float(np.mean(codes == -1)), float(np.median(taken)), float(np.mean(taken)), float(np.percentile(taken, 90)),
    )  # fmt: skip


MAX_PLAN_PAIRS = 20_000
"""The most pairs per comparison ``surfbench plan`` simulates: 2,000 runs of 20,000 pairs take about 9 s on 2 cores
(far more pairs than any model run here could take; numpy once tried to allocate 5.35 PiB for a 0.00001-pt drop)."""


def plan_text(
    baseline: float, drop: float, discordance: float | None = None, threshold: float = 0.0, batch: int = BATCH,
    budget: int | None = None, sims: int = 2000, seed: int = 0,
) -> str:  # fmt: skip
    """``surfbench plan``: the fixed-N requirement, then what the sequential gate takes for the same drop."""
    from surfbench.bench.analysis.power import independent_discordance, pairs_needed, plan

    fixed = plan(baseline, drop, discordance)
    if not 0 <= threshold < 1:
        raise ValueError(f"--threshold must be an allowed drop from 0 to 1 (0.05 is 5 points), got {threshold}")
    if threshold == drop:
        raise ValueError(f"--threshold {threshold} equals --drop: a true drop at the threshold is never decided")
    at_threshold = pairs_needed(abs(drop - threshold), fixed.discordance)
    if budget is not None and budget > MAX_PLAN_PAIRS:
        raise ValueError(f"--budget {budget:,}: the simulation runs at most {MAX_PLAN_PAIRS:,} pairs per comparison")
    lines = [fixed.text(), ""]
    if threshold:
        lines.append(
            f"fixed-N against an allowed drop of {100 * threshold:.1f} pts (the gate's criterion): a 95% interval "
            f"clear of it with 80% power needs {at_threshold} paired episodes"
        )
    if budget is None and 2 * at_threshold > MAX_PLAN_PAIRS:
        lines.append(
            f"sequential gate: not simulated: its default budget ({2 * at_threshold:,} pairs, twice the fixed-N need) "
            f"is beyond the {MAX_PLAN_PAIRS:,} pairs it simulates; a drop this close to the allowed one cannot be told "
            "apart by any run of a feasible size (pass --budget N to see what N pairs would decide)"
        )
        return "\n".join(lines)
    budget = budget or max(batch, 2 * at_threshold)
    lines.append(
        f"sequential gate (betting confidence sequence, 95% under any stopping; allowed drop {100 * threshold:.1f} "
        f"pts; a look every {batch} pairs, budget {budget} pairs; {sims:,} simulated runs, seed {seed}):"
    )
    lines.append(sequential_plan(drop, fixed.discordance, threshold, batch, budget, sims, seed).line())
    null_discordance = discordance if discordance is not None else independent_discordance(baseline, 0.0)
    lines.append(sequential_plan(0.0, null_discordance, threshold, batch, budget, sims, seed).line())
    lines.append(
        "  (a pair is one task on both surfaces; a decision at the first look that clears the allowed drop, "
        "else `underpowered at budget`; expected pairs count the budget for runs that did not decide)"
    )
    return "\n".join(lines)
