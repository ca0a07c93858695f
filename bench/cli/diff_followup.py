"""``surfbench diff OLD NEW --suite S --against RUN``: the paired follow-up of a catalog change, with a model.

``RUN`` is a run folder of the suite recorded on the old catalog (by ``surfbench run``, e.g. on the base branch).
Each of its cells of the suite (surface and model, with their recorded settings) runs again on the suite as it is
now, whose catalog must be NEW, on the tasks the change touches (bench.sequential.catalog_followup.touched_tasks),
batch by batch in a seeded random order: after each batch every cell's pairs (the old episodes, recorded, and the
new ones) are judged with the sequential test of ``surfbench gate --sequential``, a cell whose criteria are all
decided, or that a close criterion failed (its decision can no longer change), stops running, and the follow-up
stops when every cell has stopped or ``--budget`` tasks have run. Its
episodes go to their own run folder (``--run``, default ``RUN-followup`` beside ``RUN``), which a re-run of the same
command resumes; its design and looks are in that folder's ``catalog-followup.json``.

The criteria are a gate file's (``--followup-criteria``; default configs/gate/diff-followup.yaml): those with a
per-task value are judged pair by pair (first-try accuracy and success drops, prompt-token and round-trip ratios);
each cell's decision is ship, revise or close, and the command's exit code is the worse of the static gate's and
the follow-up's. A model's cells, as every gate's, refuse a scripted model unless ``--allow-scripted``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from surfbench.bench.base.config import ConfigError, find_config

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog
    from surfbench.bench.catalog.catalog_diff import CatalogDiff
    from surfbench.bench.models import ModelPool
    from surfbench.bench.report.diff_report import PrefixChange
    from surfbench.bench.report.gate_criteria import Criterion
    from surfbench.bench.run.cell import Cell, CellSpec
    from surfbench.bench.sequential.catalog_followup import FollowedCell
    from surfbench.bench.sequential.sequential_gate import SequentialVerdict
    from surfbench.bench.sequential.sequential_pairs import SequentialRecord
    from surfbench.bench.store.reader import RecordedCell, Runs
    from surfbench.bench.store.results import RunStore
    from surfbench.bench.suites.suite_model import Task

DEFAULT_CRITERIA = "gate/diff-followup.yaml"
DEFAULT_BUDGET = 40
"""Pairs per cell at most, by default. A change that makes a surface clearly worse fails within it (a drop of 30
points or more closes at 10 to 30 pairs); proving that a harmless change costs less than 5 points takes about 150
tied pairs, so at this budget a harmless change ends ``revise``, not ``ship`` (docs/ci.md)."""


@dataclass(frozen=True)
class Followup:
    """What the follow-up found: its markdown, its exit code (0 ship, 1 revise, 2 close) and the same as data."""

    markdown: str
    exit_code: int
    data: dict[str, Any]


@dataclass
class FollowCell:
    """One recorded cell run again on the new catalog: its resolved cell, its pool, its touched tasks."""

    recorded: RecordedCell
    cell: Cell
    pool: ModelPool
    """Its own pool (its own server, for a local model), as a sequential run's cells have (bench/sequential/
    until_decided.py): each surface's prompt prefix stays in its server's cache from one batch to the next; the
    servers run one at a time and map the same weights file."""
    touched: list[str]
    """Task ids the change touches on this surface, recorded on the old catalog and in the suite now."""


def add_followup_options(p: argparse.ArgumentParser) -> None:
    """The follow-up's options on ``surfbench diff``'s parser."""
    from surfbench.bench.base.argtypes import positive_int

    g = p.add_argument_group("the paired follow-up, with a model (--against RUN; needs --suite)")
    g.add_argument("--against", default=None, metavar="RUN",
                   help="a run folder of --suite on the OLD catalog: each of its cells runs again on NEW, on the "
                   "tasks the change touches, judged pair by pair until decided")  # fmt: skip
    g.add_argument("--followup-criteria", default=None, metavar="FILE",
                   help=f"the follow-up's criteria (default: configs/{DEFAULT_CRITERIA})")  # fmt: skip
    g.add_argument("--budget", type=positive_int, default=DEFAULT_BUDGET, metavar="N",
                   help=f"task pairs per cell at most (default {DEFAULT_BUDGET})")  # fmt: skip
    g.add_argument("--batch", type=positive_int, default=None, metavar="N",
                   help="task pairs between two looks (default: the sequential gate's, 10)")  # fmt: skip
    g.add_argument("--seed", type=int, default=0, help="the seed of the tasks' order (default 0)")
    g.add_argument("--run", default=None, metavar="NAME", help="the follow-up's run folder name (default RUN-followup)")
    g.add_argument("--results-dir", default=None, metavar="DIR",
                   help="where --run goes (default: beside RUN)")  # fmt: skip
    g.add_argument("--no-cache", action="store_true", help="always call the model (no response cache)")
    g.add_argument("--allow-scripted", action="store_true",
                   help="judge a scripted model's runs (a plumbing check, never a measurement)")  # fmt: skip


def check_followup_args(args: argparse.Namespace) -> None:
    """Refuse a follow-up that cannot run, before any catalog is read."""
    from surfbench.bench.cli.session import run_name_problem

    if args.against is None:
        unused = {"followup_criteria": None, "run": None, "results_dir": None, "budget": DEFAULT_BUDGET,
                  "batch": None, "seed": 0, "no_cache": False, "allow_scripted": False}  # fmt: skip
        for name, default in unused.items():
            if getattr(args, name) != default:
                raise ConfigError(f"--{name.replace('_', '-')}: only with --against RUN (the paired follow-up)")
        return
    if not args.suite:
        raise ConfigError("--against RUN needs --suite SUITE: the suite whose tasks run again on the new catalog")
    if not (Path(args.against) / "run.json").is_file():
        raise ConfigError(f"--against {args.against}: not a run folder (no run.json): give a `surfbench run` folder")
    problem = run_name_problem(args.run)
    if problem:
        raise ConfigError(problem.replace("run=", "--run ", 1))


def _criteria(args: argparse.Namespace) -> tuple[Path, Mapping[str, object]]:
    from surfbench.bench.report.gate_criteria import load_criteria

    path = Path(args.followup_criteria) if args.followup_criteria else find_config(DEFAULT_CRITERIA)
    if path is None:
        raise ConfigError(f"no {DEFAULT_CRITERIA} in the config folders: pass --followup-criteria FILE")
    return path, load_criteria(path)


def _recorded_cells(old: Runs, suite: str, allow_scripted: bool) -> list[RecordedCell]:
    cells = [c for c in old.cells if c.suite == suite]
    if not cells:
        found = ", ".join(sorted({c.suite for c in old.cells})) or "none"
        raise ConfigError(f"--against {old.runs[0]}: no cell of suite {suite!r} (its suites: {found})")
    scripted = sorted({c.model for c in cells if c.provider == "scripted"})
    if scripted and not allow_scripted:
        raise ConfigError(
            f"--against {old.runs[0]}: cells of the scripted model {', '.join(scripted)} are a plumbing check, "
            "not a measurement: run the suite with a real model, or pass --allow-scripted"
        )
    return cells


def _spec(recorded: RecordedCell, tasks: list[str]) -> CellSpec:
    """The recorded cell's spec (run.json), on ``tasks`` only."""
    from surfbench.bench.run.cell import CellSpec

    raw = recorded.raw
    kept = {f.name: raw[f.name] for f in fields(CellSpec) if f.name in raw}
    for name in ("tasks", "tags"):
        kept[name] = tuple(kept.get(name) or ())
    return replace(CellSpec(**kept), tasks=tuple(tasks), limit=None, split="all", retry_errors=False)


