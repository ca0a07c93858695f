"""One definition of a missing cell and of a JSON column read back (bench/base/values.py), as parquet gives them."""

from __future__ import annotations

import pandas as pd

from surfbench.bench.base.values import decoded, missing


def test_missing_is_none_nan_or_pandas_na_and_nothing_else():
    frame = pd.DataFrame({"n": pd.array([1, None], dtype="Int64"), "x": [1.0, float("nan")]})
    assert missing(None) and missing(float("nan")) and missing(frame["n"][1]) and missing(frame["x"][1])
    assert not any(missing(v) for v in (0, 0.0, "", [], False, frame["n"][0], "NA"))


def test_a_json_column_is_decoded_whether_stored_as_text_or_as_a_list():
    assert decoded('["a", "b"]') == ["a", "b"] and decoded(["a"]) == ["a"] and decoded(None) is None
