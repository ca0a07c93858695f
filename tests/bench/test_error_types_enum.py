"""Error types are the enum everywhere; a failed endpoint is known by its exception's type; no module writes
into another's objects.

A report groups by error type, so a type compared by its spelling (``== "not_exposed"``) drifts silently
when the taxonomy changes; an endpoint failure recognised by its message prefix is missed by any other
exception of the endpoint (and a message that happens to start with ``ModelError`` is run again for
nothing); a cache written into another module's object (``cell.__dict__["_fit_cache"]``) is state no
reader of that class knows of.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pandas as pd

from surfbench.bench.base.taxonomy import CORE
from surfbench.bench.contracts.records import EpisodeTrace
from surfbench.bench.models.client import ContextOverflow, ModelError, RateLimited
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.models.server import ServerError
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.fit import first_request_fit
from surfbench.bench.run.play import endpoint_failure
from surfbench.bench.run.runner import Cell, CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from tests.conftest import ROOT

SCANNED = ("bench", "surfaces", "tasks", "scripts")
SPELLED_ELSEWHERE = {("bench/base/validation.py", "type_error"), ("bench/base/validation.py", "missing_argument")}
"""Literals that are not error types: an ArgIssue's ``kind`` is the validator's own vocabulary, sharing two names."""
ENDPOINT_EXCEPTIONS = ("ModelError", "ServerError", "RateLimited", "EndpointRefused", "ContextOverflow")
MODEL = "qwen2.5-coder-0.5b-instruct"
SEED_DATA = ROOT / "tasks" / "workspace" / "files"  # a project with bugs on purpose, not package code


def _sources() -> list[Path]:
    return [p for folder in SCANNED for p in sorted((ROOT / folder).rglob("*.py")) if SEED_DATA not in p.parents]


def _error_type_like(node: ast.AST) -> bool:
    """An expression holding an error type: ``x.error_type``, ``error_types``, ``row["error_type"]``, ``.get(...)``."""

    def named(text: str) -> bool:
        return "error_type" in text or "error_kind" in text or text == "stopped"

    if isinstance(node, ast.Name):
        return named(node.id)
    if isinstance(node, ast.Attribute):
        return named(node.attr)
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and named(key.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key = node.args[0]
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and named(key.value)
    return False


def _literals(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def violations(source: str, where: str) -> list[str]:
    """Where ``source`` compares an error type with a literal, spells a core type, or names an exception in a string."""
    tree = ast.parse(source)
    bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings, attribute docs
    for n in ast.walk(tree):  # a package's __all__ names its exceptions
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
            bare.update(id(c) for c in ast.walk(n.value))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for left, right in zip(sides, sides[1:], strict=False):
                for a, b in ((left, right), (right, left)):
                    if _error_type_like(a) and _literals(b):
                        out.append(f"{where}:{node.lineno}: error type compared with {_literals(b)}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in bare:
            if node.value in CORE and (where, node.value) not in SPELLED_ELSEWHERE:
                out.append(f"{where}:{node.lineno}: core error type {node.value!r} spelled as a string")
            if node.value.startswith(ENDPOINT_EXCEPTIONS):
                out.append(f"{where}:{node.lineno}: an exception recognised by its name {node.value!r}")
    return out


def test_no_module_compares_or_spells_an_error_type_as_a_string():
    planted = (
        'if call.error_type == "not_loaded": pass\n'
        'x = row["error_type"] in ("code_syntax_error", "other")\n'
        'y = str(trace.error).startswith(("ModelError", "ServerError"))\n'
        'BACKEND_ERROR = "backend_error"\n'
        "z = call.error_type == ErrorType.NOT_LOADED or call.error_type in CODE_ERRORS\n"
        '"""A docstring may say not_exposed."""\n'
    )
    assert sorted(v.split(": ", 1)[0] for v in violations(planted, "planted")) == [
        "planted:1", "planted:1", "planted:2", "planted:3", "planted:3", "planted:4",
    ]  # fmt: skip
    found = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel != "bench/base/taxonomy.py":
            found += violations(path.read_text(encoding="utf-8"), rel)
    assert not found, "use ErrorType (bench/base/taxonomy.py) or the surface's declared constant:\n" + "\n".join(found)


class Failing:
    """The oracle, except that its first call raises ``exc``."""

    def __init__(self, exc: Exception) -> None:
        self.oracle = OracleClient("notes_mcp")
        self.exc: Exception | None = exc

    def complete(self, request: ModelRequest) -> ModelTurn:
        exc, self.exc = self.exc, None
        if exc is not None:
            raise exc
        return self.oracle.complete(request)


def _episode(tmp_path: Path, exc: Exception) -> dict[str, object]:
    cell = resolve_cell(CellSpec("notes_mcp", "full", MODEL, tasks=("read-note",), episode_retries=1))
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, None, store, "run", client=Failing(exc))  # type: ignore[arg-type]
    (episode,) = load_runs([tmp_path / "run"]).to_dict("records")
    return episode


class GatewayDown(ModelError):
    """An endpoint failure of a kind the harness has no name for (its message names no class)."""


class ModelErrorBudget(KeyError):
    """A harness bug whose class name merely starts like the endpoint's."""


def test_an_endpoint_failure_runs_again_because_of_its_type_not_its_message(tmp_path: Path):
    episode = _episode(tmp_path / "a", GatewayDown("502 from the proxy"))
    assert episode["attempts"] == 2 and episode["success"] and pd.isna(episode["error"])

    episode = _episode(tmp_path / "b", ModelErrorBudget("no budget left"))
    assert episode["attempts"] == 1 and str(episode["error"]).startswith("ModelErrorBudget")
    assert not episode["success"]


def test_the_trace_keeps_the_exception_class_and_only_that_decides():
    assert not endpoint_failure(EpisodeTrace(error="ModelError: unreachable"))  # text alone: not an endpoint failure
    assert endpoint_failure(EpisodeTrace(error="429", error_class=RateLimited))
    assert endpoint_failure(EpisodeTrace(error="server gone", error_class=ServerError))
    assert not endpoint_failure(EpisodeTrace(error="context_overflow: too long", error_class=ContextOverflow))
    assert not endpoint_failure(EpisodeTrace(error="KeyError: 'x'", error_class=KeyError))


def test_fit_keeps_its_cache_in_its_own_object_not_in_the_cells_dict():
    cell = resolve_cell(CellSpec("notes_mcp", "full", MODEL, tasks=("read-note",)))
    task = cell.tasks[0]
    first = first_request_fit(cell, task)
    assert first_request_fit(cell, task) is first, "predicted once per tool block"
    cell.episode_key(task, 0)
    cell.surface_for(task)
    declared = {f.name for f in fields(Cell)}
    assert set(vars(cell)) <= declared, f"state outside Cell's fields: {sorted(set(vars(cell)) - declared)}"
    assert cell.fits.predictions, "the predictions live in the cell's Fits"


def test_no_module_writes_into_another_objects_dict():
    found = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = node.value if isinstance(node, ast.Attribute | ast.Subscript) else None
            owner = target.value if isinstance(target, ast.Attribute) and target.attr == "__dict__" else None
            writes = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
            writes = writes or (isinstance(node, ast.Attribute) and node.attr in ("setdefault", "update", "pop"))
            if owner is not None and writes and not (isinstance(owner, ast.Name) and owner.id == "self"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "a module writes into another's object's __dict__:\n" + "\n".join(found)
