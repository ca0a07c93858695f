"""A failing model endpoint: episodes are run again, then recorded as errors; the cell goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from surfbench.bench.models import ModelPool
from surfbench.bench.models.client import ModelError
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs


class Flaky:
    """The oracle, except that the endpoint fails on the calls numbered in ``failing``."""

    def __init__(self, failing: set[int]) -> None:
        self.oracle = OracleClient("notes_mcp")
        self.failing = failing
        self.calls = 0

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.calls += 1
        if self.calls in self.failing:
            raise ModelError("openai/x at http://127.0.0.1:1/v1: call unreachable after 4 attempt(s)")
        return self.oracle.complete(request)


def run(tmp_path: Path, client: Flaky, retries: int = 1, retry_errors: bool = False, group_s: float = 0.0):
    spec = CellSpec(
        "notes_mcp", "full", "qwen2.5-coder-0.5b-instruct", split="dev", episode_retries=retries,
        retry_errors=retry_errors,
    )  # fmt: skip
    cell = resolve_cell(spec)
    store = RunStore(tmp_path / "run", commit_interval_s=group_s)
    store.prepare()
    store.write_run_info({"cells": []})
    rows = run_cell(cell, ModelPool(None), store, "run", client=client)
    return cell, rows, load_runs([tmp_path / "run"])


def test_an_episode_the_endpoint_failed_is_run_again_from_the_start(tmp_path: Path):
    cell, rows, episodes = run(tmp_path, Flaky(failing={2}))
    assert len(episodes) == len(cell.tasks)
    assert episodes["error"].isna().all() and episodes["success"].all()
    assert sorted(episodes["attempts"]) == [1] * (len(cell.tasks) - 1) + [2]


def test_after_the_configured_retries_the_episode_is_an_error_and_the_cell_goes_on(tmp_path: Path):
    cell, rows, episodes = run(tmp_path, Flaky(failing=set(range(1, 4))), retries=2)
    failed = episodes[episodes["error"].notna()]
    assert len(episodes) == len(cell.tasks), "every task still has its episode"
    assert len(failed) == 1 and failed["attempts"].iloc[0] == 3
    assert failed["error"].iloc[0].startswith("ModelError") and "harness_error" in failed["error_types"].iloc[0]
    assert episodes[episodes["error"].isna()]["success"].all()


@pytest.mark.parametrize("group_s", [0.0, 0.5], ids=["one part per episode", "group commit"])
def test_retry_errors_runs_the_errored_episodes_again_and_replaces_their_rows(tmp_path: Path, group_s: float):
    cell, _, first = run(tmp_path, Flaky(failing={2, 4}), retries=1, group_s=group_s)  # fails mid-episode
    errored = first[first["error"].notna()]["episode_key"].tolist()
    assert len(errored) == 1 and first.set_index("episode_key").loc[errored[0], "round_trips"] >= 1

    _, rows, same = run(tmp_path, Flaky(failing=set()), group_s=group_s)
    assert rows == [] and same["error"].notna().sum() == 1, "a plain re-run skips committed errors"

    healthy = Flaky(failing=set())
    _, rows, again = run(tmp_path, healthy, retry_errors=True, group_s=group_s)
    assert [r["episode_key"] for r in rows] == errored, "only the errored episode ran again"
    assert healthy.calls > 0
    assert len(again) == len(cell.tasks) and again["episode_key"].is_unique
    assert again["error"].isna().all() and again["success"].all()
    steps = load_runs([tmp_path / "run"], "steps")
    per_episode = steps.groupby("episode_key").size()
    assert (per_episode == again.set_index("episode_key")["round_trips"].reindex(per_episode.index)).all(), (
        "no step of the errored attempt is left beside the new one"
    )
