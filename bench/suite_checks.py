"""Field checks for ``suite.yaml`` and task files: each field has one type, each problem one SuiteError.

A wrong type is named as such (``field 'id' must be a string, got integer 42``), never coerced: a
string where a list belongs would be read character by character, ``"yes"`` where a boolean belongs
is truthy, and a YAML date never equals the string a tool returns. Regular expressions compile here,
at load, not when the first episode is scored. :mod:`surfbench.bench.suite` builds its dataclasses from what
these functions return; this module imports nothing from it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from surfbench.bench.catalog import Catalog
from surfbench.bench.fields import _fail, _got, boolean, items, mapping, no_unknown, strings, text
from surfbench.bench.matchers import is_operator
from surfbench.bench.validation import closest, json_problem, short

SUITE_KEYS = {
    "name", "description", "catalog", "catalog_format", "backend", "system_prompt", "max_steps", "steps_per", "tasks",
    "classify", "loader", "variants", "backend_options", "error_types",
}  # fmt: skip
TASK_KEYS = {
    "id", "split", "tags", "turns", "scenario", "expected", "order", "state", "answer", "canned", "refuse",
    "require_calls", "note", "meta", "exact_calls",
}  # fmt: skip
CALL_KEYS = {"op", "args", "oracle_args", "turn"}
STATE_KEYS = {"path", "equals", "exists", "contains", "match", "len", "turn"}
ANSWER_KEYS = {"contains", "any_of", "regex", "not_contains"}
SPLITS = ("dev", "test")
TAGS = {
    "hot", "cold", "single", "multi", "arg-heavy", "near-miss", "should-refuse", "read", "write", "multi-turn",
}  # fmt: skip
MATCHER_OPERATORS = ("$any", "$regex", "$approx", "$set", "$list")
MAX_STEPS = 1000
"""Most model calls per episode (or per turn) a suite may ask for: far beyond any real task."""


def steps(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_STEPS:
        _fail(where, f"max_steps must be a whole number from 1 to {MAX_STEPS}, got {_got(value)}")
    return value


def steps_per(value: Any, where: str) -> str:
    if value in (None, "episode", "turn"):
        return str(value or "episode")
    _fail(where, f"steps_per must be 'episode' or 'turn', got {_got(value)}")


def backend_options(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(where, f"backend_options must be a mapping of option names to values, got {_got(value)}")
    return dict(value)


def error_types(value: Any, where: str) -> dict[str, str]:
    """The suite's own error types: a list of names, or names mapped to what each means."""
    from surfbench.bench.taxonomy import CORE

    if value is None:
        return {}
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        value = {v: "" for v in value}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k.strip() for k in value):
        _fail(where, "error_types must map each type's name to what it means")
    for name, meaning in value.items():
        if meaning is not None and not isinstance(meaning, str):
            _fail(where, f"error_types.{name} must be a string saying what it means, got {_got(meaning)}")
    clash = sorted(set(value) & CORE)
    if clash:
        _fail(where, f"error_types {clash} are core types already (bench/taxonomy.py); pick other names")
    return {str(k): str(v or "") for k, v in value.items()}


def suite_fields(data: Any, path: Path) -> dict[str, Any]:
    """Every field of a suite.yaml, checked; keys as in SUITE_KEYS (None or empty where absent).

    ``backend: none`` reads as None; ``catalog`` and ``tasks`` are required unless a ``loader`` builds them.
    """
    where = str(path)
    if not isinstance(data, Mapping):
        _fail(where, f"expected a mapping (name, catalog, tasks, ...), got {_got(data)}")
    problem = json_problem(data)
    if problem:
        _fail(where, problem)
    no_unknown(data, SUITE_KEYS, where)
    backend = text(data, "backend", where)
    fields = {
        "name": text(data, "name", where),
        "description": text(data, "description", where, empty=True) or "",
        "catalog": text(data, "catalog", where),
        "catalog_format": text(data, "catalog_format", where),
        "backend": None if backend == "none" else backend,
        "system_prompt": text(data, "system_prompt", where, empty=True),
        "max_steps": steps(data.get("max_steps"), where),
        "steps_per": steps_per(data.get("steps_per"), where),
        "tasks": strings(data, "tasks", where, one_ok=True),
        "classify": text(data, "classify", where),
        "loader": text(data, "loader", where),
        "variants": strings(data, "variants", where),
        "backend_options": backend_options(data.get("backend_options"), where),
        "error_types": error_types(data.get("error_types"), where),
    }
    if not fields["loader"]:
        for key in ("catalog", "tasks"):
            if not fields[key]:
                _fail(where, f"field {key!r} is required")
    return fields


def turn_index(value: Any, turns: int, where: str) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < turns:
        _fail(where, f"turn must be a user turn index from 0 to {turns - 1}, got {_got(value)}")
    return value


