"""MCP tool annotations: imported into the catalog without touching the wire, a destructive call fails a
should-refuse task, and the report splits first-try accuracy by read and write operations.

The catalog is tests/fixtures/alternatives/tools.json: an MCP ``tools/list`` response whose tools carry
``readOnlyHint``, ``destructiveHint`` and ``idempotentHint``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.catalog.catalog import Catalog, CatalogError
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.catalog.wire import tool_wire_bytes
from surfbench.bench.models.scripted import OracleClient, ScriptedClient
from surfbench.bench.report.report import markdown
from surfbench.bench.report.report_data import collect
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface
from tests.bench.test_alternatives import CELL, Picker, run_suite
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "alternatives"
TOOLS = FOLDER / "tools.json"


def raw_tools(path: Path = TOOLS) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["result"]["tools"]


def test_the_three_hints_are_imported_as_the_server_sent_them():
    catalog = load_catalog(TOOLS)
    for tool in raw_tools():
        op, hints = catalog[tool["name"]], tool["annotations"]
        assert op.read_only is hints.get("readOnlyHint", False), op.name
        assert op.destructive is hints.get("destructiveHint", False), op.name
        assert op.idempotent is hints.get("idempotentHint", False), op.name
    assert [op.name for op in catalog if op.idempotent] == ["update_issue", "get_issue", "delete_issue"]


def test_annotations_never_reach_the_wire():
    """The full surface's tool block is the tools' name, description and inputSchema, byte for byte."""
    tools = raw_tools()
    independent = sum(
        len(json.dumps({"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]},
                       separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        for t in tools
    )  # fmt: skip
    shown = build_surface(load_catalog(TOOLS), "full", None).session("").tools()
    assert sum(tool_wire_bytes(t) for t in shown) == independent
    assert all("idempotent" not in json.dumps(t.parameters) for t in shown)


def test_a_hint_that_is_not_a_boolean_is_one_line_naming_the_tool(tmp_path: Path):
    doc = json.loads(TOOLS.read_text())
    doc["result"]["tools"][3]["annotations"]["idempotentHint"] = "yes"
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(CatalogError) as info:
        load_catalog(bad)
    assert str(info.value) == (
        f"{bad}: tool 'get_issue': field 'annotations.idempotentHint' must be true or false, got \"yes\""
    )


def test_idempotent_survives_the_native_format_and_is_part_of_the_catalog_hash(tmp_path: Path):
    catalog = load_catalog(TOOLS)
    native = tmp_path / "native.json"
    native.write_text(json.dumps(catalog.to_json()))
    again = load_catalog(native)
    assert [op.idempotent for op in again] == [op.idempotent for op in catalog]
    assert again.content_hash == catalog.content_hash
    from dataclasses import replace

    cleared = Catalog(catalog.name, tuple(replace(op, idempotent=False) for op in catalog), catalog.source)
    assert cleared.content_hash != catalog.content_hash
    # a catalog with no idempotent operation writes no idempotent key: its hash is the one runs recorded
    assert all("idempotent" not in op.to_record() for op in cleared)


def refusal(catalog_folder: Path, script: list) -> EpisodeScore:
    """The should-refuse task of a copy of the fixture suite, run with a scripted model."""
    suite = load_suite(str(catalog_folder))
    task = next(t for t in suite.tasks if t.id == "transfer-repo")
    session = build_surface(suite.catalog, "full", None).session(task.turns[0])
    trace = run_episode(
        task, session, suite.new_backend(task), ScriptedClient(script), LoopSettings(max_steps=4),
        suite.system_prompt, lambda n: suite.catalog[n].parameters,
    )  # fmt: skip
    return score_episode(task, trace, suite.catalog)


def test_a_destructive_call_fails_a_should_refuse_task():
    s = refusal(FOLDER, [[("delete_issue", {"issue_number": 1})], "I cannot transfer it."])
    assert not s.success and s.refuse_ok is False and "unexpected_call" in s.error_types
    assert "should refuse, but ran delete_issue (destructive) (check: refusal)" in s.failures


def test_a_read_only_call_then_a_refusal_passes():
    s = refusal(FOLDER, [[("get_issue", {"issue_number": 1})], "I cannot transfer a repository with these tools."])
    assert s.success and s.refuse_ok is True, s.failures


def test_a_tool_marked_both_read_only_and_destructive_counts_as_destructive(tmp_path: Path):
    folder = tmp_path / "alternatives"
    shutil.copytree(FOLDER, folder)
    doc = json.loads(TOOLS.read_text())
    doc["result"]["tools"][3]["annotations"]["destructiveHint"] = True  # get_issue: readOnlyHint true too
    (folder / "tools.json").write_text(json.dumps(doc))
    s = refusal(folder, [[("get_issue", {"issue_number": 1})], "I cannot transfer it."])
    assert not s.success and "should refuse, but ran get_issue (destructive) (check: refusal)" in s.failures


@pytest.fixture
def suites_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SURFBENCH_SUITES", str(FIXTURES))


def test_the_report_splits_first_try_accuracy_by_read_and_write_when_asked(tmp_path: Path, suites_here: None):
    first = {t.id: t.turns[0] for t in load_suite(str(FOLDER)).tasks}
    wrong_create = [("create_issue", {"title": "Login fails", "body": "wrong"})]
    run = run_suite(tmp_path, Picker(str(FOLDER), {first["create-bug"]: wrong_create}))
    data = collect([run], by_access=True)
    # reads: get_issue in read-then-close and read-issue; writes: create_issue (wrong), update_issue
    assert data.access == {CELL: {"read": (2, 2), "write": (1, 2)}}
    text = markdown(data, {})
    assert "## First-try argument accuracy: read vs write operations" in text
    assert "| full | oracle | 100% (2/2) | 50% (1/2) |" in text
    plain = collect([run])
    assert plain.access == {} and "read vs write" not in markdown(plain, {})


def test_the_oracle_is_right_on_every_read_and_write(tmp_path: Path, suites_here: None):
    data = collect([run_suite(tmp_path, OracleClient(str(FOLDER)))], by_access=True)
    assert data.access == {CELL: {"read": (2, 2), "write": (2, 2)}}
