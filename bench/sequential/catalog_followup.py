"""The paired follow-up of a catalog change: episodes on the new catalog against a recorded run on the old one.

``surfbench diff OLD NEW --suite S --against RUN`` (bench/cli/diff_followup.py) runs each cell of ``RUN`` again on
the suite as it is now (the new catalog), task by task in a seeded random order, and judges each pair (a task's
episodes on the old catalog, recorded, and on the new one, run now) with the sequential test of ``surfbench gate
--sequential`` (bench.sequential.sequential): a change that makes a surface worse shows as a ``fail`` once the
evidence is enough, a harmless one as a ``pass``, and the run stops when every criterion is decided or the budget is
spent. This module is the judging, with no model and no run: which tasks a change touches, the pairs' values, the
verdicts and their decision, and the record of the design.

**Touched tasks** (:func:`touched_tasks`), per surface: every task when the surface's first request changed (its
tool block or system text differs, or it depends on the request, as preselect's and search's do: a description
edited anywhere can change what they show); otherwise the tasks whose expected calls name an operation the change
added, removed, renamed or changed.

**Pairs**: the old side's rows are the baseline, the new side's the candidate, matched on suite, model, mode, task
and repeat (bench.analysis.compare.PAIR_KEYS), each pair valued as ``gate --sequential`` values a surface against
its baseline (bench.sequential.sequential_pairs.pair_values). **Decision**, per surface and model: ``close`` when
a criterion with ``on_fail: close`` fails, ``revise`` when any other criterion fails or is undecided, ``ship`` when
every one passes; the exit code is the worst (0 ship, 1 revise, 2 close), as ``surfbench gate``'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from surfbench.bench.analysis.metrics import METRICS
from surfbench.bench.report.gate import decision_of
from surfbench.bench.report.gate_criteria import KINDS, Criterion
from surfbench.bench.report.gate_exit import worst_exit
from surfbench.bench.sequential.sequential import ALPHA, decide
from surfbench.bench.sequential.sequential_gate import SequentialVerdict, has_per_task_value
from surfbench.bench.sequential.sequential_pairs import pair_values, task_key

if TYPE_CHECKING:
    import pandas as pd

    from surfbench.bench.catalog.catalog_diff import CatalogDiff
    from surfbench.bench.report.diff_report import PrefixChange
    from surfbench.bench.suites.suite_model import Task

OLD_SIDE = "old catalog"
NEW_SIDE = "new catalog"
"""The two sides' labels in the paired frame (the surface column, so that the gate's pairing applies)."""

RECORD = "catalog-followup.json"
"""The file in the follow-up's run folder that records its design and looks (bench.sequential.sequential_pairs)."""


def changed_operations(diff: CatalogDiff) -> set[str]:
    """Every operation name the change touches, on either side (a rename: both names)."""
    names: set[str] = set()
    for change in diff.changes:
        if change.kind == "moved":
            continue  # only its position: a fixed tool block's change says whether that matters
        names.add(change.name)
        if change.old_name:
            names.add(change.old_name)
    return names


def touched_tasks(tasks: Iterable[Task], diff: CatalogDiff, prefix: PrefixChange | None) -> list[str]:
    """The ids of the tasks whose episodes on one surface the change can alter (module docstring), in task order."""
    tasks = list(tasks)
    if prefix is None or prefix.first_change is not None or prefix.note:
        return [t.id for t in tasks]  # the first request changed, or depends on the request: every task
    ops = changed_operations(diff)
    return [t.id for t in tasks if any(step.op in ops for c in t.expected for a in c.alternatives for step in a.steps)]


def sequential_criteria(criteria: Sequence[Criterion], where: str) -> tuple[list[Criterion], list[Criterion]]:
    """(the criteria with a per-task value, judged pair by pair; the others, not judged); a ValueError when none is.

    A per-task value: a drop of first-try accuracy or success, or a ratio of a metric every episode row holds (as
    ``gate --sequential`` requires: bench.sequential.sequential_gate.has_per_task_value).
    """
    from surfbench.bench.store.tables import EpisodeRow, columns

    episode_columns = {c.name for c in columns(EpisodeRow)}
    paired: list[Criterion] = []
    other: list[Criterion] = []
    for c in criteria:
        (paired if has_per_task_value(c, episode_columns) else other).append(c)
    if not paired:
        raise ValueError(
            f"{where}: no criterion has a per-task value (first_try_drop_max, success_drop_max, "
            "prompt_tokens_ratio_max, round_trips_ratio_max ...): a paired follow-up has nothing to judge"
        )
    return paired, other


@dataclass(frozen=True)
class FollowedCell:
    """One cell followed up: its labels on each side, its mode, and its pairs' order."""

    surface: str
    """Its surface label in the new run (the verdicts' name for it)."""
    model: str
    mode: str | None
    old_surface: str
    """Its labels in the recorded run (a shipped config's defaults may have changed since: the labels with them)."""
    old_model: str
    order: tuple[str, ...]
    """Its touched task keys in the follow-up's seeded order, cut at the budget: the pairs it may take, in order."""

    def batch(self, look: int, size: int) -> tuple[str, ...]:
        """The task keys of batch ``look`` (0, 1, ...)."""
        return self.order[look * size : (look + 1) * size]


