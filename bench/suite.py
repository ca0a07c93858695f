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
import inspect
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import yaml

from bench.backend import Backend, CannedBackend
from bench.catalog import Catalog, CatalogError
from bench.config import ConfigError
from bench.importers import load_catalog
from bench.importers.pycallable import load_module
from bench.validation import closest

SUITE_KEYS = {
    "name", "description", "catalog", "catalog_format", "backend", "system_prompt", "max_steps", "steps_per", "tasks",
    "classify", "loader", "variants", "backend_options", "error_types",
}  # fmt: skip
TASK_KEYS = {
    "id", "split", "tags", "turns", "scenario", "expected", "order", "state", "answer", "canned", "refuse",
    "require_calls", "note", "meta", "exact_calls",
}  # fmt: skip
CALL_KEYS = {"op", "args", "oracle_args", "turn"}
STATE_KEYS = {"path", "equals", "exists", "contains", "match", "len", "turn"}
ANSWER_KEYS = {"contains", "any_of", "regex", "not_contains"}
SPLITS = ("dev", "test")
TAGS = {
    "hot", "cold", "single", "multi", "arg-heavy", "near-miss", "should-refuse", "read", "write", "multi-turn",
}  # fmt: skip
DEFAULT_SYSTEM = (
    "You are an assistant that acts through the tools you are given. Use the tools to do what the user "
    "asks, then answer briefly in plain text. If no tool can do it, say so."
)


Classifier = Callable[..., list[str]]
"""``classify(task, calls) -> error types``: calls are the episode's CallRecords, in order."""


class SuiteError(ConfigError):
    """A malformed suite or task file: names the file, the task and the field."""


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
    """Where suites are looked up by name: folders in ``SURFBENCH_SUITES`` (``:``-separated), then ``tasks/``."""
    extra = [Path(p) for p in os.environ.get("SURFBENCH_SUITES", "").split(os.pathsep) if p]
    return [*extra, Path(__file__).resolve().parent.parent / "tasks"]


def suite_names() -> list[str]:
    return sorted({p.parent.name for root in suites_roots() for p in root.glob("*/suite.yaml")})


def _resolve(folder: Path, spec: str) -> str:
    """Paths in suite.yaml are relative to the suite folder (``file.py:Class`` included)."""
    head, sep, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    candidate = folder / head
    if candidate.exists():
        return f"{candidate}{sep}{attr}"
    return spec


def load_suite(name_or_path: str) -> Suite:
    """A suite by name (``forge``; ``bfcl:simple_python`` for a loader suite's variant) or folder path."""
    variant: str | None = None
    if ":" in name_or_path and not Path(name_or_path).exists():
        name_or_path, _, variant = name_or_path.partition(":")
    folder = Path(name_or_path)
    if not (folder / "suite.yaml").is_file():
        found = [root / name_or_path for root in suites_roots() if (root / name_or_path / "suite.yaml").is_file()]
        folder = found[0] if found else suites_roots()[-1] / name_or_path
    path = folder / "suite.yaml"
    if not path.is_file():
        near = closest(name_or_path, suite_names())
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        raise SuiteError(f"no suite {name_or_path!r} (no {path}){tip} known: {', '.join(suite_names())}")
    data = _read_yaml(path)
    if not isinstance(data, Mapping):
        raise SuiteError(f"{path}: expected a mapping")
    _no_unknown(data, SUITE_KEYS, f"{path}")
    if data.get("loader"):
        return _load_generated(data, folder, path, variant)
    if variant is not None:
        raise SuiteError(f"{path}: suite {folder.name!r} has no variants (got {variant!r}); use suite={folder.name}")
    for key in ("catalog", "tasks"):
        if key not in data:
            raise SuiteError(f"{path}: field {key!r} is required")
    backend = data.get("backend")
    backend_spec = None if backend in (None, "none") else _resolve(folder, str(backend))
    task_files = data["tasks"] if isinstance(data["tasks"], list) else [data["tasks"]]
    tasks: list[Task] = []
    seen: set[str] = set()
    for rel in task_files:
        for task in load_tasks(folder / str(rel)):
            if task.id in seen:
                raise SuiteError(f"{task.source}: task {task.id!r}: duplicate id")
            seen.add(task.id)
            tasks.append(task)
    suite = Suite(
        name=str(data.get("name", folder.name)),
        folder=folder,
        catalog_spec=_resolve(folder, str(data["catalog"])),
        catalog_format=data.get("catalog_format"),
        backend_spec=backend_spec,
        system_prompt=str(data.get("system_prompt") or DEFAULT_SYSTEM),
        max_steps=int(data.get("max_steps", 6)),
        tasks=tasks,
        description=str(data.get("description", "")),
        classify_spec=_classify_spec(data, folder, path),
        steps_per=_steps_per(data.get("steps_per"), path),
        backend_options=_backend_options(data.get("backend_options"), path),
        error_types=_error_types(data.get("error_types"), path),
    )
    _check_against_catalog(suite, path)
    suite.backend_settings()  # options the backend does not take: an error at load, naming them
    return suite


