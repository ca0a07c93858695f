"""The catalog stage: operations, their wire form, and where they come from.

Catalogs: operations and their schemas (``catalog``), importers from OpenAPI, Python callables and tool JSON
(``importers/``), the wire form and its bytes and tokens (``wire``), provider limits (``provider_limits``), the
pool of real operations and catalog growth's source (``pool``), retrievers for search and pre-selection
(``retrieval``, ``embedding``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import (
        Catalog as Catalog,
    )
    from surfbench.bench.catalog.catalog import (
        CatalogError as CatalogError,
    )
    from surfbench.bench.catalog.catalog import (
        Operation as Operation,
    )
    from surfbench.bench.catalog.catalog import (
        operation as operation,
    )
    from surfbench.bench.catalog.pool import Pool as Pool
    from surfbench.bench.catalog.pool import PoolError as PoolError
    from surfbench.bench.catalog.pool import load_pool as load_pool
    from surfbench.bench.catalog.retrieval import Hit as Hit
    from surfbench.bench.catalog.retrieval import Retriever as Retriever
    from surfbench.bench.catalog.retrieval import make_retriever as make_retriever
    from surfbench.bench.catalog.wire import (
        count_tokens as count_tokens,
    )
    from surfbench.bench.catalog.wire import (
        tool_wire_bytes as tool_wire_bytes,
    )
    from surfbench.bench.catalog.wire import (
        tool_wire_text as tool_wire_text,
    )

EXPORTS = {
    "Catalog": "catalog",
    "CatalogError": "catalog",
    "Hit": "retrieval",
    "Operation": "catalog",
    "Pool": "pool",
    "PoolError": "pool",
    "Retriever": "retrieval",
    "count_tokens": "wire",
    "load_pool": "pool",
    "make_retriever": "retrieval",
    "operation": "catalog",
    "tool_wire_bytes": "wire",
    "tool_wire_text": "wire",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
