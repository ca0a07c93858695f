"""Helpers shared by the catalog importers: reading files and building operations with clear errors."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from bench.catalog import CatalogError, JsonSchema, Operation

# BFCL and some hand-written catalogs use Python-ish type names; JSON Schema has its own.
TYPE_ALIASES = {
    "dict": "object",
    "float": "number",
    "double": "number",
    "int": "integer",
    "long": "integer",
    "str": "string",
    "bool": "boolean",
    "tuple": "array",
    "list": "array",
    "hashmap": "object",
    "arraylist": "array",
    "char": "string",
    "byte": "integer",
    "short": "integer",
}


def read_document(path: Path) -> Any:
    """Parse a JSON, JSONL or YAML file; a syntax error names the file, line and column."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(source, "file not found") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(source, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CatalogError(source, f"invalid YAML: {exc}".replace("\n", " ")) from None
    if suffix == ".jsonl":
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CatalogError(source, f"invalid JSON on line {lineno}: {exc.msg} (column {exc.colno})") from None
        return rows
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(source, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None


def normalise_schema(schema: Any, source: str, tool: str | None) -> Any:
    """Return a copy of ``schema`` with Python-ish type names mapped to JSON Schema ones."""
    if isinstance(schema, list):
        return [normalise_schema(item, source, tool) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            low = value.lower()
            if low == "any":
                continue
            out[key] = TYPE_ALIASES.get(low, low)
        elif key in ("properties", "patternProperties", "definitions", "$defs") and isinstance(value, Mapping):
            out[key] = {k: normalise_schema(v, source, tool) for k, v in value.items()}
        else:
            out[key] = normalise_schema(value, source, tool)
    return out


def make_operation(
    raw_name: Any,
    description: Any,
    parameters: Any,
    source: str,
    *,
    category: Any = None,
    weight: Any = 0.0,
    read_only: bool = False,
    destructive: bool = False,
) -> Operation:
    """Build one operation, turning every shape problem into a :class:`CatalogError` naming the tool."""
    if not isinstance(raw_name, str) or not raw_name.strip():
        raise CatalogError(source, "a tool has no name (field 'name' missing or empty)")
    name = raw_name  # kept exactly: wire bytes are counted on what the source sends
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise CatalogError(source, "field 'description' must be a string", tool=name)
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, Mapping):
        raise CatalogError(source, "parameters must be a JSON Schema object (type: object)", tool=name)
    params: JsonSchema = dict(parameters)  # kept exactly as the source has it (no keys added or dropped)
    try:
        weight_value = float(weight or 0.0)
    except (TypeError, ValueError):
        raise CatalogError(source, f"weight must be a number, got {weight!r}", tool=name) from None
    return Operation(
        name=name,
        description=description,
        parameters=params,
        category=str(category) if category else "general",
        weight=weight_value,
        read_only=bool(read_only),
        destructive=bool(destructive),
    )


def require_list(doc: Any, source: str, what: str) -> list[Any]:
    if not isinstance(doc, list):
        raise CatalogError(source, f"expected a list of {what}, got {type(doc).__name__}")
    for i, item in enumerate(doc):
        if not isinstance(item, Mapping):
            raise CatalogError(source, f"{what} #{i} is a {type(item).__name__}, not an object")
    return doc
