"""The statistics every gate rests on, checked against scipy / statsmodels and by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from surfbench.bench.analysis.compare import bootstrap_delta, mcnemar_exact
from surfbench.bench.analysis.metrics import wilson
from surfbench.bench.analysis.power import mde_paired, pairs_needed, pass_k, plan

proportion = pytest.importorskip("statsmodels.stats.proportion")
contingency = pytest.importorskip("statsmodels.stats.contingency_tables")
scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (5, 10), (10, 10), (3, 45), (44, 45), (17, 270), (1, 1)])
def test_wilson_interval_equals_statsmodels(k: int, n: int):
    low, high = wilson(k, n)
    ref_low, ref_high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(ref_low, abs=2e-4) and high == pytest.approx(ref_high, abs=2e-4)


@pytest.mark.parametrize(("b", "c"), [(0, 1), (1, 0), (3, 9), (9, 3), (5, 5), (0, 12), (20, 31), (1, 2)])
def test_exact_mcnemar_equals_statsmodels_and_scipy(b: int, c: int):
    ref = contingency.mcnemar(np.array([[10, b], [c, 7]]), exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-9)
    assert mcnemar_exact(b, c) == pytest.approx(scipy_stats.binomtest(min(b, c), b + c, 0.5).pvalue, rel=1e-9)


def test_mcnemar_without_discordant_pairs_has_no_p_value():
    assert mcnemar_exact(0, 0) is None


def test_paired_bootstrap_covers_the_true_difference_95_percent_of_the_time():
    """2,000 simulated paired samples of 60 tasks (1-3 expected calls each, correlated surfaces): the 95%
    interval must hold the true difference in 93-97% of them."""
    rng = np.random.default_rng(12345)
    p_base, p_cand, tasks, sims = 0.62, 0.50, 60, 2000
    covered = 0
    truth = _true_delta(p_base, p_cand)
    for sim in range(sims):
        calls = rng.integers(1, 4, size=tasks)
        ease = rng.normal(0.0, 0.8, size=tasks)  # a task's difficulty is shared by both surfaces: pairing matters
        base = rng.binomial(calls, _shift(p_base, ease))
        cand = rng.binomial(calls, _shift(p_cand, ease))
        pairs = [((int(b), int(n)), (int(c), int(n))) for b, c, n in zip(base, cand, calls, strict=True)]
        _, low, high = bootstrap_delta(pairs, seed=sim)
        assert low is not None and high is not None
        covered += low <= truth <= high
    share = covered / sims
    print(f"paired bootstrap coverage: {share:.3f} over {sims} simulated samples")
    assert 0.93 <= share <= 0.97, share


def _shift(p: float, e: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(math.log(p / (1 - p)) + e)))


def _true_delta(p_base: float, p_cand: float) -> float:
    """Expected micro-averaged difference under the simulation's task-difficulty distribution (numerically)."""
    grid = np.random.default_rng(0).normal(0.0, 0.8, size=400_000)
    base = np.mean(1 / (1 + np.exp(-(math.log(p_base / (1 - p_base)) + grid))))
    cand = np.mean(1 / (1 + np.exp(-(math.log(p_cand / (1 - p_cand)) + grid))))
    return float(cand - base)  # calls per task are independent of difficulty, so the micro average is this mean


def test_mde_and_plan_agree_with_each_other_and_with_the_textbook_formula():
    n = pairs_needed(0.05, 0.2)
    assert n == math.ceil((1.959964 + 0.841621) ** 2 * 0.2 / 0.05**2)  # 628
    assert mde_paired(n, 0.2) == pytest.approx(0.05, rel=0.01)
    assert mde_paired(45, 0.0) == pytest.approx(2.8016 * math.sqrt(1 / 45 / 45), rel=1e-3)
    p = plan(0.6, 0.05)
    assert p.discordance == pytest.approx(0.6 * 0.45 + 0.55 * 0.4)
    assert p.options()[1] == (math.ceil(p.pairs / 3), 3)
    with pytest.raises(ValueError, match="drop"):
        plan(0.6, 0.0)


def test_pass_at_k_and_pass_hat_k_over_tasks():
    rows = [
        {"task_id": "a", "repeat": 0, "success": True}, {"task_id": "a", "repeat": 1, "success": True},
        {"task_id": "b", "repeat": 0, "success": False}, {"task_id": "b", "repeat": 1, "success": True},
        {"task_id": "c", "repeat": 0, "success": False}, {"task_id": "c", "repeat": 1, "success": False},
    ]  # fmt: skip
    got = pass_k(rows)
    assert got is not None and got.k == 2 and got.tasks == 3
    assert got.pass_at_k == pytest.approx(2 / 3) and got.pass_hat_k == pytest.approx(1 / 3)
    assert got.pass_hat_k_low < got.pass_hat_k < got.pass_hat_k_high
    assert pass_k(rows[::2]) is None  # one repeat per task: nothing to report


def test_a_threshold_below_the_mde_makes_the_gate_say_underpowered_with_the_n_needed():
    from surfbench.bench.analysis.compare import Paired
    from surfbench.bench.analysis.metrics import summarize_cell
    from surfbench.bench.report.gate import Criterion, _verdict

    pair = Paired(
        candidate="dispatcher", baseline="full", model="m", pairs=20, only_baseline_ok=4, only_candidate_ok=3,
        mcnemar_p=1.0, first_try_delta=None, first_try_delta_low=None, first_try_delta_high=None,
        baseline_first_try=None, candidate_first_try=None, success_delta=-0.05, success_delta_low=-0.25,
        success_delta_high=0.15, baseline_success=0.6, success_mde=mde_paired(20, 7 / 20),
    )  # fmt: skip
    crit = Criterion("success_drop_max", 0.05, "close")
    cells = summarize_cell([])  # drop criteria judge the pair, not the cells
    verdict = _verdict(crit, "dispatcher", "m", cells, cells, pair, {})
    assert verdict.outcome == "underpowered"
    assert f"MDE {100 * mde_paired(20, 0.35):.1f} pts" in verdict.observed
    needed = math.ceil(20 * (mde_paired(20, 0.35) / 0.05) ** 2)
    assert f"about {needed} paired tasks x repeats needed" in verdict.observed
    wide = _verdict(Criterion("success_drop_max", 0.5, "close"), "dispatcher", "m", cells, cells, pair, {})
    assert wide.outcome == "pass", "a threshold above the MDE is judged on the interval as before"


def test_plan_command_prints_tasks_by_repeats_and_refuses_nonsense():
    import subprocess
    import sys

    from tests.conftest import ROOT

    def plan_cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "surfbench", "plan", *args]
        return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)

    proc = plan_cli("--baseline", "0.6", "--drop", "0.05", "--paired-discordance", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert f"{pairs_needed(0.05, 0.2)} paired episodes per surface" in proc.stdout
    assert f"= {math.ceil(pairs_needed(0.05, 0.2) / 3)} tasks x 3 repeat(s)" in proc.stdout
    bad = plan_cli("--baseline", "1.5", "--drop", "0.05")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--baseline" in bad.stderr
