"""Per-cell partial and efficient credit and policy numbers: means of the episode columns of bench.score.credit.

``call_share``, ``state_share`` and ``efficiency`` are means over the cell's episodes where the column has a value
(a task without expected calls has no call share; only a successful episode has an efficiency), each with a 95%
Student t interval, ``mean +- t(0.975, n - 1) * s / sqrt(n)`` (``s`` the sample standard deviation), cut to [0, 1]
for a share and at 0 below for the efficiency; no interval for fewer than two values. ``policy_denials`` is the mean
per episode of calls the policy kept from the backend, ``policy_recovered`` the share of the episodes with such a
call that still succeeded; both None for a cell that ran without a policy (or was recorded before records v3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from statistics import NormalDist
from typing import Any

SHARES = ("call_share", "state_share")
"""Means of per-episode shares: their interval is cut to [0, 1]."""
CF_DF = 30
"""From this many degrees of freedom the t quantile comes from its Cornish-Fisher expansion (error < 1e-6)."""


def _values(rows: Iterable[Mapping[str, Any]], column: str) -> list[float]:
    out = []
    for row in rows:
        value = row.get(column)
        if value is None or str(value) == "<NA>" or (isinstance(value, float) and math.isnan(value)):
            continue
        out.append(float(value))
    return out


def _two_sided(t: float, df: int) -> float:
    """P(-t < T < t) for Student's t with ``df`` degrees of freedom (Abramowitz & Stegun 26.7.3, 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:  # sin(theta) * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... ), df/2 terms
        term, total = 1.0, 0.0
        for k in range(df // 2):
            total += term
            term *= cos2 * (2 * k + 1) / (2 * k + 2)
        return sin * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = math.cos(theta), 0.0  # (2/pi) (theta + sin (cos + 2/3 cos^3 + ...)), (df - 1)/2 terms
    for k in range(1, (df - 1) // 2 + 1):
        total += term
        term *= cos2 * (2 * k) / (2 * k + 1)
    return 2 / math.pi * (theta + sin * total)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile (p above 0.5) of Student's t with ``df`` >= 1 degrees of freedom."""
    if not 0.5 < p < 1 or df < 1:
        raise ValueError(f"t_quantile: p must be in (0.5, 1) and df >= 1, got p={p}, df={df}")
    z = NormalDist().inv_cdf(p)
    if df >= CF_DF:  # Abramowitz & Stegun 26.7.5
        g = (
            (z**3 + z) / 4,
            (5 * z**5 + 16 * z**3 + 3 * z) / 96,
            (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384,
            (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160,
        )
        return z + sum(term / df ** (i + 1) for i, term in enumerate(g))
    level = 2 * p - 1
    low, high = 0.0, max(1.0, z)
    while _two_sided(high, df) < level:
        high *= 2
    for _ in range(200):  # bisection to the float's precision
        mid = (low + high) / 2
        if mid in (low, high):
            break
        low, high = (mid, high) if _two_sided(mid, df) < level else (low, mid)
    return (low + high) / 2


def mean_interval(values: list[float], share: bool = False) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the 95% t interval of the mean (see the module docstring); Nones without values."""
    n = len(values)
    if not n:
        return None, None, None
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    return mean, max(0.0, low), (min(1.0, high) if share else high)


def credit_fields(rows: list[Mapping[str, Any]]) -> dict[str, float | None]:
    """The CellSummary fields of partial and efficient credit and of the policy, from a cell's episode rows."""
    out: dict[str, float | None] = {}
    for name in (*SHARES, "efficiency"):
        mean, low, high = mean_interval(_values(rows, name), share=name in SHARES)
        out.update({name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high})
    denied = _values(rows, "policy_denials")
    out["policy_denials"] = sum(denied) / len(denied) if denied else None
    recovered = _values(rows, "policy_recovered")
    out["policy_recovered"] = sum(recovered) / len(recovered) if recovered else None
    return out
