"""Helpers shared by the catalog importers: reading files and building operations with clear errors."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, SupportsFloat, cast

import yaml

from surfbench.bench.base.bounded import ReadRefused, description_problem, read_text
from surfbench.bench.base.validation import json_problem, parse_problem, short
from surfbench.bench.catalog.catalog import CatalogError, JsonSchema, Operation

# libyaml when present: ten times faster, and it bounds nesting itself instead of recursing
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
DOCUMENT_DEPTH = 128
"""Deepest nesting in a whole catalog file (an operation's own schema is held to MAX_DEPTH)."""

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


def read_document(path: Path) -> object:
    """Parse a JSON, JSONL or YAML file; a syntax error names the file, line and column.

    Raises:
        CatalogError: for a missing file, a directory or any other file that is not a regular one
            (``/dev/zero``, a FIFO), a file over the catalog size limit (bench/base/bounded.py), bytes that are
            not UTF-8, a syntax error, a number too large to read or nesting deeper than DOCUMENT_DEPTH.
    """
    source = str(path)
    if exists(path) and path.is_dir():
        raise CatalogError(source, "is a directory, not a catalog file (name the JSON or YAML file in it)")
    try:
        text = read_text(path, "catalog")
    except ReadRefused as exc:
        raise CatalogError(source, exc.problem) from None
    except FileNotFoundError:
        raise CatalogError(source, "file not found") from None
    except UnicodeDecodeError as exc:
        raise CatalogError(source, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise CatalogError(source, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    doc = _parse(text, path.suffix.lower(), source)
    problem = json_problem(doc, plain=False, max_depth=DOCUMENT_DEPTH)
    # the size bound is against YAML aliases: JSON has none, and GitHub's REST description holds ~1M values
    # (each operation's schema is still checked on its own when the catalog is built)
    if problem and not (path.suffix.lower() == ".json" and problem.startswith("more than")):
        raise CatalogError(source, problem)
    return doc


def exists(path: Path) -> bool:
    """``path.exists()`` that is False, not an exception, for a NUL byte or an overlong name."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def _parse(text: str, suffix: str, source: str) -> object:
    # json and PyYAML raise ValueError for an integer of more than 4,300 digits and json recurses on
    # deep nesting: both are the file's problem, never a traceback
    if suffix in (".yaml", ".yml"):
        try:
            return yaml.load(text, Loader=YAML_LOADER)
        except yaml.YAMLError as exc:
            raise CatalogError(source, f"invalid YAML: {exc}") from None
        except (ValueError, OverflowError, RecursionError) as exc:
            raise CatalogError(source, f"invalid YAML: {parse_problem(exc)}") from None
    if suffix == ".jsonl":
        rows: list[object] = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CatalogError(source, f"invalid JSON on line {lineno}: {exc.msg} (column {exc.colno})") from None
            except (ValueError, RecursionError) as exc:
                raise CatalogError(source, f"invalid JSON on line {lineno}: {parse_problem(exc)}") from None
        return rows
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(source, f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise CatalogError(source, f"invalid JSON: {parse_problem(exc)}") from None


def normalise_schema(schema: object, source: str, tool: object, *, blank_is_any: bool = False) -> object:
    """Return a copy of ``schema`` with Python-ish type names mapped to JSON Schema ones.

    Args:
        schema: A parameters schema as the file has it.
        source: The file (for errors).
        tool: The tool's name (for errors).
        blank_is_any: Read ``"type": ""`` as no type, like ``any`` (BFCL's data has one such
            argument); elsewhere a blank type stays and the meta-schema check reports it.
    """
    try:
        return _normalise(schema, blank_is_any)
    except RecursionError:
        return schema  # too deep to copy: the operation's own depth check reports it, naming the tool


def _normalise(schema: object, blank_is_any: bool) -> object:
    if isinstance(schema, list):
        return [_normalise(item, blank_is_any) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, object] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            low = value.lower()
            if low == "any" or (blank_is_any and not low.strip()):
                continue
            out[key] = TYPE_ALIASES.get(low, low)
        elif key in ("properties", "patternProperties", "definitions", "$defs") and isinstance(value, Mapping):
            out[key] = {k: _normalise(v, blank_is_any) for k, v in value.items()}
        else:
            out[key] = _normalise(value, blank_is_any)
    return out


def flag(value: object, field: str, source: str, tool: object) -> bool:
    """A true/false field: missing is false, anything but a boolean is an error (``"false"`` is truthy)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    raise CatalogError(source, f"field {field!r} must be true or false, got {short(value)}", tool=tool_name(tool))


def tool_name(tool: object) -> str | None:
    """A tool's name for an error message, when it has a usable one."""
    return tool if isinstance(tool, str) and tool else None


def make_operation(
    raw_name: object,
    description: object,
    parameters: object,
    source: str,
    *,
    category: object = None,
    weight: object = 0.0,
    read_only: bool = False,
    destructive: bool = False,
    idempotent: bool = False,
) -> Operation:
    """Build one operation, turning every shape problem into a :class:`CatalogError` naming the tool."""
    if raw_name is not None and not isinstance(raw_name, str):
        raise CatalogError(source, f"a tool's field 'name' must be a string, got {short(raw_name)}")
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
    if isinstance(weight, bool):
        raise CatalogError(source, f"weight must be a number, got {weight!r}", tool=name)
    try:
        weight_value = float(cast("str | SupportsFloat", weight or 0.0))
    except (TypeError, ValueError, OverflowError):
        raise CatalogError(source, f"weight must be a number, got {short(weight)}", tool=name) from None
    if not math.isfinite(weight_value):
        raise CatalogError(source, f"weight must be a finite number, got {short(weight)}", tool=name)
    if category is not None and not isinstance(category, str):
        raise CatalogError(source, f"category must be a string, got {short(category)}", tool=name)
    return Operation(
        name=name,
        description=description,
        parameters=params,
        category=category or "general",
        weight=weight_value,
        read_only=flag(read_only, "read_only", source, name),
        destructive=flag(destructive, "destructive", source, name),
        idempotent=flag(idempotent, "idempotent", source, name),
    )


def check_descriptions(operations: Iterable[Operation], source: str) -> None:
    """Refuse an operation whose description is too long to show a model (bench/base/bounded.py), naming it.

    Checked where a user's catalog is loaded (a file, a class, a live server), not on the distractor
    pool's operations, which are drawn from real API descriptions as they are.
    """
    for op in operations:
        problem = description_problem(op.description)
        if problem:
            raise CatalogError(source, problem, tool=op.name)


def require_list(doc: object, source: str, what: str) -> list[Mapping[str, object]]:
    if not isinstance(doc, list):
        raise CatalogError(source, f"expected a list of {what}, got {type(doc).__name__}")
    for i, item in enumerate(doc):
        if not isinstance(item, Mapping):
            raise CatalogError(source, f"{what} #{i} is a {type(item).__name__}, not an object")
    return doc
