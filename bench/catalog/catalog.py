"""The catalog: the single source of truth for the operations a surface exposes.

Every surface derives its tools from a :class:`Catalog`; nothing downstream keeps a second copy of a
schema that could drift.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, TypeGuard, TypeVar

from surfbench.bench.base.validation import json_problem, short

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

JsonSchema = dict[str, Any]
JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object", "null")


class CatalogError(ValueError):
    """A catalog that cannot be loaded: names the file, the tool (or field) and what is wrong."""

    def __init__(self, source: str, message: str, tool: str | None = None) -> None:
        self.source = source
        self.tool = tool
        self.reason = message
        where = f"{source}: tool {tool!r}: " if tool else f"{source}: "
        # one line, always: the CLI prints it as one, and a user's text may hold any line break
        super().__init__(" ".join((where + message).splitlines()))


@dataclass(frozen=True)
class Operation:
    """One canonical operation of a catalog."""

    name: str
    """Unique operation name, e.g. ``issue_create``."""
    description: str
    """What the operation does, as the catalog states it."""
    parameters: JsonSchema
    """JSON Schema (``type: object``) of the operation's arguments."""
    category: str = "general"
    """Group used by grouped listings, lazy loading by category and reports."""
    weight: float = 0.0
    """Traffic weight (how hot the operation is); 0 when unknown."""
    read_only: bool = False
    """The operation does not change state."""
    destructive: bool = False
    """The operation may delete or overwrite state."""
    idempotent: bool = False
    """Calling it again with the same arguments has no further effect (MCP ``idempotentHint``)."""

    @property
    def summary(self) -> str:
        """The description's first sentence (one-line catalogs use it)."""
        text = " ".join(self.description.split())
        for stop in (". ", ".\n"):
            cut = text.find(stop)
            if cut != -1:
                return text[: cut + 1]
        return text

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))

    def to_record(self) -> dict[str, object]:
        """The operation as the native catalog format writes it (and the catalog hash covers it)."""
        record: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "category": self.category,
            "weight": self.weight,
            "read_only": self.read_only,
            "destructive": self.destructive,
        }
        if self.idempotent:  # only when set: catalogs without the flag keep the hash their runs recorded
            record["idempotent"] = True
        return record


@dataclass(frozen=True)
class Snippet:
    """One guidance snippet a suite ships beside its operations (``guidance/*.md``; bench.catalog.guidance)."""

    name: str
    """The file's stem, e.g. ``pull-request-from-new-branch``."""
    title: str
    """The front matter's ``title``: what the snippet is about, in a few words."""
    description: str
    """The front matter's ``description``: when it applies (what retrieval matches the request against)."""
    body: str
    """The text after the front matter: how to do it (what the model is shown)."""


