"""The suite format: what each key of ``suite.yaml`` and of a task means, and the records they load into.

A suite is one folder: ``suite.yaml``, one or more task files (a YAML list, ``{tasks: [...]}``, or JSON
lines) and the Python files they name. Paths are relative to the suite folder; ``file.py:name`` names a
function or class in a Python file there. Each mapping takes exactly the fields of its dataclass here
(``SuiteFile``, ``Task``, ``ExpectedCall``, ``StateCheck``, ``AnswerCheck``; see :func:`yaml_keys`):
any other key is an error naming the file, the task and the closest allowed key. A wrong type is an
error too, never coerced (:mod:`surfbench.bench.suites.format_checks`).

suite.yaml (:class:`SuiteFile`)::

    name: forge                         # the suite's name; default: the folder's name
    description: ...                    # one line for listings and reports
    catalog: backend.py:ForgeBackend    # the operations: a catalog file (MCP tools/list, OpenAI tools,
                                        #   OpenAPI, ...) or a Python class (file.py:Class); required
                                        #   unless a loader builds it; or a live MCP server:
                                        #   {mcp: {command, args, ...}, pinned: tools.json} (bench/mcp/suites.py)
    catalog_format: null                # the catalog file's format, when its shape is ambiguous
    backend: backend.py:ForgeBackend    # the class that executes calls; omitted or none: each task's
                                        #   canned results; mcp: the live server of catalog.mcp
    backend_options: {memory_mb: 2048}  # keyword arguments for the backend class (a run may override them)
    system_prompt: "..."                # default: a generic "act through the tools" prompt
    max_steps: 6                        # most model calls per episode (or per turn), 1 to 1000; default 6
    steps_per: episode                  # what max_steps counts: episode | turn (BFCL's multi-turn rule)
    tasks: [tasks.yaml]                 # the task files, in order; required unless a loader builds tasks
    classify: checks.py:failure_modes   # fn(task, calls) -> the suite's error types of one episode
    error_types: {name: meaning}        # the suite's own error types beyond the core ones
                                        #   (bench/base/taxonomy.py); a list of names is accepted too
    tags: [name, ...]                   # the suite's own task tags beyond the core ones (CORE_TAGS)
    checks: [checks.py:fn, ...]         # the suite's own scoring checks (bench/suites/checks.py), run after the
                                        #   built-in ones in this order; a bare name is a check registered
                                        #   in bench.contracts.plugins (an entry point of the group surfbench.checks)
    loader: loader.py:load              # fn(variant, folder) -> {catalog, tasks, and optionally backend,
                                        #   system_prompt, max_steps, steps_per}: a suite built from another
                                        #   benchmark's data, used as ``suite=name:variant``
    variants: [simple_python, ...]      # the variants the loader builds
    policy: {deny: [repo_delete], ask: [destructiveHint], user: refuse}  # which operations may run, however
                                        #   they are reached (bench/suites/policy.py); a run may override it
    passthrough: [instance]             # parameters every operation takes, carried by every surface (the
                                        #   dispatcher: beside 'operation'); default: detected (Catalog.passthrough)

A suite's folder may also hold ``guidance/*.md``: snippets on how and when to use its operations (front matter
``title`` and ``description``; bench/catalog/guidance.py), which a surface's ``guidance`` option injects.

A task (:class:`Task`)::

    id: hot-issue-get                   # required; unique within the suite
    turns: ["Show me issue 3 of acme/web"]  # required: the user's messages, one per turn (a string: one)
    split: dev                          # dev | test | synth (made by surfbench synth)
    tags: [hot, single]                 # core tags (CORE_TAGS) or the suite's own (suite.yaml tags)
    scenario: default                   # the backend scenario the episode starts from
    expected:                           # the canonical calls (ExpectedCall)
      - op: issue_get                   #   the operation
        args: {owner: acme, index: 3}   #   argument matchers, BFCL style (bench/suites/matchers.py); $extra: true
                                        #   lets other arguments through
        oracle_args: {index: 3}         #   concrete arguments for the oracle replay where matchers allow many
        turn: 0                         #   the user turn (0-based) it answers; default: any
      - one_of:                         #   or a choice: any alternative (op, args, oracle_args) satisfies
          - {op: create_issue, args: {title: Bug}}  # it (bench/suites/expected.py); the oracle replays the
          - {op: issue_write, args: {method: create, title: Bug}}  # first one the surface can reach
          - [{op: open_form}, {op: submit_form, args: {title: Bug}}]  # a list: several calls, in order
                                        #   ({calls: [...], any_order: true}: in any order)
        turn: 0
    order: ordered                      # ordered | any: whether the expected calls must come in this order
    state:                              # checks on the backend's state (StateCheck)
      - path: repos.acme/web.issues.3.state  # keys from the root: a.b.c, or a list when a key has a dot
        equals: closed                  #   also exists: true|false, contains: x, match: <matcher>, len: N
        turn: 0                         #   checked right after that user turn; default: at the end
      - path: repos.acme/web.labels
        keys: [bug, ui]                 #   a mapping's keys, exactly (each one missing or extra is named)
    answer:                             # checks on the final text answer, ignoring case (AnswerCheck)
      contains: [open]                  #   every one of these
      any_of: [open, closed]            #   at least one of these
      not_contains: [deleted]           #   none of these
      regex: "issue #?3"                #   a regular expression it matches
    canned: {issue_get: {...}}          # results by operation, for a suite without a backend
    refuse: false                       # no operation can serve it (the tag should-refuse implies it)
    require_calls: null                 # whether the expected calls must be matched for success;
                                        #   default: when the task has no state checks
    exact_calls: false                  # the model's calls must be exactly the expected ones, none more
                                        #   (BFCL); for a should-refuse task: no call at all
    meta: {mode: pipe}                  # free-form facts for the suite's classify hook and checks
    note: "..."                         # free text for whoever reads the task
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from surfbench.bench.base.validation import closest
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.guidance import attach
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.contracts.backend import Backend, CannedBackend
from surfbench.bench.suites.expected import ExpectedCall
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.hooks import load_hook

CORE_TAGS = frozenset(
    {"hot", "cold", "single", "multi", "arg-heavy", "near-miss", "should-refuse", "read", "write", "multi-turn"}
)
"""Tags every suite may use: hot|cold (how often the operation is called), single|multi (one or several
calls), arg-heavy, near-miss (a similar operation exists), should-refuse (the scorer expects a refusal),
read|write, multi-turn."""
SPLITS = ("dev", "test", "synth")
"""``synth``: tasks ``surfbench synth`` made and verified (bench/synth/synth_run.py), never mixed into dev or test."""
DEFAULT_SYSTEM = (
    "You are an assistant that acts through the tools you are given. Use the tools to do what the user "
    "asks, then answer briefly in plain text. If no tool can do it, say so."
)
DEFAULT_MAX_STEPS = 6
INTERNAL = {"yaml": False}
"""Field metadata: set by the loader, not a key of the YAML mapping."""

Classifier = Callable[..., list[str]]
"""``classify(task, calls) -> error types``: calls are the episode's CallRecords, in order."""


