"""``search``: a search tool returns the schemas of the best matches; hits become callable next turn.

This is the tool-search / deferred-loading pattern.

Calling an operation that no search returned yet is a protocol violation (``not_loaded``).
Parameters: ``retriever`` (``bm25``, ``embedding``, ``hybrid``), ``top_n`` (hits per search),
``threshold`` (least score of a hit) and ``min_k`` (at least this many hits when fewer clear it), and
``delivery`` (``rewrite``: hits join the tool block; ``append``: the tool block never changes and hits are called by
name from the next turn, their schemas being in the search result: see :mod:`surfbench.surfaces.lazy`).
"""

from __future__ import annotations

from collections.abc import Mapping

from surfbench.bench.base.validation import short
from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.catalog.retrieval import make_retriever, select_hits
from surfbench.bench.contracts.surface import (
    BAD_META_CALL,
    NOT_LOADED,
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    category_limit,
    coerce_args,
    ranked,
)
from surfbench.surfaces import register
from surfbench.surfaces.lazy import LazySession, delivery, schema_lines

SEARCH = "search_tools"


class SearchSession(LazySession):
    def reject_unshown(self, call: ToolCall) -> Dispatch:
        rejected = super().reject_unshown(call)
        if rejected.protocol_violation:
            text = (
                f"Operation '{call.name}' is not available yet. Call {SEARCH} with a short description of "
                "what you want to do; the operations it returns become callable on your next turn."
            )
            return Dispatch(
                "rejected",
                call.name,
                operation=call.name,
                args=rejected.args,
                text=text,
                error_type=NOT_LOADED,
            )
        return rejected


@register
class SearchSurface(Surface):
    kind = "search"
    session_class = SearchSession
    allowed_params = frozenset({"retriever", "top_n", "threshold", "min_k", "max_categories", "delivery"})

    def setup(self) -> None:
        self.delivery = delivery(self.params, self.kind)
        self.top_n = int(self.params.get("top_n", 5))
        self.threshold = float(self.params.get("threshold", 0.0))
        self.min_k = int(self.params.get("min_k", 0))
        if self.top_n < 1 or not 0.0 <= self.threshold <= 1.0 or not 0 <= self.min_k <= self.top_n:
            raise ValueError("surface 'search': top_n must be >= 1, threshold within [0, 1], min_k within [0, top_n]")
        self.retriever_kind = str(self.params.get("retriever", "bm25"))
        self.retriever = make_retriever(self.retriever_kind, self.catalog.operations)
        cats = self.catalog.category_summary(category_limit(self.params))
        self.tool = ToolSpec(
            name=SEARCH,
            description=(
                f"Search {len(self.catalog)} operations ({cats}) by what you want to do. Returns the best "
                f"matches with their argument schemas; they become callable tools on your next turn."
                if self.delivery == "rewrite"
                else f"Search {len(self.catalog)} operations ({cats}) by what you want to do. Returns the best "
                f"matches with their argument schemas; from your next turn you call them by name like any tool."
            ),
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what you want to do"}},
                "required": ["query"],
                "additionalProperties": False,
            },
        )

    def static_tools(self) -> list[ToolSpec]:
        return [self.tool]

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {SEARCH: _search}

    @property
    def retrieves(self) -> bool:
        return True

    def typed_schema_hint(self, op: Operation) -> str:
        if self.delivery == "append":
            return f"Its schema is in the {SEARCH} result that found it."
        return super().typed_schema_hint(op)

    def notes(self) -> list[str]:
        if self.delivery == "append":
            return ["append delivery: found operations are called by name without being in the tool block"]
        return []


def _search(session: Session, call: ToolCall) -> Dispatch:
    assert isinstance(session, SearchSession) and isinstance(session.surface, SearchSurface)
    surface = session.surface
    raw = coerce_args(call.arguments)
    query = raw.get("query") if isinstance(raw, Mapping) else None
    if not isinstance(query, str) or not query.strip():
        text = f'{SEARCH} needs {{"query": "what you want to do"}}; got {short(raw)}.'
        return Dispatch("meta", call.name, text=text, meta="search", error_type=BAD_META_CALL)
    hits = select_hits(surface.retriever.top(query, surface.top_n), surface.top_n, surface.threshold, surface.min_k)
    names = [h.operation for h in hits]
    session.pending += [n for n in names if n not in session.loaded and n not in session.pending]
    returned = ranked(names, [h.score for h in hits])
    if not hits:
        return Dispatch("meta", call.name, text="No operation matches that query.", meta="search", hits=returned)
    lines = schema_lines(surface, names)
    when = "callable on your next turn" if surface.delivery == "rewrite" else "call them by name from your next turn"
    text = f"Matches ({when}):\n" + "\n".join(lines)
    return Dispatch("meta", call.name, text=text, meta="search", hits=returned)
