"""The report's multi-call section: round trips on tasks expecting two or more calls, paired on shared tasks."""

from __future__ import annotations

import pandas as pd

from surfbench.bench.analysis.multicall import multicall_rows


def frame(rows: list[tuple[str, str, str, int, int, bool]]) -> pd.DataFrame:
    cols = ["model", "surface", "task_id", "expected_calls", "round_trips", "success"]
    return pd.DataFrame(rows, columns=cols)


def test_only_multi_call_tasks_count_and_the_ratio_uses_the_tasks_both_ran():
    data = frame([
        ("m", "full", "a", 3, 4, True), ("m", "full", "b", 2, 6, False), ("m", "full", "single", 1, 9, True),
        ("m", "code", "a", 3, 2, True),  # code ran only task a: compared with full's 4 there, not its mean 5
        ("m", "code", "single", 1, 1, True),
        ("n", "code", "a", 3, 3, False),  # another model without the baseline: no ratio
    ])  # fmt: skip
    rows = {(r.model, r.surface): r for r in multicall_rows(data, "full")}
    assert rows["m", "full"].tasks == 2 and rows["m", "full"].round_trips == 5.0 and rows["m", "full"].ratio is None
    assert rows["m", "code"].tasks == 1 and rows["m", "code"].ratio == 0.5 and rows["m", "code"].success == 1.0
    assert rows["n", "code"].ratio is None
    assert [r.surface for r in multicall_rows(data, "full") if r.model == "m"] == ["full", "code"]


def test_no_multi_call_task_means_no_section():
    assert multicall_rows(frame([("m", "full", "a", 1, 2, True)]), "full") == []
