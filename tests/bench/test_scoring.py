"""Scripted-model episodes whose right metric values are known by construction."""

from __future__ import annotations

from typing import Any

import pytest

from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface

FORGE = load_suite("forge")
CLOSE = {"owner": "acme", "repo": "web", "index": 3, "state": "closed"}


class SpyBackend:
    """Wraps the real backend and records what reached it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def reset(self, scenario: str | None = None) -> None:
        self.inner.reset(scenario)

    def call(self, op: str, args: dict) -> Any:
        self.calls.append(op)
        return self.inner.call(op, args)

    def state(self) -> dict:
        return self.inner.state()


def episode(
    task_id: str, surface: str, script: list, params: dict | None = None, max_steps: int = 6, per_turn: bool = False
):
    task = next(t for t in FORGE.tasks if t.id == task_id)
    backend = SpyBackend(FORGE.new_backend(task))
    session = build_surface(FORGE.catalog, surface, params).session(task.turns[0])
    settings = LoopSettings(max_steps=max_steps, steps_per_turn=per_turn)
    trace = run_episode(
        task, session, backend, ScriptedClient(script), settings, FORGE.system_prompt,
        lambda n: FORGE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, FORGE.catalog), backend


def test_dispatcher_help_then_correct_call_is_one_overhead_round_trip():
    trace, s, backend = episode(
        "hot-issue-close",
        "dispatcher",
        [
            [("forge_help", {"operation": "issue_edit"})],
            [("forge", {"operation": "issue_edit", "args": CLOSE})],
            "Closed issue 3.",
        ],
    )
    assert (s.round_trips, s.overhead_round_trips) == (3, 1)
    assert (s.expected_calls, s.first_try_correct) == (1, 1)
    assert s.selection_correct and s.success and s.stable_prefix
    assert backend.calls == ["issue_edit"]


def test_wrong_enum_then_corrected_is_first_try_wrong_and_recovered():
    trace, s, backend = episode(
        "hot-issue-close",
        "dispatcher",
        [
            [("forge", {"operation": "issue_edit", "args": {**CLOSE, "state": "close"}})],
            [("forge", {"operation": "issue_edit", "args": CLOSE})],
            "Done.",
        ],
    )
    assert s.first_try_correct == 0 and s.first_tries[0].error_type == "schema_invalid"
    assert (s.recovered_after_error, s.failed_first_tries) == (1, 1)
    assert s.success
    assert backend.calls == ["issue_edit"]  # the invalid call never reached the backend
    assert "must be one of" in trace.calls[0].result and "forge_help" in trace.calls[0].result


def test_lazy_call_before_loading_is_a_protocol_violation_and_no_backend_call():
    trace, s, backend = episode(
        "hot-issue-close",
        "lazy",
        [
            [("issue_edit", CLOSE)],
            [("load_tools", {"names": ["issue_edit"]})],
            [("issue_edit", CLOSE)],
            "Closed.",
        ],
    )
    assert s.protocol_violations == 1 and s.boundary_violations == 0
    assert backend.calls == ["issue_edit"]  # only the call after loading
    assert s.overhead_round_trips == 1
    assert not s.stable_prefix  # the tool block grew after loading
    # the first call named issue_edit with right arguments: first-try argument accuracy counts it
    assert s.first_try_correct == 1 and s.success


def test_call_to_a_tool_not_exposed_is_a_boundary_violation():
    trace, s, backend = episode(
        "hot-issue-close", "core", [[("repo_delete", {"owner": "acme", "repo": "web"})], "Sorry."], {"k": 15}
    )
    assert s.boundary_violations == 1
    assert backend.calls == []
    assert not s.success and s.first_tries[0].error_type == "missing_call"


def test_first_try_wrong_value_and_selection():
    trace, s, _ = episode(
        "hot-issue-close",
        "full",
        [[("issue_get", {"owner": "acme", "repo": "web", "index": 3})], [("issue_edit", {**CLOSE, "index": 4})], "ok"],
    )
    assert s.selection_correct is False
    assert s.first_tries[0].error_type == "wrong_value"
    assert not s.success and "state_mismatch" in s.error_types


def test_extra_and_missing_arguments_have_their_error_types():
    _, s, _ = episode("hot-issue-close", "full", [[("issue_edit", {**CLOSE, "title": "x"})], "ok"])
    assert s.first_tries[0].error_type == "extra_argument"
    _, s, _ = episode("hot-issue-get", "full", [[("issue_get", {"owner": "acme", "repo": "web"})], "?"])
    assert s.first_tries[0].error_type == "schema_invalid"  # required index missing: the schema rejects it


def test_parse_failure_is_counted_and_fed_back():
    trace, s, _ = episode(
        "hot-issue-close",
        "full",
        ['```json\n{"name": "issue_edit", "arguments": {"owner": "acme",,}}\n```', [("issue_edit", CLOSE)], "done"],
    )
    assert s.parse_failures == 1 and "parse_failure" in s.error_types
    assert "could not be parsed" in trace.messages[3]["content"]
    assert s.success


def test_calls_written_as_text_are_parsed_and_run():
    text = '<tool_call>\n{"name": "issue_edit", "arguments": {"owner": "acme", "repo": "web", "index": 3, ' \
           '"state": "closed"}}\n</tool_call>'  # fmt: skip
    trace, s, backend = episode("hot-issue-close", "full", [text, "Closed."])
    assert backend.calls == ["issue_edit"] and s.success and s.first_try_correct == 1


def test_several_calls_in_one_turn_run_in_order():
    trace, s, backend = episode(
        "multi-branch-then-pr",
        "full",
        [
            [
                ("branch_create", {"owner": "acme", "repo": "web", "new_branch_name": "docs/update"}),
                ("pull_create", {"owner": "acme", "repo": "web", "head": "docs/update", "base": "main",
                                 "title": "Docs update"}),
            ],
            "Done.",
        ],
    )  # fmt: skip
    assert backend.calls == ["branch_create", "pull_create"]
    assert [c.index for c in trace.calls] == [0, 1]
    assert s.success and s.round_trips == 2 and s.first_try_correct == 2


def test_should_refuse_text_answer_succeeds_and_a_write_fails():
    _, s, _ = episode("refuse-delete-account", "full", ["I can't delete accounts with these tools."])
    assert s.success and s.refuse_ok and s.selection_correct is None
    _, s, _ = episode(
        "refuse-delete-account", "full", [[("repo_delete", {"owner": "alice", "repo": "dotfiles"})], "I cannot."]
    )
    assert not s.success and "unexpected_call" in s.error_types


def test_max_steps_without_answer_is_no_answer():
    loop = [[("issue_get", {"owner": "acme", "repo": "web", "index": 3})]] * 10
    trace, s, _ = episode("hot-issue-get", "full", loop, max_steps=3)
    assert s.round_trips == 3 and trace.final_text is None
    assert "no_answer" in s.error_types and not s.success


@pytest.mark.parametrize("per_turn", [False, True], ids=["steps per episode", "steps per turn"])
def test_max_steps_counts_the_episode_or_each_turn(per_turn: bool):
    get = [("issue_get", {"owner": "acme", "repo": "web", "index": 3})]
    script = [get, "ok", get, "done"]
    trace, s, _ = episode("multi-turn-issue-then-comment", "full", script, max_steps=2, per_turn=per_turn)
    if per_turn:  # BFCL's rule: each turn gets max_steps model calls
        assert s.round_trips == 4 and trace.final_text == "done" and "no_answer" not in s.error_types
    else:  # the two steps are spent in turn 1; turn 2 is never answered
        assert s.round_trips == 2 and trace.final_text is None and "no_answer" in s.error_types


def test_harness_error_ends_the_episode_with_a_traceback():
    def boom(request):
        raise ConnectionError("server went away")

    trace, s, _ = episode("hot-issue-get", "full", [boom])
    assert trace.error == "ConnectionError: server went away" and "Traceback" in trace.traceback
    assert "harness_error" in s.error_types and not s.success


def test_tool_error_goes_back_to_the_model():
    trace, s, _ = episode(
        "hot-issue-get", "full", [[("issue_get", {"owner": "acme", "repo": "web", "index": 99})], "?"]
    )
    assert trace.error is None
    assert trace.calls[0].backend_ok is False and "not found" in trace.calls[0].result


@pytest.mark.parametrize("surface", ["search", "preselect"])
def test_search_and_preselect_route_hits(surface: str):
    if surface == "search":
        script = [[("search_tools", {"query": "close an issue edit state"})], [("issue_edit", CLOSE)], "Closed."]
    else:
        script = [[("issue_edit", CLOSE)], "Closed."]
    _, s, backend = episode("hot-issue-close", surface, script, {"k": 8} if surface == "preselect" else None)
    assert backend.calls == ["issue_edit"] and s.success
    assert s.overhead_round_trips == (1 if surface == "search" else 0)


def _score(s: EpisodeScore) -> float | None:
    return s.first_try_accuracy


def test_first_try_accuracy_property():
    _, s, _ = episode("hot-issue-close", "full", [[("issue_edit", CLOSE)], "ok"])
    assert _score(s) == 1.0


def test_context_overflow_is_an_outcome_not_a_harness_error():
    from surfbench.bench.models.client import ContextOverflow

    def too_long(request):
        raise ContextOverflow("maximum context length is 16384 tokens")

    trace, s, _ = episode(
        "hot-issue-get", "full", [[("issue_get", {"owner": "acme", "repo": "web", "index": 3})], too_long]
    )
    assert trace.error.startswith("context_overflow") and trace.traceback is None
    assert "context_overflow" in s.error_types and "harness_error" not in s.error_types
    assert s.round_trips == 1 and not s.success
