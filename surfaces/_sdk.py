"""The catalog as a Python SDK: one function stub per operation, typed from its JSON Schema.

Used by the ``code`` surface. A stub is what the model reads (keyword-only arguments, required ones
first, ``Literal[...]`` for enums, ``X | None = None`` for optional ones, defaults where the schema has
them, a Google-style docstring from the description and the parameter docs). The functions that run
inside the sandbox are generic (they send whatever they were given to the harness, where the
operation's own schema validates it), so a wrong call is counted and taught exactly like a direct one.

Names: an operation or argument name that is not a Python identifier (``repos/update-org-ruleset``,
``notes.get``, ``from``) maps to a valid one; :class:`SdkNames` keeps the map both ways, unique.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.catalog.catalog import Catalog, Operation

_NOT_WORD = re.compile(r"\W+", re.ASCII)
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
RESERVED = frozenset({"describe", "search_api", "SDKError", "sdk"})
"""Names the SDK itself uses: an operation of that name gets a suffix."""


def identifier(name: str, taken: Iterable[str] = ()) -> str:
    """A valid Python identifier for ``name``, not among ``taken`` (``repos/update-x`` -> ``repos_update_x``)."""
    base = _NOT_WORD.sub("_", name).strip("_") or "op"
    if base[0].isdigit():
        base = f"op_{base}"
    if keyword.iskeyword(base) or keyword.issoftkeyword(base) or base in RESERVED:
        base += "_"
    used = set(taken)
    out, n = base, 2
    while out in used:
        out, n = f"{base}_{n}", n + 1
    return out


@dataclass(frozen=True)
class SdkNames:
    """Operation <-> function names, and per operation argument <-> keyword names (both ways, unique)."""

    function: dict[str, str]
    """Operation name -> function name."""
    operation: dict[str, str]
    """Function name -> operation name."""
    keywords: dict[str, dict[str, str]] = field(default_factory=dict)
    """Operation name -> {keyword: argument name}, only for arguments that are not identifiers."""

    @classmethod
    def of(cls, ops: Iterable[Operation]) -> SdkNames:
        function: dict[str, str] = {}
        keywords: dict[str, dict[str, str]] = {}
        ops = list(ops)
        plain = {op.name for op in ops if identifier(op.name) == op.name}  # keep their own names
        for op in ops:
            function[op.name] = op.name if op.name in plain else identifier(op.name, [*plain, *function.values()])
            props = list(properties(op))
            renamed: dict[str, str] = {}
            for arg in props:
                if not arg.isidentifier() or keyword.iskeyword(arg):
                    renamed[identifier(arg, [*props, *renamed])] = arg
            if renamed:
                keywords[op.name] = renamed
        return cls(function, {v: k for k, v in function.items()}, keywords)

    def keyword(self, op: str, arg: str) -> str:
        """The keyword a function takes for the operation's argument ``arg``."""
        back = {v: k for k, v in self.keywords.get(op, {}).items()}
        return back.get(arg, arg)

    def arguments(self, op: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments as the operation's argument names (unknown keywords are kept as given)."""
        renamed = self.keywords.get(op, {})
        return {renamed.get(k, k): v for k, v in kwargs.items()}


def properties(op: Operation) -> dict[str, Any]:
    props = op.parameters.get("properties")
    return props if isinstance(props, dict) else {}


def annotation(schema: Any) -> str:
    """A Python type for a JSON Schema (str, int, float, bool, list[...], dict[str, Any], Literal[...])."""
    if not isinstance(schema, Mapping):
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        values = [v for v in schema["enum"] if isinstance(v, str | int | float | bool)]
        literal = f"Literal[{', '.join(repr(v) for v in values)}]" if values else ""
        return " | ".join(p for p in (literal, "None" if None in schema["enum"] else "") if p) or "Any"
    if "const" in schema and isinstance(schema["const"], str | int | bool):
        return f"Literal[{schema['const']!r}]"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union(annotation(s) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union(annotation({**schema, "type": k}) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"list[{annotation(items)}]" if isinstance(items, Mapping) else "list[Any]"
    if kind == "object":
        return "dict[str, Any]"
    return SCALARS.get(kind, "Any") if isinstance(kind, str) else "Any"


def _union(parts: Iterable[str]) -> str:
    seen = list(dict.fromkeys(parts))
    return "Any" if "Any" in seen or not seen else " | ".join(seen)


def _parameter(names: SdkNames, op: Operation, arg: str, schema: Any, required: bool) -> str:
    kw, hint = names.keyword(op.name, arg), annotation(schema)
    if required:
        return f"{kw}: {hint}"
    if isinstance(schema, Mapping) and "default" in schema:
        return f"{kw}: {hint} = {schema['default']!r}"
    optional = hint if hint == "Any" or hint.endswith("| None") or hint == "None" else f"{hint} | None"
    return f"{kw}: {optional} = None"


def signature(names: SdkNames, op: Operation) -> str:
    """``name(*, a: str, b: int | None = None) -> Any``: required arguments first, then the optional ones."""
    props, required = properties(op), set(op.required)
    first = [_parameter(names, op, a, s, True) for a, s in props.items() if a in required]
    rest = [_parameter(names, op, a, s, False) for a, s in props.items() if a not in required]
    params = ", ".join(["*", *first, *rest]) if props else ""
    return f"{names.function[op.name]}({params}) -> Any"


def _doc_line(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace('"""', "'''")


def docstring(names: SdkNames, op: Operation) -> list[str]:
    """The docstring lines (indented, quoted): description, then ``Args:`` with each argument's doc."""
    lines = [f'    """{_doc_line(op.description) or op.name}']
    args = []
    for arg, schema in properties(op).items():
        doc = _doc_line(str(schema.get("description", ""))) if isinstance(schema, Mapping) else ""
        if arg != names.keyword(op.name, arg):
            doc = f"{doc} (the argument {arg!r})".strip()
        limits = _limits(schema)
        args.append(f"        {names.keyword(op.name, arg)}: {'; '.join(p for p in (doc, limits) if p) or '-'}")
    if args:
        lines += ["", "    Args:", *args]
    lines.append('    """' if args else lines.pop() + '"""')
    return lines


def _limits(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return ""
    keys = ("minimum", "maximum", "minLength", "maxLength", "pattern", "format", "minItems", "maxItems")
    return ", ".join(f"{k} {schema[k]}" for k in keys if k in schema)


def stub(names: SdkNames, op: Operation) -> str:
    """The full stub of one operation: signature and docstring."""
    return "\n".join([f"def {signature(names, op)}:", *docstring(names, op)])


def index_line(names: SdkNames, op: Operation) -> str:
    """One line per function: its signature and the description's first sentence."""
    return f"{signature(names, op)}  # {op.summary}"


def render_module(catalog: Catalog, names: SdkNames) -> str:
    """Every stub, as one module's source (the ``full`` variant's text)."""
    head = f"# SDK of {catalog.name}: {len(catalog)} functions\nfrom typing import Any, Literal\n"
    return head + "\n\n" + "\n\n\n".join(stub(names, op) for op in catalog.operations) + "\n"
