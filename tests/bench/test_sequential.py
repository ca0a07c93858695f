"""The sequential test (bench.sequential.sequential): error rates under optional stopping, power, the CS, the plan."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from surfbench.bench.analysis.power import pairs_needed
from surfbench.bench.sequential.sequential import (
    AT_BUDGET,
    CONTINUES,
    FAIL,
    PASS,
    TRUNCATION,
    bets,
    confidence_sequence,
    decide,
    decide_many,
    log_capital,
    paired_draws,
    plan_text,
    sequential_plan,
    simulate,
    threshold_to_unit,
    to_unit,
)
from tests.conftest import ROOT

SEQUENCES = 2000


def _naive_peeking(y: np.ndarray, m: float, batch: int) -> np.ndarray:
    """What a fixed-N 95% normal interval does when looked at after every batch and stopped when clear of m."""
    n = y.shape[1]
    t = np.arange(1, n + 1)
    mean = np.cumsum(y, axis=1) / t
    var = np.maximum(np.cumsum(y * y, axis=1) / t - mean**2, 1e-12)
    half = 1.959964 * np.sqrt(var / t)
    marks = np.arange(batch, n + 1, batch) - 1
    clear = (mean[:, marks] - half[:, marks] > m) | (mean[:, marks] + half[:, marks] < m)
    return clear.any(axis=1)


@pytest.mark.parametrize(
    ("drop", "discordance", "threshold", "batch"),
    [(0.0, 0.3, 0.0, 10), (0.0, 0.3, 0.0, 1), (0.05, 0.3, 0.05, 10), (0.0, 0.6, 0.0, 10), (0.0, 0.05, 0.0, 5)],
)
def test_with_no_true_difference_a_false_pass_or_fail_stays_under_5_percent_under_optional_stopping(
    drop: float, discordance: float, threshold: float, batch: int
):
    """2,000 sequences whose true drop is the threshold: any decision is wrong; looked at after every batch."""
    budget = 500
    rng = np.random.default_rng(20261202)
    y = (paired_draws(rng, SEQUENCES, budget, drop, discordance) + 1) / 2
    m = threshold_to_unit(threshold, "diff")
    code, taken = decide_many(y, m, batch, budget)
    wrong = float(np.mean(code != 0))
    assert wrong <= 0.05, f"false decisions {wrong:.3f} with looks every {batch} pairs"
    assert float(np.mean(code == 1)) <= 0.025 + 0.01 and float(np.mean(code == -1)) <= 0.025 + 0.01
    # the simulation can tell: the same looks at a fixed-N interval are wrong far more often than 5%
    assert float(np.mean(_naive_peeking(y, m, batch))) > 0.12


def test_a_ratio_criterion_at_its_threshold_keeps_the_error_rate():
    rng = np.random.default_rng(7)
    ratios = np.exp(rng.normal(math.log(1.5), 0.4, size=(SEQUENCES, 300)))  # geometric mean 1.5x
    code, _ = decide_many(to_unit(ratios, "ratio", 1.5), threshold_to_unit(1.5, "ratio"), 10, 300)
    assert float(np.mean(code != 0)) <= 0.05


def test_a_true_20_point_drop_is_decided_fail_within_the_stated_pairs():
    """70% vs 50% success, outcomes independent per task (half the pairs discordant), 5 points allowed.

    Stated in docs/sweeps-and-gates.md: budget 400, a look every 10 pairs: at least 90% of runs decide `fail`
    by 400 pairs, half by 200; with the fixed-N gate's 80%-power requirement at 175 pairs (bench.analysis.power).
    """
    codes, taken = simulate(0.2, 0.5, 0.05, batch=10, budget=400, sims=SEQUENCES, seed=1)
    assert float(np.mean(codes == 1)) >= 0.90
    assert float(np.mean(codes == -1)) == 0.0  # never the wrong way
    assert float(np.median(taken)) <= 200
    # a 60-point collapse (dispatcher at 1.5B) is decided within 40 pairs in at least 90% of runs
    codes, taken = simulate(0.6, 0.7, 0.05, batch=10, budget=200, sims=SEQUENCES, seed=2)
    assert float(np.mean((codes == 1) & (taken <= 40))) >= 0.90


def test_no_true_drop_passes_a_generous_threshold_and_never_fails_it():
    codes, taken = simulate(0.0, 0.2, 0.2, batch=10, budget=300, sims=SEQUENCES, seed=3)
    assert float(np.mean(codes == -1)) >= 0.95 and float(np.mean(codes == 1)) == 0.0
    assert float(np.median(taken)) <= 120


def _capital_by_hand(y: list[float], m: float, horizon: int, alpha: float = 0.05) -> tuple[float, float]:
    """Waudby-Smith & Ramdas's hedged capital with the two bettors, in plain Python (one loop, no numpy)."""
    mu_sum, s2_sum = 0.0, 0.0
    s2_prev = 0.25
    wealth = {"all": [1.0, 1.0], "budget": [1.0, 1.0]}
    for i, v in enumerate(y, start=1):
        lam_all = math.sqrt(2 * math.log(2 / alpha) / (s2_prev * i * math.log(1 + i)))
        lam_budget = math.sqrt(2 * math.log(2 / alpha) / (s2_prev * horizon))
        for name, lam in (("all", lam_all), ("budget", lam_budget)):
            wealth[name][0] *= 1 + min(lam, TRUNCATION / m) * (v - m)
            wealth[name][1] *= 1 - min(lam, TRUNCATION / (1 - m)) * (v - m)
        mu_sum += v
        mu = (0.5 + mu_sum) / (i + 1)
        s2_sum += (v - mu) ** 2
        s2_prev = (0.25 + s2_sum) / (i + 1)
    up = (wealth["all"][0] + wealth["budget"][0]) / 2
    down = (wealth["all"][1] + wealth["budget"][1]) / 2
    return math.log(up), math.log(down)


