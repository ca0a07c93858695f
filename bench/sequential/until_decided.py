"""``surfbench run -m surface=full,core,dispatcher ... until_decided=GATE budget=N``: a run that stops once decided.

The cells of the sweep run **paired, batch by batch**: the tasks every cell selected are put in a seeded random
order (``order_seed``, bench.sequential.sequential_pairs.seeded_order), and each batch of ``batch`` tasks runs on
every compared surface (each task with all its repeats) before the next batch starts. After each batch the gate
file's sequential criteria are tested (bench.sequential.sequential_gate: an always-valid test, so looking after every
batch keeps its error rate); a candidate whose criteria are all decided stops running (the baseline runs while
any candidate on its model still needs it), and the run stops when every criterion is decided or ``budget``
tasks have run, and says which. The design (gate, seed, batch, budget, order) and each look are recorded in
the run folder's ``sequential.json``: ``surfbench gate --sequential`` reads the same order back, and a re-run of
the same command resumes (its finished episodes are skipped, its looks found again).

Within a batch the cells run one after another, each in its own episode order (``order=cache``): the pairing
holds at every look, which is what the test needs. Each cell has **a model pool of its own** (one response cache):
a local model gets one server per cell, so that each surface's prompt prefix stays in its own server's KV cache
from one batch to the next. Sharing one single-slot server, every batch would evict the baseline's tool block and
recompute it: 10,184 tokens of ``full``'s forge block take 260 s at 1.5B on 2 cores, once per batch. The servers
run one at a time; each holds its own KV cache (the weights are one file, mapped once).

The run is given its :class:`~surfbench.bench.run.plan.RunPlan` (every cell planned once, bench/cli/sweep.py): the
design is read from the planned cells' settings, and each cell is opened from its plan
(bench.run.execute.open_cell) before the first batch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from surfbench.bench.run.execute import CellResult, Job, PoolFor
    from surfbench.bench.run.plan import CellPlan, RunPlan
    from surfbench.bench.sequential.sequential_gate import SequentialGate


SHARED = ("until_decided", "budget", "batch", "order_seed", "run", "results_dir")
"""Settings every cell of a sequential run must share (a sweep over one of them is refused)."""


def run_until_decided(
    plan: RunPlan,
    pool: PoolFor,
    finish: Callable[[CellResult], Any],
    report_failure: Callable[[str, Exception], None],
) -> list[Any]:
    """Run the planned cells paired, batch by batch, until the gate's sequential criteria are decided.

    The front end's parts are passed in, so that this room does not import the front ends (bench/cli/, which
    calls it): ``pool``, the process's model pool (bench.cli.session.model_pool, given ``no_cache``); ``finish``,
    bench.cli.sweep's ``finish_job`` (a cell's summary, printed); ``report_failure``, the one way a run reports
    a failure (bench.cli.sweep's: one redacted line, a traceback for a bug, a failure marker for the exit code),
    given the label ``until_decided``. Returns what ``finish`` returned for each cell (the cells' ``CellRun``s), or
    [] when the run was refused or a cell failed: a cell whose plan failed ends the whole run before anything is
    written, as the pairing needs every cell.
    """
    try:
        return _run(plan, pool, finish)
    except Exception as exc:  # a refused design or a failing cell ends the whole run: the pairing needs every cell
        report_failure("until_decided", exc)
        return []


def _shared(cell: CellPlan, key: str) -> object:
    """A setting of :data:`SHARED` as ``cell``'s plan holds it (``results_dir``: its run folder's parent)."""
    return cell.folder.parent if key == "results_dir" else getattr(cell.settings, key)


def _check_design(plan: RunPlan) -> tuple[Any, Path, dict[str, Any]]:
    """(settings, gate file, criteria) once the cells' shared settings and the gate's surfaces are checked.

    Every cell must have been planned (the pairing needs every cell): one whose plan failed is raised, several named.
    """
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.report.gate_criteria import load_criteria

    planned = plan.planned
    for cell in planned[1:]:
        differ = [key for key in SHARED if _shared(cell, key) != _shared(planned[0], key)]
        if differ:
            raise ConfigError(f"{', '.join(differ)}: every cell of a sequential run must share it (no sweep over it)")
    if len(plan.failures) == 1:
        raise plan.failures[0].error
    if plan.failures:  # every such cell named, as a plain run names them (bench/cli/sweep.py)
        named = "; ".join(f"{f.label}: {f.error}" for f in plan.failures)
        raise ConfigError(f"{len(plan.failures)} cells cannot be planned: {named}")
    settings = planned[0].settings
    gate = Path(str(settings.until_decided))
    spec = load_criteria(gate)
    if not any(c.sequential for c in spec["criteria"]):
        raise ConfigError(
            f"{gate}: no criterion is marked sequential: add `sequential: true` to the criteria to decide, "
            "e.g. {kind: success_drop_max, value: 0.05, on_fail: close, sequential: true}"
        )
    surfaces = {cell.spec.surface for cell in planned}
    baseline = str(spec.get("baseline", "full"))
    candidates = [str(c) for c in spec.get("candidates") or []] or sorted(surfaces - {baseline})
    missing = [s for s in [baseline, *candidates] if s not in surfaces]
    if missing or not candidates:
        wanted = ",".join([baseline, *candidates]) if candidates else f"{baseline},CANDIDATE"
        raise ConfigError(
            f"{gate} compares {', '.join(candidates) or 'a candidate'} against {baseline}: a sequential run needs "
            f"them all in one sweep (missing: {', '.join(missing) or 'a candidate'}), e.g. "
            f"surfbench run -m surface={wanted} until_decided={gate}"
        )
    extra = sorted(surfaces - {baseline, *candidates})
    if extra:
        raise ConfigError(f"surface(s) {', '.join(extra)}: not compared by {gate}; leave them out of the sweep")
    return settings, gate, spec


def _run(plan: RunPlan, pool: PoolFor, finish: Callable[[CellResult], Any]) -> list[Any]:
    from surfbench.bench.run.execute import open_cell

    settings, gate, spec = _check_design(plan)
    jobs: list[Job] = []
    try:
        for cell in plan.planned:
            jobs.append(own_pool(open_cell(cell, pool)))
        return _run_jobs(jobs, settings, gate, spec, finish)
    finally:
        for job in jobs:
            job.pool.close()


def own_pool(job: Job) -> Job:
    """The job with a model pool of its own (its servers), sharing the run's response cache (module docstring)."""
    from dataclasses import replace

    from surfbench.bench.models import ModelPool

    return replace(job, pool=ModelPool(job.pool.cache))


def _run_jobs(
    jobs: list[Job], settings: Any, gate: Path, spec: dict[str, Any], finish: Callable[[CellResult], Any]
) -> list[Any]:
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.run.execute import CellResult
    from surfbench.bench.sequential.sequential_pairs import SequentialRecord, read_record, seeded_order, task_key

    roots = {job.store.root for job in jobs}
    if len(roots) > 1:
        raise ConfigError(f"the cells write into {len(roots)} run folders: give them one, e.g. run=NAME")
    root = roots.pop()
    tasks = [{task_key(job.cell.suite.name, t.id): t for t in job.cell.tasks} for job in jobs]
    common = set.intersection(*(set(t) for t in tasks))
    if not common:
        raise ConfigError("the cells select no task in common: a sequential run pairs the same tasks on each surface")
    order = seeded_order(common, settings.order_seed)
    budget = min(settings.budget or len(order), len(order))
    if settings.budget and settings.budget > len(order):
        print(f"until_decided: budget={settings.budget} is more than the {len(order)} tasks selected: the budget "
              f"is {len(order)} pairs", file=sys.stderr)  # fmt: skip
    name = str(spec.get("name", gate.stem))
    record = SequentialRecord(str(gate), name, settings.order_seed, settings.batch, budget, order)
    before = read_record(root)
    if before is not None and before.design() != record.design():
        raise ConfigError(
            f"{root}/sequential.json records another sequential design (seed {before.seed}, batch {before.batch}, "
            f"budget {before.budget}, {len(before.order)} tasks): resume it with the same settings and tasks, or "
            "give this run another name (run=NAME)"
        )
    _write(root, record)
    most = budget * sum(job.cell.spec.repeats for job in jobs)
    print(
        f"until_decided {gate} ({name}): {len(order)} paired tasks in seeded random order (seed "
        f"{settings.order_seed}), batches of {settings.batch}, budget {budget} pairs per comparison: at most "
        f"{most} episodes ({budget} pairs x {len(jobs)} cells), fewer once criteria are decided; how long they "
        "may take is printed after the first batch, at this run's pace",
        file=sys.stderr,
    )
    new = _batches(jobs, tasks, record, root, gate)
    return [finish(CellResult(job, count)) for job, count in zip(jobs, new, strict=True)]


def _write(root: Path, record: Any) -> None:
    from surfbench.bench.sequential.sequential_pairs import write_record

    write_record(root, record)


def _batches(jobs: list[Job], tasks: list[dict[str, Any]], record: Any, root: Path, gate: Path) -> list[int]:
    """Run batch after batch, testing after each; return each job's new episodes."""
    from surfbench.bench.run.progress import make_progress
    from surfbench.bench.run.runner import run_cell
    from surfbench.bench.sequential.sequential_gate import format_sequential, judge_sequential

    new = [0] * len(jobs)
    needed = list(range(len(jobs)))
    result: SequentialGate | None = None
    pairs = 0
    pace = _Pace()
    for start in range(0, record.budget, record.batch):
        chunk = record.order[start : min(start + record.batch, record.budget)]
        for i in needed:
            job = jobs[i]
            reps = range(job.cell.spec.repeats)
            only = {job.cell.episode_key(tasks[i][k], r) for k in chunk for r in reps}
            t0 = time.monotonic()
            progress = make_progress(job.plan.settings.progress)
            rows = run_cell(job.cell, job.pool, job.store, job.plan.run_name, progress=progress, only=only)
            pace.add(len(rows), time.monotonic() - t0)
            new[i] += len(rows)
        pairs = start + len(chunk)
        # this look sees the pairs up to it, not every pair stored (a resumed run holds more): its record is the same
        result = judge_sequential(gate, [root], batch=record.batch, budget=record.budget, upto=pairs)
        record.looks.append(_look(result, pairs))
        _write(root, record)
        print(f"until_decided: after {pairs} pairs: {_progress_line(result)}", file=sys.stderr, flush=True)
        if not result.undecided:
            record.stopped = f"every criterion decided after {pairs} pairs per comparison"
            break
        needed = _still_needed(jobs, result)
        left = (record.budget - pairs) * sum(jobs[i].cell.spec.repeats for i in needed)
        if left and pace.per_episode is not None:
            print(
                f"until_decided: at most {left} more episodes ({record.budget - pairs} pairs x {len(needed)} cells) "
                f"to the budget, about {_duration(left * pace.per_episode)} at this run's pace "
                f"({pace.per_episode:.0f} s per episode); it stops sooner when every criterion is decided",
                file=sys.stderr,
                flush=True,
            )
    else:
        left = ", ".join(f"{v.candidate}/{v.model} {v.criterion.label}" for v in result.undecided) if result else ""
        record.stopped = f"budget of {record.budget} pairs spent; undecided: {left}"
    _write(root, record)
    if result is not None:
        print(format_sequential(result))
    print(f"until_decided: stopped: {record.stopped}")
    return new


class _Pace:
    """Seconds per episode run by this invocation (episodes a resumed run found stored take no time)."""

    def __init__(self) -> None:
        self.episodes, self.seconds = 0, 0.0

    def add(self, episodes: int, seconds: float) -> None:
        if episodes:
            self.episodes, self.seconds = self.episodes + episodes, self.seconds + seconds

    @property
    def per_episode(self) -> float | None:
        return self.seconds / self.episodes if self.episodes else None


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(minutes, 1)} min"


def _look(result: SequentialGate, pairs: int) -> dict[str, Any]:
    named = [(f"{v.candidate}/{v.model}/{v.criterion.label}", v) for v in result.sequential]
    return {
        "pairs": pairs,
        "decided": {n: {"outcome": v.outcome, "pairs": v.result.pairs} for n, v in named if v.decided},
        "undecided": [n for n, v in named if not v.decided],
    }


def _progress_line(result: SequentialGate) -> str:
    done = [v for v in result.sequential if v.decided]
    shown = "; ".join(f"{v.candidate}/{v.model} {v.criterion.label} {v.outcome} at {v.result.pairs}" for v in done)
    return f"{len(done)} of {len(result.sequential)} criteria decided" + (f" ({shown})" if shown else "")


def _still_needed(jobs: list[Job], result: SequentialGate) -> list[int]:
    """The jobs the undecided comparisons need: their candidate, and the baseline on their model."""
    open_pairs = {(v.candidate, v.model) for v in result.undecided}
    models = {model for _, model in open_pairs}
    base = result.result.baseline
    return [
        i
        for i, job in enumerate(jobs)
        if (job.cell.surface_label, job.cell.model_label) in open_pairs
        or (job.cell.surface_label == base and job.cell.model_label in models)
    ]