def _load_generated(data: Mapping[str, Any], folder: Path, path: Path, variant: str | None) -> Suite:
    """A suite whose catalog and tasks a loader function builds (from another benchmark's data)."""
    variants = [str(v) for v in data.get("variants") or []]
    name = str(data.get("name", folder.name))
    if variant is None or (variants and variant not in variants):
        near = closest(variant or "", variants)
        tip = f"did you mean {name}:{near[0]}? " if near else ""
        raise SuiteError(
            f"{path}: suite {name!r} needs a variant, e.g. {name}:{variants[0] if variants else 'NAME'}; "
            f"{tip}known: {', '.join(variants)}"
        )
    spec = _resolve(folder, str(data["loader"]))
    built = _hook(spec, path, "loader")(variant, folder)
    backend = built.get("backend", data.get("backend"))
    suite = Suite(
        name=f"{name}:{variant}",
        folder=folder,
        catalog_spec=spec,
        catalog_format=None,
        backend_spec=None if backend in (None, "none") else _resolve(folder, str(backend)),
        system_prompt=str(built.get("system_prompt") or data.get("system_prompt") or DEFAULT_SYSTEM),
        max_steps=int(built.get("max_steps") or data.get("max_steps", 6)),
        tasks=list(built["tasks"]),
        description=str(data.get("description", "")),
        classify_spec=_classify_spec(data, folder, path),
        preset_catalog=built["catalog"],
        error_types=_error_types(data.get("error_types"), path),
        steps_per=_steps_per(built.get("steps_per") or data.get("steps_per"), path),
    )
    _check_against_catalog(suite, path)
    return suite


def _error_types(value: Any, path: Path) -> dict[str, str]:
    from bench.taxonomy import CORE

    if value is None:
        return {}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = {v: "" for v in value}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise SuiteError(f"{path}: error_types must map each type's name to what it means")
    clash = sorted(set(value) & CORE)
    if clash:
        raise SuiteError(f"{path}: error_types {clash} are core types already (bench/taxonomy.py); pick other names")
    return {str(k): str(v or "") for k, v in value.items()}


def _backend_options(value: Any, path: Path) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise SuiteError(f"{path}: backend_options must be a mapping of option names to values")
    return dict(value)


def _steps_per(value: Any, path: Path) -> str:
    if value in (None, "episode", "turn"):
        return str(value or "episode")
    raise SuiteError(f"{path}: steps_per must be 'episode' or 'turn', got {value!r}")


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


def _classify_spec(data: Mapping[str, Any], folder: Path, path: Path) -> str | None:
    if not data.get("classify"):
        return None
    spec = _resolve(folder, str(data["classify"]))
    if ":" not in spec:
        raise SuiteError(f"{path}: classify must be 'file.py:function', got {data['classify']!r}")
    return spec


def _check_against_catalog(suite: Suite, path: Path) -> None:
    """Hooks load and every expected operation is in its task's catalog, before anything runs."""
    _ = suite.classifier
    try:
        _ = suite.catalog
    except CatalogError as exc:
        raise SuiteError(f"{path}: catalog: {exc}") from None
    for task in suite.tasks:
        catalog = suite.catalog_for(task)
        for call in task.expected:
            if call.op not in catalog:
                near = closest(call.op, catalog.names)
                tip = f" (did you mean {', '.join(near)}?)" if near else ""
                raise SuiteError(f"{task.source}: task {task.id!r}: expected op {call.op!r} not in the catalog{tip}")


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"{path}: file not found") from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"{path}: invalid YAML: {exc}".replace("\n", " ")) from None


