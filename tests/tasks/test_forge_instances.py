"""The forge over two instances (tasks/forge_instances): every catalog surface carries ``instance`` to the right forge.

Each task's reference calls are replayed by a scripted model through the real loop on every surface config that can
be built over the catalog (typed tools, the dispatcher's top-level argument, loaded and searched tools, SDK calls
inside a code-mode program), and each passes its checks with every call on the instance the task names. The same
calls sent to the other forge fail the task (the suite's ``right_instance`` check, and the state checks of writes).
The oracle through ``run_cell`` records instance accuracy per surface, and the gate judges it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.analysis.metrics import summarize_cell
from surfbench.bench.base.config import group_names, surface_config
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn, with_usage
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.report.gate import judge
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.sandbox.box import bwrap_path
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.checks import suite_checks
from surfbench.bench.suites.instances import instance_tally
from surfbench.bench.suites.matchers import example_args, optional
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Task
from surfbench.surfaces import build_surface, surface_class

SUITE = load_suite("forge_instances")
TASKS = [t for t in SUITE.tasks if "instances" in t.tags]
CONFIGS = [c for c in group_names("surface") if surface_class(surface_config(c).kind).applies_to(SUITE.catalog)]
OTHER = {"work": "oss", "oss": "work"}


def reference(task: Task) -> list[tuple[str, dict[str, Any]]]:
    """The task's expected calls with the oracle's arguments: optional ones (``""`` accepted) left out."""
    out = []
    for e in task.expected:
        op = SUITE.catalog[e.op]
        args = example_args(e.args)
        out.append((e.op, {k: v for k, v in args.items() if k in op.required or not optional(e.args.get(k))}))
    return out


def answer(task: Task) -> str:
    return " ".join(map(str, task.answer.get("contains", []) + task.answer.get("any_of", [])[:1])) or "Done."


def program(calls: list[tuple[str, dict[str, Any]]], search: bool) -> str:
    lines = [f"search_api({op.replace('_', ' ')!r})" for op, _ in calls] if search else []
    return "\n".join(lines + [f"print({op}(**{args!r}))" for op, args in calls])


def script(config: str, calls: list[tuple[str, dict[str, Any]]], task: Task) -> list[Any] | None:
    """The turns that make ``calls`` every way surface ``config`` offers; None when it cannot reach them all."""
    cfg = surface_config(config)
    surface = build_surface(SUITE.catalog, cfg.kind, cfg.params)
    reachable = {op.name for op in surface.reachable()}
    if not {op for op, _ in calls} <= reachable:
        return None
    typed: list[Any] = [[call] for call in calls]
    if cfg.kind == "code":
        return [[("run_code", {"code": program(calls, search=cfg.params.get("sdk") == "search")})], answer(task)]
    if cfg.kind == "lazy":
        return [[("load_tools", {"names": [op for op, _ in calls]})], *typed, answer(task)]
    if cfg.kind == "search":
        return [[("search_tools", {"query": op.replace("_", " ")}) for op, _ in calls], *typed, answer(task)]
    dispatcher = getattr(surface, "dispatcher", None)
    if dispatcher is not None:  # dispatcher, core_dispatch: the instance beside 'operation', as its tool says
        shown = {t.name for t in surface.static_tools()}
        turns: list[Any] = []
        for op, args in calls:
            if op in shown:
                turns.append([(op, args)])
                continue
            inner = {k: v for k, v in args.items() if k != "instance"}
            top = {"instance": args["instance"]} if "instance" in args else {}
            turns.append([(dispatcher.call_name, {"operation": op, "args": inner, **top})])
        return [*turns, answer(task)]
    return [*typed, answer(task)]  # full, core, preselect: typed tools


def play(config: str, task: Task, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, Any] | None:
    turns = script(config, calls, task)
    if turns is None:
        return None
    cfg = surface_config(config)
    surface = build_surface(SUITE.catalog, cfg.kind, cfg.params)
    backend = SUITE.new_backend(task)
    trace = run_episode(
        task, surface.session(task.turns[0]), backend, ScriptedClient(turns), LoopSettings(max_steps=len(turns) + 2),
        SUITE.system_prompt, lambda name: SUITE.catalog[name].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, SUITE.catalog, SUITE.classifier, suite_checks(SUITE))


def test_the_suite_is_the_forge_with_one_pass_through_parameter():
    forge = load_suite("forge")
    assert SUITE.catalog.names == forge.catalog.names  # the forge's 96 operations, in its order
    assert list(SUITE.catalog.passthrough) == ["instance"] and forge.catalog.passthrough == {}
    assert SUITE.catalog.passthrough["instance"]["enum"] == ["work", "oss"]
    assert SUITE.catalog.passthrough["instance"]["default"] == "work"
    assert len(TASKS) >= 8 and {t.split for t in TASKS} == {"dev"}
    named = {t.meta.get("instance", "default") for t in TASKS}
    assert named == {"work", "oss", "default"}  # tasks that name each forge, and tasks that name none
    assert {"read", "write", "multi"} <= {tag for t in TASKS for tag in t.tags}


def missed_by_retrieval(config: str, task: Task, trace: Any) -> bool:
    """A pre-selecting surface did not show the task's operations: retrieval's miss, not the instance's."""
    cfg = surface_config(config)
    shown = trace.steps[0].operations_shown if trace.steps else None
    return surface_class(cfg.kind).request_dependent and not {e.op for e in task.expected} <= set(shown or ())


