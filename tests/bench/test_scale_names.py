"""Results under the catalog's own names: an importer renames ``a/b`` (no provider takes ``/``) to ``a__b``;
the run records the map, the results tables keep ``a__b``, and the report and the gate show ``a/b``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surfbench.bench.catalog.provider_limits import recorded_originals

API = {
    "openapi": "3.0.0",
    "info": {"title": "tiny", "version": "1"},
    "paths": {
        "/a/{id}": {
            "get": {
                "operationId": "a/b",
                "summary": "Get an a by its id.",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}],
            }
        },
        "/c": {"get": {"operationId": "c", "summary": "List the cs."}},
    },
}
SUITE = """name: slashy
description: Two operations, one named a/b by its OpenAPI description.
catalog: api.json
backend: none
max_steps: 4
tasks: [tasks.yaml]
"""
TASKS = """- id: get-a
  split: dev
  turns: ["Get a number 7."]
  expected: [{op: a__b, args: {id: "7"}}]
  canned: {a__b: {id: "7", name: seven}}
- id: list-c
  split: dev
  turns: ["List the cs."]
  expected: [{op: c, args: {}}]
  canned: {c: {items: []}}
"""


def run_slashy(tmp_path: Path, surfaces: tuple[str, ...] = ("full",)) -> tuple[Path, Path]:
    """The tiny suite run by the scripted oracle on ``surfaces``; (run folder, suites folder)."""
    from surfbench.bench.authoring.scaffold import ORACLE_MODEL
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    folder = tmp_path / "suites" / "slashy"
    folder.mkdir(parents=True)
    (folder / "api.json").write_text(json.dumps(API))
    (folder / "suite.yaml").write_text(SUITE)
    (folder / "tasks.yaml").write_text(TASKS)
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cells = []
    resolved = []
    for surface in surfaces:
        cell = resolve_cell(CellSpec(str(folder), surface, "oracle", split="all"), None,
                            {**ORACLE_MODEL, "script_suite": str(folder)})  # fmt: skip
        resolved.append(cell)
        cells.append({"suite": cell.suite.name, **cell.provenance()})
    store.write_run_info({"cells": cells})
    for cell in resolved:
        run_cell(cell, ModelPool(None), store, "run", client=OracleClient(str(folder)))
    return store.root, folder.parent


def test_report_shows_the_original_name_and_the_store_keeps_the_valid_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from surfbench.bench.report.report import markdown
    from surfbench.bench.report.report_data import collect, per_op_table
    from surfbench.bench.store.results import load_runs

    run, suites = run_slashy(tmp_path)
    monkeypatch.setenv("SURFBENCH_SUITES", str(suites))
    info = json.loads((run / "run.json").read_text())
    assert info["cells"][0]["name_map"] == {"a/b": "a__b"}
    assert recorded_originals(info["cells"]) == {"a__b": "a/b"}

    frame = load_runs([run])
    tries = [t["op"] for raw in frame["first_tries"] for t in json.loads(raw)]
    assert sorted(tries) == ["a__b", "c"]  # the store: the name the model saw and called

    data = collect([run])
    _, rows = per_op_table(data)
    assert sorted(r[0] for r in rows) == ["a/b", "c"]
    assert next(r for r in rows if r[0] == "a/b")[2:] == ["1/1"]
    text = markdown(data, {})
    assert "| a/b |" in text and "a__b" not in text


def test_a_run_without_a_map_shows_names_as_they_are():
    assert recorded_originals([{"name_map": {}}, {"surface": "full"}]) == {}


def test_gate_names_the_largest_help_payload_by_its_original_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from surfbench.bench.report.gate import format_gate, judge

    run, suites = run_slashy(tmp_path, ("full", "dispatcher"))
    monkeypatch.setenv("SURFBENCH_SUITES", str(suites))
    criteria = tmp_path / "gate.yaml"
    criteria.write_text(
        "name: names\nbaseline: full\ncandidates: [dispatcher]\n"
        "criteria:\n  - {kind: help_bytes_max, value: 1, on_fail: revise}\n"
    )
    text = format_gate(judge(criteria, [run]))
    assert "(a/b)" in text and "a__b" not in text, text
