"""First-try argument accuracy: the first attempt at each expected call, judged (docs/metrics.md).

For each expected call, the first call the model made to that same operation (after routing; the k-th
expected call of an operation pairs with the k-th call to it) passed the operation's schema and its
arguments match the expected matchers.

A ``one_of`` (bench/suites/expected.py) is judged by the alternative the model picked: the one whose
first paired call came earliest; among alternatives tied there (they start with the same call), one that
is right, else the one closest to right. A single-call alternative is judged exactly as a plain call.
A sequence alternative pairs each of its calls the same way (its k-th call of an operation with the
next unpaired call to it; with ``any_order``, its calls of one operation with the next calls to it in
whichever assignment fits most) and is right when every one of its calls is; it still counts as one
expected call, so the denominator of first-try accuracy does not depend on the alternative picked.
Order is not judged here (selection and the calls check judge it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.records import CallRecord
from surfbench.bench.suites.call_matching import assign
from surfbench.bench.suites.expected import CallSequence, ExpectedCall
from surfbench.bench.suites.matchers import match_object
from surfbench.bench.suites.suite import Task


@dataclass(frozen=True)
class FirstTry:
    """The first attempt at one expected call."""

    expected_index: int
    operation: str
    """The operation of that attempt: for a ``one_of``, the alternative the model picked (the first
    alternative's when it called none; for a sequence, its first call's, or the call that was wrong)."""
    correct: bool
    error_type: str | None
    """Why it was wrong (``missing_call``, ``schema_invalid``, ``wrong_value``, ...)."""
    detail: str = ""
    call_position: int | None = None
    """Index into the episode's call list of that first attempt."""


@dataclass(frozen=True)
class _Attempt:
    """One alternative of an expected call, judged against the calls paired with it."""

    alternative: ExpectedCall
    start: int | None
    """Position of its earliest paired call (None: none of its operations was called)."""
    problems: int
    """How far from right: 0 right, else the number of argument mismatches (a failed schema counts 1)."""
    verdict: FirstTry


def first_tries(task: Task, calls: Sequence[CallRecord]) -> list[FirstTry]:
    """The first try at each of the task's expected calls, in order."""
    by_op: dict[str, list[int]] = {}
    for pos, call in enumerate(calls):
        if call.operation is not None:
            by_op.setdefault(call.operation, []).append(pos)
    seen: Counter[str] = Counter()
    out = []
    for i, exp in enumerate(task.expected):
        attempts = [_attempt(i, alt, calls, by_op, seen) for alt in exp.alternatives]
        called = [a for a in attempts if a.start is not None]
        if not called:
            seen[exp.op] += 1
            missing = f"{exp.op} was never called" if len(exp.ops) == 1 else f"none of {', '.join(exp.ops)} was called"
            out.append(FirstTry(i, exp.op, False, ErrorType.MISSING_CALL, missing))
            continue
        start = min(a.start for a in called if a.start is not None)
        pick = min((a for a in called if a.start == start), key=lambda a: a.problems)  # the first of the closest
        seen.update(s.op for s in pick.alternative.steps)
        out.append(pick.verdict)
    return out


def _attempt(
    index: int, alt: ExpectedCall, calls: Sequence[CallRecord], by_op: Mapping[str, list[int]], seen: Counter[str]
) -> _Attempt:
    """Pair each call of ``alt`` with the next unpaired call to its operation and judge them, first wrong one first."""
    steps = alt.steps
    paired: list[int | None] = [None] * len(steps)
    taken: Counter[str] = Counter()
    if alt.in_any_order:  # the calls of each operation to its steps, in whichever assignment fits most
        for op in dict.fromkeys(s.op for s in steps):
            same = [j for j, s in enumerate(steps) if s.op == op]
            free = by_op.get(op, [])[seen[op] :][: len(same)]
            ok = {(j, p) for j in same for p in free if not _problems(steps[j], calls[p])}
            chosen = assign(same, free, _pairs_in(ok))
            rest = iter(p for p in free if p not in chosen.values())
            for j in same:
                paired[j] = chosen.get(j, next(rest, None))
    else:
        for k, step in enumerate(steps):
            free = by_op.get(step.op, [])[seen[step.op] + taken[step.op] :]
            taken[step.op] += 1
            paired[k] = free[0] if free else None
    present = [p for p in paired if p is not None]
    start = min(present) if present else None
    for k, (step, pos) in enumerate(zip(steps, paired, strict=True)):
        if pos is None:
            detail = (
                f"{alt.shown}: call {k + 1} ({step.op}) was never made"
                if isinstance(alt, CallSequence)
                else f"{step.op} was never called"
            )
            return _Attempt(alt, start, 1 + len(steps), FirstTry(index, step.op, False, ErrorType.MISSING_CALL, detail))
        problems = _problems(step, calls[pos])
        if problems:
            error, detail = problems[0]
            verdict = FirstTry(index, step.op, False, error, f"{step.op}: {detail}", pos)
            return _Attempt(alt, start, len(problems), verdict)
    return _Attempt(alt, start, 0, FirstTry(index, alt.op, True, None, "", start))


def _pairs_in(ok: set[tuple[int, int]]) -> Callable[[int, int], bool]:
    """Whether step ``j`` fits call ``p``: the pair is in ``ok``."""
    return lambda j, p: (j, p) in ok


def _problems(step: ExpectedCall, call: CallRecord) -> list[tuple[str, str]]:
    """(error type, detail) of each way ``call`` misses ``step`` (empty: right first try)."""
    if call.schema_valid is False:
        return [(ErrorType.SCHEMA_INVALID, "arguments fail its schema")]
    given = call.arguments if isinstance(call.arguments, Mapping) else {}
    return [(m.error_type, m.detail) for m in match_object(step.args, given)]
