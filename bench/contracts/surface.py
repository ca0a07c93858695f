"""The surface contract: what the model sees each turn, and where its calls go.

A :class:`Surface` is built once from a catalog and its parameters. For each episode it opens a
:class:`Session` that holds per-episode state (loaded tools, search hits, the pre-selected set). The
episode loop asks the session for ``tools()`` before every model call (so lazy loading and search fit
the same interface as static surfaces) and hands every tool call to ``dispatch``.

``dispatch`` enforces the boundary structurally: a call to a tool that was not among the tools shown
on this turn is rejected and never becomes an operation call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.base.validation import ArgIssue, closest, describe_issues, validate_args
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.guidance import Guide, make_guide, render
from surfbench.bench.catalog.wire import compact_json

DispatchKind = Literal["operation", "meta", "rejected"]

# The core error types a dispatch carries (bench.base.taxonomy's members, named here for surfaces' imports).
NOT_EXPOSED = ErrorType.NOT_EXPOSED
NOT_LOADED = ErrorType.NOT_LOADED
SCHEMA_INVALID = ErrorType.SCHEMA_INVALID
UNKNOWN_OPERATION = ErrorType.UNKNOWN_OPERATION
BAD_META_CALL = ErrorType.BAD_META_CALL
LIST_MAX = 20  # tool names an error lists at most
GUIDANCE_PARAM = "guidance"
"""The option every surface kind takes (never listed in ``allowed_params``): inject its suite's guidance snippets
for the request (bench.catalog.guidance)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model made it (arguments already parsed from JSON, or the raw value)."""

    name: str
    arguments: Any
    id: str = ""


@dataclass(frozen=True)
class Returned:
    """One operation a meta call returned (a search hit, a loaded operation, a described one), in rank order."""

    operation: str
    """The canonical operation."""
    rank: int
    """Its position among what the call returned, from 1 (best first)."""
    score: float | None = None
    """The retriever's similarity, where one ranked it (None for a load or a describe)."""

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.operation, "rank": self.rank, "score": self.score}


def ranked(operations: Iterable[str], scores: Iterable[float | None] | None = None) -> tuple[Returned, ...]:
    """``operations`` (best first) as :class:`Returned` records, ranks from 1; ``scores`` beside them if known."""
    names = list(operations)
    marks = list(scores) if scores is not None else [None] * len(names)
    return tuple(Returned(name, i + 1, score) for i, (name, score) in enumerate(zip(names, marks, strict=True)))


@dataclass(frozen=True)
class Dispatch:
    """Where one tool call went."""

    kind: DispatchKind
    """``operation``: route to the backend; ``meta``: answered by the surface; ``rejected``: refused."""
    tool: str
    """The surface tool the model called."""
    operation: str | None = None
    """The canonical operation the call names (after routing), when it names one."""
    args: dict[str, Any] | None = None
    """The operation's arguments (for ``operation``; also for a rejected call that named one)."""
    text: str = ""
    """For ``meta``: the answer; for ``rejected``: the teaching error returned to the model."""
    error_type: str | None = None
    """For ``rejected``: ``not_exposed``, ``not_loaded``, ``schema_invalid``, ``unknown_operation``, ..."""
    issues: tuple[ArgIssue, ...] = ()
    """Argument problems behind a ``schema_invalid`` rejection."""
    meta: str | None = None
    """For ``meta``: ``help``, ``load`` or ``search``."""
    hits: tuple[Returned, ...] | None = None
    """For a meta call that returned operations (search, load, ``search_api``, ``describe``): them, best first.

    Recorded in the call's ``hits`` column, so that readers (the report's retrieval funnel) never parse ``text``;
    None for every other dispatch (an empty tuple: the call returned no operation)."""

    @property
    def boundary_violation(self) -> bool:
        return self.error_type == NOT_EXPOSED

    @property
    def protocol_violation(self) -> bool:
        return self.error_type == NOT_LOADED


def typed_tool(op: Operation) -> ToolSpec:
    """The operation as its own tool: its name, its description, its schema (never copied or edited)."""
    return ToolSpec(name=op.name, description=op.description, parameters=op.parameters)


def help_text(op: Operation) -> str:
    """Help payload for one operation: its description and compact schema."""
    return f"{op.name}: {op.description}\nargs schema: {compact_json(op.parameters)}"