def test_the_vectorised_capital_is_the_formula():
    rng = np.random.default_rng(11)
    y = rng.random(37)
    for m in (0.2, 0.5, 0.83):
        up, down = log_capital(y[None, :], m, horizon=50)
        want = _capital_by_hand(list(y), m, 50)
        assert up[0, -1] == pytest.approx(want[0], rel=1e-10) and down[0, -1] == pytest.approx(want[1], rel=1e-10)
    lam_all, lam_budget = bets(y, 50)
    assert lam_all.shape == lam_budget.shape == y.shape and lam_all[0] == pytest.approx(
        math.sqrt(2 * math.log(40) / (0.25 * math.log(2)))
    )


def test_the_decision_is_the_confidence_sequence_against_the_threshold():
    """pass exactly when the whole CS is below the threshold, fail when above, else it goes on."""
    rng = np.random.default_rng(5)
    seen = set()
    for i in range(60):
        drop = [0.0, 0.15, 0.4][i % 3]
        values = list(paired_draws(rng, 1, 120, drop, 0.5)[0])
        r = decide(values, 0.1, "diff", batch=10, budget=200)
        seen.add(r.outcome)
        assert r.low is not None and r.high is not None and r.low <= r.high
        if r.outcome == PASS:
            assert r.high < 0.1
        elif r.outcome == FAIL:
            assert r.low > 0.1
        else:
            assert r.outcome == CONTINUES and r.pairs == 120 and r.low <= 0.1 + 1e-3 and r.high >= 0.1 - 1e-3
    assert seen == {PASS, FAIL, CONTINUES}
    at_budget = decide([0.0] * 30, 0.05, "diff", batch=10)
    assert at_budget.outcome == AT_BUDGET and at_budget.pairs == 30 and at_budget.budget == 30


def test_the_confidence_sequence_covers_at_every_look_and_is_not_much_wider_than_a_fixed_interval():
    rng = np.random.default_rng(9)
    y = (paired_draws(rng, SEQUENCES, 400, 0.1, 0.4) + 1) / 2
    up, down = log_capital(y, 0.55, horizon=400)  # the true mean, (0.1 + 1) / 2
    ever_out = (np.maximum(up, down) >= math.log(2 / 0.05)).any(axis=1)  # at any of the 400 sample sizes
    assert float(np.mean(ever_out)) <= 0.05
    one = y[0]
    low, high = confidence_sequence(one, 400)
    assert low <= float(np.mean(one)) <= high
    fixed = 2 * 1.959964 * float(np.std(one)) / math.sqrt(len(one))
    assert fixed < high - low < 2.5 * fixed  # the price of holding at every sample size


def test_ratios_decide_on_their_score_against_the_threshold():
    half = decide([0.5] * 40, 1.0, "ratio", batch=10)
    assert half.outcome == PASS and half.pairs <= 30 and half.mean == pytest.approx(0.5)
    assert half.high is not None and half.high < 1.0
    double = decide([2.0, 2.2, 1.8, 2.1] * 30, 1.5, "ratio", batch=10)  # 2x against 1.5x allowed
    assert double.outcome == FAIL and double.low is not None and double.low > 1.5
    tenth = decide([0.1] * 40, 1.0, "ratio", batch=10)  # a tenth of the tokens on every task: two looks
    assert tenth.outcome == PASS and tenth.pairs == 20 and tenth.high is not None and tenth.high < 1.0
    # the score is symmetric: a ratio r against c scores as 1/r against 1/c, the other way
    assert to_unit(np.array([3.0]), "ratio", 1.5)[0] == pytest.approx(
        1 - to_unit(np.array([1 / 3]), "ratio", 1 / 1.5)[0]
    )
    with pytest.raises(ValueError, match="above 0"):
        threshold_to_unit(0.0, "ratio")


def test_plan_prints_the_simulated_pairs_beside_the_fixed_n_requirement():
    text = plan_text(0.7, 0.2, threshold=0.05, batch=10, budget=400)
    assert "99 paired episodes per surface" in text  # today's fixed-N line, unchanged
    assert f"needs {pairs_needed(0.15, 0.5)} paired episodes" in text  # fixed-N against the gate's threshold
    got = sequential_plan(0.2, 0.5, 0.05, 10, 400)
    assert got.line() in text and got.fail >= 0.9 and got.median <= 200
    assert f"median {got.median:.0f}" in text
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "plan", "--baseline", "0.7", "--drop", "0.2", "--threshold", "0.2"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--threshold" in proc.stderr
