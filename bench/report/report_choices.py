"""Two report tables about what models chose: which ``one_of`` alternative, and reads against writes.

- **Alternatives picked**: for each expected call written as ``one_of`` (bench/suites/expected.py), how many
  episodes of each surface x model first called each alternative (``none``: no alternative was
  called). Shown only when a suite in the runs has such a call.
- **First-try accuracy by access**: first-try argument accuracy split by the operation's flag in the
  catalog, ``read`` (read-only, MCP ``readOnlyHint``) or ``write`` (every other). Shown on request
  (``write_report(..., by_access=True)``).

Both read the episodes' ``first_tries`` column: its ``op`` is the operation the model's first attempt
called (for a ``one_of``, the alternative it picked).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.metrics import fmt
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.base.values import decoded
from surfbench.bench.suites.expected import OneOfCall
from surfbench.bench.suites.suite_model import Suite

if TYPE_CHECKING:
    import pandas as pd

NONE_PICKED = "none"
"""The pick of an episode that called no alternative."""
ACCESS_KINDS = ("read", "write")


@dataclass(frozen=True)
class AlternativePicks:
    """How often each alternative of one ``one_of`` expected call was the model's first attempt."""

    suite: str
    task_id: str
    index: int
    """The expected call's position in the task's ``expected`` list."""
    alternatives: tuple[str, ...]
    """The alternatives' operations, in the task's order."""
    picks: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    """(surface, model) -> operation picked (or ``none``) -> episodes."""


def _tries(raw: Any) -> list[Mapping[str, Any]]:
    return list(decoded(raw) if raw is not None else [])


Choices = dict[tuple[str, str], list[tuple[int, tuple[str, ...]]]]
"""(suite, task id) -> its ``one_of`` expected calls: (position in ``expected``, the alternatives' operations)."""


@dataclass
class CatalogFacts:
    """What the report needs of the runs' catalogs and tasks, read from the run folders (bench.store.recorded)."""

    op_order: list[str] = field(default_factory=list)
    """Operations hottest first, suite by suite (catalog traffic weight)."""
    hot: set[str] = field(default_factory=set)
    """The top ``hot_k`` operations of each suite."""
    choices: Choices = field(default_factory=dict)
    read_only: dict[str, dict[str, bool]] = field(default_factory=dict)
    """Suite -> operation -> the catalog's read-only flag."""


def _listed(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, list) else None


def catalog_facts(
    runs: Sequence[str | Path], infos: Mapping[str, Mapping[str, Any]], frame: pd.DataFrame, hot_k: int
) -> CatalogFacts:
    """The suites' operation order, hot set, ``one_of`` calls and read-only flags, as the runs recorded them.

    A suite whose cells all carry records v2 is read from the run folders only (the catalogs table, the
    episodes' ``expected_ops``); any other takes the legacy path: today's suite is loaded.
    """
    from surfbench.bench.store.recorded import RecordedCatalogs

    out = CatalogFacts()
    if frame is None or not len(frame):
        return out
    suites = sorted({str(s) for s in frame["suite"]})
    recorded = RecordedCatalogs.load(runs)
    ids = {str(c) for c in frame["cell_id"]}
    cells = [c for info in infos.values() for c in info.get("cells", []) if isinstance(c, dict)]
    cells = [c for c in cells if c.get("cell_id") in ids]
    own = recorded.suite_catalogs(cells, suites)
    for name in suites:
        if name in own:
            ranked = recorded.by_weight(own[name])
            out.read_only[name] = recorded.read_only(own[name])
        else:  # LEGACY (runs before records v2): today's suite
            from surfbench.bench.suites.suite import load_suite

            suite = load_suite(name)
            ranked = [op.name for op in suite.catalog.by_weight()]
            out.read_only[name] = {op.name: op.read_only for op in suite.catalog}
            out.choices.update(suite_choices(name, suite))
        out.op_order += ranked
        out.hot |= set(ranked[:hot_k])
    for row in frame[frame["suite"].isin(list(own))].to_dict("records"):
        expected = _listed(row.get("expected_ops"))
        found = [(i, tuple(str(o) for o in e)) for i, e in enumerate(expected or []) if isinstance(e, list)]
        if found:
            out.choices[(str(row["suite"]), str(row["task_id"]))] = found
    return out