def yaml_keys(cls: type) -> frozenset[str]:
    """The keys a YAML mapping of ``cls`` may hold: its fields, less those the loader sets (INTERNAL)."""
    return frozenset(f.name for f in fields(cls) if f.metadata.get("yaml", True))


@dataclass(frozen=True)
class StateCheck:
    """One check on the backend's state."""

    path: tuple[str, ...]
    """Keys from the state's root; written ``a.b.c`` or, when a key has a dot, as a list."""
    equals: Any = None
    """The value must equal this (when ``has_equals``: ``equals: null`` checks for null)."""
    exists: bool | None = None
    """The path must (True) or must not (False) exist; None: not checked."""
    contains: Any = None
    """A list or mapping must hold this item; a string must contain this text (ignoring case)."""
    match: Any = None
    """A matcher (bench.suites.matchers) the value must satisfy."""
    len: int | None = None
    """The value's length."""
    keys: tuple[str, ...] | None = None
    """A mapping's keys, exactly (in any order): a collection none of whose members went or came unexpectedly."""
    has_equals: bool = field(default=False, metadata=INTERNAL)
    """Whether the check had an ``equals`` key."""
    turn: int | None = None
    """Checked on the state right after that user turn (0-based) was answered; None: at the end."""


@dataclass(frozen=True)
class AnswerCheck:
    """The checks on a task's final text answer (a Task keeps them as the mapping ``answer``)."""

    contains: tuple[str, ...] = ()
    """Texts the answer must contain, each (ignoring case)."""
    any_of: tuple[str, ...] = ()
    """Texts of which the answer must contain one."""
    not_contains: tuple[str, ...] = ()
    """Texts the answer must not contain."""
    regex: str | None = None
    """A regular expression the answer must match (ignoring case, ``.`` across lines)."""


