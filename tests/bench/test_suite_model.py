"""The suite format: keys from the records, a suite's own tags and checks, the format documented."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from surfbench.bench.suites import suite_model
from surfbench.bench.suites.suite import SuiteError, load_suite
from surfbench.bench.suites.suite_model import AnswerCheck, ExpectedCall, StateCheck, SuiteFile, Task, yaml_keys
from tests.conftest import ROOT

CHECKS_PY = """
def cites_note(task, trace, context):
    return True


NOT_A_FUNCTION = 3
"""


def notes_copy(tmp_path: Path, suite_extra: dict | None = None, tags: str | None = None) -> Path:
    """A copy of notes_mcp; ``suite_extra``: keys added to suite.yaml; ``tags``: read-note's tags instead."""
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", folder)
    (folder / "checks.py").write_text(CHECKS_PY)
    if suite_extra:
        data = yaml.safe_load((folder / "suite.yaml").read_text())
        (folder / "suite.yaml").write_text(yaml.safe_dump({**data, **suite_extra}))
    if tags is not None:
        text = (folder / "tasks.yaml").read_text()
        old = "- id: read-note\n  split: dev\n  tags: [single, read]\n"
        assert old in text
        (folder / "tasks.yaml").write_text(text.replace(old, f"- id: read-note\n  split: dev\n  tags: {tags}\n"))
    return folder


def load_error(folder: Path) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(str(folder))
    return str(info.value)


def test_a_tag_neither_core_nor_declared_names_the_file_the_task_and_close_tags(tmp_path: Path):
    folder = notes_copy(tmp_path, {"tags": ["pinned", "archived"]}, tags="[single, read, pined]")
    message = load_error(folder)
    assert str(folder / "tasks.yaml") in message and "read-note" in message, message
    assert "unknown tag 'pined'" in message and "did you mean 'pinned'" in message, message
    assert "archived" in message  # the declared tags are among the known ones it lists


def test_a_tag_the_suite_declares_is_accepted_and_kept_on_the_task(tmp_path: Path):
    folder = notes_copy(tmp_path, {"tags": ["pinned"]}, tags="[single, read, pinned]")
    suite = load_suite(str(folder))
    assert suite.tags == ("pinned",)
    assert next(t for t in suite.tasks if t.id == "read-note").tags == ("single", "read", "pinned")


def test_the_same_tag_without_the_declaration_is_refused(tmp_path: Path):
    message = load_error(notes_copy(tmp_path, tags="[single, read, pinned]"))
    assert "unknown tag 'pinned'" in message and "tags: [...]" in message, message


def test_declaring_a_core_tag_is_an_error_naming_suite_yaml(tmp_path: Path):
    folder = notes_copy(tmp_path, {"tags": ["pinned", "hot"]})
    message = load_error(folder)
    assert str(folder / "suite.yaml") in message and "['hot']" in message and "core tags" in message, message


def test_suite_checks_are_stored_resolved_against_the_suite_folder(tmp_path: Path, monkeypatch):
    folder = notes_copy(tmp_path, {"checks": ["checks.py:cites_note"]})
    monkeypatch.chdir(tmp_path)  # another working folder: the path still points into the suite
    suite = load_suite(str(folder))
    assert suite.checks == (f"{folder / 'checks.py'}:cites_note",)
    assert load_suite("notes_mcp").checks == ()


@pytest.mark.parametrize(
    ("checks", "named"),
    [
        (["nowhere.py:cites_note"], ["checks[0]", "nowhere.py", "no such file"]),
        (["checks.py:cites_note", "checks.py:cite_note"], ["checks[1]", "did you mean 'cites_note'"]),
        (["checks.py:NOT_A_FUNCTION"], ["checks[0]", "is not a function"]),
        (["checks.py"], ["checks[0]", "file.py:function"]),
        (["checks.py:cites_note", "checks.py:cites_note"], ["checks[1]", "listed twice"]),
        ("checks.py:cites_note", ["'checks'", "list"]),
    ],
)
def test_a_bad_suite_check_is_one_error_naming_suite_yaml(tmp_path: Path, checks, named):
    folder = notes_copy(tmp_path, {"checks": checks})
    message = load_error(folder)
    assert str(folder / "suite.yaml") in message and all(n in message for n in named), message
    assert len(message.splitlines()) == 1


def test_a_misspelt_suite_key_suggests_the_field_it_meant(tmp_path: Path):
    message = load_error(notes_copy(tmp_path, {"check": ["checks.py:cites_note"]}))
    assert "unknown key 'check'" in message and "did you mean 'checks'" in message, message


def test_every_key_of_the_format_is_documented_in_the_module_docstring():
    """docs/suites.md is written from this docstring: a field added without a line there would be missed."""
    doc = suite_model.__doc__ or ""
    for cls in (SuiteFile, Task, ExpectedCall, StateCheck, AnswerCheck):
        for key in yaml_keys(cls):
            if key in ("exists", "contains", "match", "len"):  # state checks' alternatives share one line
                assert re.search(rf"\b{key}: ", doc), key
            else:
                assert re.search(rf"^\s*(- )?{key}: ", doc, re.MULTILINE), f"{cls.__name__}.{key} undocumented"


def test_fields_the_loader_sets_are_not_keys_a_file_may_hold(tmp_path: Path):
    assert "source" not in yaml_keys(Task) and "has_equals" not in yaml_keys(StateCheck)
    folder = notes_copy(tmp_path)
    text = (folder / "tasks.yaml").read_text()
    (folder / "tasks.yaml").write_text(text.replace("- id: read-note\n", "- id: read-note\n  source: x.yaml\n", 1))
    message = load_error(folder)
    assert "read-note" in message and "unknown key 'source'" in message, message
