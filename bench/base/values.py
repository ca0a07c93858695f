"""Values as the results tables hold them: a cell that is missing, a JSON column read back; a signed difference.

One definition each, for every stage that reads episodes (issue 53: ``_missing`` was written five times and the
JSON decode ten): pandas gives a missing number as ``NaN`` and a missing nullable value as ``pd.NA``; a list
column is JSON text in older parts and a list (or numpy array) in newer ones.
"""

from __future__ import annotations

import json
import math
from typing import Any


def missing(value: object) -> bool:
    """None, a float NaN, or pandas' NA (whose ``str`` is ``<NA>``: no pandas import for the check)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) == "<NA>"


def decoded(raw: Any) -> Any:
    """A JSON column's value: its text parsed, anything else (a list, an array, None) as it is."""
    return json.loads(raw) if isinstance(raw, str) else raw


def signed(value: float, digits: int = 1) -> str:
    """``value`` with its sign and ``digits`` decimals; zero prints ``+0.0``, never ``-0.0``.

    A negated zero (a drop of nothing, oriented so that positive is worse) or a tiny negative of float sums would
    print ``-0.0`` through a plain ``:+.1f``.
    """
    return f"{round(value, digits) + 0.0:+.{digits}f}"