@dataclass(frozen=True)
class Catalog:
    """An ordered, validated set of operations with a content hash."""

    name: str
    """Short catalog name (used for dispatcher tool names, e.g. ``gitea`` -> ``gitea_help``)."""
    operations: tuple[Operation, ...]
    """The operations in catalog order."""
    source: str = "<memory>"
    """Where the catalog came from (file path or ``module:attr``)."""
    _by_name: dict[str, Operation] = field(default_factory=dict, init=False, repr=False, compare=False)
    declared_passthrough: tuple[str, ...] | None = field(default=None, compare=False)
    """Parameters the catalog declares shared by every operation (``passthrough: [instance]``); None: detected
    (:attr:`passthrough`). Not part of the content hash: the operations' schemas already hold the parameters."""
    guidance: tuple[Snippet, ...] = field(default=(), repr=False, compare=False)
    """The guidance snippets of the catalog's suite (``guidance/*.md``), which a surface's ``guidance`` option
    injects for the user's request (bench.catalog.guidance); () for none."""

    def __post_init__(self) -> None:
        seen: dict[str, Operation] = {}
        for op in self.operations:
            validate_operation(op, self.source)
            if op.name in seen:
                raise CatalogError(self.source, "duplicate operation name", tool=op.name)
            seen[op.name] = op
        self._by_name.update(seen)
        for name in self.declared_passthrough or ():
            lacking = [op.name for op in self.operations if not _optional_property(op, name)]
            if lacking:
                raise CatalogError(
                    self.source,
                    f"passthrough parameter {name!r} must be an optional property of every operation; "
                    f"{len(lacking)} lack it or require it, e.g. {', '.join(lacking[:3])}",
                )

    def __len__(self) -> int:
        return len(self.operations)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self.operations)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def get(self, name: str) -> Operation | None:
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> Operation:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no operation {name!r} in catalog {self.name!r}") from None

    @property
    def names(self) -> list[str]:
        return [op.name for op in self.operations]

    @property
    def categories(self) -> list[str]:
        """Categories in first-seen order."""
        return list(dict.fromkeys(op.category for op in self.operations))

    def category_summary(self, limit: int | None = None) -> str:
        """The categories as a comma-separated list; past ``limit``, the ``limit`` largest and how many more.

        Up to ``limit`` categories keep their first-seen order (the text of a small catalog is unchanged);
        a grown catalog of 2,000 categories would otherwise put ~11k tokens into a search tool's description.
        """
        cats = self.categories
        if limit is None or len(cats) <= limit:
            return ", ".join(cats)
        counts = Counter(op.category for op in self.operations)
        top = sorted(cats, key=lambda c: -counts[c])[:limit]  # stable: ties keep first-seen order
        return ", ".join(top) + f" and {len(cats) - limit:,} more categories"

    @cached_property
    def content_hash(self) -> str:
        """sha256 over the canonical JSON of every operation (order-sensitive), 16 hex digits."""
        blob = json.dumps(
            [op.to_record() for op in self.operations],
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def by_weight(self) -> list[Operation]:
        """Operations hottest first; ties keep catalog order."""
        order = {op.name: i for i, op in enumerate(self.operations)}
        return sorted(self.operations, key=lambda op: (-op.weight, order[op.name]))

    def subset(self, names: Iterable[str]) -> list[Operation]:
        return [self[name] for name in names]

    @cached_property
    def passthrough(self) -> dict[str, JsonSchema]:
        """Parameters shared by every operation, name -> schema, in the first operation's order.

        The declared ones (``declared_passthrough``), else those detected: an optional property that every
        operation of a catalog of at least :data:`PASSTHROUGH_MIN_OPS` has, with the same schema (an ``instance``
        naming which server of several a call goes to). Surfaces carry them (the dispatcher as a top-level
        argument beside ``operation``); {} for none.
        """
        if self.declared_passthrough is not None:
            first = self.operations[0].parameters["properties"] if self.operations else {}
            return {name: first[name] for name in self.declared_passthrough}
        if len(self.operations) < PASSTHROUGH_MIN_OPS:
            return {}
        first = self.operations[0].parameters.get("properties", {})
        shared = {}
        for name, schema in first.items():
            if all(_optional_property(op, name) and op.parameters["properties"][name] == schema for op in self):
                shared[name] = schema
        return shared

    def without_passthrough(self) -> Catalog:
        """The same catalog with its pass-through parameters taken out of every operation.

        What they cost, by difference: the static surface report's ``pass-through B``.
        """
        shared = set(self.passthrough)
        if not shared:
            return self
        ops = []
        for op in self.operations:
            params = dict(op.parameters)
            params["properties"] = {k: v for k, v in op.parameters["properties"].items() if k not in shared}
            ops.append(replace(op, parameters=params))
        return Catalog(self.name, tuple(ops), self.source, declared_passthrough=(), guidance=self.guidance)

    def to_json(self) -> dict[str, object]:
        """The native surfbench catalog format (what :func:`bench.catalog.importers.load_catalog` reads back)."""
        out: dict[str, object] = {
            "surfbench_catalog": 1,
            "name": self.name,
            "operations": [op.to_record() for op in self.operations],
        }
        if self.declared_passthrough is not None:
            out["passthrough"] = list(self.declared_passthrough)
        return out


PASSTHROUGH_MIN_OPS = 5
"""Detection needs this many operations: in a small catalog a shared optional argument is a coincidence (four BFCL
tasks of three functions each share one, such as a book's optional ``title``)."""


def _optional_property(op: Operation, name: str) -> bool:
    """Whether ``name`` is a property of the operation's arguments that it does not require."""
    props = op.parameters.get("properties", {})
    return isinstance(props, Mapping) and name in props and name not in op.required


def validate_operation(op: Operation, source: str) -> None:
    """Raise :class:`CatalogError` unless ``op`` is a usable operation."""
    if not isinstance(op.name, str) or not op.name.strip():
        raise CatalogError(source, "operation has no name", tool=None)
    if not isinstance(op.description, str):
        raise CatalogError(source, "description must be a string", tool=op.name)
    params = op.parameters
    if not isinstance(params, Mapping) or params.get("type") != "object":
        raise CatalogError(source, "parameters must be a JSON Schema object (type: object)", tool=op.name)
    props = params.get("properties", {})
    if not isinstance(props, Mapping):
        raise CatalogError(source, "parameters.properties must be an object", tool=op.name)
    required = params.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CatalogError(source, "parameters.required must be a list of names", tool=op.name)
    missing = [r for r in required if r not in props]
    if missing and params.get("additionalProperties") is False:
        raise CatalogError(source, f"required {missing} not among the properties", tool=op.name)
    if not isinstance(op.weight, int | float) or isinstance(op.weight, bool) or not math.isfinite(op.weight):
        raise CatalogError(source, f"weight must be a finite number, got {op.weight!r}", tool=op.name)
    if op.weight < 0:
        raise CatalogError(source, "weight must be >= 0", tool=op.name)
    if not isinstance(op.category, str) or not op.category:
        raise CatalogError(source, f"category must be a non-empty string, got {op.category!r}", tool=op.name)
    if not all(isinstance(flag, bool) for flag in (op.read_only, op.destructive, op.idempotent)):
        raise CatalogError(source, "read_only, destructive and idempotent must be true or false", tool=op.name)
    problem = json_problem(params)  # first: bounded depth keeps the meta-schema check below from recursing away
    if problem:
        raise CatalogError(source, f"parameters: {problem}", tool=op.name)
    problem = schema_problem(json.dumps(params, sort_keys=True))
    if problem:
        raise CatalogError(source, f"parameters{problem}", tool=op.name)


@lru_cache(maxsize=16384)  # BFCL repeats the same function docs across thousands of entries
def schema_problem(blob: str) -> str | None:
    """Why a parameters schema (as canonical JSON) is not valid JSON Schema, or None.

    Checked against the meta-schema its ``$schema`` names, else draft 7, else draft 4 (OpenAPI 3.0's
    boolean ``exclusiveMinimum``): the older drafts accept every shape real catalogs use (tuple
    ``items`` included) and still catch what breaks a model's view, such as ``"type": "strng"``.
    Draft 7's meta-schema is also ten times faster to check than 2020-12's.

    Args:
        blob: ``json.dumps(schema, sort_keys=True)``: hashable, so repeated schemas are checked once.

    Returns:
        ``.properties.q.type: 'strng' is not a JSON Schema type (...)``, or None.
    """
    schema = json.loads(blob)
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if not isinstance(declared, str) and _plain_draft7(schema):  # most schemas: jsonschema is not even imported
        return None
    from jsonschema import Draft4Validator, Draft7Validator
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    first = validator_for(schema, default=Draft7Validator) if isinstance(declared, str) else Draft7Validator
    if _meta_validator(first).is_valid(schema):  # the common case, several times faster than collecting errors
        return None
    error = best_match(_meta_validator(first).iter_errors(schema))
    if error is None or (first is Draft7Validator and _meta_validator(Draft4Validator).is_valid(schema)):
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    if error.absolute_path and error.absolute_path[-1] == "type":
        return f"{where}: {short(error.instance)} is not a JSON Schema type (use {', '.join(JSON_TYPES)})"
    message = error.message if len(error.message) <= 200 else error.message[:199] + "…"
    return f"{where}: not valid JSON Schema: {message}"


@lru_cache(maxsize=8)
def _meta_validator(cls: type[Validator]) -> Validator:
    return cls(cls.META_SCHEMA)


DRAFT7_KEYWORDS = frozenset(
    ("$id", "$schema", "$ref", "$comment", "title", "description", "default", "readOnly", "examples", "multipleOf",
     "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
     "additionalItems", "items", "maxItems", "minItems", "uniqueItems", "contains", "maxProperties", "minProperties",
     "required", "additionalProperties", "definitions", "properties", "patternProperties", "dependencies",
     "propertyNames", "const", "enum", "type", "format", "contentMediaType", "contentEncoding", "if", "then", "else",
     "allOf", "anyOf", "oneOf", "not")
)  # fmt: skip
"""The keywords draft 7's meta-schema constrains (``Draft7Validator.META_SCHEMA["properties"]``; a test checks)."""
_SIMPLE_TYPES = frozenset(("array", "boolean", "integer", "null", "number", "object", "string"))
_STRING_KEYS = frozenset(
    ("$id", "$schema", "$ref", "$comment", "title", "description", "pattern", "format", "contentMediaType",
     "contentEncoding")
)  # fmt: skip
_NUMBER_KEYS = frozenset(("maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"))
_COUNT_KEYS = frozenset(("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties"))
_SCHEMA_KEYS = frozenset(("additionalItems", "contains", "additionalProperties", "propertyNames", "if", "then", "else",
                          "not"))  # fmt: skip
_SCHEMA_MAP_KEYS = frozenset(("properties", "definitions", "patternProperties"))
_SCHEMA_LIST_KEYS = frozenset(("allOf", "anyOf", "oneOf"))


def _plain_draft7(schema: object) -> bool:
    """True when ``schema`` certainly passes the draft 7 meta-schema, by a direct walk of its keywords.

    The meta-schema's own rules (formats not asserted, as in ``_meta_validator``) over plain JSON values;
    whatever it is not sure of (``multipleOf``, ``dependencies``, a float count, a non-finite number)
    returns False and jsonschema decides. So the answer never differs from jsonschema's, and a real
    catalog's schemas almost all take this path: 10,000 operations in milliseconds instead of seconds.
    """
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if type(node) is bool:
            continue
        if type(node) is not dict:
            return False
        for key, value in node.items():
            if not _keyword_ok(key, value, stack):
                return False
    return True


def _keyword_ok(key: str, value: object, stack: list[object]) -> bool:
    """One keyword of a schema against the draft 7 meta-schema; its sub-schemas go onto ``stack``.

    ``type(value) is ...`` (not ``kind``) where the type checker is to narrow ``value``: the same test.
    """
    kind = type(value)
    if key in _STRING_KEYS:
        return kind is str
    if key == "type":
        if kind is str:
            return value in _SIMPLE_TYPES
        return _strings(value) and len(value) > 0 and all(v in _SIMPLE_TYPES for v in value)
    if key in _SCHEMA_MAP_KEYS:
        stack.extend(value.values() if type(value) is dict else [None])  # None: not a schema, fails the walk
        return True
    if key in _SCHEMA_KEYS:
        stack.append(value)
        return True
    if key == "items":
        stack.extend(value if type(value) is list else [value])
        return type(value) is not list or len(value) > 0
    if key in _SCHEMA_LIST_KEYS:
        stack.extend(value if type(value) is list else [None])
        return type(value) is not list or len(value) > 0
    if key == "required":
        return _strings(value)
    if key in ("enum", "examples"):
        return kind is list
    if key in _NUMBER_KEYS:
        return kind is int or (type(value) is float and math.isfinite(value))
    if key in _COUNT_KEYS:
        return type(value) is int and value >= 0
    if key in ("uniqueItems", "readOnly"):
        return kind is bool
    if key in ("default", "const"):
        return True
    return key not in DRAFT7_KEYWORDS  # any other keyword is free in draft 7


def _strings(value: object) -> TypeGuard[list[str]]:
    return type(value) is list and all(type(v) is str for v in value) and len(set(value)) == len(value)


# A Python backend's operations: ``@operation`` marks the methods whose signature and Google docstring
# are the operation's schema (the python-callables importer reads them; bench.contracts.backend dispatches to them).
F = TypeVar("F", bound=Callable[..., Any])
OP_ATTR = "__surfbench_op__"


def operation(
    category: str = "general", weight: float = 0.0, read_only: bool = False, destructive: bool = False
) -> Callable[[F], F]:
    """Mark a backend method as a catalog operation, with its category, traffic weight and flags."""

    def mark(fn: F) -> F:
        setattr(
            fn, OP_ATTR, {"category": category, "weight": weight, "read_only": read_only, "destructive": destructive}
        )
        return fn

    return mark


def operation_methods(cls: type) -> list[Callable[..., object]]:
    """The class's ``@operation`` methods in definition order (base classes first)."""
    seen: dict[str, Callable[..., object]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if inspect.isfunction(value) and hasattr(value, OP_ATTR):
                seen[name] = value
    return list(seen.values())