def sides(old: pd.DataFrame, new: pd.DataFrame, cell: FollowedCell) -> pd.DataFrame:
    """One cell's episodes of both sides in one frame.

    The side in the surface column (OLD_SIDE, NEW_SIDE), the new labels in the model column, so that the gate's
    pairing (suite, model, mode, task, repeat) applies.
    """
    import pandas as pd

    def side(frame: pd.DataFrame, surface: str, model: str, name: str) -> pd.DataFrame:
        rows = frame[(frame["surface"] == surface) & (frame["model"] == model)]
        if cell.mode is not None and "mode" in rows.columns:
            rows = rows[rows["mode"] == cell.mode]
        rows = rows.copy()
        rows["surface"], rows["model"] = name, cell.model
        return rows

    olds = side(old, cell.old_surface, cell.old_model, OLD_SIDE)
    return pd.concat([olds, side(new, cell.surface, cell.model, NEW_SIDE)], ignore_index=True)


def judge_change(
    old: pd.DataFrame, new: pd.DataFrame, cells: Sequence[FollowedCell], criteria: Sequence[Criterion], batch: int,
    hot: set[str] | None = None, looks: int | None = None,
) -> list[SequentialVerdict]:  # fmt: skip
    """Each criterion per cell: its pairs in its order, judged sequentially with its order's length as budget.

    ``looks``: only the pairs of the first ``looks`` batches of each cell count (the pairs up to a look, whatever
    else is stored). A ``SequentialVerdict``'s candidate is the cell's surface; its baseline is the same surface
    on the old catalog.
    """
    out: list[SequentialVerdict] = []
    for cell in cells:
        taken = cell.order if looks is None else cell.order[: looks * batch]
        position = {key: i for i, key in enumerate(taken)}
        frame = sides(old, new, cell)
        for c in criteria:
            kind = KINDS[c.kind]
            pairs = pair_values(frame, OLD_SIDE, NEW_SIDE, cell.model, METRICS[kind.metric], kind.test, hot)
            values = [pairs[k] for k in sorted((k for k in pairs if k in position), key=position.__getitem__)]
            test = "ratio" if kind.test == "ratio" else "diff"
            result = decide(values, c.value, test, batch, len(cell.order))
            out.append(SequentialVerdict(cell.surface, cell.model, c, result, None))
    return out


def decisions(verdicts: Iterable[SequentialVerdict]) -> dict[tuple[str, str], str]:
    """Per (surface, model): ship, revise or close (module docstring; bench.report.gate.decision_of)."""
    cells: dict[tuple[str, str], list[SequentialVerdict]] = {}
    for v in verdicts:
        cells.setdefault((v.candidate, v.model), []).append(v)
    return {key: decision_of(got) for key, got in cells.items()}


def exit_code(verdicts: Iterable[SequentialVerdict]) -> int:
    """0 ship, 1 revise, 2 close: the worst cell's (as ``surfbench gate``)."""
    return worst_exit(decisions(verdicts).values())


def followup_json(verdicts: Sequence[SequentialVerdict]) -> dict[str, object]:
    """The verdicts and decisions as JSON values (``surfbench diff --json``)."""
    rows = []
    for v in verdicts:
        row = v.verdict()
        r = v.result
        rows.append({
            "surface": v.candidate, "model": v.model, "criterion": row.criterion, "threshold": row.threshold,
            "outcome": row.outcome, "on_fail": row.on_fail, "pairs": r.pairs, "available": r.available,
            "mean": r.mean, "low": r.low, "high": r.high, "observed": row.observed,
        })  # fmt: skip
    decided = [{"surface": s, "model": m, "decision": d} for (s, m), d in sorted(decisions(verdicts).items())]
    return {"verdicts": rows, "decisions": decided}


def undecided(verdicts: Iterable[SequentialVerdict]) -> list[SequentialVerdict]:
    return [v for v in verdicts if not v.decided]


def format_followup(
    verdicts: Sequence[SequentialVerdict], *, old_run: str, new_run: str, order_source: str, batch: int, budget: int,
    touched: Mapping[str, int], left_out: Sequence[Criterion] = (),
) -> str:  # fmt: skip
    """The follow-up's verdicts as a markdown table, the design above it and the decisions below."""
    lines = [
        f"## surfbench diff: the paired follow-up ({old_run} on the old catalog -> {new_run} on the new one)",
        "",
        f"Pairs: a task's episodes on the old catalog (recorded) and on the new one, in {order_source}; a look every "
        f"{batch} pairs, at most {budget} pairs per cell; betting confidence sequence, {100 * (1 - ALPHA):.0f}% "
        "under any stopping (docs/sweeps-and-gates.md#sequential-gates).",
        "Tasks the change touches, per surface: "
        + ", ".join(f"{surface} {n}" for surface, n in sorted(touched.items())),
        "",
        "| surface | model | criterion | threshold | observed (new against old) | outcome | on fail |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        row = v.verdict()
        lines.append(
            f"| {v.candidate} | {v.model} | {row.criterion} | {row.threshold:g} | {row.observed} | "
            f"{row.outcome} | {row.on_fail} |"
        )
    if left_out:
        names = ", ".join(sorted({c.label for c in left_out}))
        lines += ["", f"Not judged by the follow-up (no per-task value in the episodes): {names}"]
    lines += ["", "| surface | model | decision |", "|---|---|---|"]
    for (surface, model), decision in sorted(decisions(verdicts).items()):
        lines.append(f"| {surface} | {model} | **{decision.upper()}** |")
    left = undecided(verdicts)
    decided = len(verdicts) - len(left)
    lines += ["", f"{decided} of {len(verdicts)} criteria decided"]
    return "\n".join(lines) + "\n"


def pair_keys(suite: str, ids: Iterable[str]) -> set[str]:
    """The sequential order's keys of a suite's task ids (``suite/task_id``)."""
    return {task_key(suite, i) for i in ids}
