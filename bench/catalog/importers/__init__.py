"""Build a :class:`~bench.catalog.catalog.Catalog` from a file or a Python ``module:attr`` spec.

Formats: ``openai``, ``anthropic``, ``mcp``, ``openapi`` (OpenAPI 3.x and Swagger 2.0), ``bfcl``,
``python`` (callables with Google docstrings) and ``native`` (surfbench's own JSON/YAML). Without an
explicit format the shape of the document decides. Loading is all-or-nothing: any error raises one
:class:`~bench.catalog.catalog.CatalogError` and no catalog is returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from surfbench.bench.catalog.catalog import Catalog, CatalogError, Operation
from surfbench.bench.catalog.importers.common import check_descriptions, exists, read_document
from surfbench.bench.catalog.importers.openapi import import_openapi
from surfbench.bench.catalog.importers.pycallable import import_callables
from surfbench.bench.catalog.importers.tools_json import (
    import_anthropic,
    import_bfcl,
    import_mcp,
    import_native,
    import_openai,
)

Importer = Callable[[object, str], list[Operation]]
IMPORTERS: dict[str, Importer] = {
    "openai": import_openai,
    "anthropic": import_anthropic,
    "mcp": import_mcp,
    "openapi": import_openapi,
    "bfcl": import_bfcl,
    "native": import_native,
}
FORMATS = (*IMPORTERS, "python")


def detect_format(doc: object, source: str) -> str:
    """Guess the format from the document's shape."""
    if isinstance(doc, Mapping):
        if "surfbench_catalog" in doc:
            return "native"
        if "openapi" in doc or "swagger" in doc:
            return "openapi"
        if "result" in doc and isinstance(doc["result"], Mapping) and "tools" in doc["result"]:
            return "mcp"
        if "tools" in doc:
            doc = doc["tools"]
    if isinstance(doc, list) and doc and isinstance(doc[0], Mapping):
        first = doc[0]
        if "inputSchema" in first:
            return "mcp"
        if "input_schema" in first:
            return "anthropic"
        if first.get("type") == "function" or "function" in first and isinstance(first["function"], Mapping):
            return "openai"
        if "question" in first or "parameters" in first:
            return "bfcl"  # BFCL docs and the legacy OpenAI 'functions' shape share this importer
    raise CatalogError(
        source,
        "cannot tell the catalog format (expected OpenAI/Anthropic/MCP tools, OpenAPI, BFCL or a native "
        f"catalog); pass the format explicitly, one of {', '.join(FORMATS)}",
    )


def _import(fmt: str, doc: object, source: str) -> list[Operation]:
    """Run one importer; a shape it did not foresee is still one error naming the file, never a traceback."""
    try:
        return IMPORTERS[fmt](doc, source)
    except CatalogError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
        raise CatalogError(source, f"malformed {fmt} document ({type(exc).__name__}: {exc})") from None


def _default_name(source: str) -> str:
    stem = Path(source.split(":")[-1] if ":" in source and not exists(Path(source)) else source).stem
    stem = re.sub(r"[-.]?(swagger|openapi|tools|catalog|mcp)$", "", stem.lower())
    stem = re.sub(r"[-.]\d.*$", "", stem)
    return re.sub(r"[^a-z0-9_]+", "_", stem).strip("_") or "catalog"


def load_catalog(source: str | Path, fmt: str | None = None, name: str | None = None) -> Catalog:
    """Load a catalog; ``source`` is a file path or, for ``python``, ``module:attr``."""
    text = str(source)
    if fmt is not None and fmt not in FORMATS:
        raise CatalogError(text, f"unknown catalog format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not text.strip():
        raise CatalogError(text, "no catalog given (an empty path)")
    path = Path(text)
    looks_python = re.fullmatch(r"[\w.]+(:\w+)?", text) or re.fullmatch(r".+\.py:\w+", text)
    declared: Any = None
    if fmt == "python" or (fmt is None and not exists(path) and looks_python):
        operations = import_callables(text)
        doc_name = None
    else:
        doc = read_document(path)
        fmt = fmt or detect_format(doc, text)
        operations = _import(fmt, doc, text)
        doc_name = doc.get("name") if fmt == "native" and isinstance(doc, Mapping) else None
        if doc_name is not None and not isinstance(doc_name, str):
            raise CatalogError(text, f"field 'name' must be a string, got {doc_name!r}")
        declared = doc.get("passthrough") if fmt == "native" and isinstance(doc, Mapping) else None
        if declared is not None and (not isinstance(declared, list) or not all(isinstance(d, str) for d in declared)):
            raise CatalogError(text, f"field 'passthrough' must be a list of parameter names, got {declared!r}")
    if not operations:
        raise CatalogError(text, "the catalog has no operations")
    check_descriptions(operations, text)
    return Catalog(
        name=name or doc_name or _default_name(text),
        operations=tuple(operations),
        source=text,
        declared_passthrough=tuple(declared) if declared is not None else None,
    )
