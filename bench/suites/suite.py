"""Suites: finding them by name and loading them (the format and its records: :mod:`bench.suites.suite_model`).

A suite is a folder with a ``suite.yaml``, found by name through the plugin registry (bench.contracts.plugins): in
``SURFBENCH_SUITES``, then in installed packages' ``surfbench.suites`` entry points, then in the shipped
``tasks/``; or given as a folder path. Loading checks every file and hook before anything runs: a problem
is one SuiteError naming the file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.secrets import register_text
from surfbench.bench.base.validation import closest, parse_problem
from surfbench.bench.catalog.catalog import Catalog, CatalogError
from surfbench.bench.catalog.importers.common import exists
from surfbench.bench.contracts import plugins
from surfbench.bench.suites.checks import load_check
from surfbench.bench.suites.fields import SuiteError, read_yaml
from surfbench.bench.suites.format_checks import check_against_catalog, steps_per, suite_file, task_from
from surfbench.bench.suites.policy import make_policy
from surfbench.bench.suites.suite_model import (
    ANSWER_KEYS,
    CALL_KEYS,
    CORE_TAGS,
    DEFAULT_MAX_STEPS,
    DEFAULT_SYSTEM,
    SPLITS,
    STATE_KEYS,
    SUITE_KEYS,
    TASK_KEYS,
    Classifier,
    ExpectedCall,
    StateCheck,
    Suite,
    SuiteFile,
    Task,
    load_hook,
)

if TYPE_CHECKING:
    from surfbench.bench.mcp.suites import McpCatalogSpec


class _SuiteFields(TypedDict, total=False):
    """A :class:`Suite`'s fields, as suite.yaml (:func:`_from_file`) and its tasks or loader give them."""

    name: str
    folder: Path
    catalog_spec: str
    catalog_format: str | None
    backend_spec: str | None
    system_prompt: str
    max_steps: int
    tasks: list[Task]
    description: str
    classify_spec: str | None
    steps_per: str
    preset_catalog: Catalog | None
    backend_options: dict[str, object]
    error_types: dict[str, str]
    tags: tuple[str, ...]
    checks: tuple[str, ...]
    mcp: McpCatalogSpec | None
    policy: dict[str, object]
    passthrough: tuple[str, ...] | None


TAGS = CORE_TAGS
"""The core task tags (a suite may declare more in suite.yaml)."""

# the records live in bench.suites.suite_model, SuiteError in bench.suites.fields; importers of this module find them
__all__ = [
    "ANSWER_KEYS", "CALL_KEYS", "DEFAULT_SYSTEM", "SPLITS", "STATE_KEYS", "SUITE_KEYS", "TAGS", "TASK_KEYS",
    "Classifier", "ExpectedCall", "StateCheck", "Suite", "SuiteError", "Task", "load_suite", "load_tasks",
    "suite_folders", "suite_names", "suites_roots",
]  # fmt: skip


def suites_roots() -> list[Path]:
    """Folders searched for suites by name: ``SURFBENCH_SUITES`` (``:``-separated), then the shipped ``tasks/``."""
    return [*plugins.user_suite_roots(), plugins.SHIPPED_TASKS]


def suite_folders() -> dict[str, Path]:
    """Every suite by name (bench.contracts.plugins): ``SURFBENCH_SUITES`` first, then entry points, then ``tasks/``."""
    found: dict[str, Path] = {}
    for name in plugins.names("suites"):
        try:
            found[name] = plugins.lookup("suites", name)
        except plugins.UnknownPlugin:  # an entry point whose package has no suite.yaml: not a suite
            continue
    return found


def suite_names() -> list[str]:
    """The names of every suite found (see suite_folders), sorted."""
    return sorted(suite_folders())


def _resolve(folder: Path, spec: str) -> str:
    """Paths in suite.yaml are relative to the suite folder (``file.py:Class`` included)."""
    head, sep, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    candidate = folder / head
    if exists(candidate):
        return f"{candidate}{sep}{attr}"
    return spec


def _spec(value: str | None, folder: Path, path: Path, role: str) -> str | None:
    """A ``file.py:attr`` hook of suite.yaml (classify, backend, checks), resolved against the suite folder."""
    if not value:
        return None
    spec = _resolve(folder, value)
    if ":" not in spec:
        raise SuiteError(f"{path}: {role} must be 'file.py:name', got {value!r}")
    return spec


def _check_spec(value: str, folder: Path, path: Path, i: int) -> str:
    """A suite check: a registered name as it is (bench.contracts.plugins finds it), ``file.py:function`` resolved."""
    return value if value.isidentifier() else str(_spec(value, folder, path, f"checks[{i}]"))


