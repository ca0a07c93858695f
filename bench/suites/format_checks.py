"""Field checks for ``suite.yaml`` and task files: each field has one type, each problem one SuiteError.

A wrong type is named as such (``field 'id' must be a string, got integer 42``), never coerced: a
string where a list belongs would be read character by character, ``"yes"`` where a boolean belongs
is truthy, and a YAML date never equals the string a tool returns. Regular expressions compile here,
at load, not when the first episode is scored. The allowed keys of each mapping are the fields of its
record in :mod:`surfbench.bench.suites.suite_model`, which these functions build.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from surfbench.bench.base.bounded import turn_problem
from surfbench.bench.base.validation import closest, json_problem, short
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.suites.expected import call_from, check_call, one_of_from
from surfbench.bench.suites.fields import _fail, _got, boolean, items, mapping, no_unknown, strings, text
from surfbench.bench.suites.matcher_format import check_matcher, compile_regex
from surfbench.bench.suites.policy import policy_mapping
from surfbench.bench.suites.suite_model import (
    ANSWER_KEYS,
    CALL_KEYS,
    CORE_TAGS,
    SPLITS,
    STATE_KEYS,
    SUITE_KEYS,
    TASK_KEYS,
    ExpectedCall,
    StateCheck,
    SuiteFile,
    Task,
)

MAX_STEPS = 1000
"""Most model calls per episode (or per turn) a suite may ask for: far beyond any real task."""


def steps(value: object, where: str) -> int | None:
    """``max_steps``: a whole number from 1 to MAX_STEPS (None when absent)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_STEPS:
        _fail(where, f"max_steps must be a whole number from 1 to {MAX_STEPS}, got {_got(value)}")
    return value


def steps_per(value: object, where: str) -> str:
    """``steps_per``: ``episode`` (the default) or ``turn``."""
    if value in (None, "episode", "turn"):
        return str(value or "episode")
    _fail(where, f"steps_per must be 'episode' or 'turn', got {_got(value)}")


def backend_options(value: object, where: str) -> dict[str, object]:
    """``backend_options``: a mapping of keyword arguments for the backend class ({} when absent)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(where, f"backend_options must be a mapping of option names to values, got {_got(value)}")
    return dict(value)


def error_types(value: object, where: str) -> dict[str, str]:
    """The suite's own error types: a list of names, or names mapped to what each means."""
    from surfbench.bench.base.taxonomy import CORE

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
        _fail(where, f"error_types {clash} are core types already (bench/base/taxonomy.py); pick other names")
    return {str(k): str(v or "") for k, v in value.items()}


def suite_tags(data: Mapping[str, object], where: str) -> tuple[str, ...]:
    """The suite's own task tags: names beyond the core ones."""
    tags = strings(data, "tags", where)
    clash = sorted(set(tags) & CORE_TAGS)
    if clash:
        _fail(
            where, f"tags {clash} are core tags already (bench/suites/suite_model.py CORE_TAGS); declare only new ones"
        )
    return tuple(dict.fromkeys(tags))


