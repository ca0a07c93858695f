"""Expected calls with alternatives (``one_of``): either alternative is right, the oracle replays the first,
the report counts which one models pick, and a malformed ``one_of`` is one line naming where it is.

The suite is tests/fixtures/alternatives: an issue tracker with granular tools (``create_issue``,
``update_issue``) and a consolidated one (``issue_write {method}``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.authoring.scaffold import ORACLE_MODEL, check_suite
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.report.report import markdown
from surfbench.bench.report.report_data import collect
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.expected import ExpectedCall
from surfbench.bench.suites.suite import SuiteError, Task, load_suite
from surfbench.surfaces import build_surface
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "alternatives"
SUITE = load_suite(str(FOLDER))
BUG = {"title": "Login fails", "body": "Error 500 on submit"}
CLOSE_7 = {"issue_number": 7, "state": "closed"}
CELL = ("full", "oracle")
"""The runs' one surface x model: the report's columns."""


def episode(task_id: str, script: list, surface: str = "full") -> tuple[list[str], EpisodeScore]:
    """Run one task of the fixture suite with a scripted model; (operations that ran, the score)."""
    task = next(t for t in SUITE.tasks if t.id == task_id)
    session = build_surface(SUITE.catalog, surface, None).session(task.turns[0])
    trace = run_episode(
        task, session, SUITE.new_backend(task), ScriptedClient(script), LoopSettings(max_steps=4),
        SUITE.system_prompt, lambda n: SUITE.catalog[n].parameters,
    )  # fmt: skip
    ran = [c.operation for c in trace.calls if c.kind == "operation" and c.backend_ok and c.operation]
    return ran, score_episode(task, trace, SUITE.catalog)


@pytest.mark.parametrize(
    ("tool", "args"),
    [("create_issue", BUG), ("issue_write", {"method": "create", **BUG})],
)
def test_a_call_through_either_alternative_is_right_first_try_and_succeeds(tool: str, args: dict):
    ran, s = episode("create-bug", [[(tool, args)], "Opened issue 42."])
    assert ran == [tool]
    assert (s.expected_calls, s.first_try_correct, s.selection_correct, s.success) == (1, 1, True, True), s.failures
    assert s.first_tries[0].operation == tool  # the pick is what the report counts


def test_an_alternative_through_the_dispatcher_counts_like_a_typed_call():
    ran, s = episode(
        "create-bug", [[("alternatives", {"operation": "issue_write", "args": {"method": "create", **BUG}})], "42"],
        surface="dispatcher",
    )  # fmt: skip
    assert ran == ["issue_write"] and s.first_try_correct == 1 and s.success, s.failures


def test_the_second_call_of_a_task_may_take_either_alternative():
    for tool, args in (("update_issue", CLOSE_7), ("issue_write", {"method": "update", **CLOSE_7})):
        _, s = episode("read-then-close", [[("get_issue", {"issue_number": 7})], [(tool, args)], "Closed."])
        assert (s.first_try_correct, s.success) == (2, True), (tool, s.failures)
        assert [ft.operation for ft in s.first_tries] == ["get_issue", tool]


def test_a_wrong_argument_through_an_alternative_fails_first_try_and_success():
    _, s = episode("create-bug", [[("issue_write", {"method": "update", **BUG})], "Done."])
    assert s.first_try_correct == 0 and not s.success
    assert s.first_tries[0].operation == "issue_write" and s.first_tries[0].error_type == "wrong_value"
    assert any("expected call create_issue or issue_write not matched" in f for f in s.failures), s.failures


def test_calling_no_alternative_is_a_wrong_selection_and_a_missing_call():
    _, s = episode("create-bug", [[("get_issue", {"issue_number": 42})], "Done."])
    assert s.selection_correct is False and not s.success
    assert s.first_tries[0].error_type == "missing_call"
    assert "first try: none of create_issue, issue_write was called" in s.failures
    assert "selection: expected create_issue or issue_write first, got get_issue" in s.failures


def test_a_later_right_call_still_succeeds_but_the_first_try_stays_wrong():
    wrong, right = {"method": "create", "title": "Login"}, {"method": "create", **BUG}
    _, s = episode("create-bug", [[("issue_write", wrong)], [("issue_write", right)], "42"])
    assert s.first_try_correct == 0 and s.success, s.failures


class Picker:
    """The oracle, except for the calls given here by first user message: those it makes instead, in order."""

    name = "scripted-oracle"

    def __init__(self, suite: str, calls: dict[str, list[tuple[str, dict[str, Any]]]]) -> None:
        self.oracle = OracleClient(suite)
        self.calls = calls

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        done = sum(len(m.get("tool_calls") or []) for m in request.messages if m["role"] == "assistant")
        mine = self.calls.get(first, [])
        if done < len(mine):
            return with_usage(call_turn(mine[done]), request)
        return self.oracle.complete(request)


def run_suite(root: Path, client: Any, folder: Path = FOLDER) -> Path:
    """Every task of a suite (default: the fixture suite) on the ``full`` surface into a run folder under ``root``."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    model = {**ORACLE_MODEL, "script_suite": str(folder)}
    cell = resolve_cell(CellSpec(str(folder), "full", "oracle", split="all"), None, model)
    store = RunStore(root / "run", commit_interval_s=0.5)
    store.prepare()
    store.write_run_info({"cells": [cell.provenance()]})  # what `surfbench run` records: reports read it
    run_cell(cell, ModelPool(None), store, "run", client=client)
    return store.root