def _surface_data(recorded: RecordedCell) -> dict[str, object] | None:
    """The surface config as the run resolved it (its overrides too), or None for a legacy record."""
    surface = recorded.identity.get("surface")
    return dict(surface) if isinstance(surface, Mapping) and "kind" in surface else None


def _resolve(recorded: RecordedCell, tasks: list[str]) -> Cell:
    """The recorded cell resolved again on ``tasks``: its surface and model settings as recorded, today's suite."""
    from surfbench.bench.base.config import read_group_config
    from surfbench.bench.run.runner import resolve_cell

    was = recorded.identity.get("model")
    model_data = None
    if isinstance(was, Mapping):  # the run's model overrides (model.max_tokens=...) applied again
        model_data = {**read_group_config("model", recorded.model)}
        model_data.update({k: v for k, v in was.items() if k != "embedded"})
    cell = resolve_cell(_spec(recorded, tasks), _surface_data(recorded), model_data)
    now = json.loads(json.dumps(cell.identity.model, default=str))  # as run.json holds it (tuples are lists)
    if isinstance(was, Mapping) and was != now:
        differ = sorted(k for k in set(was) | set(now) if was.get(k) != now.get(k))
        raise ConfigError(
            f"{recorded.run}: cell {recorded.surface_label}/{recorded.model_label} ran a model that cannot be made "
            f"again here ({', '.join(differ)} differ, e.g. other weights): the follow-up compares catalogs only; run "
            "the old catalog again with today's model, or restore it"
        )
    return cell


