"""A run's plan, run: each planned cell resolved, its model client made, its run folder opened, its episodes played.

:func:`run_plan` is what ``surfbench run`` and :func:`surfbench.run` do with a run's
:class:`~surfbench.bench.run.plan.RunPlan` (bench/cli/sweep.py plans it): its cells one after another, in order.
Each planned cell is opened (:func:`open_cell`: resolved, its model client made so that missing weights or a
missing API key fail before anything is written, its run folder made and the cell recorded in run.json,
:func:`open_run`) and played (:func:`~surfbench.bench.run.runner.run_cell`, with progress). A cell that fails, in
its planning or at any of these steps, is reported through ``on_failure`` at its turn and the other cells go on.

What the front ends own is passed in, so that this stage imports none of them: the model pool (``pool``, given a
cell's ``no_cache``: bench/cli/session.py's, one per process), how a failure is reported (``on_failure``: the
front end's marker, one redacted line, a traceback for a bug) and what follows each cell (``after``: its summary
over the run folder, printed before the next cell starts). A sequential plan is the sequential room's to run,
batch by batch (bench/sequential/until_decided.py), from the same :func:`open_cell`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.run.plan import CellPlan, PlanFailure, RunPlan

if TYPE_CHECKING:
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.cell import Cell
    from surfbench.bench.store.results import RunStore

COMMIT_INTERVAL_S = 0.5  # quick episodes (scripted, cached) are committed in groups at most this old

PoolFor = Callable[[bool], "ModelPool"]
"""The model pool a cell's clients come from, given the cell's ``no_cache`` (bench/cli/session.model_pool)."""


@dataclass(frozen=True)
class Job:
    """A planned cell ready to run: resolved, its model client made, its run folder open and run.json written."""

    plan: CellPlan
    """The cell's plan: its checked settings, its spec, its run folder's name."""
    cell: Cell
    """The resolved cell."""
    store: RunStore
    """Its run folder."""
    pool: ModelPool
    """Where its model client comes from."""


@dataclass(frozen=True)
class CellResult:
    """One cell of a run, run: the job it ran and how many episodes ran now."""

    job: Job
    new_episodes: int
    """Episodes this call ran (0: every one was already in the folder, the run resumed)."""

    @property
    def cell(self) -> Cell:
        return self.job.cell

    @property
    def store(self) -> RunStore:
        """The run folder the cell's episodes are in."""
        return self.job.store


@dataclass(frozen=True)
class PlayedRun:
    """A run, run: the cells that ran, in order, and the labels of those that failed (each reported at its turn)."""

    cells: tuple[CellResult, ...]
    failed: tuple[str, ...]
    """``suite/surface/model`` of each failed cell (:attr:`~surfbench.bench.run.plan.CellPlan.label`)."""


def open_run(folder: Path, cell: Cell) -> RunStore:
    """The run folder made (or found) and ``cell`` recorded in its run.json: what a cell's first episode needs."""
    from surfbench.bench.run.runner import record_run
    from surfbench.bench.store.results import RunStore

    store = RunStore(folder, commit_interval_s=COMMIT_INTERVAL_S)
    store.prepare()
    record_run(store, cell)
    return store


def open_cell(plan: CellPlan, pool: PoolFor) -> Job:
    """Everything before a planned cell's first episode: resolved, its model client made, its folder, run.json."""
    cell = plan.resolve()
    models = pool(plan.settings.no_cache)
    models.client(cell.model_cfg)  # weights pulled, API key set: fail before anything is written
    store = open_run(plan.folder, cell)
    print(
        f"run {plan.run_name}: {cell.label()} ({cell.mode}), {len(cell.tasks)} task(s) x {plan.spec.repeats}",
        file=sys.stderr,
    )
    return Job(plan, cell, store, models)


def run_plan(
    plan: RunPlan,
    pool: PoolFor,
    on_failure: Callable[[str, Exception], None],
    after: Callable[[CellResult], object] | None = None,
) -> PlayedRun:
    """Run every cell of ``plan`` in order, one after another; a failing cell is reported and the others go on.

    ``on_failure(label, error)``: a cell failed (its planning, resolving, model client, folder, episodes, or
    ``after``); ``after(result)``: a cell ran (the front end prints its summary), before the next one starts.
    """
    from surfbench.bench.run.progress import make_progress
    from surfbench.bench.run.runner import run_cell

    if plan.sequential:
        raise ValueError("a sequential plan runs batch by batch: bench/sequential/until_decided.py runs it")
    done: list[CellResult] = []
    failed: list[str] = []
    for entry in plan.cells:
        if isinstance(entry, PlanFailure):
            on_failure(entry.label, entry.error)
            failed.append(entry.label)
            continue
        try:
            job = open_cell(entry, pool)
            rows = run_cell(
                job.cell, job.pool, job.store, entry.run_name, progress=make_progress(entry.settings.progress)
            )
            result = CellResult(job, len(rows))
            if after is not None:
                after(result)
        except Exception as exc:  # one failing cell is reported; the other cells of a sweep go on
            on_failure(entry.label, exc)
            failed.append(entry.label)
            continue
        done.append(result)
    return PlayedRun(tuple(done), tuple(failed))
