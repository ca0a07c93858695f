"""BFCL-style argument matchers (their failures carry the error types of :mod:`surfbench.bench.base.taxonomy`).

A matcher for one argument is:

- a list of acceptable values (``["open", "all"]``); ``""`` in the list means the argument may be
  omitted, and then ``""`` or null is taken as omitting it (as BFCL's checker does). A bare scalar is
  shorthand for a one-element list. An acceptable value that is itself a list matches a list item by
  item, and its items may be matchers (``[[{$regex: "^fix"}, b]]``: two items, the first by pattern).
- ``{$regex: PATTERN}`` (search, case-insensitive), ``{$approx: X, $tol: T}`` (numeric tolerance),
  ``{$set: [...]}`` (a list in any order), ``{$any: true}`` (any value, or omitted),
  ``{$list: [m1, m2]}`` (a list whose items match in order).
- a plain mapping: a nested object matched key by key (extra keys are errors unless ``$extra: true``).

Strings compare case- and whitespace-normalised; numbers compare numerically (3 == 3.0); booleans
only equal booleans.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeGuard, cast

from surfbench.bench.base.taxonomy import ErrorType

_MISSING = object()


@dataclass(frozen=True)
class Mismatch:
    path: str
    error_type: str
    detail: str


def norm(value: object) -> object:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    return value


def scalar_equal(expected: object, actual: object) -> bool:
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return float(expected) == float(actual)
    if isinstance(expected, str) and isinstance(actual, str):
        return norm(expected) == norm(actual)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(scalar_equal(e, a) for e, a in zip(expected, actual, strict=True))
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return set(expected) == set(actual) and all(scalar_equal(expected[k], actual[k]) for k in expected)
    return bool(expected == actual)


def _type_of(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def is_operator(matcher: object) -> TypeGuard[Mapping[str, object]]:
    """A mapping whose keys all start with ``$`` (``{$regex: ...}``): YAML's and JSON's keys, strings."""
    return isinstance(matcher, Mapping) and bool(matcher) and all(str(k).startswith("$") for k in matcher)


def optional(matcher: object) -> bool:
    """True when the argument may be omitted."""
    if is_operator(matcher):
        return "$any" in matcher
    return isinstance(matcher, list) and any(v == "" for v in matcher)


def match_value(matcher: object, actual: object, path: str = "") -> list[Mismatch]:
    """Mismatches of ``actual`` against ``matcher`` (empty when it matches)."""
    if is_operator(matcher):
        return _match_operator(matcher, actual, path)
    if isinstance(matcher, Mapping):
        return match_object(matcher, actual, path)
    choices: list[object] = matcher if isinstance(matcher, list) else [matcher]
    if "" in choices and actual in ("", None):
        return []  # BFCL: "" means the argument may be omitted, and an empty value (or null) omits it
    choices = [c for c in choices if c != ""]
    for choice in choices:
        if is_operator(choice) or isinstance(choice, Mapping):
            if not match_value(choice, actual, path):
                return []
        elif isinstance(choice, list):  # a list value whose items may be matchers ([[{$regex: ...}, b]])
            if not _match_operator({"$list": [[item] for item in choice]}, actual, path):
                return []
        elif scalar_equal(choice, actual):
            return []
    kinds = {_type_of(c) for c in choices if not isinstance(c, Mapping)}
    error = ErrorType.TYPE_ERROR if kinds and _type_of(actual) not in kinds else ErrorType.WRONG_VALUE
    return [Mismatch(path, error, f"got {actual!r}, expected one of {choices!r}")]


def _match_operator(matcher: Mapping[str, object], actual: object, path: str) -> list[Mismatch]:
    # the operands' types were checked at load (bench.suites.matcher_format): the casts only say so
    if "$any" in matcher:
        return []
    if "$regex" in matcher:
        if isinstance(actual, str) and re.search(str(matcher["$regex"]), actual, re.IGNORECASE):
            return []
        return [Mismatch(path, ErrorType.WRONG_VALUE, f"{actual!r} does not match /{matcher['$regex']}/")]
    if "$approx" in matcher:
        tol = float(cast("float", matcher.get("$tol", 1e-6)))
        if isinstance(actual, int | float) and not isinstance(actual, bool):
            if abs(float(actual) - float(cast("float", matcher["$approx"]))) <= tol:
                return []
            return [Mismatch(path, ErrorType.WRONG_VALUE, f"{actual!r} not within {tol} of {matcher['$approx']}")]
        return [Mismatch(path, ErrorType.TYPE_ERROR, f"expected a number, got {actual!r}")]
    if "$set" in matcher:
        want = list(cast("list[object]", matcher["$set"]))
        if not isinstance(actual, list):
            return [Mismatch(path, ErrorType.TYPE_ERROR, f"expected a list, got {actual!r}")]
        remaining = list(actual)
        for item in want:
            hit = next((i for i, a in enumerate(remaining) if scalar_equal(item, a)), None)
            if hit is None:
                return [Mismatch(path, ErrorType.WRONG_VALUE, f"{actual!r} lacks {item!r}")]
            remaining.pop(hit)
        if remaining:
            return [Mismatch(path, ErrorType.WRONG_VALUE, f"{actual!r} has extra items {remaining!r}")]
        return []
    if "$list" in matcher:
        items = list(cast("list[object]", matcher["$list"]))
        if not isinstance(actual, list):
            return [Mismatch(path, ErrorType.TYPE_ERROR, f"expected a list, got {actual!r}")]
        if len(items) != len(actual):
            return [Mismatch(path, ErrorType.WRONG_VALUE, f"expected {len(items)} items, got {len(actual)}")]
        out: list[Mismatch] = []
        for i, (m, a) in enumerate(zip(items, actual, strict=True)):
            out += match_value(m, a, f"{path}[{i}]")
        return out
    raise ValueError(f"unknown matcher operator(s) {sorted(matcher)} at {path or 'top level'}")


def match_object(matchers: Mapping[str, object], actual: object, path: str = "") -> list[Mismatch]:
    """Match an argument object key by key: missing, wrong and extra arguments."""
    if not isinstance(actual, Mapping):
        return [Mismatch(path, ErrorType.TYPE_ERROR, f"expected an object, got {actual!r}")]
    allow_extra = bool(matchers.get("$extra", False))
    out: list[Mismatch] = []
    for key, matcher in matchers.items():
        if key == "$extra":
            continue
        sub = f"{path}.{key}" if path else key
        value = actual.get(key, _MISSING)
        if value is _MISSING:
            if not optional(matcher):
                out.append(Mismatch(sub, ErrorType.MISSING_ARGUMENT, f"'{sub}' is missing"))
            continue
        out += match_value(matcher, value, sub)
    if not allow_extra:
        for key in actual:
            if key not in matchers:
                sub = f"{path}.{key}" if path else key
                out.append(Mismatch(sub, ErrorType.EXTRA_ARGUMENT, f"unexpected argument '{sub}'"))
    return out


def example_value(matcher: object) -> object:
    """A concrete value that satisfies ``matcher`` (for oracle replays); ``_MISSING`` when optional-only."""
    if is_operator(matcher):
        if "$any" in matcher:
            return _MISSING
        if "$approx" in matcher:
            return matcher["$approx"]
        if "$set" in matcher:
            return list(cast("list[object]", matcher["$set"]))
        if "$list" in matcher:
            return [example_value(m) for m in cast("list[object]", matcher["$list"])]
        raise ValueError(f"matcher {dict(matcher)!r} has no example value: give oracle_args")
    if isinstance(matcher, Mapping):
        return example_args(matcher)
    choices = matcher if isinstance(matcher, list) else [matcher]
    concrete = [c for c in choices if c != ""]
    if not concrete:
        return _MISSING
    first = concrete[0]
    if isinstance(first, list):
        return [example_value(m) if isinstance(m, Mapping) else m for m in first]
    return example_value(first) if isinstance(first, Mapping) else first


def example_args(matchers: Mapping[str, object]) -> dict[str, object]:
    out = {}
    for key, matcher in matchers.items():
        if key == "$extra":
            continue
        value = example_value(matcher)
        if value is not _MISSING:
            out[key] = value
    return out