@pytest.mark.parametrize("config", CONFIGS)
def test_every_instance_task_passes_on_every_catalog_surface(config: str):
    cfg = surface_config(config)
    if cfg.kind == "code" and bwrap_path() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    played = missed = 0
    for task in TASKS:
        result = play(config, task, reference(task))
        if result is None:  # core without a dispatcher: the task's operation is not among its typed tools
            assert cfg.kind == "core" and cfg.params.get("rest") == "none"
            continue
        trace, score = result
        if missed_by_retrieval(config, task, trace):
            assert cfg.params.get("retriever") != "bm25", (config, task.id)  # the BM25 top five show every task's
            missed += 1
            continue
        played += 1
        assert trace.error is None, trace.traceback
        assert score.success, (config, task.id, score.failures, [c.result for c in trace.calls])
        tally = instance_tally(task, trace.calls, SUITE.catalog)
        assert tally is not None and tally.calls == len(task.expected) and tally.right == tally.calls, (config, task.id)
    assert played >= (3 if config == "core" else len(TASKS) - missed) and missed <= len(TASKS) // 2


@pytest.mark.parametrize("config", ["full", "dispatcher", "lazy", "search", "preselect", "code"])
def test_a_call_to_the_wrong_instance_fails_its_task(config: str):
    if config == "code" and bwrap_path() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    for task in TASKS:
        want = str(task.meta.get("instance", "work"))
        wrong = [(op, {**args, "instance": OTHER[want]}) for op, args in reference(task)]
        result = play(config, task, wrong)
        assert result is not None
        trace, score = result
        assert not score.success, (config, task.id)
        assert "wrong_instance" in score.error_types, (config, task.id, score.error_types)
        assert any("check: instance" in f for f in score.failures)
        tally = instance_tally(task, trace.calls, SUITE.catalog)
        assert tally is not None and tally.right == 0 < tally.calls


def test_naming_the_default_instance_is_as_right_as_leaving_it_out():
    task = next(t for t in TASKS if t.id == "inst-default-close")
    for instance in ({}, {"instance": "work"}):
        calls = [(op, {**args, **instance}) for op, args in reference(task)]
        result = play("full", task, calls)
        assert result is not None and result[1].success
    state = SUITE.new_backend(task).state()  # the other forge's issue 3 is another issue, still open
    assert state["oss"]["repos"]["acme/web"]["issues"]["3"]["state"] == "open"


