"""``core``: a subset of operations as typed tools; the rest unreachable or behind a dispatcher.

The subset is an explicit list (``operations: [...]``) or the top ``k`` by traffic weight. With
``rest: dispatcher`` the other operations stay reachable through a dispatcher + help pair whose
description lists only them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.contracts.surface import MetaHandler, Surface, ToolSpec, typed_tool
from surfbench.surfaces import register
from surfbench.surfaces.dispatcher import Dispatcher, passthrough_schemas, tool_prefix


@register
class CoreSurface(Surface):
    kind = "core"
    allowed_params = frozenset({"k", "operations", "rest", "catalog", "tool_name", "passthrough"})

    def setup(self) -> None:
        explicit = self.params.get("operations")
        if explicit:
            unknown = [n for n in explicit if n not in self.catalog]
            if unknown:
                raise ValueError(f"surface 'core': operations not in catalog {self.catalog.name!r}: {unknown}")
            core = self.catalog.subset(explicit)
        else:
            k = int(self.params.get("k", 15))
            if k < 1:
                raise ValueError("surface 'core': k must be >= 1")
            core = self.catalog.by_weight()[:k]
        self.core = core
        core_names = {op.name for op in core}
        self.rest = [op for op in self.catalog.operations if op.name not in core_names]
        mode = self.params.get("rest", "none")
        if mode not in ("none", "dispatcher"):
            raise ValueError(f"surface 'core': rest must be 'none' or 'dispatcher', got {mode!r}")
        self.dispatcher: Dispatcher | None = None
        self._handlers: Mapping[str, MetaHandler] = {}
        if mode == "dispatcher" and self.rest:
            prefix = self.params.get("tool_name") or tool_prefix(self.catalog.name)
            shared = passthrough_schemas(self.catalog.passthrough, self.params.get("passthrough", "top"), self.kind)
            self.dispatcher = Dispatcher(self.rest, prefix, self.params.get("catalog", "oneline"), shared=shared)
            self._handlers = self.dispatcher.handlers(self)
        self._tools = [typed_tool(op) for op in core] + (self.dispatcher.tools if self.dispatcher else [])

    def notes(self) -> list[str]:
        if not self.params.get("operations") and not any(op.weight for op in self.catalog.operations):
            return ["the catalog has no traffic weights: core is the first k operations in catalog order"]
        return []

    def static_tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return self._handlers

    def reachable(self) -> Sequence[Operation]:
        return self.core + (self.rest if self.dispatcher else [])

    def named_operations(self) -> Sequence[str]:
        return list(self.dispatcher.ops) if self.dispatcher else []

    def help_payload(self, op: Operation) -> str | None:
        return self.dispatcher.help_payload(op) if self.dispatcher else None
