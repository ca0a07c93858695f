"""``four``: bash, read_file, write_file, edit_file (the four-tools seed). Workspace suite only.

The three file tools are the catalog's own operations as typed tools; ``bash`` runs one command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from surfbench.bench.contracts.surface import MetaHandler, Surface, ToolSpec, typed_tool
from surfbench.surfaces import register
from surfbench.surfaces._exec import FILE_OPS, RUN_STEPS, bash_handler, bash_tool, require_ops


@register
class FourSurface(Surface):
    kind = "four"
    requires = frozenset({RUN_STEPS, *FILE_OPS})

    def setup(self) -> None:
        ops = require_ops(self, self.requires)
        self._bash = bash_tool()
        self._tools = [self._bash, *(typed_tool(ops[n]) for n in FILE_OPS)]

    def static_tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {self._bash.name: bash_handler(self, self._bash)}

    def named_operations(self) -> Sequence[str]:
        return [RUN_STEPS]  # what its bash tool routes to
