"""Per-cell partial and efficient credit and policy numbers: means of the episode columns of bench.score.credit.

``call_share``, ``state_share`` and ``efficiency`` are means over the cell's episodes where the column has a value
(a task without expected calls has no call share; only a successful episode has an efficiency), each with a 95%
bootstrap interval of the mean (scipy.stats.bootstrap, BCa, 9,999 resamples, seed 0; the percentile interval where
BCa is undefined): it lies within the values' own range (within [0, 1] for the shares; an efficiency may pass 1),
where a Student t interval on a handful of values did not (54% [4%, 104%] on a reference run); no interval for
fewer than two values, and the value itself when every value is the same. ``policy_denials`` is the mean
per episode of calls the policy kept from the backend, ``policy_recovered`` the share of the episodes with such a
call that still succeeded; both None for a cell that ran without a policy (or was recorded before records v3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from surfbench.bench.store.tables import as_float

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

SHARES = ("call_share", "state_share")
"""Means of per-episode shares, in [0, 1] (an efficiency is a ratio that may pass 1: bench.score.credit)."""
BOOTSTRAP_RESAMPLES = 9999


def _values(rows: Iterable[Mapping[str, object]], column: str) -> list[float]:
    out = []
    for row in rows:
        value = row.get(column)
        if value is None or str(value) == "<NA>" or (isinstance(value, float) and math.isnan(value)):
            continue
        out.append(as_float(value))
    return out


def mean_interval(values: list[float], share: bool = False) -> tuple[float | None, float | None, float | None]:
    """(mean, low, high): the 95% bootstrap interval of the mean (see the module docstring); Nones without values.

    ``share`` is kept for callers: a bootstrap interval lies within the values' own range, so nothing is cut,
    for a share or for an efficiency (which may pass 1).
    """
    n = len(values)
    if not n:
        return None, None, None
    mean = sum(values) / n
    if n < 2:
        return mean, None, None
    if min(values) == max(values):  # every resample has the same mean: the interval is that value
        return mean, mean, mean
    import warnings

    from scipy.stats import bootstrap  # scipy's BCa: a library's, not hand-written distribution code

    low = high = math.nan
    for method in ("BCa", "percentile"):  # BCa undefined for this sample (nan): the percentile interval
        with warnings.catch_warnings():  # scipy warns where BCa is undefined; the fallback answers it
            warnings.simplefilter("ignore")
            result = bootstrap(
                (values,), _mean, confidence_level=0.95, n_resamples=BOOTSTRAP_RESAMPLES, method=method,
                random_state=0,
            )  # fmt: skip
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if not (math.isnan(low) or math.isnan(high)):
            break
    return mean, max(min(values), low), min(max(values), high)


def _mean(sample: npt.NDArray[np.float64], axis: int = -1) -> npt.NDArray[np.float64]:
    return sample.mean(axis=axis)


def credit_fields(rows: list[Mapping[str, object]]) -> dict[str, float | None]:
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
