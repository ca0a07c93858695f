"""Alternatives that are sequences (issue 31): "one call of the tool that reads several files, or two calls of the one
that reads a file". Selection, first-try accuracy and success accept any alternative, a wrong order fails where order
matters, and the oracle replays the first alternative the surface can reach, so that on a retrieval surface a plumbing
run fails only the tasks whose operations retrieval did not show.

The suite is tests/fixtures/sequences: a file server where reading two files is ``read_multiple_files`` once or
``read_file`` twice (any order), and writing into a new folder is ``create_directory`` then ``write_file`` (in order)
or ``put_file`` once.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.models.scripted import OracleClient, ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.expected import CallSequence, OneOfCall
from surfbench.bench.suites.suite import SuiteError, load_suite
from surfbench.surfaces import build_surface
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "sequences"
SUITE = load_suite(str(FOLDER))
A, B = {"path": "notes/a.md"}, {"path": "notes/b.md"}
DIR, HI = {"path": "drafts"}, {"path": "drafts/hi.txt", "content": "hello"}


def episode(
    task_id: str, client: Any, surface: str = "full", params: dict[str, Any] | None = None
) -> tuple[list[str], EpisodeScore, Any]:
    """Run one task of the fixture suite; (operations that ran, the score, the session's surface)."""
    task = next(t for t in SUITE.tasks if t.id == task_id)
    built = build_surface(SUITE.catalog, surface, params)
    session = built.session(task.turns[0])
    trace = run_episode(
        task, session, SUITE.new_backend(task), client, LoopSettings(max_steps=6),
        SUITE.system_prompt, lambda n: SUITE.catalog[n].parameters,
    )  # fmt: skip
    ran = [c.operation for c in trace.calls if c.kind == "operation" and c.backend_ok and c.operation]
    return ran, score_episode(task, trace, SUITE.catalog), built


def scripted(task_id: str, *calls: tuple[str, dict[str, Any]]) -> tuple[list[str], EpisodeScore]:
    """The task on ``full`` with a model that makes ``calls``, one per turn, then answers."""
    ran, score, _ = episode(task_id, ScriptedClient([[c] for c in calls] + ["Done: alpha beta."]))
    return ran, score


def verdict(s: EpisodeScore) -> tuple[int, int, bool | None, bool]:
    return s.expected_calls, s.first_try_correct, s.selection_correct, s.success


def test_the_suite_loads_sequences_as_alternatives():
    read_two = next(t for t in SUITE.tasks if t.id == "read-two").expected[0]
    assert isinstance(read_two, OneOfCall)
    single, pair = read_two.alternatives
    assert single.op == "read_multiple_files" and isinstance(pair, CallSequence) and pair.any_order
    assert [(s.op, s.args) for s in pair.steps] == [("read_file", A), ("read_file", B)]
    assert read_two.label == "read_multiple_files or (read_file and read_file, any order)"


@pytest.mark.parametrize(
    "calls",
    [
        [("read_multiple_files", {"paths": ["notes/b.md", "notes/a.md"]})],
        [("read_file", A), ("read_file", B)],
        [("read_file", B), ("read_file", A)],  # any_order: true
    ],
    ids=["one-call", "two-calls", "two-calls-swapped"],
)
def test_reading_two_files_either_way_is_right_for_selection_first_try_and_success(calls):
    ran, s = scripted("read-two", *calls)
    assert ran == [op for op, _ in calls]
    # a sequence is one expected call: first-try accuracy's denominator does not depend on the way picked
    assert verdict(s) == (1, 1, True, True), s.failures
    assert s.first_tries[0].operation == calls[0][0]


@pytest.mark.parametrize(
    "calls", [[("create_directory", DIR), ("write_file", HI)], [("put_file", HI)]], ids=["in-order", "one-call"]
)
def test_an_ordered_sequence_or_its_one_call_alternative_is_right(calls):
    ran, s = scripted("draft", *calls)
    assert ran == [op for op, _ in calls] and verdict(s) == (1, 1, True, True), s.failures


def test_an_ordered_sequence_in_the_wrong_order_fails_selection_and_success():
    _, s = scripted("draft", ("write_file", HI), ("create_directory", DIR))
    assert s.selection_correct is False and not s.success
    assert "selection: expected create_directory then write_file or put_file first, got write_file" in s.failures
    line = "expected call create_directory then write_file or put_file not matched by any successful call"
    assert any(line in f for f in s.failures), s.failures
    assert s.first_try_correct == 1  # the arguments were right: first-try accuracy does not judge order


def test_a_sequence_missing_a_call_fails_first_try_and_success():
    _, s = scripted("read-two", ("read_file", A))
    assert (s.first_try_correct, s.success) == (0, False)
    first = s.first_tries[0]
    assert first.error_type == "missing_call", first
    assert "(read_file and read_file, any order): call 2 (read_file) was never made" in first.detail


def test_a_wrong_argument_in_one_call_of_a_sequence_fails_its_first_try_but_a_later_fix_succeeds():
    _, s = scripted("draft", ("create_directory", DIR), ("write_file", {**HI, "content": "bye"}))
    assert (s.first_try_correct, s.success) == (0, False)
    assert (s.first_tries[0].operation, s.first_tries[0].error_type) == ("write_file", "wrong_value")
    _, s = scripted("draft", ("create_directory", DIR), ("write_file", {**HI, "content": "bye"}), ("write_file", HI))
    assert (s.first_try_correct, s.success) == (0, True), s.failures


def test_the_same_file_read_twice_does_not_count_as_both_files():
    _, s = scripted("read-two", ("read_file", A), ("read_file", A))
    assert not s.success and s.first_try_correct == 0


def shown(built: Any, task_id: str) -> set[str]:
    task = next(t for t in SUITE.tasks if t.id == task_id)
    return {h.operation for h in built.select(task.turns[0])}


def reachable(task_id: str, names: set[str]) -> bool:
    task = next(t for t in SUITE.tasks if t.id == task_id)
    return all(any({s.op for s in a.steps} <= names for a in e.alternatives) for e in task.expected)


def test_the_oracle_on_full_replays_the_first_alternative():
    ran, s, _ = episode("read-two", OracleClient(str(FOLDER)))
    assert ran == ["read_multiple_files"] and s.success, s.failures


@pytest.mark.parametrize(("task_id", "k", "calls"), [("read-two", 1, ["read_file"] * 2), ("draft", 2, ["put_file"])])
def test_the_oracle_on_preselect_replays_an_alternative_whose_operations_were_shown(task_id: str, k: int, calls):
    ran, s, built = episode(task_id, OracleClient(str(FOLDER)), "preselect", {"k": k})
    first = next(t for t in SUITE.tasks if t.id == task_id).expected[0].alternatives[0]
    assert not {st.op for st in first.steps} <= shown(built, task_id)  # the first alternative was not shown
    assert ran == calls and s.success and s.boundary_violations == 0, s.failures


def test_a_plumbing_run_of_the_oracle_on_preselect_fails_exactly_the_retrieval_misses():
    outcomes = {}
    for task in SUITE.tasks:
        _, s, built = episode(task.id, OracleClient(str(FOLDER)), "preselect", {"k": 1})
        outcomes[task.id] = (s.success, reachable(task.id, shown(built, task.id)))
    assert all(success == found for success, found in outcomes.values()), outcomes
    assert {found for _, found in outcomes.values()} == {True, False}, outcomes  # both kinds occur here


def test_the_oracle_on_search_searches_with_the_request_then_calls_an_alternative_it_found():
    ran, s, _ = episode("draft", OracleClient(str(FOLDER)), "search", {"top_n": 2})
    assert ran == ["put_file"] and s.success and s.meta_calls == 1 and s.protocol_violations == 0, s.failures


# -- the task file ----------------------------------------------------------------------------------------------
def _with_expected(tmp_path: Path, expected_yaml: str) -> Path:
    """A copy of the fixture suite whose read-two task expects ``expected_yaml`` (one YAML flow value)."""
    folder = tmp_path / "sequences"
    shutil.copytree(FOLDER, folder)
    text = (folder / "tasks.yaml").read_text()
    start = text.index("  expected:\n    - one_of:\n        - {op: read_multiple_files")
    end = text.index("  canned: {read_multiple_files")
    (folder / "tasks.yaml").write_text(text[:start] + f"  expected: {expected_yaml}\n" + text[end:])
    return folder


M, R = "{op: read_multiple_files, args: {paths: {$any: true}}}", "{op: read_file, args: {path: a}}"
BAD = [
    (f"[{{one_of: [{M}, [{R}]]}}]", "expected[0].one_of[1]: a sequence alternative needs a list of two or more calls"),
    (f"[{{one_of: [{M}, {{calls: {R}}}]}}]", "expected[0].one_of[1].calls: a sequence alternative needs a list"),
    (f"[{{one_of: [{M}, [{R}, read_file]]}}]", "expected[0].one_of[1][1]: a call of a sequence needs an 'op'"),
    (f"[{{one_of: [{M}, [{R}, {{op: read_file, turn: 0}}]]}}]", "expected[0].one_of[1][1]: 'turn' belongs to"),
    (f"[{{one_of: [{M}, [{R}, {{one_of: [{R}, {R}]}}]]}}]", "one_of[1][1]: a sequence cannot hold a one_of"),
    (f"[{{one_of: [{M}, {{calls: [{R}, {R}], any_order: 1}}]}}]", "field 'any_order' must be true or false"),
    (f"[{{one_of: [{M}, {{calls: [{R}, {R}], anyorder: true}}]}}]", "unknown key 'anyorder' (did you mean 'any_order'"),
    (f"[{{one_of: [{M}, {{calls: [{R}, {R}], op: read_file}}]}}]", "expected[0].one_of[1]: has both 'calls' and op"),
    (f"[{{one_of: [{M}, [{R}, {{op: read_fil}}]]}}]", "expected[0].one_of[1][1]: op 'read_fil' not in the catalog"),
    (f"[{{one_of: [{M}, {{calls: [{R}, {{op: read_file, args: {{pth: a}}}}]}}]}}]",
     "expected[0].one_of[1].calls[1].args: read_file has no argument 'pth'"),
]  # fmt: skip


@pytest.mark.parametrize(("expected", "message"), BAD, ids=[m.split(": ", 1)[-1][:40] for _, m in BAD])
def test_a_bad_sequence_alternative_is_one_line_naming_the_file_the_task_and_the_field(
    tmp_path: Path, expected: str, message: str
):
    folder = _with_expected(tmp_path, expected)
    with pytest.raises(SuiteError) as info:
        load_suite(str(folder))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{folder / 'tasks.yaml'}: task 'read-two': "), text
    assert message in text, text


def test_a_task_whose_sequence_changes_gets_a_new_hash(tmp_path: Path):
    from surfbench.bench.store.identity import task_hash

    def read_two(expected: str, at: str) -> Any:
        return next(t for t in load_suite(str(_with_expected(tmp_path / at, expected))).tasks if t.id == "read-two")

    ordered = read_two(f"[{{one_of: [{M}, [{R}, {R.replace('a}', 'b}')}]]}}]", "o")
    any_order = read_two(f"[{{one_of: [{M}, {{any_order: true, calls: [{R}, {R.replace('a}', 'b}')}]}}]}}]", "a")
    assert task_hash(ordered) != task_hash(any_order)
