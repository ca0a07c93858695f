"""The calls check's matching: each expected call matched by successful calls, any alternative of a ``one_of``.

An expected call is matched by one of its alternatives (bench/suites/expected.py): a single call by one
successful call of its operation whose arguments match; a sequence by one such call per call of the
sequence, in its order (or, with ``any_order``, in any). When the task is ordered, an expected call's
calls all come after the previous expected call's. Of the alternatives that match, the one that
completes earliest is taken (for single calls: the earliest matching call, as before sequences).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from surfbench.bench.contracts.records import CallRecord
from surfbench.bench.suites.matchers import match_object

if TYPE_CHECKING:
    from surfbench.bench.suites.expected import ExpectedCall
    from surfbench.bench.suites.suite_model import Task

L = TypeVar("L", bound=Hashable)
R = TypeVar("R", bound=Hashable)


def assign(left: Sequence[L], right: Sequence[R], fits: Callable[[L, R], bool]) -> dict[L, R]:
    """A largest assignment of ``left`` items to distinct ``right`` items that fit (augmenting paths).

    Earlier items on either side are tried first, so with several largest assignments the earlier
    calls are taken.
    """
    owner: dict[R, L] = {}

    def place(item: L, tried: set[R]) -> bool:
        for r in right:
            if r in tried or not fits(item, r):
                continue
            tried.add(r)
            if r not in owner or place(owner[r], tried):
                owner[r] = item
                return True
        return False

    for item in left:
        place(item, set())
    return {item: r for r, item in owner.items()}


def fits(step: ExpectedCall, call: CallRecord) -> bool:
    """A successful call serves ``step``: same operation, arguments matching its matchers."""
    given = call.arguments if isinstance(call.arguments, Mapping) else {}
    return call.operation == step.op and not match_object(step.args, given)


def alternative_hits(alt: ExpectedCall, executed: Sequence[CallRecord], free: Sequence[int]) -> list[int] | None:
    """Positions of ``executed`` (among ``free``, ascending) that match every call of ``alt``, or None."""
    steps = alt.steps
    if alt.in_any_order:
        chosen = assign(range(len(steps)), free, lambda k, i: fits(steps[k], executed[i]))
        return sorted(chosen.values()) if len(chosen) == len(steps) else None
    hits: list[int] = []
    rest = iter(free)
    for step in steps:  # the earliest match of each call in turn leaves the most room for the next
        hit = next((i for i in rest if fits(step, executed[i])), None)
        if hit is None:
            return None
        hits.append(hit)
    return hits


def expected_hits(task: Task, executed: Sequence[CallRecord]) -> Iterator[list[int] | None]:
    """Per expected call of ``task``, in order, the indices of the calls its matched alternative takes, or None.

    Each alternative is matched against the successful calls ``executed`` not yet used (and, unless the task's
    order is ``any``, after the last matched one); of those that match, the one that completes earliest (the
    first of those) is taken. An unmatched expected call leaves the cursor where the last match left it.
    """
    used: set[int] = set()
    cursor = 0
    for exp in task.expected:
        free = [i for i in range(len(executed)) if i not in used and (task.order == "any" or i >= cursor)]
        found = [h for alt in exp.alternatives if (h := alternative_hits(alt, executed, free)) is not None]
        if not found:
            yield None
            continue
        hits = min(found, key=max)
        used.update(hits)
        cursor = max(hits) + 1
        yield hits


def match_expected(task: Task, executed: Sequence[CallRecord]) -> tuple[str | None, int]:
    """(None when every expected call is matched, else why; the number of calls the matched alternatives take)."""
    taken = 0
    for exp, hits in zip(task.expected, expected_hits(task, executed), strict=True):
        if hits is None:
            return f"expected call {exp.label} not matched by any successful call", taken
        taken += len(hits)
    return None, taken
