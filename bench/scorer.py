"""Turn an episode's calls and final state into the metrics of ARCHITECTURE.md ("Metric definitions").

- first-try argument accuracy: for each expected call, the first call the model made to that same
  operation (after routing; the k-th expected call of an operation pairs with the k-th call to it)
  passed the operation's schema and its arguments match the expected matchers;
- tool selection: the first call naming a canonical operation names the expected first operation
  (any expected operation when the task's order is ``any``: parallel calls have no first);
- success: the task's checks hold (expected calls where required, final state, answer);
- recovered after error: an operation whose first call failed validation and a later call succeeded;
- round trips, overhead round trips, boundary / protocol violations, parse failures, stable prefix.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.catalog import Catalog
from surfbench.bench.matchers import Mismatch, match_object, match_value, scalar_equal
from surfbench.bench.records import CallRecord, EpisodeTrace
from surfbench.bench.suite import ExpectedCall, StateCheck, Task


@dataclass(frozen=True)
class FirstTry:
    """The first attempt at one expected call."""

    expected_index: int
    operation: str
    correct: bool
    error_type: str | None
    """Why it was wrong (``missing_call``, ``schema_invalid``, ``wrong_value``, ...)."""
    detail: str = ""
    call_position: int | None = None
    """Index into the episode's call list of that first attempt."""


@dataclass(frozen=True)
class EpisodeScore:
    round_trips: int
    overhead_round_trips: int
    expected_calls: int
    first_try_correct: int
    first_tries: tuple[FirstTry, ...]
    selection_correct: bool | None
    success: bool
    calls_ok: bool | None
    state_ok: bool | None
    answer_ok: bool | None
    refuse_ok: bool | None
    recovered_after_error: int
    failed_first_tries: int
    boundary_violations: int
    protocol_violations: int
    parse_failures: int
    meta_calls: int
    operation_calls: int
    stable_prefix: bool
    error_types: tuple[str, ...]
    """Every failure in the episode, one entry per failed check (fixed taxonomy)."""
    failures: tuple[str, ...] = field(default_factory=tuple)
    """Human-readable lines explaining each failed check."""

    @property
    def first_try_accuracy(self) -> float | None:
        return self.first_try_correct / self.expected_calls if self.expected_calls else None


def lookup(state: Any, path: Sequence[str]) -> tuple[bool, Any]:
    """Follow a path of keys through nested mappings (and list indexes); (found, value)."""
    node = state
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def _check_at_turn(check: StateCheck, trace: EpisodeTrace) -> str | None:
    """A state check on the final state, or on the state after its user turn."""
    if check.turn is None:
        return check_state(check, trace.state)
    if check.turn >= len(trace.turn_states):
        return f"after turn {check.turn + 1}: the episode ended before that turn was answered"
    why = check_state(check, trace.turn_states[check.turn])
    return f"after turn {check.turn + 1}: {why}" if why else None


def check_state(check: StateCheck, state: Mapping[str, Any]) -> str | None:
    """None when the check holds, else why not."""
    found, value = lookup(state, check.path)
    where = ".".join(check.path)
    if check.exists is not None and found != check.exists:
        return f"{where}: expected {'present' if check.exists else 'absent'}"
    if not found:
        return None if check.exists is False else f"{where}: not found"
    if check.has_equals and not scalar_equal(check.equals, value):
        return f"{where}: expected {check.equals!r}, got {value!r}"
    if check.contains is not None:
        items = list(value) if isinstance(value, list | dict) else None
        if items is not None:
            if not any(scalar_equal(check.contains, v) for v in items):
                return f"{where}: {check.contains!r} not in {value!r}"
        elif not (isinstance(value, str) and str(check.contains).casefold() in value.casefold()):
            return f"{where}: does not contain {check.contains!r}"
    if check.len is not None and (not hasattr(value, "__len__") or len(value) != check.len):
        return f"{where}: expected length {check.len}, got {value!r}"
    if check.match is not None:
        problems = match_value(check.match, value, where)
        if problems:
            return f"{where}: {problems[0].detail}"
    return None


