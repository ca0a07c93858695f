"""Every interval of every reference run lies within its metric's range (issue 52).

A share over calls or episodes and a mean of per-episode shares lie in [0, 1]; a paired difference of two
surfaces in [-1, 1]; an efficiency (fewest over taken round trips) in [0, the run's largest fewest round trips]:
above 1 where one round trip did several dependent calls (a program in code mode) or an expected call the checks do
not need was skipped (a read before an update). A one-call suite's efficiency is 1 at most
(tests/bench/test_recredit.py).
The report's data is computed from each run folder under results/reference exactly as
``surfbench report`` computes it (bench.report.report_data.collect); methods: docs/metrics.md.
"""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.report.report_data import collect
from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT

RUNS = sorted(p.parent for p in (ROOT / "results" / "reference").rglob("run.json"))  # the old engine's too


def _intervals(obj: Any, prefix: str) -> list[tuple[str, float, float]]:
    """(name, low, high) of each ``X_low``/``X_high`` or ``X_ci_low``/``X_ci_high`` pair of a record."""
    names = {f.name for f in fields(obj)}
    out = []
    for name in sorted(names):
        for low_end, high_end in (("_ci_low", "_ci_high"), ("_low", "_high")):
            if name.endswith(low_end) and name.replace(low_end, high_end) in names:
                low, high = getattr(obj, name), getattr(obj, name.replace(low_end, high_end))
                if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
                    out.append((f"{prefix}.{name.removesuffix(low_end)}", float(low), float(high)))
                break
    return out


def test_there_are_reference_runs_to_check() -> None:
    assert len(RUNS) >= 10, RUNS


@pytest.mark.parametrize("run", RUNS, ids=[p.name for p in RUNS])
def test_every_interval_of_a_reference_run_lies_within_its_metrics_range(run: Path) -> None:
    data = collect([run])
    least = load_runs([run]).get("min_round_trips")
    most = float(least.max()) if least is not None and least.notna().any() else 1.0
    found = []
    for cell in data.cells:
        label = "/".join(str(v) for v in cell.keys.values())
        found += [
            (n, lo, hi, 0.0, most if n.endswith(".efficiency") else 1.0)
            for n, lo, hi in _intervals(cell.summary, label)
        ]
        if cell.pass_k is not None:
            found += [(n, lo, hi, 0.0, 1.0) for n, lo, hi in _intervals(cell.pass_k, label)]
    for p in data.paired:
        found += [(n, lo, hi, -1.0, 1.0) for n, lo, hi in _intervals(p, f"{p.candidate}-{p.baseline}/{p.model}")]
    outside = [f"{n}: [{lo:.3f}, {hi:.3f}] not in [{a}, {b}]" for n, lo, hi, a, b in found if not a <= lo <= hi <= b]
    assert not outside, outside
