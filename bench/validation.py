"""Argument validation against an operation's own JSON Schema, with errors that teach.

Covers what a model gets wrong in practice: missing required arguments, wrong types, values outside
an enum (the allowed values are listed), unknown arguments (with a did-you-mean), and simple numeric,
length and pattern constraints, recursively through objects and arrays.
"""

from __future__ import annotations

import difflib
import json
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


def short(value: Any, limit: int = 60) -> str:
    """Compact JSON for a value, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_JSON_TYPES = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def json_type_name(value: Any) -> str:
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


def _valid(value: Any, schema: Any) -> bool:
    probe: list[ArgIssue] = []
    if isinstance(schema, Mapping):
        _check(value, schema, "", probe)
    return not probe


def describe_issues(issues: Sequence[ArgIssue]) -> str:
    return "\n".join(f"- {issue.message}" for issue in issues)