def check_answer(answer: Mapping[str, Any], text: str | None) -> str | None:
    if not answer:
        return None
    if text is None:
        return "no final answer"
    low = " ".join(text.split()).casefold()
    for needle in answer.get("contains", []) or []:
        if str(needle).casefold() not in low:
            return f"answer lacks {needle!r}"
    any_of = answer.get("any_of") or []
    if any_of and not any(str(n).casefold() in low for n in any_of):
        return f"answer has none of {any_of!r}"
    for needle in answer.get("not_contains", []) or []:
        if str(needle).casefold() in low:
            return f"answer contains {needle!r}"
    pattern = answer.get("regex")
    if pattern and not re.search(str(pattern), text, re.IGNORECASE | re.DOTALL):
        return f"answer does not match /{pattern}/"
    return None


def _arg_problems(expected: ExpectedCall, call: CallRecord) -> list[Mismatch]:
    return match_object(expected.args, call.arguments if isinstance(call.arguments, Mapping) else {})


def _first_tries(task: Task, calls: Sequence[CallRecord]) -> list[FirstTry]:
    by_op: dict[str, list[int]] = {}
    for pos, call in enumerate(calls):
        if call.operation is not None:
            by_op.setdefault(call.operation, []).append(pos)
    seen: Counter[str] = Counter()
    out = []
    for i, exp in enumerate(task.expected):
        k = seen[exp.op]
        seen[exp.op] += 1
        attempts = by_op.get(exp.op, [])
        if k >= len(attempts):
            out.append(FirstTry(i, exp.op, False, "missing_call", f"{exp.op} was never called"))
            continue
        pos = attempts[k]
        call = calls[pos]
        if call.schema_valid is False:
            out.append(FirstTry(i, exp.op, False, "schema_invalid", f"{exp.op}: arguments fail its schema", pos))
            continue
        problems = _arg_problems(exp, call)
        if problems:
            first = problems[0]
            out.append(FirstTry(i, exp.op, False, first.error_type, f"{exp.op}: {first.detail}", pos))
        else:
            out.append(FirstTry(i, exp.op, True, None, "", pos))
    return out


def _calls_matched(task: Task, executed: Sequence[CallRecord]) -> str | None:
    """None when every expected call is matched by a successful executed call (in order if ordered)."""
    used: set[int] = set()
    cursor = 0
    for exp in task.expected:
        candidates = [
            i
            for i, c in enumerate(executed)
            if i not in used and c.operation == exp.op and (task.order == "any" or i >= cursor)
        ]
        hit = next((i for i in candidates if not _arg_problems(exp, executed[i])), None)
        if hit is None:
            return f"expected call {exp.op} not matched by any successful call"
        used.add(hit)
        cursor = hit + 1
    return None


