"""Suites: ``tasks/<suite>/suite.yaml`` plus task files (YAML or JSONL). Unknown keys are errors.

suite.yaml::

    name: forge
    description: ...
    catalog: backend.py:ForgeBackend    # a catalog file, or a Python backend class (file.py:Class)
    catalog_format: null                # when the file's shape is ambiguous
    backend: backend.py:ForgeBackend    # or omitted / none: canned results from the task file
    system_prompt: "..."
    max_steps: 6
    tasks: [tasks.yaml]

A task::

    id: hot-issue-get
    split: dev                          # dev | test
    tags: [hot, single]                 # hot|cold, single|multi, arg-heavy, near-miss, should-refuse
    turns: ["Show me issue 3 of acme/web"]
    scenario: default                   # backend scenario
    expected:                           # canonical calls, BFCL-style matchers (see bench.matchers)
      - {op: issue_get, args: {owner: acme, repo: web, index: 3}}
    order: ordered                      # ordered | any
    state: [{path: repos.acme/web.issues.3.state, equals: closed}]
    answer: {contains: ["open"]}
    canned: {issue_get: {...}}          # results for suites without a backend
    refuse: false                       # should-refuse: no operation can serve it
    meta: {mode: pipe}                  # free-form facts for the suite's classify hook
    exact_calls: false                  # true: the model's calls must be exactly the expected ones (BFCL)
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any, cast

from surfbench.bench.backend import Backend, CannedBackend
from surfbench.bench.catalog import Catalog, CatalogError
from surfbench.bench.fields import SuiteError, read_yaml
from surfbench.bench.importers import load_catalog
from surfbench.bench.importers.common import exists
from surfbench.bench.importers.pycallable import load_module
from surfbench.bench.suite_checks import (
    ANSWER_KEYS,
    CALL_KEYS,
    SPLITS,
    STATE_KEYS,
    SUITE_KEYS,
    TAGS,
    TASK_KEYS,
    check_against_catalog,
    steps_per,
    suite_fields,
    task_fields,
)
from surfbench.bench.validation import closest, parse_problem

# the field sets live in bench.suite_checks, SuiteError in bench.fields; importers of bench.suite still find them
__all__ = [
    "ANSWER_KEYS", "CALL_KEYS", "SPLITS", "STATE_KEYS", "SUITE_KEYS", "TAGS", "TASK_KEYS", "ExpectedCall",
    "StateCheck", "Suite", "SuiteError", "Task", "load_suite", "load_tasks", "suite_names", "suites_roots",
]  # fmt: skip
DEFAULT_SYSTEM = (
    "You are an assistant that acts through the tools you are given. Use the tools to do what the user "
    "asks, then answer briefly in plain text. If no tool can do it, say so."
)


Classifier = Callable[..., list[str]]
"""``classify(task, calls) -> error types``: calls are the episode's CallRecords, in order."""


@dataclass(frozen=True)
class ExpectedCall:
    op: str
    """Canonical operation expected."""
    args: dict[str, Any] = field(default_factory=dict)
    """Argument matchers (BFCL style)."""
    oracle_args: dict[str, Any] | None = None
    """Concrete arguments for the oracle replay, where the matchers do not pin one value."""
    turn: int | None = None
    """The user turn (0-based) the call answers, for multi-turn tasks; None: any."""


@dataclass(frozen=True)
class StateCheck:
    path: tuple[str, ...]
    """Keys from the state's root; written ``a.b.c`` or, when a key has a dot, as a list."""
    equals: Any = None
    exists: bool | None = None
    contains: Any = None
    match: Any = None
    len: int | None = None
    has_equals: bool = False
    turn: int | None = None
    """Checked on the state right after that user turn (0-based) was answered; None: at the end."""


@dataclass(frozen=True)
class Task:
    id: str
    turns: tuple[str, ...]
    split: str = "dev"
    tags: tuple[str, ...] = ()
    scenario: str | None = None
    expected: tuple[ExpectedCall, ...] = ()
    order: str = "ordered"
    state: tuple[StateCheck, ...] = ()
    answer: dict[str, Any] = field(default_factory=dict)
    canned: dict[str, Any] = field(default_factory=dict)
    refuse: bool = False
    require_calls: bool | None = None
    """Whether expected calls must be matched for success; default: when there are no state checks."""
    note: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form facts about the task for the suite's ``classify`` hook (e.g. the right execution mode)."""
    exact_calls: bool = False
    """The model's tool calls must be exactly the expected ones, none more (BFCL's rule); for a
    should-refuse task: no tool call at all."""
    catalog: Catalog | None = field(default=None, compare=False, repr=False)
    """The task's own catalog (BFCL: each entry has its functions); None: the suite's."""
    source: str = ""

    @property
    def needs_calls(self) -> bool:
        return self.require_calls if self.require_calls is not None else not self.state

    @property
    def checks_turns(self) -> bool:
        """Whether a state check looks at the state after a given user turn (the loop then records it)."""
        return any(c.turn is not None for c in self.state)


