"""``lazy``: a loader tool and no operation tools at first; loaded tools appear on the next turn.

The loader takes categories or operation names. Calling an operation before it was loaded and shown
is a protocol violation: rejected (never reaches the backend) and recorded as ``not_loaded``. The
seed (ollie-lessons-learned) reports that small models skip this step: this surface measures that.

``delivery``: ``rewrite`` (the default) adds each loaded operation's typed tool to the tool block; ``append``
keeps the tool block as it was (the request prefix stays the same, so a prompt cache keeps serving it) and
returns the loaded operations' schemas in the loader's result instead; from the next turn they are callable by
name, as hosted tool search delivers deferred tools. An endpoint that only accepts calls to the tools listed in
the request (llama.cpp's tool-call grammar in native mode) cannot make those calls: use ``mode: prompted`` there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from surfbench.bench.base.validation import closest, short
from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.contracts.surface import (
    BAD_META_CALL,
    NOT_LOADED,
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    coerce_args,
    ranked,
    typed_tool,
)
from surfbench.surfaces import register
from surfbench.surfaces.listing import render_listing

LOADER = "load_tools"
DELIVERIES = ("rewrite", "append")
"""How loaded (or found) operations become callable: a rewritten tool block, or an append-only tool result."""


def delivery(params: Mapping[str, Any], kind: str) -> str:
    """The surface's ``delivery`` parameter, checked (``rewrite`` by default)."""
    value = params.get("delivery", "rewrite")
    if value not in DELIVERIES:
        raise ValueError(f"surface {kind!r}: delivery={value!r} must be one of {', '.join(DELIVERIES)}")
    return str(value)


def schema_lines(surface: Surface, names: list[str]) -> list[str]:
    """One compact JSON line per operation: its name, description and parameters (what the model calls it by)."""
    return [
        compact_json({"name": op.name, "description": op.description, "parameters": op.parameters})
        for op in surface.catalog.subset(names)
    ]


class LazySession(Session):
    def __init__(self, surface: Surface, request: str = "") -> None:
        super().__init__(surface, request)
        self.loaded: list[str] = []
        self.pending: list[str] = []

    @property
    def appends(self) -> bool:
        """Loaded operations come as a tool result, callable by name; the tool block never changes."""
        return getattr(self.surface, "delivery", "rewrite") == "append"

    def current_tools(self) -> list[ToolSpec]:
        self.loaded += [n for n in self.pending if n not in self.loaded]
        self.pending = []
        if self.appends:
            return self.surface.static_tools()
        ops = [self.surface.catalog[n] for n in self.loaded]
        return self.surface.static_tools() + [typed_tool(op) for op in ops]

    def operations_shown(self) -> list[str]:
        shown = super().operations_shown()
        return list(dict.fromkeys([*shown, *self.loaded])) if self.appends else shown

    def dispatch(self, call: ToolCall) -> Dispatch:
        if not self._shown:
            self.tools()
        op = self.surface.catalog.get(call.name)
        if self.appends and op is not None and call.name in self.loaded and call.name not in self._shown:
            return self.surface.route(call.name, op, coerce_args(call.arguments), self.surface.typed_schema_hint(op))
        return super().dispatch(call)

    def reject_unshown(self, call: ToolCall) -> Dispatch:
        if call.name in self.surface.catalog:
            when = "it becomes callable on your next turn" if call.name in self.pending else "load it first"
            text = (
                f"Operation '{call.name}' is not loaded: {when}. "
                f'Call {LOADER} {{"names": ["{call.name}"]}}, then call it on the next turn.'
            )
            args = coerce_args(call.arguments)
            return Dispatch(
                "rejected",
                call.name,
                operation=call.name,
                args=args if isinstance(args, dict) else None,
                text=text,
                error_type=NOT_LOADED,
            )
        return super().reject_unshown(call)


@register
class LazySurface(Surface):
    kind = "lazy"
    session_class = LazySession
    allowed_params = frozenset({"listing", "delivery"})

    def setup(self) -> None:
        self.delivery = delivery(self.params, self.kind)
        listing = self.params.get("listing", "grouped")
        cats = self.catalog.categories
        text = render_listing(list(self.catalog.operations), listing)
        description = (
            "Load operations so that you can call them. Pass 'categories' to load whole categories or "
            "'names' to load single operations; loaded operations become callable tools on your next turn."
            if self.delivery == "rewrite"
            else "'names' to load single operations; the result gives their schemas, and from your next turn you "
            "call them by name like any tool."
        )
        if text:
            description += f"\nOperations:\n{text}"
        self.loader = ToolSpec(
            name=LOADER,
            description=description,
            parameters={
                "type": "object",
                "properties": {
                    "categories": {"type": "array", "items": {"type": "string", "enum": cats}},
                    "names": {"type": "array", "items": {"type": "string"}},
                },
                "additionalProperties": False,
            },
        )

    def static_tools(self) -> list[ToolSpec]:
        return [self.loader]

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {LOADER: _load}

    @property
    def retrieves(self) -> bool:
        return True

    def typed_schema_hint(self, op: Operation) -> str:
        if self.delivery == "append":
            return f"Its schema is in the {LOADER} result that loaded it."
        return super().typed_schema_hint(op)

    def notes(self) -> list[str]:
        if self.delivery == "append":
            return ["append delivery: loaded operations are called by name without being in the tool block"]
        return []


def _load(session: Session, call: ToolCall) -> Dispatch:
    assert isinstance(session, LazySession)
    catalog = session.surface.catalog
    raw: Any = coerce_args(call.arguments)
    if not isinstance(raw, Mapping) or not (raw.get("categories") or raw.get("names")):
        text = f'{LOADER} needs "categories" or "names" (lists of strings); got {short(raw)}.'
        return Dispatch("meta", call.name, text=text, meta="load", error_type=BAD_META_CALL)
    wanted: list[str] = []
    problems: list[str] = []
    for cat in raw.get("categories") or []:
        names = [op.name for op in catalog.operations if op.category == cat]
        if not names:
            near = closest(str(cat), catalog.categories)
            problems.append(f"no category {short(cat)}" + (f" (did you mean {near[0]}?)" if near else ""))
        wanted += names
    for name in raw.get("names") or []:
        if name in catalog:
            wanted.append(name)
        else:
            near = closest(str(name), catalog.names)
            problems.append(f"no operation {short(name)}" + (f" (did you mean {', '.join(near)}?)" if near else ""))
    new = [n for n in dict.fromkeys(wanted) if n not in session.loaded and n not in session.pending]
    session.pending += new
    text = f"Loaded {len(new)} operation(s), callable on your next turn: {', '.join(new) or 'none new'}."
    if problems:
        text += " " + "; ".join(problems) + "."
    if session.appends and new:  # append delivery: the schemas come here, the tool block stays as it is
        text += "\nCall them by name with these arguments:\n" + "\n".join(schema_lines(session.surface, new))
    return Dispatch("meta", call.name, text=text, meta="load", hits=ranked(dict.fromkeys(wanted)))
