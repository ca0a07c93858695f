"""What a sequential gate tests, taken from stored episodes: one value per task pair, in a seeded random order.

A **pair** is one task run on the baseline and on the candidate surface (same suite, model and mode);
its repeats are matched by repeat index and averaged into the pair's one value (repeats of a task are
not independent draws). The value, oriented so that positive (a difference) or above 1 (a ratio) is
worse, is what :func:`surfbench.bench.sequential.sequential.decide` takes:

- ``success_rate``: candidate minus baseline success, averaged over the matched repeats, in [-1, 1];
- ``first_try_accuracy``: the task's candidate first-try accuracy minus the baseline's, each the share
  of the task's expected calls (on the hot operations, when the gate names them) whose first attempt had
  the right arguments, over the matched repeats; a task with no such call on either side is no pair;
- ratio metrics (``prompt_tokens_per_step``, ``round_trips``): the candidate's mean over the matched
  repeats over the baseline's (baseline over candidate for a higher-is-better metric); a task where
  either is missing or 0 is no pair.

The **order** is a seeded random permutation of the sorted task keys (``suite/task_id``):
:func:`seeded_order`. ``surfbench run ... until_decided=GATE`` records the order it ran in, with its
batch and budget, in the run folder's ``sequential.json`` (:class:`SequentialRecord`), and
``surfbench gate --sequential`` reads it back, so that the gate judges the pairs in the order they ran.
"""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.compare import PAIR_KEYS
from surfbench.bench.analysis.metrics import Metric
from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.values import decoded
from surfbench.bench.store.results import ResultsError

if TYPE_CHECKING:
    import pandas as pd

RECORD = "sequential.json"
"""The file in a run folder that records a sequential run's design and its looks."""
RECORD_FORMAT = 1


def task_key(suite: str, task_id: str) -> str:
    """A task's key in a sequential order: ``suite/task_id``."""
    return f"{suite}/{task_id}"


def seeded_order(keys: Iterable[str], seed: int) -> list[str]:
    """The task keys in a seeded random order (a permutation of their sorted list: the same keys, the same order)."""
    import numpy as np

    ordered = sorted(set(keys))
    picks = np.random.default_rng(seed).permutation(len(ordered))
    return [ordered[int(i)] for i in picks]


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool) or str(value) == "<NA>":
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _first_tries(row: Mapping[str, Any], ops: set[str] | None) -> tuple[int, int]:
    raw = row["first_tries"]
    items = decoded(raw)
    chosen = [ft for ft in items if ops is None or ft["op"] in ops]
    return sum(1 for ft in chosen if ft["correct"]), len(chosen)


def pair_values(
    frame: pd.DataFrame, baseline: str, candidate: str, model: str, metric: Metric, test: str,
    hot: set[str] | None = None,
) -> dict[str, float]:  # fmt: skip
    """Per task key, the pair's value for ``metric`` (``test``: ``drop`` or ``ratio``; see the module docstring)."""
    rows = frame[frame["model"] == model]
    base = {tuple(r[k] for k in PAIR_KEYS): r for r in rows[rows["surface"] == baseline].to_dict("records")}
    by_task: dict[str, list[tuple[Mapping[str, Any], Mapping[str, Any]]]] = {}
    for r in rows[rows["surface"] == candidate].to_dict("records"):
        other = base.get(tuple(r[k] for k in PAIR_KEYS))
        if other is not None:
            by_task.setdefault(task_key(str(r["suite"]), str(r["task_id"])), []).append((other, r))
    out: dict[str, float] = {}
    for key, matched in by_task.items():
        value = _pair_value(matched, metric, test, hot)
        if value is not None:
            out[key] = value
    return out


def _pair_value(
    matched: list[tuple[Mapping[str, Any], Mapping[str, Any]]], metric: Metric, test: str, hot: set[str] | None
) -> float | None:
    if test == "ratio":
        mine = [v for _, c in matched if (v := _number(c[metric.name])) is not None]
        theirs = [v for b, _ in matched if (v := _number(b[metric.name])) is not None]
        if not mine or not theirs:
            return None
        cand, base = sum(mine) / len(mine), sum(theirs) / len(theirs)
        return metric.worse_ratio(cand, base) if cand > 0 and base > 0 else None
    if metric.name == "success_rate":
        change = sum(float(bool(c["success"])) - float(bool(b["success"])) for b, c in matched) / len(matched)
        return metric.worsening(change)
    if metric.name == "first_try_accuracy":
        b_ok = b_n = c_ok = c_n = 0
        for b, c in matched:
            ok, n = _first_tries(b, hot)
            b_ok, b_n = b_ok + ok, b_n + n
            ok, n = _first_tries(c, hot)
            c_ok, c_n = c_ok + ok, c_n + n
        return metric.worsening(c_ok / c_n - b_ok / b_n) if b_n and c_n else None
    raise ValueError(f"metric {metric.name!r} has no per-pair value for a sequential {test} test")


@dataclass
class SequentialRecord:
    """A sequential run's design and what each look found (``sequential.json`` in the run folder)."""

    gate: str
    """The criteria file (as given) and its name."""
    gate_name: str
    seed: int
    batch: int
    budget: int
    """Pairs per comparison at most (tasks; each with all its repeats)."""
    order: list[str]
    """Task keys in the order they run: the first ``budget`` are the ones that may run."""
    looks: list[dict[str, Any]] = field(default_factory=list)
    """After each batch: ``{"pairs": n, "decided": {...}, "undecided": [...]}``."""
    stopped: str | None = None
    """Why the run stopped (every criterion decided, or the budget spent), or None while it runs."""
    format: int = RECORD_FORMAT

    def design(self) -> tuple[Any, ...]:
        """What a resumed run must share with the recorded one (the gate file aside, which may move)."""
        return (self.seed, self.batch, self.budget, self.order)


def record_path(run: Path, name: str = RECORD) -> Path:
    return Path(run) / name


def read_record(run: Path, name: str = RECORD) -> SequentialRecord | None:
    """The run folder's sequential record, or None when it has none; a damaged one is one ResultsError.

    ``name``: the record's file (``sequential.json``; a catalog change's follow-up keeps its own).
    """
    path = record_path(run, name)
    if not path.exists():
        return None
    try:
        data = json.loads(read_text(path, "run record"))
        if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT:
            raise ValueError(f"not a sequential record of format {RECORD_FORMAT}")
        record = SequentialRecord(**data)
        ok = isinstance(record.order, list) and all(isinstance(k, str) for k in record.order)
        whole = all(isinstance(v, int) and not isinstance(v, bool) for v in (record.seed, record.batch, record.budget))
        if not ok or not whole or record.batch < 1 or record.budget < 1:
            raise ValueError("seed, batch, budget must be whole numbers (batch and budget 1 or more), order a list")
    except (OSError, ValueError, TypeError, ReadRefused) as exc:  # JSONDecodeError is a ValueError
        raise ResultsError(
            f"{path}: cannot be read as a sequential run record ({exc}); it is written by `surfbench run ... "
            "until_decided=GATE`: move it away to judge the run in a seeded order of its own (--seed)"
        ) from None
    return record


def write_record(run: Path, record: SequentialRecord, name: str = RECORD) -> None:
    """Write the record atomically (a temporary file renamed over it: never half-written)."""
    path = record_path(run, name)
    text = json.dumps(asdict(record), indent=1) + "\n"
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
