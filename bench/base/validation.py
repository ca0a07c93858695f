"""Argument validation against an operation's own JSON Schema, with errors that teach.

Covers what a model gets wrong in practice: missing required arguments, wrong types, values outside
an enum (the allowed values are listed), unknown arguments (with a did-you-mean), and simple numeric,
length and pattern constraints, recursively through objects and arrays.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ArgIssue:
    """One problem with a call's arguments."""

    kind: str
    """One of ``missing_argument``, ``type_error``, ``enum_error``, ``unknown_argument``, ``constraint``."""
    path: str
    """Where: ``title``, ``labels[2]``, ``options.merge_style``; empty for the whole argument object."""
    message: str
    """A sentence a model can act on."""


def closest(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Nearest names to ``name``: close spellings first, then names containing it or it containing them."""
    pool = list(dict.fromkeys(candidates))
    found = difflib.get_close_matches(name, pool, n=n, cutoff=0.6)
    low = name.lower()
    for cand in pool:
        if len(found) >= n:
            break
        c = cand.lower()
        if cand not in found and low and (low in c or (len(c) > 3 and c in low)):
            found.append(cand)
    return found


def short(value: object, limit: int = 60) -> str:
    """Compact JSON for a value, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: escape it, or printing the message would fail
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


MAX_DEPTH = 64
"""Deepest nesting accepted in a task or an operation's schema: real ones stay under 10 levels, and a
bound keeps every recursive reader (matchers, validators, ``jsonschema``) far from Python's recursion limit."""
MAX_NODES = 200_000
"""Most values walked in one task or schema: YAML aliases can make a small file expand without bound."""


def json_problem(value: object, *, plain: bool = True, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` is not usable JSON data, or None when it is.

    Walks iteratively (a 5,000-level document must not raise RecursionError here). Always checks the
    depth and size; with ``plain`` also that every key is a string and every leaf a JSON value: a YAML
    date, binary or set would never equal what a tool returns, and NaN never equals anything.

    Args:
        value: Parsed YAML or JSON.
        plain: Also check keys and leaf types (off for whole documents such as OpenAPI files, whose
            unused parts may hold YAML dates or integer keys).
        max_depth: Deepest nesting accepted.

    Returns:
        One line naming the path of the first problem (``expected[0].args.at: ...``), or None.
    """
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    walked = 0
    while stack:
        node, path, depth = stack.pop()
        walked += 1
        if walked > MAX_NODES:
            return f"more than {MAX_NODES:,} values (YAML aliases expanding?): too large"
        if depth > max_depth:
            where = path if len(path) <= 60 else path[:59] + "…"
            return f"{where}: nested more than {max_depth} levels deep"
        kind = type(node)  # exact types first: isinstance against the ABCs is slow on big catalogs
        if kind in _LEAVES:
            if kind is float and not math.isfinite(node) and plain:
                return f"{path or 'value'}: {node} is not a finite number"
            if kind is str and plain and not node.isascii() and has_lone_surrogate(node):
                return f"{path or 'value'}: {short(node)} is not valid Unicode (it holds a lone surrogate)"
        elif kind is dict or isinstance(node, Mapping):
            for key, sub in node.items():
                if plain and type(key) is not str:
                    return f"{path or 'top level'}: key {short(key)} must be a string (quote it)"
                if plain and not key.isascii() and has_lone_surrogate(key):
                    return f"{path or 'top level'}: key {short(key)} is not valid Unicode (it holds a lone surrogate)"
                stack.append((sub, f"{path}.{key}" if path else str(key), depth + 1))
        elif kind is list or kind is tuple:
            stack.extend((sub, f"{path}[{i}]", depth + 1) for i, sub in enumerate(node))
        elif plain and not isinstance(node, str | int | float):  # a str or int subclass reads as its value
            what = type(node).__name__
            return f"{path or 'value'}: a YAML {what} ({short(str(node))}) is not JSON data; quote it as a string"
    return None


def parse_problem(exc: BaseException) -> str:
    """What a JSON or YAML parser's non-syntax error means for the file's author.

    Python refuses integers of more than 4,300 digits (ValueError), json recurses on deep nesting
    (RecursionError) and YAML's dates can be impossible (ValueError: day is out of range).
    """
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc)
    if "integer string conversion" in text:
        return "a number of more than 4,300 digits"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_LEAVES = frozenset({str, int, float, bool, type(None)})


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (an escaped ``ud800`` in JSON): not writable as UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def json_type_name(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    if value is None:
        return "null"
    return type(value).__name__


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def validate_args(args: Any, schema: Mapping[str, Any]) -> list[ArgIssue]:
    """Return every issue with ``args`` against ``schema`` (empty when valid).

    At the top level an argument the schema does not declare is always an issue, unless the schema
    allows extra properties explicitly: a silently ignored typo is the worst case for a model.
    """
    if not isinstance(args, dict):
        return [ArgIssue("type_error", "", f"arguments must be a JSON object, got {json_type_name(args)}")]
    issues: list[ArgIssue] = []
    _check(args, schema, "", issues, top=True)
    return issues


def _check(value: Any, schema: Mapping[str, Any], path: str, issues: list[ArgIssue], top: bool = False) -> None:
    if not isinstance(schema, Mapping) or not schema:
        return
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            if not any(_valid(value, branch) for branch in branches):
                kinds = ", ".join(sorted({str(b.get("type", "value")) for b in branches if isinstance(b, Mapping)}))
                issues.append(ArgIssue("type_error", path, f"argument '{path}' must match one of: {kinds}"))
            return
    if value is None and schema.get("nullable"):
        return
    expected = schema.get("type")
    if expected is not None:
        allowed = expected if isinstance(expected, list) else [expected]
        if not any(_JSON_TYPES.get(t, lambda v: True)(value) for t in allowed):
            label = path or "arguments"
            issues.append(
                ArgIssue(
                    "type_error",
                    path,
                    f"argument '{label}' must be {' or '.join(allowed)}, got {json_type_name(value)} {short(value)}",
                )
            )
            return
    if "enum" in schema and value not in schema["enum"]:
        choices = ", ".join(short(v) for v in schema["enum"])
        hint = closest(str(value), [str(v) for v in schema["enum"]], n=1)
        tip = f" (did you mean {short(hint[0])}?)" if hint else ""
        issues.append(
            ArgIssue("enum_error", path, f"argument '{path}' must be one of {choices}; got {short(value)}{tip}")
        )
        return
    if "const" in schema and value != schema["const"]:
        issues.append(ArgIssue("enum_error", path, f"argument '{path}' must be {short(schema['const'])}"))
        return
    if isinstance(value, dict):
        _check_object(value, schema, path, issues, top)
    elif isinstance(value, list):
        _check_array(value, schema, path, issues)
    else:
        _check_scalar(value, schema, path, issues)


def _check_object(
    value: dict[str, Any], schema: Mapping[str, Any], path: str, issues: list[ArgIssue], top: bool
) -> None:
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    for name in schema.get("required", []) or []:
        if name not in value:
            sub = props.get(name, {})
            what = sub.get("type", "value") if isinstance(sub, Mapping) else "value"
            desc = sub.get("description", "") if isinstance(sub, Mapping) else ""
            detail = f" ({what}: {desc})" if desc else f" ({what})"
            issues.append(
                ArgIssue(
                    "missing_argument",
                    _join(path, name),
                    f"missing required argument '{_join(path, name)}'{detail}",
                )
            )
    extra = schema.get("additionalProperties")
    strict = extra is False or (top and extra is None) or (extra is None and bool(props))
    for name, sub_value in value.items():
        if name in props:
            _check(sub_value, props[name], _join(path, name), issues)
        elif isinstance(extra, Mapping):
            _check(sub_value, extra, _join(path, name), issues)
        elif strict:
            hint = closest(name, props)
            tip = f" (did you mean '{hint[0]}'?)" if hint else ""
            accepted = ", ".join(props) or "none"
            issues.append(
                ArgIssue(
                    "unknown_argument",
                    _join(path, name),
                    f"unknown argument '{_join(path, name)}'{tip}; accepted: {accepted}",
                )
            )


def _check_array(value: list[Any], schema: Mapping[str, Any], path: str, issues: list[ArgIssue]) -> None:
    for bound, op, word in (("minItems", "<", "at least"), ("maxItems", ">", "at most")):
        limit = schema.get(bound)
        if isinstance(limit, int) and (len(value) < limit if op == "<" else len(value) > limit):
            issues.append(
                ArgIssue("constraint", path, f"argument '{path}' needs {word} {limit} item(s), got {len(value)}")
            )
    items = schema.get("items")
    if isinstance(items, Mapping):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", issues)


def _check_scalar(value: Any, schema: Mapping[str, Any], path: str, issues: list[ArgIssue]) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and value < low:
            issues.append(ArgIssue("constraint", path, f"argument '{path}' must be >= {low}, got {value}"))
        if isinstance(high, int | float) and value > high:
            issues.append(ArgIssue("constraint", path, f"argument '{path}' must be <= {high}, got {value}"))
    if isinstance(value, str):
        min_len, max_len = schema.get("minLength"), schema.get("maxLength")
        if isinstance(min_len, int) and len(value) < min_len:
            issues.append(ArgIssue("constraint", path, f"argument '{path}' needs at least {min_len} character(s)"))
        if isinstance(max_len, int) and len(value) > max_len:
            issues.append(ArgIssue("constraint", path, f"argument '{path}' allows at most {max_len} character(s)"))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                ok = re.search(pattern, value) is not None
            except re.error:
                ok = True  # a pattern Python cannot compile is the catalog's problem, not the model's
            if not ok:
                issues.append(ArgIssue("constraint", path, f"argument '{path}' must match /{pattern}/"))


def _valid(value: object, schema: object) -> bool:
    probe: list[ArgIssue] = []
    if isinstance(schema, Mapping):
        _check(value, schema, "", probe)
    return not probe


def describe_issues(issues: Sequence[ArgIssue]) -> str:
    return "\n".join(f"- {issue.message}" for issue in issues)