@pytest.fixture
def suites_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report finds a run's suite by its name: the fixture suite's folder is searched first."""
    monkeypatch.setenv("SURFBENCH_SUITES", str(FIXTURES))


def test_the_oracle_replays_the_first_alternative_and_the_report_counts_it(tmp_path: Path, suites_here: None):
    run = run_suite(tmp_path, OracleClient(str(FOLDER)))
    data = collect([run])
    picks = {(p.task_id, p.index): p for p in data.picks}
    assert set(picks) == {("create-bug", 0), ("read-then-close", 1)}  # only the one_of calls
    assert picks[("create-bug", 0)].picks == {CELL: {"create_issue": 1}}
    assert picks[("read-then-close", 1)].picks == {CELL: {"update_issue": 1}}
    text = markdown(data, {})
    assert "## Alternatives picked (`one_of`)" in text
    rows = [line for line in text.splitlines() if line.startswith("| alternatives | create-bug |")]
    assert rows == ["| alternatives | create-bug | create_issue or issue_write | create_issue 1, issue_write 0 |"]


def test_the_report_counts_the_alternative_a_model_picks(tmp_path: Path, suites_here: None):
    first = {t.id: t.turns[0] for t in SUITE.tasks}
    client = Picker(
        str(FOLDER),
        {
            first["create-bug"]: [("issue_write", {"method": "create", **BUG})],
            first["read-then-close"]: [("get_issue", {"issue_number": 7}), ("get_issue", {"issue_number": 8})],
        },
    )
    data = collect([run_suite(tmp_path, client)])
    picks = {p.task_id: p.picks[CELL] for p in data.picks}
    assert picks == {"create-bug": {"issue_write": 1}, "read-then-close": {"none": 1}}
    rows = [line for line in markdown(data, {}).splitlines() if line.startswith("| alternatives |")]
    assert any("create_issue 0, issue_write 1" in r for r in rows), rows
    assert any("update_issue 0, issue_write 0, none 1" in r for r in rows), rows


def test_a_suite_without_one_of_has_no_alternatives_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    plain = tmp_path / "suites" / "plain"
    shutil.copytree(FOLDER, plain)
    tasks = (plain / "tasks.yaml").read_text()
    (plain / "tasks.yaml").write_text(tasks[tasks.index("- id: read-issue") :])
    (plain / "suite.yaml").write_text((plain / "suite.yaml").read_text().replace("name: alternatives", "name: plain"))
    monkeypatch.setenv("SURFBENCH_SUITES", str(plain.parent))
    data = collect([run_suite(tmp_path, OracleClient(str(plain)), plain)])
    assert len(data.cells) == 1 and data.picks == []
    assert "Alternatives picked" not in markdown(data, {})


def test_surfbench_check_replays_every_task_of_a_suite_with_one_of():
    assert check_suite(str(FOLDER)) == (4, 4, [])


def _with_expected(tmp_path: Path, expected_yaml: str) -> Path:
    """A copy of the fixture suite whose create-bug task expects ``expected_yaml`` (one YAML flow value)."""
    folder = tmp_path / "alternatives"
    shutil.copytree(FOLDER, folder)
    text = (folder / "tasks.yaml").read_text()
    start = text.index("  expected:\n    - one_of:\n        - {op: create_issue")
    end = text.index("  canned: {create_issue")
    (folder / "tasks.yaml").write_text(text[:start] + f"  expected: {expected_yaml}\n" + text[end:])
    return folder


C, W = "{op: create_issue, args: {title: x}}", "{op: issue_write, args: {method: create, title: x}}"
ALT = "expected[0].one_of[1]"
BAD = [
    (f"[{{one_of: [{C}, {{op: issue_writ, args: {{}}}}]}}]", f"{ALT}: op 'issue_writ' not in the catalog (did"),
    (f"[{{one_of: [{C}, {{op: issue_write, args: {{metod: x}}}}]}}]", f"{ALT}.args: issue_write has no argument 'm"),
    (f"[{{one_of: [{C}, {{op: issue_write, argz: {{}}}}]}}]", f"{ALT}: unknown key 'argz' (did you mean 'args'?)"),
    (f"[{{one_of: [{C}]}}]", "expected[0]: one_of must be a list of two or more alternatives"),
    ("[{one_of: create_issue}]", "expected[0]: one_of must be a list of two or more alternatives"),
    (f"[{{one_of: [{C}, {W}], op: create_issue}}]", "expected[0]: has both 'one_of' and op/args"),
    (f"[{{one_of: [{C}, {W}], turns: 0}}]", "expected[0]: unknown key 'turns' (did you mean 'turn'?)"),
    (f"[{{one_of: [{C}, {{op: issue_write, turn: 0}}]}}]", f"{ALT}: 'turn' belongs to the expected call"),
    (f"[{{one_of: [{C}, 42]}}]", f"{ALT}: an alternative needs an 'op'"),
    (f"[{{one_of: [{C}, [issue_write]]}}]", f"{ALT}: a sequence alternative needs a list of two or more calls"),
    (f"[{{one_of: [{C}, {{op: issue_write, args: {{title: {{$regx: a}}}}}}]}}]", f"{ALT}.args.title: unknown matcher"),
    (f"[{{one_of: [{C}, {W}], turn: 3}}]", "expected[0]: turn must be a user turn index from 0 to 0"),
]  # fmt: skip


@pytest.mark.parametrize(("expected", "message"), BAD, ids=[m.split(": ", 1)[-1][:40] for _, m in BAD])
def test_a_bad_one_of_is_one_line_naming_the_file_the_task_and_the_field(tmp_path: Path, expected: str, message: str):
    folder = _with_expected(tmp_path, expected)
    with pytest.raises(SuiteError) as info:
        load_suite(str(folder))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{folder / 'tasks.yaml'}: task 'create-bug': "), text
    assert message in text, text


def test_a_good_one_of_written_inline_loads(tmp_path: Path):
    suite = load_suite(str(_with_expected(tmp_path, f"[{{one_of: [{C}, {W}], turn: 0}}]")))
    call = next(t for t in suite.tasks if t.id == "create-bug").expected[0]
    assert call.ops == ("create_issue", "issue_write") and call.turn == 0
    assert (call.op, call.args) == ("create_issue", {"title": "x"})  # the oracle's: the first alternative


def test_a_plain_call_hashes_as_before_and_an_edited_alternative_changes_the_hash(tmp_path: Path):
    """Tasks written without one_of keep the content hash their recorded episodes carry; a task whose
    alternative is edited gets a new hash, so a re-run never reuses its old episodes."""
    from surfbench.bench.store.identity import _plain, task_hash

    assert set(_plain(ExpectedCall("get_issue", {"issue_number": 3}))) == {"op", "args", "oracle_args", "turn"}

    def create_bug(folder: Path) -> Task:
        return next(t for t in load_suite(str(folder)).tasks if t.id == "create-bug")

    as_shipped = create_bug(FOLDER)
    edited = create_bug(_with_expected(tmp_path, f"[{{one_of: [{C}, {W}]}}]"))
    other = create_bug(_with_expected(tmp_path / "b", f"[{{one_of: [{C}, {W.replace('title: x', 'title: y')}]}}]"))
    assert len({task_hash(as_shipped), task_hash(edited), task_hash(other)}) == 3
