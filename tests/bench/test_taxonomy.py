"""One error taxonomy: core enum + what suites and surfaces declare; docs/metrics.md lists exactly the core."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from surfbench.bench.base.taxonomy import CORE, DESCRIPTIONS, ErrorType, UndeclaredErrorType
from surfbench.bench.models.scripted import ScriptedClient, call_turn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore
from surfbench.bench.suites.suite import SuiteError, load_suite
from tests.conftest import ROOT


def test_the_docs_list_exactly_the_core_error_types_with_their_meaning():
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    block = text.split("<!-- error-types -->")[1].split("<!-- /error-types -->")[0]
    listed = dict(re.findall(r"^\| `([a-z_]+)` \| (.+?) \|$", block, flags=re.M))
    assert set(listed) == CORE
    assert all(listed[e.value] == DESCRIPTIONS[e] for e in ErrorType)


def test_every_shipped_suite_declares_only_new_types():
    for name in ("forge", "notes_mcp", "workspace"):
        assert not set(load_suite(name).error_types) & CORE
    assert "disk_quota_exceeded" in load_suite("workspace").error_types


def test_a_suite_hook_emitting_an_undeclared_type_is_a_harness_error(tmp_path: Path):
    suite = tmp_path / "typo"
    suite.mkdir()
    (suite / "catalog.json").write_text((ROOT / "tasks" / "notes_mcp" / "catalog.json").read_text())
    (suite / "tasks.yaml").write_text((ROOT / "tasks" / "notes_mcp" / "tasks.yaml").read_text())
    (suite / "checks.py").write_text("def classify(task, calls):\n    return ['wrong_vaule']\n")
    (suite / "suite.yaml").write_text(
        yaml.safe_dump(
            {"name": "typo", "catalog": "catalog.json", "tasks": ["tasks.yaml"], "classify": "checks.py:classify"}
        )
    )
    cell = resolve_cell(CellSpec(str(suite), "full", "qwen2.5-coder-0.5b-instruct", tasks=("read-note",)))
    store = RunStore(tmp_path / "run")
    store.prepare()
    client = ScriptedClient([call_turn(("notes_get", {"id": "n7"})), "It says: pack the tent."])
    with pytest.raises(UndeclaredErrorType, match="wrong_vaule"):
        run_cell(cell, None, store, "t", client=client)  # type: ignore[arg-type]
    declared = yaml.safe_load((suite / "suite.yaml").read_text())
    (suite / "suite.yaml").write_text(
        yaml.safe_dump({**declared, "error_types": {"wrong_vaule": "typo kept on purpose"}})
    )
    cell = resolve_cell(CellSpec(str(suite), "full", "qwen2.5-coder-0.5b-instruct", tasks=("read-note",)))
    client = ScriptedClient([call_turn(("notes_get", {"id": "n7"})), "It says: pack the tent."])
    assert run_cell(cell, None, RunStore(tmp_path / "run2"), "t", client=client)[0]["error_types"] == ["wrong_vaule"]  # type: ignore[arg-type]


def test_a_suite_may_not_redeclare_a_core_type(tmp_path: Path):
    suite = tmp_path / "clash"
    suite.mkdir()
    (suite / "catalog.json").write_text((ROOT / "tasks" / "notes_mcp" / "catalog.json").read_text())
    (suite / "tasks.yaml").write_text((ROOT / "tasks" / "notes_mcp" / "tasks.yaml").read_text())
    (suite / "suite.yaml").write_text(
        yaml.safe_dump({"catalog": "catalog.json", "tasks": ["tasks.yaml"], "error_types": {"wrong_value": "x"}})
    )
    with pytest.raises(SuiteError, match="core types already"):
        load_suite(str(suite))


def test_a_backend_tool_error_records_backend_error(tmp_path: Path):
    cell = resolve_cell(CellSpec("forge", "full", "qwen2.5-coder-0.5b-instruct", tasks=("hot-issue-get",)))
    store = RunStore(tmp_path / "run")
    store.prepare()
    client = ScriptedClient(
        [call_turn(("issue_get", {"owner": "acme", "repo": "web", "index": 99999})), "No such issue."]
    )
    (row,) = run_cell(cell, None, store, "t", client=client)  # type: ignore[arg-type]
    assert "backend_error" in row["error_types"]
