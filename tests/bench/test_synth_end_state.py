"""Synthesized write tasks are judged on the end state of what they touch, not only on what they change.

A planted wrong action that reaches the expected change by destroying more (deleting the label, the
repository or the entity instead of the link) or that changes something else too (switching to the branch
it was told not to switch to) fails the task's state check, and the failure names what differs; so does
an update with the wrong content. On the shipped forge and git splits, and on a knowledge-graph state as a
live MCP server's state function would report it.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.suites.checks import check_state
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.format_checks import task_from
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite import Task, load_suite
from surfbench.bench.synth.synth_build import GENERATOR
from surfbench.bench.synth.synth_checks import state_checks
from surfbench.bench.synth.synth_verify import Verifier

Calls = list[tuple[str, dict[str, Any]]]


@functools.cache
def verifier(suite: str) -> Verifier:
    return Verifier(load_suite(suite), 1)


def synth_task(suite: str, op: str, says: str = "") -> Task:
    """The first shipped synthesized task of ``suite`` that makes one call, ``op``, and whose request says ``says``."""
    for task in verifier(suite).suite.tasks:
        if task.split == "synth" and [e.op for e in task.expected] == [op] and says in task.turns[0]:
            return task
    raise AssertionError(f"no synthesized {op} task in {suite}")


def reference(task: Task) -> Calls:
    return [(e.op, dict(e.oracle_args) if e.oracle_args is not None else example_args(e.args)) for e in task.expected]


def replay(suite: str, task: Task, calls: Calls) -> tuple[bool, list[str]]:
    v = verifier(suite)
    trace, _ = v.episode(task, calls)
    assert all(c.backend_ok for c in trace.calls if c.kind == "operation"), [c.result for c in trace.calls]
    score = v.score(task, trace)
    return score.success, list(score.failures)


def test_the_shipped_splits_are_the_current_generators():
    for suite in ("forge", "git"):
        made = {t.meta["synth"]["generator"] for t in load_suite(suite).tasks if t.split == "synth"}
        assert made == {GENERATOR}, suite
    assert GENERATOR == "surfbench-synth/2"


# -- forge ---------------------------------------------------------------------------------------------------
def test_forge_removing_a_label_from_an_issue_by_deleting_the_label_fails():
    task = synth_task("forge", "issue_remove_label")
    (_, args), *_ = reference(task)
    assert replay("forge", task, reference(task))[0]
    wrong = ("label_delete", {"owner": args["owner"], "repo": args["repo"], "name": args["label"]})
    solved, failures = replay("forge", task, [wrong])
    assert not solved
    assert any(f"labels.{args['label']}: expected present" in f for f in failures), failures


@pytest.mark.parametrize("op", ["branch_delete", "collaborator_remove", "hook_delete", "release_delete"])
def test_forge_deleting_the_repository_instead_of_the_thing_in_it_fails(op: str):
    task = synth_task("forge", op)
    (_, args), *_ = reference(task)
    assert replay("forge", task, reference(task))[0]
    solved, failures = replay("forge", task, [("repo_delete", {"owner": args["owner"], "repo": args["repo"]})])
    assert not solved
    assert any(f"repos.{args['owner']}/{args['repo']}: expected present, missing" in f for f in failures), failures


def test_forge_an_update_with_the_wrong_content_fails():
    task = synth_task("forge", "issue_comment_edit")
    (op, args), *_ = reference(task)
    solved, failures = replay("forge", task, [(op, {**args, "body": "Something else entirely"})])
    assert not solved and any("Something else entirely" in f for f in failures), failures


def test_forge_an_update_that_also_changes_another_field_fails():
    task = synth_task("forge", "repo_edit", "description")
    (op, args), *_ = reference(task)
    solved, failures = replay("forge", task, [(op, {**args, "private": True})])
    assert not solved
    assert any(f"repos.{args['owner']}/{args['repo']}.private" in f for f in failures), failures


def first_try_right(suite: str, task: Task, calls: Calls) -> bool:
    v = verifier(suite)
    trace, _ = v.episode(task, calls)
    score = v.score(task, trace)
    return score.first_try_correct == len(score.first_tries) > 0


def test_forge_an_unnamed_optional_argument_is_judged_by_the_end_state_not_refused_as_extra():
    """Issue 52: a synthesized matcher refused an optional argument its request did not name (15 of full's 30
    failed first tries on the twins); hand-written tasks allow it. Now the first try is right and the end
    state decides: a harmless value solves the task, a harmful one does not."""
    task = synth_task("forge", "repo_edit", "description")
    (op, args), *_ = reference(task)
    assert "private" not in args and "website" not in args
    solved = {}
    for private in (True, False):
        calls = [(op, {**args, "private": private})]
        assert first_try_right("forge", task, calls), private
        solved[private] = replay("forge", task, calls)[0]
    # the repository's own value does no harm and solves it; the other changes it, and the end state says so
    assert sorted(solved.values()) == [False, True], solved


# -- git (the real mcp-server-git) ---------------------------------------------------------------------------
def test_git_creating_the_branch_and_switching_to_it_fails_when_told_not_to():
    pytest.importorskip("mcp_server_git")
    task = synth_task("git", "git_create_branch", "Do not switch")
    (op, args), *_ = reference(task)
    assert replay("git", task, reference(task))[0]
    solved, failures = replay(
        "git", task, [(op, args), ("git_checkout", {"repo_path": ".", "branch_name": args["branch_name"]})]
    )
    assert not solved and any(f.startswith("branch:") for f in failures), failures


def test_git_a_commit_with_the_wrong_message_fails():
    pytest.importorskip("mcp_server_git")
    task = synth_task("git", "git_commit")
    (op, args), *_ = reference(task)
    solved, failures = replay("git", task, [(op, {**args, "message": "Fix things"})])
    assert not solved and any("head.message" in f for f in failures), failures


# -- a knowledge graph (a live MCP server's state, as its state function reports it) -------------------------
def entity(name: str, kind: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": kind, "observations": list(observations)}


GRAPH = {
    "entities": {"Bob": entity("Bob", "person", "likes tea"), "Acme": entity("Acme", "company"),
                 "Carol": entity("Carol", "person")},
    "relations": [{"from": "Bob", "to": "Acme", "relationType": "works_at"},
                  {"from": "Carol", "to": "Acme", "relationType": "works_at"}],
}  # fmt: skip


def as_lists(graph: dict[str, Any]) -> dict[str, Any]:
    """The same graph with its entities as a list (as the memory server's own read_graph answers)."""
    return {"entities": list(graph["entities"].values()), "relations": graph["relations"]}


def delete_entity(graph: dict[str, Any], name: str) -> dict[str, Any]:
    out = copy.deepcopy(graph)
    del out["entities"][name]
    out["relations"] = [r for r in out["relations"] if name not in (r["from"], r["to"])]
    return out


def judged(checks: list[dict[str, Any]], state: dict[str, Any]) -> list[str]:
    task = task_from({"id": "t", "turns": ["x"], "state": checks}, Path("(test)"), 0, ())
    return [why for c in task.state if (why := check_state(c, state))]


@pytest.mark.parametrize("shape", [lambda g: g, as_lists], ids=["by-name", "as-list"])
def test_graph_deleting_the_entity_instead_of_the_relation_fails(shape):
    args = {"relations": [{"from": "Bob", "to": "Acme", "relationType": "works_at"}]}
    right = copy.deepcopy(GRAPH)
    right["relations"].pop(0)
    checks = state_checks(shape(GRAPH), shape(right), [args])
    assert judged(checks, shape(right)) == []
    failures = judged(checks, shape(delete_entity(GRAPH, "Bob")))
    assert failures and any(f.startswith("entities") and "Bob" in f for f in failures), failures


def test_graph_an_observation_with_the_wrong_content_fails():
    args = {"observations": [{"entityName": "Carol", "contents": ["speaks Dutch"]}]}
    right, wrong = copy.deepcopy(GRAPH), copy.deepcopy(GRAPH)
    right["entities"]["Carol"]["observations"].append("speaks Dutch")
    wrong["entities"]["Carol"]["observations"].append("speaks French")
    checks = state_checks(GRAPH, right, [args])
    assert judged(checks, right) == []
    failures = judged(checks, wrong)
    assert failures and any("entities.Carol.observations" in f for f in failures), failures


def test_a_keys_check_names_what_went_and_what_came():
    checks = [{"path": "entities", "keys": ["Bob", "Acme"]}]
    assert judged(checks, {"entities": {"Bob": {}, "Acme": {}}}) == []
    assert judged(checks, {"entities": {"Acme": {}, "Dave": {}}}) == [
        "entities.Bob: expected present, missing; entities.Dave: not expected, present"
    ]
    with pytest.raises(SuiteError, match="keys must be a list of strings"):
        judged([{"path": "entities", "keys": "Bob"}], {})