def suite_choices(name: str, suite: Suite) -> Choices:
    """The ``one_of`` expected calls of a loaded suite's tasks (the legacy path of :func:`catalog_facts`)."""
    choices: Choices = {}
    for task in suite.tasks:
        found = [(i, e.ops) for i, e in enumerate(task.expected) if isinstance(e, OneOfCall)]
        if found:
            choices[(name, task.id)] = found
    return choices


def alternative_picks(frame: pd.DataFrame, choices: Choices) -> list[AlternativePicks]:
    """One entry per ``one_of`` expected call of the tasks in ``frame`` (empty when no task has one)."""
    if not choices or frame is None or not len(frame):
        return []
    out: dict[tuple[str, str, int], AlternativePicks] = {}
    for row in frame.to_dict("records"):
        key = (str(row["suite"]), str(row["task_id"]))
        tries = _tries(row["first_tries"])
        for index, ops in choices.get(key, []):
            entry = out.setdefault((*key, index), AlternativePicks(key[0], key[1], index, ops))
            tried = tries[index] if index < len(tries) else {}
            picked = (
                NONE_PICKED if tried.get("error_type") == ErrorType.MISSING_CALL else str(tried.get("op", NONE_PICKED))
            )
            counts = entry.picks.setdefault((str(row["surface"]), str(row["model"])), {})
            counts[picked] = counts.get(picked, 0) + 1
    return [out[k] for k in sorted(out)]


def picks_table(
    entries: Iterable[AlternativePicks],
    order: Callable[[tuple[str, str]], Any] | None = None,
    originals: Mapping[str, str] | None = None,
) -> tuple[list[str], list[list[str]]]:
    """Rows: suite, task (``#i`` when a task has several), alternatives; then per surface x model the picks.

    ``order``: the sort key of the (surface, model) columns; default: by model, then surface.
    ``originals``: valid -> original operation name (the runs' ``name_map``): names are shown as the catalog
    spells them.
    """
    entries = list(entries)
    columns = sorted({col for e in entries for col in e.picks}, key=order or (lambda sm: (sm[1], sm[0])))
    several = {(e.suite, e.task_id) for e in entries if e.index > 0}
    shown = originals or {}
    head = ["suite", "task", "alternatives"] + [f"{s} / {m}" for s, m in columns]
    rows = []
    for e in entries:
        task = f"{e.task_id} #{e.index}" if (e.suite, e.task_id) in several else e.task_id
        cells = []
        for col in columns:
            counts = e.picks.get(col, {})
            names = [*e.alternatives, *sorted(set(counts) - set(e.alternatives))]
            cells.append(", ".join(f"{shown.get(op, op)} {counts.get(op, 0)}" for op in names) if counts else "")
        rows.append([e.suite, task, " or ".join(shown.get(op, op) for op in e.alternatives), *cells])
    return head, rows


def access_split(
    frame: pd.DataFrame, flags: Mapping[str, Mapping[str, bool]]
) -> dict[tuple[str, str], dict[str, tuple[int, int]]]:
    """(surface, model) -> ``read`` / ``write`` -> first tries (correct, attempts), by the catalog's read-only flag.

    ``flags``: suite -> operation -> read-only (:attr:`CatalogFacts.read_only`). An operation its suite's
    catalog does not hold is left out.
    """
    out: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    if frame is None or not len(frame):
        return out
    for row in frame.to_dict("records"):
        read_only = flags.get(str(row["suite"]), {})
        slot = out.setdefault((str(row["surface"]), str(row["model"])), {})
        for tried in _tries(row["first_tries"]):
            op = str(tried.get("op"))
            if op not in read_only:
                continue
            kind = ACCESS_KINDS[0] if read_only[op] else ACCESS_KINDS[1]
            correct, attempts = slot.get(kind, (0, 0))
            slot[kind] = (correct + (1 if tried.get("correct") else 0), attempts + 1)
    return out


ACCESS_HEAD = ["surface", "model", "read first-try", "write first-try"]


def access_table(split: Mapping[tuple[str, str], Mapping[str, tuple[int, int]]]) -> list[list[str]]:
    """One row per surface x model: first-try accuracy on read and on write operations (correct/attempts)."""
    rows = []
    for (surface, model), kinds in sorted(split.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cells = []
        for kind in ACCESS_KINDS:
            correct, attempts = kinds.get(kind, (0, 0))
            cells.append(f"{fmt(correct / attempts, 'pct')} ({correct}/{attempts})" if attempts else "-")
        rows.append([surface, model, *cells])
    return rows
