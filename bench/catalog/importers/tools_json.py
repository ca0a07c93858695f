"""Importers for tool lists: OpenAI, Anthropic, MCP ``tools/list``, BFCL function docs, native surfbench."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from surfbench.bench.catalog.catalog import CatalogError, Operation
from surfbench.bench.catalog.importers.common import flag, make_operation, normalise_schema, require_list, tool_name


def _tools_list(doc: object, source: str) -> list[Mapping[str, object]]:
    """Accept a bare list or ``{"tools": [...]}``."""
    if isinstance(doc, Mapping) and "tools" in doc:
        doc = doc["tools"]
    return require_list(doc, source, "tools")


def import_openai(doc: object, source: str) -> list[Operation]:
    """OpenAI tools: ``[{"type": "function", "function": {name, description, parameters}}]``.

    The legacy ``functions`` shape (``[{name, description, parameters}]``) is accepted too.
    """
    ops = []
    for item in _tools_list(doc, source):
        fn = item.get("function", item)
        if not isinstance(fn, Mapping):
            raise CatalogError(source, "field 'function' must be an object", tool=tool_name(item.get("name")))
        params = normalise_schema(fn.get("parameters"), source, fn.get("name"))
        ops.append(make_operation(fn.get("name"), fn.get("description"), params, source))
    return ops


def import_anthropic(doc: object, source: str) -> list[Operation]:
    """Anthropic tools: ``[{name, description, input_schema}]``."""
    return [
        make_operation(t.get("name"), t.get("description"), t.get("input_schema"), source)
        for t in _tools_list(doc, source)
    ]


def import_mcp(doc: object, source: str) -> list[Operation]:
    """An MCP ``tools/list`` response (JSON-RPC envelope or its ``result``) or a bare list of MCP tools."""
    if isinstance(doc, Mapping) and "result" in doc:
        doc = doc["result"]
    ops = []
    for t in _tools_list(doc, source):
        notes = t.get("annotations") or {}
        if not isinstance(notes, Mapping):
            raise CatalogError(source, "field 'annotations' must be an object", tool=tool_name(t.get("name")))
        ops.append(
            make_operation(
                t.get("name"),
                t.get("description"),
                t.get("inputSchema"),
                source,
                category=cast(Mapping[str, object], t.get("_meta") or {}).get("category")
                if isinstance(t.get("_meta"), Mapping)
                else None,
                read_only=flag(notes.get("readOnlyHint"), "annotations.readOnlyHint", source, t.get("name")),
                destructive=flag(notes.get("destructiveHint"), "annotations.destructiveHint", source, t.get("name")),
                idempotent=flag(notes.get("idempotentHint"), "annotations.idempotentHint", source, t.get("name")),
            )
        )
    return ops


def import_bfcl(doc: object, source: str) -> list[Operation]:
    """BFCL function docs: a list of docs, or BFCL data rows (``{"question", "function": [...]}``).

    BFCL's ``dict``/``float``/``tuple`` types become JSON Schema types. Dotted names (``math.factorial``)
    become ``math_factorial``, as BFCL itself does for OpenAI-compatible models. Functions repeated
    across data rows are kept once.
    """
    docs: list[Mapping[str, object]] = []
    for row in require_list(doc, source, "BFCL entries"):
        if "function" in row and "question" in row:
            docs.extend(require_list(row["function"], source, "functions"))
        else:
            docs.append(row)
    ops: dict[str, Operation] = {}
    for fn in docs:
        raw = fn.get("name")
        name = raw.replace(".", "_") if isinstance(raw, str) else raw
        # BFCL's own data has a blank type (simple_javascript_23) that BFCL reads as any type
        params = normalise_schema(fn.get("parameters"), source, raw, blank_is_any=True)
        op = make_operation(name, fn.get("description"), params, source)
        if op.name in ops and ops[op.name] != op:
            raise CatalogError(source, "the same name has two different definitions", tool=op.name)
        ops[op.name] = op
    return list(ops.values())


def import_native(doc: object, source: str) -> list[Operation]:
    """Surfbench's own catalog format (what :meth:`Catalog.to_json` writes)."""
    if not isinstance(doc, Mapping) or "operations" not in doc:
        raise CatalogError(source, "native catalog needs an 'operations' list")
    allowed = {"name", "description", "parameters", "category", "weight", "read_only", "destructive", "idempotent"}
    ops = []
    for item in require_list(doc["operations"], source, "operations"):
        unknown = set(item) - allowed
        if unknown:
            fields = sorted(map(str, unknown))
            raise CatalogError(source, f"unknown field(s) {fields}", tool=tool_name(item.get("name")))
        ops.append(
            make_operation(
                item.get("name"),
                item.get("description"),
                item.get("parameters"),
                source,
                category=item.get("category"),
                weight=item.get("weight", 0.0),
                read_only=flag(item.get("read_only"), "read_only", source, item.get("name")),
                destructive=flag(item.get("destructive"), "destructive", source, item.get("name")),
                idempotent=flag(item.get("idempotent"), "idempotent", source, item.get("name")),
            )
        )
    return ops