def test_the_dispatcher_gets_a_wrong_instance_name_refused_with_its_choices():
    task = next(t for t in TASKS if t.id == "inst-oss-issue-get")
    result = play("dispatcher", task, [("issue_get", {"owner": "acme", "repo": "web", "index": 3, "instance": "gh"})])
    assert result is not None
    trace, score = result
    assert trace.calls[0].kind == "rejected" and trace.calls[0].error_type == "schema_invalid"
    assert '"work", "oss"' in trace.calls[0].result and not score.success


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The scripted oracle (bench.models.scripted) on full, dispatcher and preselect, recorded as a run is."""
    root = tmp_path_factory.mktemp("instances") / "run"
    cells = [resolve_cell(CellSpec("forge_instances", s, "qwen2.5-coder-0.5b-instruct", split="dev")) for s in
             ("full", "dispatcher", "preselect")]  # fmt: skip
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": [c.provenance() for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient("forge_instances"))
    return root


def test_the_oracle_records_instance_accuracy_per_surface(oracle_run: Path):
    episodes = load_runs([oracle_run])
    assert len(episodes) == 3 * len(TASKS)
    for surface, rows in episodes.groupby("surface"):
        summary = summarize_cell(rows.to_dict("records"))
        assert summary.success_rate == 1.0, rows[["task_id", "failures"]].to_string()
        assert summary.instance_accuracy == 1.0, surface
        assert 0.6 < summary.instance_accuracy_ci_low < 1.0 and summary.instance_accuracy_ci_high == 1.0


def test_the_oracle_passes_the_instance_beside_operation_on_the_dispatcher():
    task = next(t for t in TASKS if t.id == "inst-oss-issue-get")
    tools = tuple(build_surface(SUITE.catalog, "dispatcher").static_tools())
    request = ModelRequest(messages=({"role": "system", "content": "x"}, {"role": "user", "content": task.turns[0]}),
                           tools=tools)  # fmt: skip
    (call,) = OracleClient("forge_instances").complete(request).tool_calls
    assert call.arguments == {"operation": "issue_get", "args": {"owner": "acme", "repo": "web", "index": 3},
                              "instance": "oss"}  # fmt: skip


def test_the_gate_fails_a_dispatcher_that_loses_the_instance(oracle_run: Path, tmp_path: Path):
    """The dsh-instances criterion: instance accuracy on the dispatcher no lower than on full."""
    gate = Path(__file__).resolve().parents[2] / "configs/gate/dsh-instances.yaml"
    result = judge(gate, [oracle_run])
    verdict = next(v for v in result.verdicts if v.candidate == "dispatcher")
    assert verdict.outcome == "pass" and "1.00x" in verdict.observed
    # the same runs, with the dispatcher's calls all sent to the default forge: accuracy drops, the gate fails
    lost = tmp_path / "lost"
    lost_cell = resolve_cell(CellSpec("forge_instances", "dispatcher", "qwen2.5-coder-0.5b-instruct", split="dev"))
    store = RunStore(lost, commit_interval_s=0.0)
    store.prepare()
    full = resolve_cell(CellSpec("forge_instances", "full", "qwen2.5-coder-0.5b-instruct", split="dev"))
    store.write_run_info({"cells": [full.provenance(), lost_cell.provenance()]})
    run_cell(full, ModelPool(None), store, "oracle", client=OracleClient("forge_instances"))
    run_cell(lost_cell, ModelPool(None), store, "lost", client=DropsInstance("forge_instances"))
    spec = yaml.safe_load(gate.read_text())
    spec["candidates"] = ["dispatcher"]
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump(spec))
    verdict = next(v for v in judge(path, [lost]).verdicts if v.candidate == "dispatcher")
    assert verdict.outcome == "fail", verdict


class DropsInstance(OracleClient):
    """The oracle, but every dispatcher call loses its ``instance`` (what a surface that drops it would do)."""

    def complete(self, request: Any) -> Any:
        turn = super().complete(request)
        calls = [(c.name, {k: v for k, v in c.arguments.items() if k != "instance"}) for c in turn.tool_calls]
        return with_usage(call_turn(*calls), request) if calls else turn