@dataclass
class Suite:
    name: str
    folder: Path
    catalog_spec: str
    catalog_format: str | None
    backend_spec: str | None
    system_prompt: str
    max_steps: int
    tasks: list[Task]
    description: str = ""
    classify_spec: str | None = None
    steps_per: str = "episode"
    """What ``max_steps`` counts: the whole ``episode``, or each user ``turn`` (BFCL's multi-turn rule)."""
    preset_catalog: Catalog | None = field(default=None, repr=False)
    backend_options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for the backend class (e.g. the workspace sandbox's ``disk_quota_mb``)."""
    error_types: dict[str, str] = field(default_factory=dict)
    """The suite's own failure modes beyond the core error types (bench.taxonomy): name -> meaning."""

    @cached_property
    def classifier(self) -> Classifier | None:
        """The suite's failure-mode hook: ``fn(task, calls) -> list of error types`` (or None)."""
        if not self.classify_spec:
            return None
        return cast(Classifier, _hook(self.classify_spec, self.folder / "suite.yaml", "classify"))

    @cached_property
    def catalog(self) -> Catalog:
        """The suite's catalog (for a suite whose tasks carry their own: the union of theirs)."""
        if self.preset_catalog is not None:
            return self.preset_catalog
        return load_catalog(self.catalog_spec, fmt=self.catalog_format, name=self.name)

    def file_hashes(self) -> dict[str, str]:
        """sha256 (16 hex digits) of each file of the suite's folder that can shape it (YAML, JSON, Python)."""
        out = {}
        for path in sorted(self.folder.iterdir()) if self.folder.is_dir() else []:
            if path.is_file() and path.suffix in (".yaml", ".yml", ".json", ".jsonl", ".py"):
                out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return out

    def catalog_for(self, task: Task) -> Catalog:
        return task.catalog if task.catalog is not None else self.catalog

    def _backend_class(self) -> Any:
        module_name, _, attr = str(self.backend_spec).rpartition(":")
        return getattr(load_module(module_name, str(self.folder / "suite.yaml")), attr)

    def backend_settings(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The backend options an episode gets (suite.yaml's, then a run's overrides), checked.

        Raises SuiteError naming the option when the backend does not take it.
        """
        merged = {**self.backend_options, **dict(overrides or {})}
        if not merged:
            return merged
        where = f"{self.folder / 'suite.yaml'}: backend_options"
        if self.backend_spec is None:
            raise SuiteError(f"{where}: suite {self.name!r} has no backend, so options {sorted(merged)} do not apply")
        try:
            inspect.signature(self._backend_class()).bind(**merged)
        except TypeError as exc:
            raise SuiteError(f"{where} {sorted(merged)}: not taken by backend {self.backend_spec}: {exc}") from None
        return merged

    def new_backend(self, task: Task, options: Mapping[str, Any] | None = None) -> Backend:
        """A fresh backend for one episode, reset to the task's scenario (``options``: see backend_settings)."""
        if self.backend_spec is None:
            canned: Backend = CannedBackend(task.canned)
            canned.reset(task.scenario)
            return canned
        backend: Backend = self._backend_class()(**self.backend_settings(options))
        backend.reset(task.scenario)
        return backend

    def select(self, split: str | None = None, ids: list[str] | None = None, limit: int | None = None) -> list[Task]:
        tasks = [t for t in self.tasks if split in (None, "all") or t.split == split]
        if ids:
            known = {t.id for t in self.tasks}
            unknown = [i for i in ids if i not in known]
            if unknown:
                near = closest(unknown[0], known)
                tip = f"; did you mean {', '.join(near)}?" if near else ""
                raise SuiteError(f"suite {self.name!r}: no task {unknown[0]!r}{tip}")
            tasks = [t for t in tasks if t.id in ids]
        return tasks[:limit] if limit else tasks


def suites_roots() -> list[Path]:
    """Folders searched for suites by name: ``SURFBENCH_SUITES`` (``:``-separated), then the shipped ``tasks/``."""
    extra = [Path(p) for p in os.environ.get("SURFBENCH_SUITES", "").split(os.pathsep) if p]
    return [*extra, Path(__file__).resolve().parent.parent / "tasks"]


def _entry_point_suites() -> dict[str, Path]:
    """Suites other installed packages declare: entry points ``surfbench.suites``, name = a package folder."""
    found: dict[str, Path] = {}
    for point in metadata.entry_points(group="surfbench.suites"):
        spec = importlib.util.find_spec(point.value)
        locations = list(spec.submodule_search_locations or []) if spec else []
        if locations and (Path(locations[0]) / "suite.yaml").is_file():
            found.setdefault(point.name, Path(locations[0]).resolve())
    return found


def suite_folders() -> dict[str, Path]:
    """Every suite by name: ``SURFBENCH_SUITES`` first, then entry points, then ``tasks/``; the first wins."""
    folders: dict[str, Path] = {}
    roots = suites_roots()
    for root in roots[:-1]:
        for path in sorted(root.glob("*/suite.yaml")):
            folders.setdefault(path.parent.name, path.parent)
    for name, folder in _entry_point_suites().items():
        folders.setdefault(name, folder)
    for path in sorted(roots[-1].glob("*/suite.yaml")):
        folders.setdefault(path.parent.name, path.parent)
    return folders


def suite_names() -> list[str]:
    return sorted(suite_folders())


def _resolve(folder: Path, spec: str) -> str:
    """Paths in suite.yaml are relative to the suite folder (``file.py:Class`` included)."""
    head, sep, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    candidate = folder / head
    if exists(candidate):
        return f"{candidate}{sep}{attr}"
    return spec


def load_suite(name_or_path: str) -> Suite:
    """A suite by name (``forge``; ``bfcl:simple_python`` for a loader suite's variant) or folder path."""
    variant: str | None = None
    if ":" in name_or_path and not Path(name_or_path).exists():
        name_or_path, _, variant = name_or_path.partition(":")
    folder = Path(name_or_path)
    if not (folder / "suite.yaml").is_file():
        folder = suite_folders().get(name_or_path, suites_roots()[-1] / name_or_path)
    path = folder / "suite.yaml"
    if not path.is_file():
        near = closest(name_or_path, suite_names())
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        raise SuiteError(f"no suite {name_or_path!r} (no {path}){tip} known: {', '.join(suite_names())}")
    fields = suite_fields(read_yaml(path), path)
    if fields["loader"]:
        return _load_generated(fields, folder, path, variant)
    if variant is not None:
        raise SuiteError(f"{path}: suite {folder.name!r} has no variants (got {variant!r}); use suite={folder.name}")
    tasks: list[Task] = []
    seen: set[str] = set()
    for rel in fields["tasks"]:
        for task in load_tasks(folder / rel):
            if task.id in seen:
                raise SuiteError(f"{task.source}: task {task.id!r}: duplicate id")
            seen.add(task.id)
            tasks.append(task)
    suite = Suite(
        name=fields["name"] or folder.name,
        folder=folder,
        catalog_spec=_resolve(folder, fields["catalog"]),
        catalog_format=fields["catalog_format"],
        backend_spec=_spec(fields["backend"], folder, path, "backend"),
        system_prompt=fields["system_prompt"] or DEFAULT_SYSTEM,
        max_steps=fields["max_steps"] or 6,
        tasks=tasks,
        description=fields["description"],
        classify_spec=_spec(fields["classify"], folder, path, "classify"),
        steps_per=fields["steps_per"],
        backend_options=fields["backend_options"],
        error_types=fields["error_types"],
    )
    _check_against_catalog(suite, path, args=True)
    suite.backend_settings()  # options the backend does not take: an error at load, naming them
    return suite


def _load_generated(fields: Mapping[str, Any], folder: Path, path: Path, variant: str | None) -> Suite:
    """A suite whose catalog and tasks a loader function builds (from another benchmark's data)."""
    variants: list[str] = fields["variants"]
    name = fields["name"] or folder.name
    if variant is None or (variants and variant not in variants):
        near = closest(variant or "", variants)
        tip = f"did you mean {name}:{near[0]}? " if near else ""
        raise SuiteError(
            f"{path}: suite {name!r} needs a variant, e.g. {name}:{variants[0] if variants else 'NAME'}; "
            f"{tip}known: {', '.join(variants)}"
        )
    spec = _resolve(folder, fields["loader"])
    built = _hook(spec, path, "loader")(variant, folder)
    backend = built.get("backend", fields["backend"])
    suite = Suite(
        name=f"{name}:{variant}",
        folder=folder,
        catalog_spec=spec,
        catalog_format=None,
        backend_spec=None if backend in (None, "none") else _resolve(folder, str(backend)),
        system_prompt=str(built.get("system_prompt") or fields["system_prompt"] or DEFAULT_SYSTEM),
        max_steps=int(built.get("max_steps") or fields["max_steps"] or 6),
        tasks=list(built["tasks"]),
        description=fields["description"],
        classify_spec=_spec(fields["classify"], folder, path, "classify"),
        preset_catalog=built["catalog"],
        error_types=fields["error_types"],
        steps_per=steps_per(built.get("steps_per") or fields["steps_per"], str(path)),
    )
    if not suite.tasks:
        raise SuiteError(f"{path}: loader {fields['loader']!r} built no tasks for variant {variant!r}")
    # a loader's tasks are another benchmark's data, imported as it is: their argument names are not checked
    _check_against_catalog(suite, path, args=False)
    return suite


def _hook(spec: str, where: Path, role: str) -> Any:
    """The function or class a suite.yaml names as ``file.py:attr`` (classify, loader)."""
    module_name, _, attr = spec.rpartition(":")
    try:
        found = getattr(load_module(module_name, str(where)), attr)
    except (AttributeError, CatalogError) as exc:
        raise SuiteError(f"{where}: {role} {spec!r}: {exc}") from None
    if not callable(found):
        raise SuiteError(f"{where}: {role} {spec!r} is not a function")
    return found


def _spec(value: str | None, folder: Path, path: Path, role: str) -> str | None:
    """A ``file.py:attr`` hook of suite.yaml (classify, backend), resolved against the suite folder."""
    if not value:
        return None
    spec = _resolve(folder, value)
    if ":" not in spec:
        raise SuiteError(f"{path}: {role} must be 'file.py:name', got {value!r}")
    return spec


def _check_against_catalog(suite: Suite, path: Path, *, args: bool) -> None:
    """Hooks load and every expected call fits its task's catalog, before anything runs.

    ``args``: also argument names and canned operations (see bench.suite_checks.check_against_catalog).
    """
    _ = suite.classifier
    if suite.backend_spec is not None:
        _hook(suite.backend_spec, path, "backend")  # a typo in the class name fails now, not in episode one
    try:
        _ = suite.catalog
    except CatalogError as exc:
        raise SuiteError(f"{path}: catalog: {exc}") from None
    for task in suite.tasks:
        check_against_catalog(
            f"{task.source}: task {task.id!r}",
            [(c.op, c.args, c.oracle_args) for c in task.expected],
            task.canned,
            suite.catalog_for(task),
            args=args,
            backend=suite.backend_spec,
        )


def load_tasks(path: Path) -> list[Task]:
    """The tasks of one file: a YAML list (or ``{tasks: [...]}``) or JSON lines; an empty file is an error."""
    if path.suffix == ".jsonl":
        rows: Any = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise SuiteError(f"{path}: file not found") from None
        except UnicodeDecodeError as exc:
            raise SuiteError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except (OSError, ValueError) as exc:
            raise SuiteError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        for n, line in enumerate(lines, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SuiteError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
                except (ValueError, RecursionError) as exc:  # a 5,000-digit number, deep nesting
                    raise SuiteError(f"{path}: line {n}: invalid JSON: {parse_problem(exc)}") from None
    else:
        rows = read_yaml(path)
        if isinstance(rows, Mapping) and "tasks" in rows:
            rows = rows["tasks"]
    if rows is None or rows == []:
        raise SuiteError(f"{path}: no tasks in this file (a suite needs at least one)")
    if not isinstance(rows, list):
        raise SuiteError(f"{path}: expected a list of tasks, got {type(rows).__name__}")
    return [_task(row, path, i) for i, row in enumerate(rows)]


def _task(row: Any, path: Path, index: int) -> Task:
    fields = task_fields(row, path, index)
    return Task(
        **{
            **fields,
            "expected": tuple(ExpectedCall(**call) for call in fields["expected"]),
            "state": tuple(StateCheck(**check) for check in fields["state"]),
        },
        source=str(path),
    )
