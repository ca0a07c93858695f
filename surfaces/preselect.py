"""``preselect``: rank the operations against the user's request; expose only the best few.

Before generation, the top ``k`` operations whose similarity clears a threshold become the episode's
tools (ollie-lessons-learned: five tool hints per request).

Retrievers: ``bm25`` (no model), ``embedding`` (all-MiniLM-L6-v2 from PyPI, run in numpy) or ``hybrid``
(both, reciprocal-rank fusion). ``min_k``: when fewer than ``min_k`` operations clear the threshold, the
best ``min_k`` are shown anyway (default 0: none). The set is fixed for the episode; calls to anything
else are boundary violations.
"""

from __future__ import annotations

from collections.abc import Sequence

from surfbench.bench.catalog.retrieval import Hit, make_retriever, select_hits
from surfbench.bench.contracts.surface import Session, Surface, ToolSpec, typed_tool
from surfbench.surfaces import register


class PreselectSession(Session):
    def __init__(self, surface: Surface, request: str = "") -> None:
        super().__init__(surface, request)
        assert isinstance(surface, PreselectSurface)
        self.hits = surface.select(request)
        self._tools = [typed_tool(surface.catalog[h.operation]) for h in self.hits]

    def current_tools(self) -> list[ToolSpec]:
        return list(self._tools)


@register
class PreselectSurface(Surface):
    kind = "preselect"
    session_class = PreselectSession
    request_dependent = True
    allowed_params = frozenset({"retriever", "k", "threshold", "min_k"})

    def setup(self) -> None:
        self.k = int(self.params.get("k", 5))
        self.threshold = float(self.params.get("threshold", 0.0))
        self.min_k = int(self.params.get("min_k", 0))
        if self.k < 1 or not 0.0 <= self.threshold <= 1.0 or not 0 <= self.min_k <= self.k:
            raise ValueError("surface 'preselect': k must be >= 1, threshold within [0, 1] and min_k within [0, k]")
        self.retriever = make_retriever(str(self.params.get("retriever", "bm25")), self.catalog.operations)

    @property
    def retrieves(self) -> bool:
        return True

    def prefetch(self, requests: Sequence[str]) -> None:
        self.retriever.prefetch([r for r in requests if r.strip()])

    def select(self, request: str) -> list[Hit]:
        """The operations shown for ``request``: top ``k`` with score >= threshold (and > 0), at least ``min_k``."""
        if not request.strip():
            return []
        return select_hits(self.retriever.top(request, self.k), self.k, self.threshold, self.min_k)
