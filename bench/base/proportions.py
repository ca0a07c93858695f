"""The Wilson score interval of a proportion.

One function for every share with an interval: first-try accuracy, success, selection, instance accuracy, pass@k,
the scale figure's points.
"""

from __future__ import annotations

import math

Z95 = 1.96
"""The 95% normal quantile as the reports have always rounded it (the cells' first-try, success, selection)."""


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a proportion, within [0, 1]; (nan, nan) for n = 0.

    Kept as its closed form rather than statsmodels' ``proportion_confint(method="wilson")``, which gives the same
    numbers (tests/bench/test_statistics.py compares them) but is a test-only dependency here: five lines do
    not justify statsmodels and patsy in every install.
    """
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))