def coerce_args(raw: Any) -> Any:
    """Models sometimes send the arguments object as a JSON string; accept that one wrapping."""
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        return parsed
    if raw is None:
        return {}
    return raw


class Session:
    """Per-episode state of a surface; subclasses override the hooks they need."""

    def __init__(self, surface: Surface, request: str = "") -> None:
        self.surface = surface
        self.request = request
        self._shown: dict[str, ToolSpec] = {}
        self._guidance: str | None = None

    # -- what the model sees --------------------------------------------------------------------
    def current_tools(self) -> list[ToolSpec]:
        """The tools this turn (override for dynamic surfaces)."""
        return self.surface.static_tools()

    def tools(self) -> list[ToolSpec]:
        """Tools for the coming model call; only these may be called until the next call to ``tools``."""
        tools = self.current_tools()
        self._shown = {t.name: t for t in tools}
        return tools

    def system_text(self) -> str:
        """The surface's system text, then the guidance its ``guidance`` option picks for this request."""
        guidance = self.guidance_text()
        base = self.surface.system_text()
        return f"{base}\n\n{guidance}" if base and guidance else base or guidance

    def guidance_text(self) -> str:
        """The guidance snippets injected for this episode's request ("" without the option or a match)."""
        if self._guidance is None:
            guide = self.surface.guide
            self._guidance = guide.text(self.request) if guide is not None else ""
        return self._guidance

    def operations_shown(self) -> list[str]:
        """The canonical operations the model can call at this step, after :meth:`tools`, in the surface's order.

        "Shown" means callable directly (an operation's typed tool in this step's tool block) or by name through a
        shown tool (a dispatcher's operations, an SDK's functions, the operations a command tool routes to:
        :meth:`Surface.named_operations`). Preselect's are in its retrieval's rank order. Recorded per step.
        """
        typed = [name for name in self._shown if name in self.surface.catalog]
        return list(dict.fromkeys([*typed, *self.surface.named_operations()]))

    # -- where calls go -------------------------------------------------------------------------
    def dispatch(self, call: ToolCall) -> Dispatch:
        if not self._shown:
            self.tools()
        if call.name not in self._shown:
            return self.reject_unshown(call)
        handler = self.surface.meta_handlers().get(call.name)
        if handler is not None:
            return handler(self, call)
        op = self.surface.catalog.get(call.name)
        if op is None:  # a shown tool that is neither meta nor an operation: a surface bug
            raise RuntimeError(f"surface {self.surface.name!r} showed tool {call.name!r} but cannot route it")
        return self.surface.route(call.name, op, coerce_args(call.arguments), self.surface.typed_schema_hint(op))

    def reject_unshown(self, call: ToolCall) -> Dispatch:
        """A call to a tool not shown this turn: a boundary violation unless the surface says otherwise."""
        shown = list(self._shown)
        near = closest(call.name, shown)
        tip = f" Did you mean {', '.join(near)}?" if near else ""
        listed = ", ".join(shown[:LIST_MAX]) or "none"
        if len(shown) > LIST_MAX:  # the tool block already lists them all; keep the error short
            listed += f", ... ({len(shown)} in all)"
        text = f"Tool '{call.name}' is not available.{tip} Available tools: {listed}."
        op = call.name if call.name in self.surface.catalog else None
        return Dispatch("rejected", call.name, operation=op, text=text, error_type=NOT_EXPOSED)


MetaHandler = Callable[[Session, ToolCall], Dispatch]
"""A meta tool's handler (help, load, search): the session it runs in and the call, to where the call went."""