@dataclass(frozen=True)
class Task:
    """One task: the user's turns and what a correct episode does."""

    id: str
    """Unique within the suite."""
    turns: tuple[str, ...]
    """The user's messages, one per turn."""
    split: str = "dev"
    """``dev``, ``test`` or ``synth`` (made by ``surfbench synth``)."""
    tags: tuple[str, ...] = ()
    """Core tags (CORE_TAGS) or the suite's own."""
    scenario: str | None = None
    """The backend scenario the episode starts from."""
    expected: tuple[ExpectedCall, ...] = ()
    """The canonical calls."""
    order: str = "ordered"
    """``ordered``: the expected calls must come in order; ``any``: in any order."""
    state: tuple[StateCheck, ...] = ()
    """Checks on the backend's state."""
    answer: dict[str, Any] = field(default_factory=dict)
    """Checks on the final text answer (the keys of AnswerCheck)."""
    canned: dict[str, Any] = field(default_factory=dict)
    """Results by operation, for a suite without a backend."""
    refuse: bool = False
    """Should-refuse: no operation can serve it."""
    require_calls: bool | None = None
    """Whether expected calls must be matched for success; default: when there are no state checks."""
    note: str = ""
    """Free text for whoever reads the task."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free-form facts about the task for the suite's ``classify`` hook (e.g. the right execution mode)."""
    exact_calls: bool = False
    """The model's tool calls must be exactly the expected ones, none more (BFCL's rule); for a
    should-refuse task: no tool call at all."""
    catalog: Catalog | None = field(default=None, compare=False, repr=False, metadata=INTERNAL)
    """The task's own catalog (BFCL: each entry has its functions); None: the suite's."""
    source: str = field(default="", metadata=INTERNAL)
    """The file the task was read from."""

    @property
    def needs_calls(self) -> bool:
        """Whether the expected calls must be matched for success."""
        return self.require_calls if self.require_calls is not None else not self.state

    @property
    def checks_turns(self) -> bool:
        """Whether a state check looks at the state after a given user turn (the loop then records it)."""
        return any(c.turn is not None for c in self.state)


@dataclass(frozen=True)
class SuiteFile:
    """``suite.yaml`` as written, each field checked (:func:`surfbench.bench.suites.format_checks.suite_file`)."""

    name: str | None = None
    """The suite's name; None: the folder's."""
    description: str = ""
    """One line for listings and reports."""
    catalog: str | None = None
    """A catalog file, or a Python class (``file.py:Class``) whose operations are the catalog."""
    catalog_format: str | None = None
    """The catalog file's format, when its shape is ambiguous."""
    catalog_mcp: dict[str, Any] | None = field(default=None, metadata=INTERNAL)
    """``catalog: {mcp: {...}, pinned: FILE}``: a live MCP server (bench/mcp/suites.py)."""
    backend: str | None = None
    """``file.py:Class`` that executes calls; None (or ``none``): each task's canned results."""
    system_prompt: str | None = None
    """None: DEFAULT_SYSTEM."""
    max_steps: int | None = None
    """Most model calls per episode (or per turn); None: DEFAULT_MAX_STEPS."""
    steps_per: str = "episode"
    """What ``max_steps`` counts: the whole ``episode``, or each user ``turn``."""
    tasks: tuple[str, ...] = ()
    """The task files, relative to the suite folder."""
    classify: str | None = None
    """``file.py:function`` naming an episode's suite error types: ``fn(task, calls)``."""
    loader: str | None = None
    """``file.py:function`` that builds the catalog and tasks: ``fn(variant, folder)``."""
    variants: tuple[str, ...] = ()
    """The variants the loader builds."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for the backend class."""
    error_types: dict[str, str] = field(default_factory=dict)
    """The suite's own error types beyond the core ones: name -> meaning."""
    tags: tuple[str, ...] = ()
    """The suite's own task tags beyond CORE_TAGS."""
    checks: tuple[str, ...] = ()
    """The suite's own scoring checks, ``file.py:function`` or a registered name each, in the order they run."""
    policy: dict[str, Any] = field(default_factory=dict)
    """The operation policy as written, checked (bench.suites.policy.policy_mapping); {}: none."""
    passthrough: tuple[str, ...] | None = None
    """Parameters declared shared by every operation (``passthrough: [instance]``); None: detected."""


