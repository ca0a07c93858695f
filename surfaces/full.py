"""``full``: every operation as its own typed tool (the canonical surface, the baseline)."""

from __future__ import annotations

from surfbench.bench.contracts.surface import Surface, ToolSpec, typed_tool
from surfbench.surfaces import register


@register
class FullSurface(Surface):
    kind = "full"

    def setup(self) -> None:
        self._tools = [typed_tool(op) for op in self.catalog.operations]

    def static_tools(self) -> list[ToolSpec]:
        return list(self._tools)
