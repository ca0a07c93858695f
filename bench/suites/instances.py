"""Pass-through parameters in scoring: which instance each call reached, against the one its task names.

A catalog's pass-through parameters (``Catalog.passthrough``: an ``instance`` every operation takes, naming which
server of several a call goes to) get a value per task: the task's ``meta`` names it (``meta: {instance: oss}``),
else the parameter's schema ``default`` is what the task wants (the user named none). A call that reached the
backend (kind ``operation``, successful or not: it ran somewhere) reached the value its arguments give, or the
schema's default when they give none. Used by the ``instance accuracy`` metric (bench/run/rows.py,
bench/analysis/instance_accuracy.py) and by :func:`instance_check`, a check a suite may list in ``checks:``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from surfbench.bench.contracts.records import CallRecord, EpisodeTrace
from surfbench.bench.suites.checks import CheckContext, CheckResult
from surfbench.bench.suites.matchers import scalar_equal

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog
    from surfbench.bench.suites.suite_model import Task

WRONG_INSTANCE = "wrong_instance"
"""The error type of a call that reached another instance than its task names (a suite declares it)."""


@dataclass(frozen=True)
class InstanceTally:
    """An episode's calls that reached the backend, and how many of them reached the instance the task names."""

    calls: int
    right: int
    wrong: tuple[str, ...] = ()
    """One line per call that reached another instance: ``issue_get on oss (task: work)``."""


def wanted(task: Task, catalog: Catalog) -> dict[str, object]:
    """The value of each pass-through parameter the task wants: its ``meta``'s, else the schema's default."""
    out: dict[str, object] = {}
    for name, schema in catalog.passthrough.items():
        if name in task.meta:
            out[name] = task.meta[name]
        elif isinstance(schema, Mapping) and "default" in schema:
            out[name] = schema["default"]
    return out


def reached(call: CallRecord, name: str, catalog: Catalog) -> object:
    """The value of pass-through parameter ``name`` a call went with: its argument, else the schema's default."""
    args = call.arguments if isinstance(call.arguments, Mapping) else {}
    if name in args:
        return args[name]
    schema = catalog.passthrough.get(name, {})
    return schema.get("default") if isinstance(schema, Mapping) else None


def instance_tally(task: Task, calls: Sequence[CallRecord], catalog: Catalog) -> InstanceTally | None:
    """How many of the calls that reached the backend went where the task wants; None when it wants nothing."""
    want = wanted(task, catalog)
    if not want:
        return None
    ran = [c for c in calls if c.kind == "operation"]
    wrong = []
    for call in ran:
        off = {k: reached(call, k, catalog) for k, v in want.items() if not scalar_equal(v, reached(call, k, catalog))}
        if off:
            went = ", ".join(f"{k}={v!r}" for k, v in off.items())
            asked = ", ".join(f"{k}={want[k]!r}" for k in off)
            wrong.append(f"{call.operation} went to {went} (the task wants {asked})")
    return InstanceTally(len(ran), len(ran) - len(wrong), tuple(wrong))


def instance_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """Every call that reached the backend went to the instance the task names (or the default); else it fails.

    Not applicable (None) to a task of a catalog without pass-through parameters, or one that made no call.
    """
    tally = instance_tally(task, trace.calls, context.catalog)
    if tally is None or not tally.calls:
        return CheckResult("instance", None)
    if not tally.wrong:
        return CheckResult("instance", True)
    return CheckResult("instance", False, "\n".join(tally.wrong), (WRONG_INSTANCE,))