def _locate(name_or_path: str) -> tuple[Path, str | None]:
    """The suite's folder, and the variant asked for (``bfcl:simple_python``), if any."""
    variant: str | None = None
    if ":" in name_or_path and not Path(name_or_path).exists():
        name_or_path, _, variant = name_or_path.partition(":")
    folder = Path(name_or_path)
    if not (folder / "suite.yaml").is_file():
        try:
            folder = plugins.lookup("suites", name_or_path)
        except plugins.UnknownPlugin as exc:  # unknown suite 'forg'; did you mean forge? (known: ...)
            raise SuiteError(f"{exc}; {searched(folder)}") from None
    return folder, variant


def searched(folder: Path) -> str:
    """Where a suite name was looked for, and how to make a suite folder found (the end of a not-found error)."""
    env = plugins.SUITES_ENV
    roots = plugins.user_suite_roots()
    given = f"{env}={os.pathsep.join(map(str, roots))}" if roots else f"{env} (not set)"
    return (
        f"searched: {given}, installed packages' surfbench.suites entry points, {plugins.SHIPPED_TASKS}, "
        f"and {folder / 'suite.yaml'} (relative to {Path.cwd()}); for a suite folder elsewhere, give its path "
        f"(suite=path/to/{folder.name}) or add its parent folder to {env} (export {env}=path/to)"
    )


def load_suite(name_or_path: str) -> Suite:
    """A suite by name (``forge``; ``bfcl:simple_python`` for a loader suite's variant) or folder path."""
    folder, variant = _locate(name_or_path)
    path = folder / "suite.yaml"
    spec = suite_file(read_yaml(path), path)
    parts = _generated(spec, folder, path, variant) if spec.loader else _written(spec, folder, path, variant)
    fields: _SuiteFields = {**_from_file(spec, folder, path), **parts}
    suite = Suite(**fields)
    # a loader's tasks are another benchmark's data, imported as it is: their argument names are not checked
    _check_loaded(suite, path, args=not spec.loader)
    suite.backend_settings()  # options the backend does not take: an error at load, naming them
    for task in suite.tasks:  # before any model call: a model may echo a turn's URL password alone first
        register_text("\n".join(task.turns))
    return suite


def _from_file(spec: SuiteFile, folder: Path, path: Path) -> _SuiteFields:
    """The Suite's fields as suite.yaml gives them (defaults filled in, hooks resolved)."""
    return {
        "name": spec.name or folder.name,
        "folder": folder,
        "catalog_spec": _resolve(folder, spec.catalog) if spec.catalog else _mcp_source(spec, folder, path),
        "mcp": _mcp_spec(spec, folder, path),  # catalog: {mcp: {...}}: a live server (bench/mcp/suites.py)
        "catalog_format": spec.catalog_format,
        "backend_spec": "mcp" if spec.backend == "mcp" else _spec(spec.backend, folder, path, "backend"),
        "system_prompt": spec.system_prompt or DEFAULT_SYSTEM,
        "max_steps": spec.max_steps or DEFAULT_MAX_STEPS,
        "description": spec.description,
        "classify_spec": _spec(spec.classify, folder, path, "classify"),
        "steps_per": spec.steps_per,
        "backend_options": spec.backend_options,
        "error_types": spec.error_types,
        "tags": spec.tags,
        "checks": tuple(_check_spec(c, folder, path, i) for i, c in enumerate(spec.checks)),
        "policy": spec.policy,
        "passthrough": spec.passthrough,
    }


def _mcp_spec(spec: SuiteFile, folder: Path, path: Path) -> McpCatalogSpec | None:
    """The live MCP server a suite's catalog names (None for a file or a class); SuiteError when malformed."""
    if spec.catalog_mcp is None:
        if spec.backend == "mcp":
            raise SuiteError(f"{path}: backend: mcp needs a live server: catalog: {{mcp: {{command: ..., args: []}}}}")
        return None
    from surfbench.bench.mcp.suites import resolve

    try:
        return resolve(spec.catalog_mcp, folder, str(path))
    except ValueError as exc:
        raise SuiteError(str(exc)) from None


def _mcp_source(spec: SuiteFile, folder: Path, path: Path) -> str:
    """A live catalog's source, ``mcp:COMMAND ARGS`` (what its importer names it); "" for none."""
    found = _mcp_spec(spec, folder, path)
    return f"mcp:{found.server.label}" if found is not None else ""


