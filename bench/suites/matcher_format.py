"""Argument matchers checked at load: known operators, their operands' types, regular expressions compiled.

The matchers themselves (what a call's arguments are compared with) are :mod:`surfbench.bench.suites.matchers`;
this module only refuses a malformed one, naming where it is, before the first episode is scored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TypeGuard, cast

from surfbench.bench.base.validation import short
from surfbench.bench.suites.fields import _fail, _got
from surfbench.bench.suites.matchers import is_operator

MATCHER_OPERATORS = ("$any", "$regex", "$approx", "$set", "$list")


def compile_regex(pattern: object, where: str, flags: int = re.IGNORECASE) -> None:
    """Compile a pattern now, so a typo fails the load, not the first scored episode."""
    if not isinstance(pattern, str):
        _fail(where, f"a regular expression must be a string, got {_got(pattern)}")
    try:
        re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        _fail(where, f"invalid regular expression {short(pattern)}: {exc}")


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _check_operator(matcher: Mapping[str, object], where: str) -> None:
    """A ``{$op: operand}`` matcher: exactly one known operator, an operand of its type."""
    keys = set(matcher)
    unknown = sorted(keys - {*MATCHER_OPERATORS, "$tol"})
    if unknown:
        hint = "; $extra belongs in an object matcher" if "$extra" in unknown else ""
        _fail(where, f"unknown matcher operator {unknown[0]!r}; known: {', '.join(MATCHER_OPERATORS)}, $tol{hint}")
    primary = [k for k in MATCHER_OPERATORS if k in keys]
    if len(primary) != 1:
        _fail(where, f"a matcher takes exactly one of {', '.join(MATCHER_OPERATORS)}, got {sorted(keys)}")
    op, operand = primary[0], matcher[primary[0]]
    if "$tol" in keys and (op != "$approx" or not _number(matcher["$tol"]) or matcher["$tol"] < 0):
        _fail(where, f"$tol goes with $approx and is a number >= 0, got {_got(matcher['$tol'])}")
    if op == "$any" and operand is not True:
        _fail(where, f"$any must be true, got {_got(operand)}")
    elif op == "$regex":
        compile_regex(operand, f"{where}.$regex")
    elif op == "$approx" and not _number(operand):
        _fail(where, f"$approx must be a number, got {_got(operand)}")
    elif op in ("$set", "$list") and not isinstance(operand, list):
        _fail(where, f"{op} must be a list, got {_got(operand)}")
    elif op == "$set":
        for i, value in enumerate(cast("list[object]", operand)):  # a list: checked above
            if is_operator(value):
                _fail(f"{where}.$set[{i}]", "$set takes values, not matchers (use $list for matchers in order)")
    elif op == "$list":
        for i, sub in enumerate(cast("list[object]", operand)):  # a list: checked above
            check_matcher(sub, f"{where}.$list[{i}]")


def check_matcher(matcher: object, where: str) -> None:
    """One argument matcher (see bench.suites.matchers): known operators, their operands' types, regexes compiled."""
    if is_operator(matcher):
        _check_operator(matcher, where)
    elif isinstance(matcher, Mapping):
        check_object_matcher(matcher, where)
    elif isinstance(matcher, list):
        for i, choice in enumerate(matcher):
            if isinstance(choice, Mapping):
                check_matcher(choice, f"{where}[{i}]")


def check_object_matcher(matchers: Mapping[str, object], where: str) -> None:
    """An object matched key by key (a call's ``args``, or a nested object): ``$extra`` a boolean."""
    for key, matcher in matchers.items():
        if key == "$extra":
            if not isinstance(matcher, bool):
                _fail(f"{where}.$extra", f"must be true or false, got {_got(matcher)}")
        elif key.startswith("$"):
            _fail(where, f"{key!r} is not an argument name nor $extra (matcher operators go inside an argument)")
        else:
            check_matcher(matcher, f"{where}.{key}")