def _prefix(old: Catalog, new: Catalog, recorded: RecordedCell) -> PrefixChange | None:
    """The surface's first request on both catalogs, with its recorded parameters.

    None when it cannot be built: every task counts as touched.
    """
    from surfbench.bench.base.config import surface_config
    from surfbench.bench.models.cache_profiles import PROFILES
    from surfbench.bench.report.diff_report import prefix_change

    try:
        config = surface_config(recorded.surface, _surface_data(recorded))
        return prefix_change(old, new, config, list(PROFILES.values())[:1])
    except Exception:  # a surface that does not apply to one of the catalogs: every task is touched
        return None


Prepared = tuple["Runs", list[FollowCell], Path, Mapping[str, object], list[str]]
"""The recorded run, the cells to run again, the criteria file and its spec, and notes."""


def prepare(args: argparse.Namespace, old_catalog: Catalog, new_catalog: Catalog, diff: CatalogDiff) -> Prepared:
    """The recorded run, the cells to run again, the criteria file and its spec, and notes; nothing written."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.cache import ResponseCache
    from surfbench.bench.sequential.catalog_followup import touched_tasks
    from surfbench.bench.store.reader import load
    from surfbench.bench.suites.suite import load_suite

    path, spec = _criteria(args)
    suite = load_suite(args.suite)
    old = load(args.against)
    notes: list[str] = []
    if suite.catalog.content_hash != new_catalog.content_hash:
        notes.append(
            f"the suite {suite.name}'s catalog now (hash {suite.catalog.content_hash}) is not NEW "
            f"(hash {new_catalog.content_hash}): the follow-up runs the suite as it is"
        )
    recorded = _recorded_cells(old, suite.name, args.allow_scripted)
    for hashed in sorted({str(c.catalog_hash) for c in recorded if c.catalog_hash != old_catalog.content_hash}):
        notes.append(f"{args.against} ran catalog hash {hashed}, not OLD's ({old_catalog.content_hash})")
    frame = old.episodes
    cache = None if args.no_cache else ResponseCache()
    cells: list[FollowCell] = []
    for rc in recorded:
        mine = frame[
            (frame["suite"] == rc.suite) & (frame["surface"] == rc.surface_label) & (frame["model"] == rc.model_label)
        ]
        if rc.mode is not None and "mode" in mine.columns:
            mine = mine[mine["mode"] == rc.mode]
        ran = {str(t) for t in mine["task_id"]}
        touched = [t for t in touched_tasks(suite.tasks, diff, _prefix(old_catalog, new_catalog, rc)) if t in ran]
        if not touched:
            notes.append(f"{rc.surface_label}/{rc.model_label}: the change touches none of its recorded tasks")
            continue
        cell = _resolve(rc, touched)
        pool = ModelPool(cache)
        pool.client(cell.model_cfg)  # weights pulled, API key set: fail before anything is written
        cells.append(FollowCell(rc, cell, pool, touched))
    return old, cells, path, spec, notes


def _folder(args: argparse.Namespace) -> tuple[Path, str]:
    against = Path(args.against)
    name = args.run or f"{against.resolve().name}-followup"
    folder = (Path(args.results_dir) if args.results_dir else against.resolve().parent) / name
    if folder.resolve() == against.resolve():
        raise ConfigError(f"--run {name}: that is RUN itself; the follow-up's episodes go to a folder of their own")
    return folder, name


def _design(folder: Path, record: SequentialRecord) -> None:
    """Refuse a resume with another design (a larger budget is the same design, extended); keep the looks."""
    from surfbench.bench.sequential.catalog_followup import RECORD
    from surfbench.bench.sequential.sequential_pairs import read_record

    before = read_record(folder, RECORD)
    if before is None:
        return
    if (before.seed, before.batch, before.order) != (record.seed, record.batch, record.order) or (
        record.budget < before.budget
    ):
        raise ConfigError(
            f"{folder}/{RECORD} records another design (seed {before.seed}, batch {before.batch}, budget "
            f"{before.budget}, {len(before.order)} tasks): resume with the same options (a larger --budget "
            "extends it), or pass --run NAME"
        )
    record.looks = list(before.looks)


def run_followup(args: argparse.Namespace, old_catalog: Catalog, new_catalog: Catalog, diff: CatalogDiff) -> Followup:
    """Run the follow-up (or find it run: a re-run resumes) and judge it."""
    from surfbench.bench.models.server import install_signal_handlers
    from surfbench.bench.report.gate import hot_operations
    from surfbench.bench.report.gate_criteria import BATCH
    from surfbench.bench.run.execute import open_run
    from surfbench.bench.sequential.catalog_followup import (
        FollowedCell,
        exit_code,
        followup_json,
        format_followup,
        pair_keys,
        sequential_criteria,
    )
    from surfbench.bench.sequential.sequential_pairs import SequentialRecord, seeded_order, task_key

    old, cells, path, spec, notes = prepare(args, old_catalog, new_catalog, diff)
    for note in notes:
        print(f"surfbench diff: {note}", file=sys.stderr)
    try:
        paired, left_out = sequential_criteria(cast("list[Criterion]", spec["criteria"]), str(path))  # load_criteria's
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if not cells:
        text = "## surfbench diff: the paired follow-up\n\nThe change touches no recorded task: nothing to run.\n"
        return Followup(text, 0, {"run": None, "stopped": None, "verdicts": [], "decisions": [], "notes": notes})
    folder, name = _folder(args)
    order = seeded_order(set().union(*(pair_keys(fc.cell.suite.name, fc.touched) for fc in cells)), args.seed)
    batch = args.batch or BATCH
    record = SequentialRecord(str(path), str(spec.get("name", path.stem)), args.seed, batch, args.budget, order)
    _design(folder, record)  # before anything is written into the folder
    followed = []
    for fc in cells:
        keys = pair_keys(fc.cell.suite.name, fc.touched)
        mine = tuple(k for k in order if k in keys)[: args.budget]
        followed.append(FollowedCell(fc.cell.surface_label, fc.cell.model_label, fc.cell.mode,
                                     fc.recorded.surface_label, fc.recorded.model_label, mine))  # fmt: skip
    install_signal_handlers()
    store = None
    for fc in cells:
        store = open_run(folder, fc.cell)
    assert store is not None
    most = sum(len(f.order) * fc.cell.spec.repeats for f, fc in zip(followed, cells, strict=True))
    print(
        f"surfbench diff: follow-up of {args.against} on the new catalog: {len(cells)} cell(s), {len(order)} touched "
        f"task(s) in seeded order (seed {args.seed}), batches of {batch}, at most {args.budget} pairs per cell: at "
        f"most {most} episodes into {store.root}",
        file=sys.stderr,
    )
    hot_k = spec.get("hot_operations")
    hot = hot_operations(old, hot_k if isinstance(hot_k, int) else None)  # checked a whole number by load_criteria
    keyed = [{task_key(fc.cell.suite.name, t.id): t for t in fc.cell.tasks} for fc in cells]
    try:
        verdicts = _batches(cells, followed, keyed, store, name, record, old, paired, hot)
    finally:
        for fc in cells:
            fc.pool.close()
    text = format_followup(
        verdicts, old_run=str(args.against), new_run=str(store.root),
        order_source=f"a seeded random order (seed {args.seed})", batch=batch, budget=args.budget,
        touched={fc.cell.surface_label: len(fc.touched) for fc in cells}, left_out=left_out,
    )  # fmt: skip
    if notes:
        text += "\n" + "\n".join(f"- note: {n}" for n in notes) + "\n"
    data = {"run": str(store.root), "stopped": record.stopped, **followup_json(verdicts), "notes": notes}
    return Followup(text, exit_code(verdicts), data)


def _batches(
    cells: list[FollowCell], followed: list[FollowedCell], keyed: list[dict[str, Task]], store: RunStore, name: str,
    record: SequentialRecord, old: Runs, criteria: list[Criterion], hot: set[str] | None,
) -> list[SequentialVerdict]:  # fmt: skip
    """Batch after batch: each cell still open runs its next batch of touched tasks, then every cell is judged."""
    from surfbench.bench.run.progress import make_progress
    from surfbench.bench.run.runner import run_cell
    from surfbench.bench.sequential.catalog_followup import RECORD, decisions, judge_change, undecided
    from surfbench.bench.sequential.sequential_pairs import write_record
    from surfbench.bench.store.reader import load

    needed = list(range(len(cells)))
    verdicts: list[SequentialVerdict] = []
    started = time.monotonic()
    looks = max(1, -(-max(len(f.order) for f in followed) // record.batch))
    for look in range(looks):
        for i in needed:
            fc, keys = cells[i], followed[i].batch(look, record.batch)
            only = {fc.cell.episode_key(keyed[i][k], r) for k in keys for r in range(fc.cell.spec.repeats)}
            if only:
                run_cell(fc.cell, fc.pool, store, name, progress=make_progress(), only=only)
        new = load(store.root, suites=False).episodes
        verdicts = judge_change(old.episodes, new, followed, criteria, record.batch, hot, looks=look + 1)
        closed = {cell for cell, decision in decisions(verdicts).items() if decision == "close"}
        open_cells = {(v.candidate, v.model) for v in undecided(verdicts)} - closed  # a close is final
        pairs = min((look + 1) * record.batch, record.budget)
        record.looks.append({"pairs": pairs, "undecided": sorted("/".join(k) for k in open_cells)})
        write_record(store.root, record, RECORD)
        print(
            f"surfbench diff: after {pairs} pairs per cell ({time.monotonic() - started:.0f} s): "
            f"{len(verdicts) - len(undecided(verdicts))} of {len(verdicts)} criteria decided",
            file=sys.stderr,
            flush=True,
        )
        needed = [i for i, f in enumerate(followed) if (f.surface, f.model) in open_cells]
        if not needed:
            record.stopped = f"every cell decided after {pairs} pairs per cell"
            break
    else:
        record.stopped = f"no pair left to run: each cell's touched tasks, at most {record.budget}, have run"
    write_record(store.root, record, RECORD)
    print(f"surfbench diff: follow-up stopped: {record.stopped}", file=sys.stderr)
    return verdicts
