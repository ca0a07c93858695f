"""``lazy``: a loader tool and no operation tools at first; loaded tools appear on the next turn.

The loader takes categories or operation names. Calling an operation before it was loaded and shown
is a protocol violation: rejected (never reaches the backend) and recorded as ``not_loaded``. The
seed (ollie-lessons-learned) reports that small models skip this step: this surface measures that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from surfbench.bench.base.validation import closest, short
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


class LazySession(Session):
    def __init__(self, surface: Surface, request: str = "") -> None:
        super().__init__(surface, request)
        self.loaded: list[str] = []
        self.pending: list[str] = []

    def current_tools(self) -> list[ToolSpec]:
        self.loaded += [n for n in self.pending if n not in self.loaded]
        self.pending = []
        ops = [self.surface.catalog[n] for n in self.loaded]
        return self.surface.static_tools() + [typed_tool(op) for op in ops]

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
    allowed_params = frozenset({"listing"})

    def setup(self) -> None:
        listing = self.params.get("listing", "grouped")
        cats = self.catalog.categories
        text = render_listing(list(self.catalog.operations), listing)
        description = (
            "Load operations so that you can call them. Pass 'categories' to load whole categories or "
            "'names' to load single operations; loaded operations become callable tools on your next turn."
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
    return Dispatch("meta", call.name, text=text, meta="load", hits=ranked(dict.fromkeys(wanted)))
