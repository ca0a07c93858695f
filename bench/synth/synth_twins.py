"""Synthesized twins of hand-written tasks: are synthesized tasks a fair proxy for the ones people wrote?

For each hand-written task of a split (``dev``), one task of the ``synth`` split that asks for the same
operations: the same sequence of expected operations (the first alternative of a ``one_of``), or, for a
should-refuse task, another refusal. Where no synthesized task has that sequence, one that starts with the
same operation and has as many calls stands in (``match: first``); where none does either, the hand-written
task has no twin and is listed as such. Twins are drawn with a seeded random choice and never reused, so the
twin set is a sample of the synthesized tasks with the hand-written split's mix of operations, and running the
same surfaces on both sets compares the two kinds of task on the same operations
(``scripts/synth_proxy.py``, docs/results/synth.md).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from surfbench.bench.suites.suite_model import Suite, Task

Signature = tuple[str, ...]
"""A task's expected operations in order; ``("<refuse>",)`` for a should-refuse task."""

REFUSE: Signature = ("<refuse>",)


@dataclass(frozen=True)
class Twin:
    """One hand-written task and the synthesized task drawn for it (None: no synthesized task fits)."""

    task: str
    """The hand-written task's id."""
    twin: str | None
    """The synthesized task's id, or None."""
    operations: Signature
    """What the hand-written task expects (its signature)."""
    match: str
    """``same``: the same operations in the same order; ``first``: the same first operation and number of calls;
    ``none``: no twin."""


def signature(task: Task) -> Signature:
    """The operations a task expects, in order (the first alternative of each ``one_of``)."""
    if task.refuse:
        return REFUSE
    return tuple(step.op for call in task.expected for step in call.alternatives[0].steps)


def draw_twins(suite: Suite, split: str = "dev", seed: int = 0, tags: Sequence[str] = ()) -> list[Twin]:
    """One synthesized twin per task of ``split`` (with every one of ``tags``), in the split's task order."""
    pool: dict[Signature, list[Task]] = defaultdict(list)
    for task in suite.select("synth"):
        pool[signature(task)].append(task)
    rng = random.Random(seed)
    used: set[str] = set()
    twins = []
    for task in suite.select(split, tags=tags):
        sig = signature(task)
        same = [t for t in pool.get(sig, []) if t.id not in used]
        near = [ts for s, ts in sorted(pool.items()) if s[:1] == sig[:1] and len(s) == len(sig)]
        first = [t for ts in near for t in ts if t.id not in used]
        chosen, match = (same, "same") if same else (first, "first") if first and sig != REFUSE else ([], "none")
        pick = rng.choice(chosen) if chosen else None
        if pick is not None:
            used.add(pick.id)
        twins.append(Twin(task.id, pick.id if pick else None, sig, match))
    return twins