@dataclass
class Surface:
    """A catalog transform. Subclasses set ``kind`` and override ``static_tools`` and friends."""

    catalog: Catalog
    name: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    instructions: str = ""
    """Extra system-prompt text this surface adds (counted as surface system-text bytes)."""
    guide: Guide | None = field(default=None, init=False, repr=False, compare=False)
    """The ``guidance`` option over the catalog's snippets (bench.catalog.guidance), any kind's; None: unset."""

    kind: ClassVar[str] = ""
    request_dependent: ClassVar[bool] = False
    """True when the tools shown depend on the user's request (pre-selection)."""
    session_class: ClassVar[type[Session]] = Session
    allowed_params: ClassVar[frozenset[str]] = frozenset()
    error_types: ClassVar[dict[str, str]] = {}
    """Error types this surface's dispatch emits beyond the core ones (bench.base.taxonomy): name -> meaning."""

    def __post_init__(self) -> None:
        self.name = self.name or self.kind
        unknown = set(self.params) - self.allowed_params - {GUIDANCE_PARAM}
        if unknown:
            accepted = ", ".join(sorted(self.allowed_params | {GUIDANCE_PARAM}))
            raise ValueError(f"surface {self.kind!r}: unknown parameter(s) {sorted(unknown)}; accepted: {accepted}")
        self.guide = make_guide(self.catalog, self.params.get(GUIDANCE_PARAM), self.kind)
        self.setup()

    requires: ClassVar[frozenset[str]] = frozenset()
    """Operations the catalog must have (surfaces hand-written over one suite's operations)."""

    @classmethod
    def applies_to(cls, catalog: Catalog) -> bool:
        """Whether this surface can be built over ``catalog`` at all."""
        return all(name in catalog for name in cls.requires)

    def setup(self) -> None:
        """Derive this surface's tools from the catalog and its params (called once)."""

    def session(self, request: str = "") -> Session:
        return self.session_class(self, request)

    def prefetch(self, requests: Sequence[str]) -> None:
        """Prepare sessions for these requests in one batch (request-dependent surfaces)."""

    def static_tools(self) -> list[ToolSpec]:
        return []

    def candidate_tools(self) -> list[ToolSpec]:
        """Every tool a first turn can show, whatever the request (part of the cell identity).

        The static block and, on a request-dependent surface, the typed tool of every operation a request could
        select (its ``reachable()`` operations). With ``system_text()`` this is what the surface shows in the cell
        identity (:mod:`surfbench.bench.store.identity`): a surface whose descriptions change is another cell. Override
        it when a request can select other tools.
        """
        if self.request_dependent:
            return [*self.static_tools(), *(typed_tool(op) for op in self.reachable())]
        return self.static_tools()

    def system_text(self) -> str:
        return self.instructions

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {}

    @property
    def guided(self) -> bool:
        """Whether the ``guidance`` option is set: the system text then depends on the request."""
        return self.guide is not None

    def guidance_candidates(self) -> list[str]:
        """Every guidance snippet's text a request can get (part of the cell identity); [] without the option."""
        return [render([s]) for s in self.guide.snippets] if self.guide is not None else []

    def reachable(self) -> Sequence[Operation]:
        """Operations a model can reach through this surface at all (loaded or not)."""
        return list(self.catalog.operations)

    def named_operations(self) -> Sequence[str]:
        """Operations callable by name through one of the static tools (a dispatcher, an SDK, a command tool).

        Part of what a step shows (:meth:`Session.operations_shown`); typed tools are counted there already.
        """
        return []

    @property
    def retrieves(self) -> bool:
        """Whether this surface shows or returns operations by retrieval (a row of the report's funnel)."""
        return False

    def notes(self) -> list[str]:
        """Caveats a report should show next to this surface's numbers."""
        return []

    def help_payload(self, op: Operation) -> str | None:
        """The schema-delivery text a help tool returns for ``op``, where the surface has one."""
        return None

    def typed_schema_hint(self, op: Operation) -> str:
        return f"Its schema is the parameters of tool '{op.name}'."

    def route(self, tool: str, op: Operation, args: Any, schema_hint: str) -> Dispatch:
        """Validate ``args`` against the operation's own schema; route or reject with a teaching error."""
        issues = validate_args(args, op.parameters)
        if issues:
            text = f"Invalid arguments for '{op.name}':\n{describe_issues(issues)}\n{schema_hint}"
            return Dispatch(
                "rejected",
                tool,
                operation=op.name,
                args=args if isinstance(args, dict) else None,
                text=text,
                error_type=SCHEMA_INVALID,
                issues=tuple(issues),
            )
        return Dispatch("operation", tool, operation=op.name, args=args)


def names_or_none(values: Iterable[str]) -> str:
    text = ", ".join(values)
    return text or "none"


MAX_CATEGORIES = 20
"""Categories a search tool's description names by default (``max_categories``; null: every one)."""


def category_limit(params: Mapping[str, Any]) -> int | None:
    """A surface's ``max_categories`` parameter, checked: a whole number from 1, or None for all.

    Raises:
        ValueError: any other value.
    """
    value = params.get("max_categories", MAX_CATEGORIES)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"max_categories={value!r}: must be a whole number from 1, or null (name every category)")
    return value