def _no_unknown(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        near = closest(unknown[0], allowed)
        tip = f" (did you mean {near[0]!r}?)" if near else ""
        raise SuiteError(f"{where}: unknown key {unknown[0]!r}{tip}; allowed: {', '.join(sorted(allowed))}")


def _turn_index(value: Any, turns: int, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < turns:
        raise SuiteError(f"{where}: turn must be a user turn index from 0 to {turns - 1}, got {value!r}")
    return value


def _meta(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SuiteError(f"{where}: meta must be a mapping")
    return dict(value)


def load_tasks(path: Path) -> list[Task]:
    if path.suffix == ".jsonl":
        rows = []
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            raise SuiteError(f"{path}: file not found") from None
        for n, line in enumerate(lines, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SuiteError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
    else:
        rows = _read_yaml(path) or []
        if isinstance(rows, Mapping) and "tasks" in rows:
            rows = rows["tasks"]
    if not isinstance(rows, list):
        raise SuiteError(f"{path}: expected a list of tasks")
    return [_task(row, path, i) for i, row in enumerate(rows)]


def _task(row: Any, path: Path, index: int) -> Task:
    if not isinstance(row, Mapping):
        raise SuiteError(f"{path}: task #{index + 1}: expected a mapping")
    task_id = row.get("id")
    where = f"{path}: task {task_id!r}" if task_id else f"{path}: task #{index + 1}"
    if not isinstance(task_id, str) or not task_id:
        raise SuiteError(f"{where}: field 'id' is required")
    _no_unknown(row, TASK_KEYS, where)
    turns = row.get("turns")
    if isinstance(turns, str):
        turns = [turns]
    if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise SuiteError(f"{where}: field 'turns' needs one or more non-empty user messages")
    split = row.get("split", "dev")
    if split not in SPLITS:
        raise SuiteError(f"{where}: split must be one of {SPLITS}, got {split!r}")
    tags = tuple(row.get("tags") or ())
    bad = [t for t in tags if t not in TAGS]
    if bad:
        raise SuiteError(f"{where}: unknown tag {bad[0]!r}; known: {', '.join(sorted(TAGS))}")
    order = row.get("order", "ordered")
    if order not in ("ordered", "any"):
        raise SuiteError(f"{where}: order must be 'ordered' or 'any', got {order!r}")
    expected = []
    for i, call in enumerate(row.get("expected") or []):
        if not isinstance(call, Mapping) or "op" not in call:
            raise SuiteError(f"{where}: expected[{i}] needs an 'op'")
        _no_unknown(call, CALL_KEYS, f"{where}: expected[{i}]")
        args = call.get("args") or {}
        if not isinstance(args, Mapping):
            raise SuiteError(f"{where}: expected[{i}].args must be a mapping of argument matchers")
        turn = _turn_index(call.get("turn"), len(turns), f"{where}: expected[{i}]")
        expected.append(ExpectedCall(str(call["op"]), dict(args), call.get("oracle_args"), turn))
    state = []
    for i, check in enumerate(row.get("state") or []):
        if not isinstance(check, Mapping) or "path" not in check:
            raise SuiteError(f"{where}: state[{i}] needs a 'path'")
        _no_unknown(check, STATE_KEYS, f"{where}: state[{i}]")
        raw_path = check["path"]
        parts = tuple(str(p) for p in raw_path) if isinstance(raw_path, list) else tuple(str(raw_path).split("."))
        state.append(
            StateCheck(
                path=parts,
                equals=check.get("equals"),
                exists=check.get("exists"),
                contains=check.get("contains"),
                match=check.get("match"),
                len=check.get("len"),
                has_equals="equals" in check,
                turn=_turn_index(check.get("turn"), len(turns), f"{where}: state[{i}]"),
            )
        )
    answer = row.get("answer") or {}
    if not isinstance(answer, Mapping):
        raise SuiteError(f"{where}: answer must be a mapping")
    _no_unknown(answer, ANSWER_KEYS, f"{where}: answer")
    refuse = bool(row.get("refuse", False)) or "should-refuse" in tags
    if refuse and expected:
        raise SuiteError(f"{where}: a should-refuse task cannot have expected calls")
    return Task(
        id=task_id,
        turns=tuple(turns),
        split=split,
        tags=tags,
        scenario=row.get("scenario"),
        expected=tuple(expected),
        order=order,
        state=tuple(state),
        answer=dict(answer),
        canned=dict(row.get("canned") or {}),
        refuse=refuse,
        require_calls=row.get("require_calls"),
        note=str(row.get("note", "")),
        meta=_meta(row.get("meta"), where),
        exact_calls=bool(row.get("exact_calls", False)),
        source=str(path),
    )
