"""``bash``: one tool, a bash command (the four-tools seed's v0). Workspace suite only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from surfbench.bench.contracts.surface import MetaHandler, Surface, ToolSpec
from surfbench.surfaces import register
from surfbench.surfaces._exec import RUN_STEPS, bash_handler, bash_tool, require_ops


@register
class BashSurface(Surface):
    kind = "bash"
    requires = frozenset({RUN_STEPS})

    def setup(self) -> None:
        require_ops(self, self.requires)
        self._tool = bash_tool()

    def static_tools(self) -> list[ToolSpec]:
        return [self._tool]

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {self._tool.name: bash_handler(self, self._tool)}

    def named_operations(self) -> Sequence[str]:
        return [RUN_STEPS]  # what its bash tool routes to
