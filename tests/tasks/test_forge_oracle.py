"""Every forge task's reference calls, replayed through the real loop, pass its checks; a wrong one fails."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from surfbench.bench.models.scripted import ScriptedClient, call_turn, text_turn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite import Task, load_suite
from surfbench.surfaces import build_surface

SUITE = load_suite("forge")
WRITES = [t for t in SUITE.tasks if "write" in t.tags]


def oracle_args(call) -> dict[str, Any]:
    return dict(call.oracle_args) if call.oracle_args is not None else example_args(call.args)


def oracle_answer(task: Task) -> str:
    parts = [str(x) for x in task.answer.get("contains", [])]
    if task.answer.get("any_of"):
        parts.append(str(task.answer["any_of"][0]))
    return " ".join(parts) or "Done."


def replay(task: Task, calls: list[tuple[str, dict]]) -> Any:
    script: list[Any] = [call_turn((op, args)) for op, args in calls]
    script += [text_turn(oracle_answer(task))] * len(task.turns)
    surface = build_surface(SUITE.catalog, "full")
    backend = SUITE.new_backend(task)
    trace = run_episode(
        task,
        surface.session(task.turns[0]),
        backend,
        ScriptedClient(script),
        LoopSettings(max_steps=len(calls) + 3),
        SUITE.system_prompt,
        lambda name: SUITE.catalog[name].parameters,
    )
    return trace, score_episode(task, trace, SUITE.catalog)


@pytest.mark.parametrize("task", SUITE.tasks, ids=lambda t: t.id)
def test_oracle_replay_passes(task: Task):
    trace, score = replay(task, [(c.op, oracle_args(c)) for c in task.expected])
    assert trace.error is None, trace.traceback
    assert all(c.backend_ok for c in trace.calls), [c.result for c in trace.calls]
    assert score.success, score.failures
    assert score.first_try_correct == score.expected_calls


def mutate(args: dict[str, Any]) -> dict[str, Any]:
    """Change one meaningful argument: the kind of mistake a model makes."""
    wrong = copy.deepcopy(args)
    for key in [k for k in wrong if k not in ("owner", "repo")] + [k for k in ("repo",) if k in wrong]:
        value = wrong[key]
        if isinstance(value, bool):
            wrong[key] = not value
        elif isinstance(value, int):
            wrong[key] = value + 1 if key == "index" and value + 1 in (1, 2, 3, 4, 5, 6) else value + 100
        elif isinstance(value, str):
            wrong[key] = value + "-wrong"
        elif isinstance(value, list):
            wrong[key] = value[:-1] if len(value) > 1 else ["wrong"]
        else:
            continue
        return wrong
    return {**wrong, "confirm": True}  # nothing to change: an argument the operation does not take


@pytest.mark.parametrize("task", WRITES, ids=lambda t: t.id)
def test_wrong_call_fails_the_checks(task: Task):
    calls = [(c.op, oracle_args(c)) for c in task.expected]
    op, args = calls[-1]
    calls[-1] = (op, mutate(args))
    _, score = replay(task, calls)
    assert not score.success
    assert score.first_try_correct < score.expected_calls


def test_suite_shape():
    assert len(SUITE.catalog) == 96
    assert len(SUITE.tasks) >= 100
    tags = {tag for t in SUITE.tasks for tag in t.tags}
    assert {"hot", "cold", "single", "multi", "arg-heavy", "near-miss", "should-refuse"} <= tags
    assert all(t.state for t in WRITES), "every task that writes has a final-state check"
    top = SUITE.catalog.by_weight()[:15]
    share = sum(op.weight for op in top) / sum(op.weight for op in SUITE.catalog.operations)
    assert abs(share - 0.70) < 0.01


def test_code_free_suite_runs_on_canned_results():
    suite = load_suite("notes_mcp")
    assert suite.backend_spec is None and len(suite.catalog) == 8
    task = next(t for t in suite.tasks if t.id == "search-then-tag")
    script = [
        call_turn(("notes_search", {"query": "dentist"})),
        call_turn(("notes_tag", {"id": "n5", "tags": ["health"]})),
        text_turn("Tagged."),
    ]
    backend = suite.new_backend(task)
    trace = run_episode(
        task, build_surface(suite.catalog, "dispatcher").session(task.turns[0]), backend, ScriptedClient(script),
        LoopSettings(), suite.system_prompt, lambda n: suite.catalog[n].parameters,
    )  # fmt: skip
    score = score_episode(task, trace, suite.catalog)
    assert score.boundary_violations == 2  # typed calls on the dispatcher surface are rejected
    assert not score.success
    trace = run_episode(
        task, build_surface(suite.catalog, "full").session(task.turns[0]), suite.new_backend(task),
        ScriptedClient(script), LoopSettings(), suite.system_prompt, lambda n: suite.catalog[n].parameters,
    )  # fmt: skip
    score = score_episode(task, trace, suite.catalog)
    assert score.success and '"n5"' in trace.calls[0].result
