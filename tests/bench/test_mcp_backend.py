"""A live MCP server as a backend: the forge over MCP gets the oracle's results unchanged; results,
isError, timeouts and a dying server reach the episode as a user would expect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from tests.bench.mcp_helpers import TINY, processes_with

FORGE_TASKS = 24


def run(suite: str, tmp: Path, client: Any, **spec: Any) -> tuple[Any, Any]:
    cell = resolve_cell(CellSpec(suite, "full", "qwen2.5-coder-0.5b-instruct", **spec))
    store = RunStore(tmp, commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "t", client=client)
    if cell.suite.mcp is not None and cell.suite.mcp.pool is not None:
        assert cell.suite.mcp.pool.idle, "a server with a declared reset is kept for the next episode"
        cell.suite.mcp.pool.close()
    episodes = load_runs([tmp])
    calls = load_runs([tmp], table="calls")
    if calls.empty:  # an episode ended by a harness error keeps no calls
        return episodes, calls
    calls = calls.merge(episodes[["episode_key", "task_id"]], on="episode_key")
    return episodes.sort_values("task_id"), calls.sort_values(["task_id", "step", "index"])


def test_the_forge_over_mcp_gives_the_oracle_the_same_results(tmp_path: Path):
    spec = {"split": "all", "limit": FORGE_TASKS}
    local, local_calls = run("forge", tmp_path / "local", OracleClient("forge"), **spec)
    remote, remote_calls = run("forge_mcp", tmp_path / "mcp", OracleClient("forge_mcp"), **spec)
    assert len(remote) == FORGE_TASKS and remote["success"].all()
    assert list(local["success"]) == list(remote["success"])
    cols = ["task_id", "operation", "backend_ok", "error_type", "result"]
    assert local_calls[cols].values.tolist() == remote_calls[cols].values.tolist()
    assert processes_with("surfbench.tasks.forge.mcp_server") == []


def tiny_suite(folder: Path, tasks: list[dict[str, Any]], **mcp: Any) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    server = {"command": "python", "args": [str(TINY), "ok"], **mcp}
    suite = {"name": "tiny", "catalog": {"mcp": server}, "backend": "mcp", "tasks": ["tasks.yaml"], "max_steps": 3}
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    (folder / "tasks.yaml").write_text(yaml.safe_dump(tasks))
    return str(folder)


def test_results_errors_and_timeouts_of_a_live_server(tmp_path: Path):
    tasks = [{"id": "t", "turns": ["go"], "expected": [{"op": "echo", "args": {"text": "hi"}}]}]
    suite = tiny_suite(tmp_path / "suite", tasks, call_timeout_s=1)
    script = ScriptedClient(
        [call_turn(("echo", {"text": "hi"}), ("fail", {}), ("sleep", {"s": 1.3}), ("pid", {})), "ok"]
    )
    episodes, calls = run(suite, tmp_path / "run", script, split="all")
    echo, fail, slow, pid = calls.to_dict("records")
    assert echo["result"] == "hi" and echo["backend_ok"]
    assert fail["result"] == "Error: the widget is broken" and fail["error_type"] == "backend_error"
    assert slow["error_type"] == "tool_timeout" and "no answer from the MCP server within 1 s" in slow["result"]
    assert pid["backend_ok"] and pid["result"].isdigit()  # the server answers again once the slow call ends
    assert bool(episodes["success"].iloc[0])
    assert processes_with(str(TINY)) == []


def test_a_server_that_dies_is_restarted_and_the_episode_retried(tmp_path: Path):
    tasks = [{"id": "t", "turns": ["go"], "expected": [{"op": "echo", "args": {"text": "hi"}}]}]
    suite = tiny_suite(tmp_path / "suite", tasks)
    script = ScriptedClient([call_turn(("die", {})), call_turn(("die", {}))])  # it dies again on the retry
    episodes, _ = run(suite, tmp_path / "run", script, split="all", episode_retries=1)
    row = episodes.iloc[0]
    assert row["attempts"] == 2
    assert row["error"].startswith("ServerError: MCP server") and "the server ended during die" in row["error"]
    assert processes_with(str(TINY)) == []


@pytest.mark.parametrize("bad", [{"fixture": "nope"}, {"url": "http://x", "command": "y"}])
def test_a_malformed_server_spec_names_the_suite_file(tmp_path: Path, bad: dict[str, Any]):
    from surfbench.bench.suites.suite import SuiteError, load_suite

    suite = tiny_suite(tmp_path / "suite", [{"id": "t", "turns": ["go"], "refuse": True}], **bad)
    with pytest.raises(SuiteError, match=r"suite\.yaml: .*mcp"):
        load_suite(suite)