def hook_specs(data: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
    """A list of hooks (``checks``), each named once: ``file.py:function``, or a registered name."""
    specs = strings(data, key, where)
    for i, spec in enumerate(specs):
        head, _, attr = spec.rpartition(":")
        registered = not head and spec.isidentifier()  # `cites_note`: an entry point of surfbench.checks
        if not registered and (not head.strip() or not attr.strip()):
            _fail(where, f"{key}[{i}] must be 'file.py:function' or a registered check's name, got {_got(spec)}")
        if spec in specs[:i]:
            _fail(where, f"{key}[{i}] {spec!r} is listed twice")
    return tuple(specs)


def _mcp_catalog(value: object, where: str) -> dict[str, object] | None:
    """``catalog: {mcp: {...}, pinned: FILE}`` checked (bench/mcp/mcp_spec.py), or None for a file or class."""
    from surfbench.bench.mcp.mcp_spec import catalog_mapping

    try:
        return catalog_mapping(value, where)
    except ValueError as exc:
        _fail(where, str(exc).removeprefix(f"{where}: "))


def suite_file(data: object, path: Path) -> SuiteFile:
    """suite.yaml's fields, checked (None or empty where absent).

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
    spec = SuiteFile(
        name=text(data, "name", where),
        description=text(data, "description", where, empty=True) or "",
        catalog=None if isinstance(data.get("catalog"), Mapping) else text(data, "catalog", where),
        catalog_mcp=_mcp_catalog(data.get("catalog"), where),  # {mcp: {...}, pinned: FILE}: a live server
        catalog_format=text(data, "catalog_format", where),
        backend=None if backend == "none" else backend,
        system_prompt=text(data, "system_prompt", where, empty=True),
        max_steps=steps(data.get("max_steps"), where),
        steps_per=steps_per(data.get("steps_per"), where),
        tasks=tuple(strings(data, "tasks", where, one_ok=True)),
        classify=text(data, "classify", where),
        loader=text(data, "loader", where),
        variants=tuple(strings(data, "variants", where)),
        backend_options=backend_options(data.get("backend_options"), where),
        error_types=error_types(data.get("error_types"), where),
        tags=suite_tags(data, where),
        checks=hook_specs(data, "checks", where),
        policy=policy_mapping(data.get("policy"), where),
        passthrough=tuple(strings(data, "passthrough", where)) if data.get("passthrough") is not None else None,
    )
    if not spec.loader:
        for key in ("catalog", "tasks"):
            if not getattr(spec, key) and not (key == "catalog" and spec.catalog_mcp):
                _fail(where, f"field {key!r} is required")
    return spec


def turn_index(value: object, turns: int, where: str) -> int | None:
    """A user turn index (0-based) below ``turns``, or None when absent."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < turns:
        _fail(where, f"turn must be a user turn index from 0 to {turns - 1}, got {_got(value)}")
    return value


def _expected(row: Mapping[str, object], turns: int, where: str) -> tuple[ExpectedCall, ...]:
    calls: list[ExpectedCall] = []
    for i, call in enumerate(items(row, "expected", where)):
        at = f"{where}: expected[{i}]"
        if isinstance(call, Mapping) and "one_of" in call:
            calls.append(one_of_from(call, at, turn_index(call.get("turn"), turns, at)))
            continue
        if not isinstance(call, Mapping) or "op" not in call:
            _fail(at, "needs an 'op' (a mapping {op: ..., args: {...}}) or a 'one_of' list of alternatives")
        calls.append(call_from(call, CALL_KEYS, at, turn_index(call.get("turn"), turns, at)))
    return tuple(calls)


def _state_path(raw: object, where: str) -> tuple[str, ...]:
    if isinstance(raw, str):
        parts = raw.split(".")
    elif isinstance(raw, list) and raw and all(isinstance(p, str) or type(p) is int for p in raw):
        parts = [str(p) for p in raw]
    else:
        _fail(where, f"path must be 'a.b.c' or a non-empty list of keys, got {_got(raw)}")
    if not all(parts):
        _fail(where, f"path {short(raw)} has an empty key")
    return tuple(parts)


def _state(row: Mapping[str, object], turns: int, where: str) -> tuple[StateCheck, ...]:
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
        keys = check.get("keys")
        if keys is not None and (not isinstance(keys, list) or not all(isinstance(k, str) for k in keys)):
            _fail(at, f"keys must be a list of strings, got {_got(keys)}")
        checks.append(
            StateCheck(
                path=_state_path(check["path"], at),
                equals=check.get("equals"),
                exists=boolean(check, "exists", at),
                contains=check.get("contains"),
                match=check.get("match"),
                len=length,
                keys=tuple(keys) if keys is not None else None,
                has_equals="equals" in check,
                turn=turn_index(check.get("turn"), turns, at),
            )
        )
    return tuple(checks)


def _answer(row: Mapping[str, object], where: str) -> dict[str, object]:
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


def _task_where(row: object, path: Path, index: int) -> tuple[str, Mapping[str, object]]:
    """``file: task 'id'`` for every message about the task, once its id and its keys are sound."""
    if not isinstance(row, Mapping):
        _fail(f"{path}: task #{index + 1}", f"expected a mapping (id, turns, ...), got {_got(row)}")
    task_id = row.get("id")
    named = isinstance(task_id, str) and task_id.strip()
    where = f"{path}: task {task_id!r}" if named else f"{path}: task #{index + 1}"
    if task_id is None:
        _fail(where, "field 'id' is required")
    if not named:
        _fail(where, f"field 'id' must be a non-empty string, got {_got(task_id)} (quote it)")
    problem = json_problem(row)  # first: bounded depth and plain JSON values for every check below
    if problem:
        _fail(where, problem)
    no_unknown(row, TASK_KEYS, where)
    return where, row


def _turns(row: Mapping[str, object], where: str) -> tuple[str, ...]:
    turns = row.get("turns")
    if isinstance(turns, str):
        turns = [turns]
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        _fail(where, f"field 'turns' needs one or more non-empty user messages (a list of strings), got {_got(turns)}")
    for i, turn in enumerate(turns):
        problem = turn_problem(turn)
        if problem:
            _fail(where, f"turns[{i}]: {problem}")
    return tuple(turns)


def _choice(row: Mapping[str, object], key: str, choices: Sequence[str], where: str) -> str:
    """A field that is one of ``choices`` (the first when absent)."""
    value = choices[0] if row.get(key) is None else row[key]
    if value not in choices:
        allowed = f"one of {tuple(choices)}" if key == "split" else " or ".join(repr(c) for c in choices)
        _fail(where, f"{key} must be {allowed}, got {_got(value)}")
    return str(value)


def _tags(row: Mapping[str, object], known: frozenset[str], where: str) -> tuple[str, ...]:
    """The task's tags, each a core tag or one its suite declares."""
    tags = strings(row, "tags", where)
    bad = [t for t in tags if t not in known]
    if bad:
        near = closest(bad[0], known)
        tip = f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
        _fail(
            where,
            f"unknown tag {bad[0]!r}{tip}; known: {', '.join(sorted(known))} (a suite declares its own in "
            "suite.yaml: tags: [...])",
        )
    return tuple(tags)


def task_from(row: object, path: Path, index: int, suite_tags: Iterable[str] = ()) -> Task:
    """One task of a task file, every field checked; ``suite_tags``: the tags its suite declares."""
    where, row = _task_where(row, path, index)
    turns = _turns(row, where)
    split = _choice(row, "split", SPLITS, where)
    tags = _tags(row, CORE_TAGS | frozenset(suite_tags), where)
    order = _choice(row, "order", ("ordered", "any"), where)
    expected = _expected(row, len(turns), where)
    refuse = bool(boolean(row, "refuse", where)) or "should-refuse" in tags
    if refuse and expected:
        _fail(where, "a should-refuse task cannot have expected calls")
    return Task(
        id=str(row["id"]),  # a non-empty string: _task_where checked it
        turns=turns,
        split=split,
        tags=tags,
        canned=mapping(row, "canned", where),
        scenario=text(row, "scenario", where),
        expected=expected,
        order=order,
        state=_state(row, len(turns), where),
        answer=_answer(row, where),
        refuse=refuse,
        require_calls=boolean(row, "require_calls", where),
        note=text(row, "note", where, empty=True) or "",
        meta=mapping(row, "meta", where),
        exact_calls=bool(boolean(row, "exact_calls", where)),
        source=str(path),
    )


def check_against_catalog(
    where: str,
    calls: Sequence[ExpectedCall],
    canned: Mapping[str, object],
    catalog: Catalog,
    *,
    args: bool,
    backend: str | None,
) -> None:
    """A task's expected calls, their arguments and its canned results against its catalog.

    Args:
        where: ``file: task 'id'`` for the message.
        calls: The task's expected calls (each alternative of a ``one_of`` is checked).
        canned: The task's canned results by operation.
        catalog: The task's catalog.
        args: Also check argument names and canned operations (off for a loader's tasks: BFCL is
            imported as it is, known flaws included, see README).
        backend: The suite's backend spec; canned results apply only without one.
    """
    for i, call in enumerate(calls):
        check_call(i, call, catalog, where, args=args)
    if not args or not canned:
        return
    if backend is not None:
        _fail(where, f"canned results apply only to suites without a backend (this one has {backend})")
    for op in canned:
        if op not in catalog:
            near = closest(op, catalog.names)
            tip = f" (did you mean {', '.join(near)}?)" if near else ""
            _fail(f"{where}: canned", f"operation {op!r} not in the catalog{tip}")