def compile_regex(pattern: Any, where: str, flags: int = re.IGNORECASE) -> None:
    """Compile a pattern now, so a typo fails the load, not the first scored episode."""
    if not isinstance(pattern, str):
        _fail(where, f"a regular expression must be a string, got {_got(pattern)}")
    try:
        re.compile(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        _fail(where, f"invalid regular expression {short(pattern)}: {exc}")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_matcher(matcher: Any, where: str) -> None:
    """One argument matcher (see bench.matchers): known operators, their operands' types, regexes compiled."""
    if is_operator(matcher):
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
            for i, value in enumerate(operand):
                if is_operator(value):
                    _fail(f"{where}.$set[{i}]", "$set takes values, not matchers (use $list for matchers in order)")
        elif op == "$list":
            for i, sub in enumerate(operand):
                check_matcher(sub, f"{where}.$list[{i}]")
    elif isinstance(matcher, Mapping):
        check_object_matcher(matcher, where)
    elif isinstance(matcher, list):
        for i, choice in enumerate(matcher):
            if isinstance(choice, Mapping):
                check_matcher(choice, f"{where}[{i}]")


def check_object_matcher(matchers: Mapping[str, Any], where: str) -> None:
    """An object matched key by key (a call's ``args``, or a nested object): ``$extra`` a boolean."""
    for key, matcher in matchers.items():
        if key == "$extra":
            if not isinstance(matcher, bool):
                _fail(f"{where}.$extra", f"must be true or false, got {_got(matcher)}")
        elif key.startswith("$"):
            _fail(where, f"{key!r} is not an argument name nor $extra (matcher operators go inside an argument)")
        else:
            check_matcher(matcher, f"{where}.{key}")


def _expected(row: Mapping[str, Any], turns: int, where: str) -> list[dict[str, Any]]:
    calls = []
    for i, call in enumerate(items(row, "expected", where)):
        at = f"{where}: expected[{i}]"
        if not isinstance(call, Mapping) or "op" not in call:
            _fail(at, "needs an 'op' (a mapping {op: ..., args: {...}})")
        no_unknown(call, CALL_KEYS, at)
        op = text(call, "op", at, required=True)
        args = mapping(call, "args", at)
        check_object_matcher(args, f"{at}.args")
        oracle = call.get("oracle_args")
        if oracle is not None and not isinstance(oracle, Mapping):
            _fail(at, f"field 'oracle_args' must be a mapping of concrete arguments, got {_got(oracle)}")
        calls.append(
            {
                "op": op,
                "args": args,
                "oracle_args": None if oracle is None else dict(oracle),
                "turn": turn_index(call.get("turn"), turns, at),
            }
        )
    return calls


def _state_path(raw: Any, where: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        parts = raw.split(".")
    elif isinstance(raw, list) and raw and all(isinstance(p, str) or type(p) is int for p in raw):
        parts = [str(p) for p in raw]
    else:
        _fail(where, f"path must be 'a.b.c' or a non-empty list of keys, got {_got(raw)}")
    if not all(parts):
        _fail(where, f"path {short(raw)} has an empty key")
    return tuple(parts)


def _state(row: Mapping[str, Any], turns: int, where: str) -> list[dict[str, Any]]:
    checks = []
    for i, check in enumerate(items(row, "state", where)):
        at = f"{where}: state[{i}]"
        if not isinstance(check, Mapping) or "path" not in check:
            _fail(at, "needs a 'path' (a mapping {path: ..., equals: ...})")
        no_unknown(check, STATE_KEYS, at)
        length = check.get("len")
        if length is not None and (type(length) is not int or length < 0):
            _fail(at, f"len must be a whole number >= 0, got {_got(length)}")
        if "match" in check:
            check_matcher(check["match"], f"{at}.match")
        checks.append(
            {
                "path": _state_path(check["path"], at),
                "equals": check.get("equals"),
                "exists": boolean(check, "exists", at),
                "contains": check.get("contains"),
                "match": check.get("match"),
                "len": length,
                "has_equals": "equals" in check,
                "turn": turn_index(check.get("turn"), turns, at),
            }
        )
    return checks


def _answer(row: Mapping[str, Any], where: str) -> dict[str, Any]:
    answer = mapping(row, "answer", where)
    at = f"{where}: answer"
    no_unknown(answer, ANSWER_KEYS, at)
    for key in ("contains", "any_of", "not_contains"):
        value = answer.get(key)
        if value is None:
            continue
        if not isinstance(value, list):  # a bare string would be checked one character at a time
            _fail(at, f"{key} must be a list of strings, got {_got(value)} (write [{short(value)}])")
        for i, needle in enumerate(value):
            if not isinstance(needle, str) or not needle.strip():
                _fail(at, f"{key}[{i}] must be a non-empty string, got {_got(needle)} (quote it)")
    if answer.get("regex") is not None:
        compile_regex(answer["regex"], f"{at}.regex", re.IGNORECASE | re.DOTALL)  # the flags check_answer uses
    return {k: v for k, v in answer.items() if v is not None}


def task_fields(row: Any, path: Path, index: int) -> dict[str, Any]:
    """Every field of one task, checked.

    Returns:
        Keyword arguments for ``Task``, with ``expected`` and ``state`` as lists of keyword arguments
        for ``ExpectedCall`` and ``StateCheck``.
    """
    if not isinstance(row, Mapping):
        _fail(f"{path}: task #{index + 1}", f"expected a mapping (id, turns, ...), got {_got(row)}")
    task_id = row.get("id")
    named = isinstance(task_id, str) and task_id.strip()
    where = f"{path}: task {task_id!r}" if named else f"{path}: task #{index + 1}"
    if task_id is None:
        _fail(where, "field 'id' is required")
    if not isinstance(task_id, str) or not task_id.strip():
        _fail(where, f"field 'id' must be a non-empty string, got {_got(task_id)} (quote it)")
    problem = json_problem(row)  # first: bounded depth and plain JSON values for every check below
    if problem:
        _fail(where, problem)
    no_unknown(row, TASK_KEYS, where)
    turns = row.get("turns")
    if isinstance(turns, str):
        turns = [turns]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        _fail(where, f"field 'turns' needs one or more non-empty user messages (a list of strings), got {_got(turns)}")
    split = "dev" if row.get("split") is None else row["split"]
    if split not in SPLITS:
        _fail(where, f"split must be one of {SPLITS}, got {_got(split)}")
    tags = strings(row, "tags", where)
    bad = [t for t in tags if t not in TAGS]
    if bad:
        near = closest(bad[0], TAGS)
        tip = f" (did you mean {near[0]!r}?)" if near else ""
        _fail(where, f"unknown tag {bad[0]!r}{tip}; known: {', '.join(sorted(TAGS))}")
    order = "ordered" if row.get("order") is None else row["order"]
    if order not in ("ordered", "any"):
        _fail(where, f"order must be 'ordered' or 'any', got {_got(order)}")
    expected = _expected(row, len(turns), where)
    refuse = bool(boolean(row, "refuse", where)) or "should-refuse" in tags
    if refuse and expected:
        _fail(where, "a should-refuse task cannot have expected calls")
    canned = mapping(row, "canned", where)
    return {
        "id": task_id,
        "turns": tuple(turns),
        "split": split,
        "tags": tuple(tags),
        "scenario": text(row, "scenario", where),
        "expected": expected,
        "order": order,
        "state": _state(row, len(turns), where),
        "answer": _answer(row, where),
        "canned": canned,
        "refuse": refuse,
        "require_calls": boolean(row, "require_calls", where),
        "note": text(row, "note", where, empty=True) or "",
        "meta": mapping(row, "meta", where),
        "exact_calls": bool(boolean(row, "exact_calls", where)),
    }


def undeclared(schema: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """Argument names an operation's schema does not declare and does not let through.

    A schema without ``properties``, or whose ``additionalProperties`` allows more, declares no closed
    set; otherwise the call validator refuses any other name (bench.validation), so an expected
    argument outside it can never be given, and one marked may-be-omitted (``""``) is dead: a typo.
    """
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    if not isinstance(props, Mapping) or extra is True or isinstance(extra, Mapping):
        return []
    return [n for n in names if n != "$extra" and n not in props]


def check_against_catalog(
    where: str,
    calls: Sequence[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]],
    canned: Mapping[str, Any],
    catalog: Catalog,
    *,
    args: bool,
    backend: str | None,
) -> None:
    """A task's expected calls, their arguments and its canned results against its catalog.

    Args:
        where: ``file: task 'id'`` for the message.
        calls: (op, argument matchers, oracle arguments) of each expected call.
        canned: The task's canned results by operation.
        catalog: The task's catalog.
        args: Also check argument names and canned operations (off for a loader's tasks: BFCL is
            imported as it is, known flaws included, see README).
        backend: The suite's backend spec; canned results apply only without one.
    """
    for i, (op, matchers, oracle) in enumerate(calls):
        if op not in catalog:
            near = closest(op, catalog.names)
            tip = f" (did you mean {', '.join(near)}?)" if near else ""
            _fail(where, f"expected op {op!r} not in the catalog{tip}")
        if not args:
            continue
        schema = catalog[op].parameters
        for label, given in (("args", matchers), ("oracle_args", oracle or {})):
            unknown = undeclared(schema, list(given))
            if unknown:
                near = closest(unknown[0], list(schema.get("properties", {})))
                tip = f" (did you mean {near[0]!r}?)" if near else ""
                _fail(f"{where}: expected[{i}].{label}", f"{op} has no argument {unknown[0]!r}{tip}")
    if not args or not canned:
        return
    if backend is not None:
        _fail(where, f"canned results apply only to suites without a backend (this one has {backend})")
    for op in canned:
        if op not in catalog:
            near = closest(op, catalog.names)
            tip = f" (did you mean {', '.join(near)}?)" if near else ""
            _fail(f"{where}: canned", f"operation {op!r} not in the catalog{tip}")
