"""Code mode over the other catalog suites: one program per task, its SDK calls routed like direct calls,
through canned results (notes_mcp), per-entry SDKs (BFCL) and a real third-party MCP server (git)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import call_turn, text_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.sandbox.box import bwrap_path
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Task

pytestmark = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap (bwrap) is not installed")


class SuiteCodeOracle:
    """Answers each task of ``suite`` with one program making every expected call, then the answer words."""

    name = "scripted-oracle"

    def __init__(self, suite: str) -> None:
        self.suite = load_suite(suite)

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        task = next(t for t in self.suite.tasks if t.turns[0] == first)
        if any(m["role"] == "tool" for m in request.messages):
            words = task.answer.get("contains", []) + task.answer.get("any_of", [])[:1]
            return with_usage(text_turn(" ".join(map(str, words)) or "Done."), request)
        return with_usage(call_turn(("run_code", {"code": self.program(task)})), request)

    def program(self, task: Task) -> str:
        lines = []
        for e in task.expected:
            args = dict(e.oracle_args) if e.oracle_args is not None else example_args(e.args)
            lines.append(f"print({e.op}(**{args!r}))")
        return "\n".join(lines)


def multi_call_tasks(suite: str, first: int = 10) -> tuple[str, ...]:
    return tuple(t.id for t in load_suite(suite).tasks if len(t.expected) >= 2 and len(t.turns) == 1)[:first]


@pytest.mark.parametrize(
    "suite",
    [
        "notes_mcp",
        "bfcl:parallel",  # each entry's functions are that task's SDK
        pytest.param(
            "git",
            marks=pytest.mark.skipif(importlib.util.find_spec("mcp_server_git") is None, reason="needs mcp-server-git"),
        ),
    ],
)
def test_a_multi_call_task_is_one_program_and_one_round_trip_on_every_catalog_suite(suite: str, tmp_path: Path):
    tasks = multi_call_tasks(suite)
    assert tasks, f"{suite} has no single-turn task with two or more expected calls"
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cell = resolve_cell(CellSpec(suite, "code", "qwen2.5-coder-0.5b-instruct", split="all", tasks=tasks))
    store.write_run_info({"cells": [{**cell.provenance(), "provider": "scripted"}]})
    run_cell(cell, ModelPool(None), store, "oracle", client=SuiteCodeOracle(suite))
    episodes = load_runs([tmp_path / "run"])
    failed = episodes[~episodes["success"].astype(bool)]
    assert failed.empty, failed[["task_id", "failures", "error"]].to_dict("records")
    # the program is one round trip, the answer another (BFCL: one model call per episode, no answer turn);
    # every call from code counted like a direct call
    assert (episodes["round_trips"] == min(2, cell.suite.max_steps)).all()
    assert (episodes["first_try_accuracy"] == 1.0).all()
    calls = load_runs([tmp_path / "run"], table="calls")
    expected = {e.op for t in load_suite(suite).tasks if t.id in tasks for e in t.expected}
    assert set(calls["operation"].dropna()) == expected


class SearchingOracle(SuiteCodeOracle):
    """Searches the SDK with the request first (search_api), then makes the expected calls."""

    def program(self, task: Task) -> str:
        return f"print(search_api({task.turns[0]!r}))\n" + super().program(task)


def test_the_funnel_reads_what_search_api_returned_inside_the_program(tmp_path: Path):
    from surfbench.bench.analysis.funnel import funnel_rows
    from surfbench.bench.analysis.retrieval_eval import expected_ops
    from surfbench.bench.store.provenance import load_current
    from surfbench.surfaces import build_surface

    suite = load_suite("notes_mcp")
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cells = [resolve_cell(CellSpec("notes_mcp", s, "qwen2.5-coder-0.5b-instruct", split="all")) for s in
             ("code_search", "code")]  # fmt: skip
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "oracle", client=SearchingOracle("notes_mcp"))
    view = load_current([tmp_path / "run"])
    rows = funnel_rows([tmp_path / "run"], view.frame, view.infos)
    assert [r.surface for r in rows] == ["code_search"]  # code mode without search_api retrieves nothing
    # recall recomputed independently: the operations search_api ranks for each task's request
    surface = build_surface(suite.catalog, "code", cells[0].surface_cfg.params)
    tasks = [t for t in suite.tasks if t.expected]
    found = [
        len(set(expected_ops(t)) & {op.name for op in surface.search(t.turns[0])}) / len(expected_ops(t)) for t in tasks
    ]
    assert rows[0].episodes == len(tasks) and rows[0].retrieved == pytest.approx(sum(found) / len(found))
    assert rows[0].retrieved > 0
