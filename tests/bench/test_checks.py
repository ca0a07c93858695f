"""Composable scoring: a suite's own checks decide success beside the built-in ones, in a fixed order."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from surfbench.bench.base.taxonomy import UndeclaredErrorType, check_declared
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.checks import BUILTIN_NAMES, SuiteCheck, load_check, suite_checks
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.suite import Suite, Task, load_suite
from surfbench.surfaces import build_surface
from tests.conftest import ROOT

CHECKS_PY = '''
from surfbench.bench.suites.checks import CheckResult


def cites_note(task, trace, context):
    """The answer names the note the episode read; not applicable when it read none."""
    reads = [c for c in context.executed if c.operation == "notes_get"]
    if not reads:
        return None
    note = reads[-1].arguments["id"]
    ok = trace.final_text is not None and note in trace.final_text
    return CheckResult("cites_note", ok, None if ok else f"the answer does not name note {note}", ("uncited_note",))


def says_thanks(task, trace, context):
    return "thank" in (trace.final_text or "").lower() or "the answer does not thank the user"


def never_applies(task, trace, context):
    return None


def always_holds(task, trace, context):
    return True


def returns_a_number(task, trace, context):
    return 3


def raises(task, trace, context):
    raise KeyError("oops")


def state(task, trace, context):
    return True
'''
SUITE_CHECKS = ["checks.py:cites_note", "checks.py:says_thanks"]
ERROR_TYPES = (
    "error_types:\n"
    "  uncited_note: the answer does not name the note it read\n"
    "  says_thanks: the answer does not thank the user\n"
)


@pytest.fixture
def notes(tmp_path: Path) -> tuple[Suite, tuple[SuiteCheck, ...]]:
    """notes_mcp copied to tmp_path, with a checks.py, two of its checks and their error types in suite.yaml."""
    folder = tmp_path / "notes_mcp"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", folder)
    (folder / "checks.py").write_text(CHECKS_PY)
    yaml = (folder / "suite.yaml").read_text() + ERROR_TYPES + f"checks: [{', '.join(SUITE_CHECKS)}]\n"
    (folder / "suite.yaml").write_text(yaml)
    suite = load_suite(str(folder))
    return suite, suite_checks(suite)


def named(checks: tuple[SuiteCheck, ...], *names: str) -> tuple[SuiteCheck, ...]:
    folder = Path(checks[0].spec.rpartition(":")[0]).parent
    return tuple(load_check(f"{folder / 'checks.py'}:{n}", "test") for n in names)


def episode(suite: Suite, task: Task | str, script: list, checks: tuple[SuiteCheck, ...] = ()) -> EpisodeScore:
    task = task if isinstance(task, Task) else next(t for t in suite.tasks if t.id == task)
    catalog = suite.catalog_for(task)
    trace = run_episode(
        task, build_surface(catalog, "full").session(task.turns[0]), suite.new_backend(task), ScriptedClient(script),
        LoopSettings(max_steps=3), suite.system_prompt, lambda n: catalog[n].parameters,
    )  # fmt: skip
    return score_episode(task, trace, catalog, suite.classifier, checks)


def check_of(line: str) -> str:
    return line.rpartition("(check: ")[2].rstrip(")")


def test_an_episode_fails_only_because_of_the_suites_own_check(notes):
    suite, checks = notes
    read = [("notes_get", {"id": "n7"})]
    without = episode(suite, "read-note", [read, "Pack the tent. Thanks!"])
    assert without.success and without.error_types == ()  # the built-in checks all hold

    cites = checks[:1]
    s = episode(suite, "read-note", [read, "Pack the tent. Thanks!"], cites)
    assert not s.success and (s.calls_ok, s.answer_ok) == (True, True)
    assert s.error_types == ("uncited_note",)
    assert s.failures == ("the answer does not name note n7 (check: cites_note)",)
    assert [(r.name, r.passed) for r in s.checks] == [
        ("calls", True), ("turn_state", None), ("state", None), ("answer", True), ("refusal", None),
        ("cites_note", False),
    ]  # fmt: skip
    check_declared(s.error_types, frozenset(suite.error_types), "notes")  # declared in suite.yaml: accepted
    with pytest.raises(UndeclaredErrorType, match="uncited_note"):
        check_declared(s.error_types, frozenset(), "notes")  # the runner stops a suite that did not declare it

    assert episode(suite, "read-note", [read, "Note n7: pack the tent."], cites).success


def test_a_check_returning_none_does_not_apply(notes):
    suite, checks = notes
    never, always = named(checks, "never_applies", "always_holds")
    search = [("notes_search", {"query": "groceries"})]
    s = episode(suite, "search-groceries", [search, "Sunday."], checks[:1] + (never,))
    assert s.success and s.failures == ()  # cites_note: no note was read; never_applies: never
    assert [(r.name, r.passed) for r in s.checks[-2:]] == [("cites_note", None), ("never_applies", None)]

    bare = replace(next(t for t in suite.tasks if t.id == "read-note"), expected=(), answer={})  # no built-in applies
    loop = [[("notes_get", {"id": "n7"})]] * 5  # never answers in text
    assert not episode(suite, bare, loop, (never,)).success  # nothing applies: a final answer is needed
    assert episode(suite, bare, loop, (always,)).success  # a check that holds is enough


def test_failures_come_in_a_fixed_order(notes):
    suite, checks = notes
    cites, thanks = checks
    script = [[("notes_get", {"id": "n8"})], [("notes_get", {"id": "n7"})], "Nothing to report."]
    s = episode(suite, "read-note", script, (cites, thanks))
    assert s.failures[0].startswith("first try: notes_get")  # measurements first, then checks
    assert [check_of(f) for f in s.failures[1:]] == ["answer", "cites_note", "says_thanks"]
    assert s.error_types == ("wrong_value", "answer_mismatch", "uncited_note", "says_thanks")
    assert s.failures[-1] == "the answer does not thank the user (check: says_thanks)"
    assert episode(suite, "read-note", script, (cites, thanks)) == s  # the same episode scores the same

    swapped = episode(suite, "read-note", script, (thanks, cites))  # suite checks: in suite.yaml's order
    assert [check_of(f) for f in swapped.failures[1:]] == ["answer", "says_thanks", "cites_note"]
    assert swapped.error_types == ("wrong_value", "answer_mismatch", "says_thanks", "uncited_note")


def test_a_broken_suite_check_is_an_error_naming_it(notes):
    suite, checks = notes
    number, boom = named(checks, "returns_a_number", "raises")
    with pytest.raises(SuiteError, match="returns_a_number returned int"):
        episode(suite, "read-note", ["ok"], (number,))
    with pytest.raises(SuiteError, match="raises on task 'read-note' raised KeyError"):
        episode(suite, "read-note", ["ok"], (boom,))
    assert "state" in BUILTIN_NAMES
    with pytest.raises(SuiteError, match="built-in check"):
        named(checks, "state")
    with pytest.raises(SuiteError, match="has no attribute 'missing'"):
        named(checks, "missing")