def _written(spec: SuiteFile, folder: Path, path: Path, variant: str | None) -> _SuiteFields:
    """The tasks of a suite whose task files are listed in suite.yaml."""
    if variant is not None:
        raise SuiteError(f"{path}: suite {folder.name!r} has no variants (got {variant!r}); use suite={folder.name}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for rel in spec.tasks:
        for task in load_tasks(folder / rel, spec.tags):
            if task.id in seen:
                raise SuiteError(f"{task.source}: task {task.id!r}: duplicate id")
            seen.add(task.id)
            tasks.append(task)
    return {"tasks": tasks}


def _generated(spec: SuiteFile, folder: Path, path: Path, variant: str | None) -> _SuiteFields:
    """What a loader function builds (from another benchmark's data), over suite.yaml's fields."""
    variants = spec.variants
    name = spec.name or folder.name
    if variant is None or (variants and variant not in variants):
        near = closest(variant or "", variants)
        tip = f"did you mean {name}:{near[0]}? " if near else ""
        raise SuiteError(
            f"{path}: suite {name!r} needs a variant, e.g. {name}:{variants[0] if variants else 'NAME'}; "
            f"{tip}known: {', '.join(variants)}"
        )
    loader = _resolve(folder, str(spec.loader))
    built = load_hook(loader, path, "loader")(variant, folder)
    if not built["tasks"]:
        raise SuiteError(f"{path}: loader {spec.loader!r} built no tasks for variant {variant!r}")
    parts: _SuiteFields = {
        "name": f"{name}:{variant}",
        "catalog_spec": loader,
        "catalog_format": None,
        "preset_catalog": built["catalog"],
        "tasks": list(built["tasks"]),
        "max_steps": int(built.get("max_steps") or spec.max_steps or DEFAULT_MAX_STEPS),
        "steps_per": steps_per(built.get("steps_per") or spec.steps_per, str(path)),
    }
    if "backend" in built:
        backend = built["backend"]
        parts["backend_spec"] = None if backend in (None, "none") else _resolve(folder, str(backend))
    if built.get("system_prompt"):
        parts["system_prompt"] = str(built["system_prompt"])
    return parts


def _check_loaded(suite: Suite, path: Path, *, args: bool) -> None:
    """Hooks load and every expected call fits its task's catalog, before anything runs.

    ``args``: also argument names and canned operations (see bench.suites.format_checks.check_against_catalog).
    """
    _ = suite.classifier
    if suite.backend_spec not in (None, "mcp"):
        load_hook(suite.backend_spec, path, "backend")  # a typo in the class name fails now, not in episode one
    for i, check in enumerate(suite.checks):
        load_check(check, f"{path}: checks[{i}]")  # the file and the function exist, or the registered name
    try:
        _ = suite.catalog
    except CatalogError as exc:
        raise SuiteError(f"{path}: catalog: {exc}") from None
    policy = make_policy(suite.policy)
    if policy is not None:  # a selector naming no operation or category of the catalog: a typo, said at load
        policy.check(suite.catalog, str(path))
    for task in suite.tasks:
        check_against_catalog(
            f"{task.source}: task {task.id!r}",
            task.expected,
            task.canned,
            suite.catalog_for(task),
            args=args,
            backend=suite.backend_spec,
        )


def _rows(path: Path) -> object:
    """The rows of a task file: JSON lines, or YAML (a list, or ``{tasks: [...]}``)."""
    if path.suffix != ".jsonl":
        rows = read_yaml(path, "task file")
        return rows["tasks"] if isinstance(rows, Mapping) and "tasks" in rows else rows
    try:
        lines = read_text(path, "task file").splitlines()
    except ReadRefused as exc:
        raise SuiteError(f"{path}: {exc.problem}") from None
    except FileNotFoundError:
        raise SuiteError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:
        raise SuiteError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    out = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SuiteError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
            except (ValueError, RecursionError) as exc:  # a 5,000-digit number, deep nesting
                raise SuiteError(f"{path}: line {n}: invalid JSON: {parse_problem(exc)}") from None
    return out


def load_tasks(path: Path, suite_tags: Iterable[str] = ()) -> list[Task]:
    """The tasks of one file; an empty file is an error. ``suite_tags``: the tags its suite declares."""
    rows = _rows(path)
    if rows is None or rows == []:
        raise SuiteError(f"{path}: no tasks in this file (a suite needs at least one)")
    if not isinstance(rows, list):
        raise SuiteError(f"{path}: expected a list of tasks, got {type(rows).__name__}")
    return [task_from(row, path, i, suite_tags) for i, row in enumerate(rows)]