SUITE_KEYS = yaml_keys(SuiteFile)
TASK_KEYS = yaml_keys(Task)
CALL_KEYS = yaml_keys(ExpectedCall)
STATE_KEYS = yaml_keys(StateCheck)
ANSWER_KEYS = yaml_keys(AnswerCheck)


def _option_problems(cls: Callable[..., object], options: Mapping[str, object]) -> dict[str, str]:
    """Each option whose value its backend's ``__init__`` annotation refuses -> why.

    pydantic, strict: "abc" is not an int; an ``Annotated[int, Field(ge=0)]`` there bounds it too. Options without
    an annotation are not judged.
    """
    import typing

    from pydantic import TypeAdapter, ValidationError

    try:
        hints = typing.get_type_hints(cls.__init__, include_extras=True)
    except Exception:  # an annotation that does not resolve: the backend's own checks are left to speak
        return {}
    problems = {}
    for name, value in options.items():
        if name not in hints:
            continue
        try:
            TypeAdapter(hints[name]).validate_python(value, strict=True)
        except ValidationError as exc:
            problems[name] = "; ".join(sorted({e["msg"] for e in exc.errors()}))
    return problems


def _mcp() -> ModuleType:
    from surfbench.bench.mcp import suites  # the SDK loads only for a suite over a live server

    return suites


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its tasks, and how to build its catalog and a backend per episode."""

    name: str
    """The suite's name (``bfcl:simple_python`` for a loader's variant)."""
    folder: Path
    """The suite's folder."""
    catalog_spec: str
    """The catalog file or Python class, resolved against the folder."""
    catalog_format: str | None
    """The catalog file's format, when its shape is ambiguous."""
    backend_spec: str | None
    """``path.py:Class`` that executes calls; None: canned results."""
    system_prompt: str
    """The system prompt of every episode."""
    max_steps: int
    """Most model calls per episode (or per turn, see ``steps_per``)."""
    tasks: list[Task]
    """Every task, in file order."""
    description: str = ""
    """One line for listings and reports."""
    classify_spec: str | None = None
    """``path.py:function`` naming an episode's suite error types."""
    steps_per: str = "episode"
    """What ``max_steps`` counts: the whole ``episode``, or each user ``turn`` (BFCL's multi-turn rule)."""
    preset_catalog: Catalog | None = field(default=None, repr=False)
    """The catalog a loader built; None: load it from ``catalog_spec``."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for the backend class (e.g. the workspace sandbox's ``disk_quota_mb``)."""
    error_types: dict[str, str] = field(default_factory=dict)
    """The suite's own failure modes beyond the core error types (bench.base.taxonomy): name -> meaning."""
    tags: tuple[str, ...] = ()
    """The suite's own task tags beyond CORE_TAGS."""
    checks: tuple[str, ...] = ()
    """The suite's own scoring checks, ``path.py:function`` (resolved) or a registered name each, in order."""
    mcp: Any = None
    """A live MCP server as the catalog (bench.mcp.suites.McpCatalogSpec); None: ``catalog_spec``."""
    policy: dict[str, Any] = field(default_factory=dict)
    """The operation policy of suite.yaml, checked (bench.suites.policy); a run's keys replace these; {}: none."""
    passthrough: tuple[str, ...] | None = None
    """suite.yaml's ``passthrough`` (parameters every operation takes); None: the catalog's own or detected."""

    @cached_property
    def classifier(self) -> Classifier | None:
        """The suite's failure-mode hook: ``fn(task, calls) -> list of error types`` (or None)."""
        if not self.classify_spec:
            return None
        return cast(Classifier, load_hook(self.classify_spec, self.folder / "suite.yaml", "classify"))

    @cached_property
    def catalog(self) -> Catalog:
        """The suite's catalog (for a suite whose tasks carry their own: the union of theirs).

        With the suite's guidance snippets (``guidance/*.md``) and its declared pass-through parameters attached
        (bench.catalog.guidance.attach).
        """
        return attach(self._catalog_as_loaded(), self.folder, self.passthrough)

    def _catalog_as_loaded(self) -> Catalog:
        if self.preset_catalog is not None:
            return self.preset_catalog
        if self.mcp is not None:
            return cast(Catalog, _mcp().live_suite_catalog(self.mcp, self.name))
        return load_catalog(self.catalog_spec, fmt=self.catalog_format, name=self.name)

    @property
    def known_tags(self) -> frozenset[str]:
        """The tags its tasks may carry: the core ones and the suite's own."""
        return CORE_TAGS | frozenset(self.tags)

    def file_hashes(self) -> dict[str, str]:
        """sha256 (16 hex digits) of each file of the suite's folder that can shape it (YAML, JSON, Python)."""
        out = {}
        for path in sorted(self.folder.iterdir()) if self.folder.is_dir() else []:
            if path.is_file() and path.suffix in (".yaml", ".yml", ".json", ".jsonl", ".py"):
                out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return out

    def catalog_for(self, task: Task) -> Catalog:
        """The task's own catalog, else the suite's."""
        return task.catalog if task.catalog is not None else self.catalog

    def _backend_class(self) -> Callable[..., Backend]:
        if self.backend_spec == "mcp":
            return _mcp().mcp_backend_class()
        return load_hook(str(self.backend_spec), self.folder / "suite.yaml", "backend")  # checked at load

    def backend_settings(self, overrides: Mapping[str, object] | None = None, judge: bool = False) -> dict[str, object]:
        """The backend options an episode gets (suite.yaml's, then a run's overrides), checked.

        Raises SuiteError naming the option when the backend does not take it.
        """
        merged = {**self.backend_options, **dict(overrides or {})}
        if not merged:
            return merged
        where = f"{self.folder / 'suite.yaml'}: backend_options"
        if self.backend_spec is None:
            raise SuiteError(f"{where}: suite {self.name!r} has no backend, so options {sorted(merged)} do not apply")
        cls = self._backend_class()
        try:
            inspect.signature(cls).bind(**merged)
        except TypeError as exc:
            raise SuiteError(f"{where} {sorted(merged)}: not taken by backend {self.backend_spec}: {exc}") from None
        # ``judge``: the run's own values against the annotations, once, when its cell is made (suite.yaml's may be
        # specs the backend resolves itself, e.g. a hook "file.py:fn")
        for name, problem in (_option_problems(cls, dict(overrides or {})) if judge else {}).items():
            raise SuiteError(f"backend_options.{name}={merged[name]!r}: {problem} (backend {self.backend_spec})")
        return merged

    def new_backend(self, task: Task, options: Mapping[str, object] | None = None) -> Backend:
        """A fresh backend for one episode, reset to the task's scenario (``options``: see backend_settings)."""
        if self.backend_spec is None:
            canned: Backend = CannedBackend(task.canned)
            canned.reset(task.scenario)
            return canned
        if self.backend_spec == "mcp":
            settings = self.backend_settings(options)
            return cast(Backend, _mcp().new_mcp_backend(self.mcp, self.folder, settings, task.scenario))
        backend: Backend = self._backend_class()(**self.backend_settings(options))
        backend.reset(task.scenario)
        return backend

    def select(
        self,
        split: str | None = None,
        ids: list[str] | None = None,
        limit: int | None = None,
        tags: Sequence[str] = (),
    ) -> list[Task]:
        """The tasks of a split (None or ``all``: every one), or those ids, carrying every one of ``tags``.

        The first ``limit`` of them.
        """
        tasks = [t for t in self.tasks if split in (None, "all") or t.split == split]
        tasks = [t for t in tasks if set(tags) <= set(t.tags)]
        if ids:
            known = {t.id for t in self.tasks}
            unknown = [i for i in ids if i not in known]
            if unknown:
                near = closest(unknown[0], known)
                tip = f"; did you mean {', '.join(near)}?" if near else ""
                raise SuiteError(f"suite {self.name!r}: no task {unknown[0]!r}{tip}")
            tasks = [t for t in tasks if t.id in ids]
        return tasks[:limit] if limit else tasks