def score_episode(
    task: Task, trace: EpisodeTrace, catalog: Catalog, classify: Callable[..., list[str]] | None = None
) -> EpisodeScore:
    """Score one episode; ``classify`` is the suite's failure-mode hook (its error types are added)."""
    calls = trace.calls
    failures: list[str] = []
    errors: list[str] = []
    first_tries = _first_tries(task, calls)
    for ft in first_tries:
        if not ft.correct and ft.error_type:
            errors.append(ft.error_type)
            failures.append(f"first try: {ft.detail}")

    named = [c for c in calls if c.operation is not None]
    selection = None
    if task.expected:
        firsts = {e.op for e in task.expected} if task.order == "any" else {task.expected[0].op}
        selection = bool(named) and named[0].operation in firsts
        if not selection:
            errors.append("wrong_operation")
            got = named[0].operation if named else "no operation"
            failures.append(f"selection: expected {task.expected[0].op} first, got {got}")

    executed = [c for c in calls if c.kind == "operation" and c.backend_ok]
    calls_ok = state_ok = answer_ok = refuse_ok = None
    if task.expected and task.needs_calls:
        why = _calls_matched(task, executed)
        if why is None and task.exact_calls and len(calls) != len(task.expected):
            why = f"expected exactly {len(task.expected)} call(s), the model made {len(calls)}"
            errors.append("unexpected_call" if len(calls) > len(task.expected) else "missing_call")
        calls_ok = why is None
        if why:
            failures.append(why)
    if task.state:
        problems = [p for p in (_check_at_turn(c, trace) for c in task.state) if p]
        state_ok = not problems
        if problems:
            errors.append("state_mismatch")
            failures += problems
    if task.answer:
        why = check_answer(task.answer, trace.final_text)
        answer_ok = why is None
        if why:
            errors.append("answer_mismatch")
            failures.append(why)
    if task.refuse:
        writes = [c.operation for c in executed if c.operation and not _read_only(catalog, c.operation)]
        refuse_ok = not writes and trace.final_text is not None
        if writes:
            errors.append("unexpected_call")
            failures.append(f"should refuse, but ran {', '.join(writes)}")
        elif task.exact_calls and calls:
            refuse_ok = False
            errors.append("unexpected_call")
            failures.append(f"should make no call, but called {', '.join(sorted({c.tool for c in calls}))}")
    if trace.stopped and trace.error is None:  # ended early (stop_on_repeat): scored as if max_steps were reached
        errors.append(trace.stopped)
        failures.append(f"no final text answer (stopped: {trace.stopped})")
    elif trace.final_text is None and trace.error is None:
        errors.append("no_answer")
        failures.append("no final text answer (max_steps reached)")
    if trace.error:
        errors.append("context_overflow" if is_context_overflow(trace.error) else "harness_error")
        failures.append(trace.error)

    checks = [x for x in (calls_ok, state_ok, answer_ok, refuse_ok) if x is not None]
    success = trace.error is None and all(checks) and (bool(checks) or trace.final_text is not None)

    recovered, failed_first = _recovery(calls)
    for c in calls:  # rejections (schema errors are counted through first tries)
        if c.error_type and c.error_type != "schema_invalid":
            errors.append(c.error_type)
    if classify is not None:
        errors += [str(e) for e in classify(task, calls)]
    parse_failures = sum(s.parse_failures for s in trace.steps) + sum(1 for c in calls if c.kind == "parse_error")
    errors += ["parse_failure"] * sum(s.parse_failures for s in trace.steps)
    return EpisodeScore(
        round_trips=len(trace.steps),
        overhead_round_trips=sum(1 for s in trace.steps if s.overhead),
        expected_calls=len(task.expected),
        first_try_correct=sum(1 for ft in first_tries if ft.correct),
        first_tries=tuple(first_tries),
        selection_correct=selection,
        success=success,
        calls_ok=calls_ok,
        state_ok=state_ok,
        answer_ok=answer_ok,
        refuse_ok=refuse_ok,
        recovered_after_error=recovered,
        failed_first_tries=failed_first,
        boundary_violations=sum(1 for c in calls if c.error_type == "not_exposed"),
        protocol_violations=sum(1 for c in calls if c.error_type == "not_loaded"),
        parse_failures=parse_failures,
        meta_calls=sum(1 for c in calls if c.kind == "meta"),
        operation_calls=sum(1 for c in calls if c.kind == "operation"),
        stable_prefix=len({s.prefix_hash for s in trace.steps}) <= 1,
        error_types=tuple(errors),
        failures=tuple(failures),
    )


def is_context_overflow(error: str | None) -> bool:
    """Also recognises runs recorded before context overflow had its own error type."""
    return bool(error) and ("context_overflow" in str(error) or "ContextWindowExceeded" in str(error))


def _read_only(catalog: Catalog, name: str) -> bool:
    op = catalog.get(name)
    return bool(op and op.read_only)


def _recovery(calls: Sequence[CallRecord]) -> tuple[int, int]:
    """(operations whose first call failed validation and a later call succeeded, such failed operations)."""
    first_failed: set[str] = set()
    seen: set[str] = set()
    recovered: set[str] = set()
    for c in calls:
        if c.operation is None:
            continue
        if c.operation not in seen:
            seen.add(c.operation)
            if c.schema_valid is False or c.error_type == "schema_invalid":
                first_failed.add(c.operation)
            continue
        if c.operation in first_failed and c.kind == "operation" and c.backend_ok:
            recovered.add(c.operation)
    return len(recovered), len(first_failed)
