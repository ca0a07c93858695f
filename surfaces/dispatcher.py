"""``dispatcher``: one ``{operation, args}`` tool plus a help tool ``{operation}``.

The dispatcher's description lists the catalog (``catalog: oneline | grouped | none``). Arguments are
validated against the named operation's own schema; every error says how to get that schema. Help
returns the operation's description and compact schema as a tool result, so the request prefix (the
tool block) never changes during an episode.

Pass-through parameters (``Catalog.passthrough``: an ``instance`` every operation takes) become top-level
arguments beside ``operation`` and ``args``, described once in the tool's schema instead of in every
operation's; help shows the schema without them and says where they go. A call may still put one inside
``args`` (the operation's own schema has it); given in both places with different values, it is rejected.
``passthrough: args`` keeps them inside ``args`` only (the plain dispatcher, for comparing the two forms).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from surfbench.bench.base.validation import closest, short
from surfbench.bench.catalog.catalog import JsonSchema, Operation
from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.contracts.surface import (
    BAD_META_CALL,
    SCHEMA_INVALID,
    UNKNOWN_OPERATION,
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    coerce_args,
    help_text,
)
from surfbench.surfaces import register
from surfbench.surfaces.listing import LISTINGS, render_listing


def tool_prefix(catalog_name: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]+", "_", catalog_name).strip("_") or "ops"


PASSTHROUGH_FORMS = ("top", "args")


def passthrough_schemas(shared: Mapping[str, JsonSchema], form: Any, kind: str) -> dict[str, JsonSchema]:
    """The pass-through parameters a dispatcher lifts beside 'operation': all (``top``) or none (``args``)."""
    if form not in PASSTHROUGH_FORMS:
        raise ValueError(f"surface {kind!r}: passthrough must be one of {', '.join(PASSTHROUGH_FORMS)}, got {form!r}")
    return dict(shared) if form == "top" else {}


class Dispatcher:
    """The dispatcher + help pair over a set of operations; used by ``dispatcher`` and ``core``."""

    def __init__(
        self,
        ops: Sequence[Operation],
        prefix: str,
        listing: str,
        noun: str = "operation",
        shared: Mapping[str, JsonSchema] | None = None,
    ) -> None:
        if listing not in LISTINGS:
            raise ValueError(f"catalog listing must be one of {', '.join(LISTINGS)}, got {listing!r}")
        self.ops = {op.name: op for op in ops}
        self.call_name = prefix
        self.help_name = f"{prefix}_help"
        self.shared = {k: v for k, v in (shared or {}).items() if k not in ("operation", "args")}
        """Pass-through parameters, top-level beside ``operation`` (name -> schema); {} for none."""
        catalog_text = render_listing(list(ops), listing)
        description = (
            f"Run one {noun}: pass its name as 'operation' and its arguments as the object 'args'. "
            f"Arguments are checked against the {noun}'s schema; call {self.help_name} "
            '{"operation": NAME} to get the schema of one you have not used.'
        )
        if self.shared:
            names = " and ".join(f"'{name}'" for name in self.shared)
            description += f" {names} (every {noun} takes it) goes beside 'operation', not inside 'args'."
        if catalog_text:
            description += f"\n{noun.capitalize()}s:\n{catalog_text}"
        self.call_tool = ToolSpec(
            name=self.call_name,
            description=description,
            parameters={
                "type": "object",
                "properties": {
                    "operation": {"type": "string", "description": f"{noun} name"},
                    "args": {"type": "object", "description": f"arguments of the {noun}"},
                    **self.shared,
                },
                "required": ["operation"],
                "additionalProperties": False,
            },
        )
        self.help_tool = ToolSpec(
            name=self.help_name,
            description=f"Return the description and JSON Schema of one {noun}.",
            parameters={
                "type": "object",
                "properties": {"operation": {"type": "string", "description": f"{noun} name"}},
                "required": ["operation"],
                "additionalProperties": False,
            },
        )

    @property
    def tools(self) -> list[ToolSpec]:
        return [self.call_tool, self.help_tool]

    def hint(self, name: str) -> str:
        return f'Call {self.help_name} {{"operation": "{name}"}} for its schema.'

    def _unknown(self, tool: str, name: object) -> Dispatch:
        near = closest(str(name), self.ops)
        tip = f" Nearest: {', '.join(near)}." if near else ""
        text = f"Unknown operation {short(name)}.{tip} {self.hint(near[0] if near else 'NAME')}"
        return Dispatch("rejected", tool, text=text, error_type=UNKNOWN_OPERATION)

    def handlers(self, surface: Surface) -> dict[str, MetaHandler]:
        def call(session: Session, tc: ToolCall) -> Dispatch:
            raw = coerce_args(tc.arguments)
            if not isinstance(raw, Mapping) or "operation" not in raw:
                text = (
                    f'{self.call_name} needs {{"operation": NAME, "args": {{...}}}}; got {short(raw)}. '
                    f"{self.hint('NAME')}"
                )
                return Dispatch("rejected", tc.name, text=text, error_type=BAD_META_CALL)
            name = raw["operation"]
            op = self.ops.get(name) if isinstance(name, str) else None
            if op is None:
                return self._unknown(tc.name, name)
            stray = sorted(set(raw) - {"operation", "args", *self.shared})
            if stray:
                text = (
                    f"Put the arguments of '{op.name}' inside 'args', not beside 'operation' "
                    f"(found {', '.join(stray)}). {self.hint(op.name)}"
                )
                return Dispatch(
                    "rejected",
                    tc.name,
                    operation=op.name,
                    args={k: raw[k] for k in stray},
                    text=text,
                    error_type=SCHEMA_INVALID,
                )
            args = coerce_args(raw.get("args", {}))
            if self.shared and isinstance(args, Mapping):
                clash = self._clash(op, raw, args)
                if clash is not None:
                    return Dispatch(
                        "rejected", tc.name, operation=op.name, args=dict(args), text=clash, error_type=SCHEMA_INVALID
                    )
                args = {**args, **{k: raw[k] for k in self.shared if k in raw}}  # routed: the operation's own args
            return surface.route(tc.name, op, args, self.hint(op.name))

        def help_(session: Session, tc: ToolCall) -> Dispatch:
            raw = coerce_args(tc.arguments)
            name = raw.get("operation") if isinstance(raw, Mapping) else None
            op = self.ops.get(name) if isinstance(name, str) else None
            if op is None:
                miss = self._unknown(tc.name, name)
                return Dispatch("meta", tc.name, text=miss.text, meta="help", error_type=UNKNOWN_OPERATION)
            return Dispatch("meta", tc.name, operation=None, text=self.help_text(op), meta="help")

        return {self.call_name: call, self.help_name: help_}

    def _clash(self, op: Operation, raw: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
        """The error for a pass-through parameter given beside 'operation' and inside 'args' with other values."""
        for name in self.shared:
            if name in raw and name in args and raw[name] != args[name]:
                return (
                    f"'{name}' is given twice with different values ({short(raw[name])} beside 'operation', "
                    f"{short(args[name])} inside 'args'): give it once, beside 'operation'. {self.hint(op.name)}"
                )
        return None

    def help_text(self, op: Operation) -> str:
        """The help payload: the operation's description and schema; pass-through parameters said apart, once."""
        if not self.shared:
            return help_text(op)
        params = dict(op.parameters)
        params["properties"] = {k: v for k, v in op.parameters.get("properties", {}).items() if k not in self.shared}
        lines = [f"{op.name}: {op.description}", f"args schema: {compact_json(params)}"]
        lines += [
            f"{name}: beside 'operation', not inside 'args' (every operation takes it): {compact_json(schema)}"
            for name, schema in self.shared.items()
        ]
        return "\n".join(lines)

    def help_payload(self, op: Operation) -> str | None:
        return self.help_text(op) if op.name in self.ops else None


@register
class DispatcherSurface(Surface):
    kind = "dispatcher"
    allowed_params = frozenset({"catalog", "tool_name", "passthrough"})

    def setup(self) -> None:
        prefix = self.params.get("tool_name") or tool_prefix(self.catalog.name)
        shared = passthrough_schemas(self.catalog.passthrough, self.params.get("passthrough", "top"), self.kind)
        self.dispatcher = Dispatcher(
            self.catalog.operations, prefix, self.params.get("catalog", "oneline"), shared=shared
        )
        self._handlers = self.dispatcher.handlers(self)

    def static_tools(self) -> list[ToolSpec]:
        return self.dispatcher.tools

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return self._handlers

    def named_operations(self) -> Sequence[str]:
        return list(self.dispatcher.ops)

    def help_payload(self, op: Operation) -> str | None:
        return self.dispatcher.help_payload(op)
