"""Run one cell (suite x surface x model x calling mode x repeats) and write its episodes."""

from __future__ import annotations

import contextlib
import functools
import json
import sys
from collections.abc import Callable, Collection, Iterator
from dataclasses import replace
from typing import Any

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.concurrency import in_order
from surfbench.bench.base.config import ConfigError, read_group_config, surface_config
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.server_slots import episode_slot
from surfbench.bench.models.spec import ModelConfig
from surfbench.bench.models.types import Gated, ModelClient
from surfbench.bench.run.cell import Cell as Cell  # where callers found them first
from surfbench.bench.run.cell import CellSpec as CellSpec
from surfbench.bench.run.fit import first_request_fit, unfit_episode
from surfbench.bench.run.play import Finished, play_episode
from surfbench.bench.store.claims import Claims, retake_errored
from surfbench.bench.store.identity import (
    label,
    model_settings,
)
from surfbench.bench.store.recorded import record_cell
from surfbench.bench.store.results import RunStore, environment_info
from surfbench.bench.store.tables import EpisodeRow
from surfbench.bench.suites.grow import grow_suite, grown_label
from surfbench.bench.suites.suite import Task, load_suite


def _shipped(group: str, name: str) -> dict[str, Any] | None:
    """The config file as shipped (no overrides), or None where there is none (a config passed as data)."""
    try:
        return read_group_config(group, name)
    except ConfigError:
        return None


def resolve_cell(
    spec: CellSpec,
    surface_data: dict[str, Any] | None = None,
    model_data: dict[str, Any] | None = None,
    model: ModelConfig | None = None,
) -> Cell:
    """Load and check everything a cell needs (fails fast, before any model call).

    ``surface_data`` / ``model_data``: the group configs as Hydra composed them (with overrides such as
    ``surface.params.k=10`` or ``model.threads=1``); without them the YAML files are read. ``model``: the model
    config ``model_data`` gives, already read and checked (a cell's plan did it, bench/run/plan.py).
    """
    # the spec's own settings were checked when it was made (CellSpec.__post_init__)
    suite = load_suite(spec.suite)
    own_catalog = suite.catalog if spec.grow else None
    if spec.grow:  # the grown catalog's hash enters the cell identity (catalog_hash)
        suite = grow_suite(suite, spec.grow, spec.grow_seed)
    surface_cfg = surface_config(spec.surface, surface_data)
    try:
        surface = build_surface(suite.catalog, surface_cfg.kind, surface_cfg.params, name=surface_cfg.name)
    except (ValueError, TypeError, KeyError) as exc:  # a parameter the surface cannot use
        raise ConfigError(
            f"configs/surface/{spec.surface}.yaml: params {surface_cfg.params} rejected by surface "
            f"{surface_cfg.kind!r}: {exc}"
        ) from None
    model_cfg = model if model is not None else model_config(spec.model, model_data)
    tasks = suite.select(spec.split, list(spec.tasks) or None, spec.limit, spec.tags)
    if not tasks:  # nothing to run: refuse before a run folder is made, not crash on an empty table later
        splits = sorted({t.split for t in suite.tasks})
        tagged = f" tags={list(spec.tags)}" if spec.tags else ""
        known = sorted({tag for t in suite.select(spec.split) for tag in t.tags})
        tip = f"; the tags of split {spec.split} are {', '.join(known) or 'none'}" if spec.tags else ""
        raise ConfigError(
            f"suite {suite.name!r} ({suite.folder}): no task selected by split={spec.split} "
            f"tasks={list(spec.tasks) or 'all'}{tagged} limit={spec.limit}; its {len(suite.tasks)} task(s) are in "
            f"split(s) {', '.join(splits) or 'none'} (split=all runs every one){tip}"
        )
    shipped_model = functools.cache(lambda: _shipped("model", spec.model))  # the model's file read once, if at all
    mode = spec.mode or model_cfg.mode
    if mode not in ("native", "prompted"):
        raise ValueError(f"mode must be 'native' or 'prompted', got {mode!r}")
    refused = model_cfg.stop_refused(mode, shipped_model())  # the run's mode= over the config's
    if refused:  # a stop asked for, not the file's default (which is off in native mode)
        raise ConfigError(
            f"mode={mode} with model.stop_on_repeated_call={model_cfg.stop_on_repeated_call}: {refused}; drop the "
            "override" + (" or set mode=prompted" if mode != "prompted" else "")
        )
    surface_label = spec.surface
    model_label = spec.model
    if surface_data is not None:
        shipped = _shipped("surface", spec.surface)
        if shipped is not None:
            base = surface_config(spec.surface, shipped)
            surface_label = label(
                surface_cfg.name,
                {"kind": surface_cfg.kind, "params": surface_cfg.params},
                {"kind": base.kind, "params": base.params},
            )
    # model=oracle: this cell's suite, filled before the label is computed (else every label says [script_suite=null])
    if model_cfg.provider == "scripted" and model_cfg.script_suite is None:
        model_cfg = replace(model_cfg, script_suite=spec.suite)
    if model_data is not None:
        shipped = shipped_model()
        if shipped is not None:
            base_model = model_config(spec.model, shipped)
            if base_model.provider == "scripted" and base_model.script_suite is None:  # model=oracle: this suite's
                base_model = replace(base_model, script_suite=spec.suite)
            model_label = label(model_cfg.name, _label_settings(model_cfg, mode), _label_settings(base_model, mode))
    if spec.grow:  # cells of a scale sweep differ only in their catalog: the label tells them apart
        surface_label = grown_label(surface_label, spec.grow)
    return Cell(spec, suite, surface_cfg, surface, model_cfg, tasks, mode, surface_label, model_label, own_catalog)


def _label_settings(cfg: ModelConfig, mode: str) -> dict[str, object]:
    """What a model label compares: the identity's settings as set, but the mode (a column of its own)."""
    return {k: v for k, v in model_settings(cfg, mode).items() if k != "mode"}


ProgressFn = Callable[[Cell, int, int, dict[str, Any] | None], None]


def _first_prefix(cell: Cell, task: Task) -> str:
    """What the first request's prefix depends on: the system text and the first turn's tools, in order."""
    session = cell.surface_for(task).session(task.turns[0])
    tools = session.tools()
    return session.system_text() + "".join(f"{t.name}\x00{t.description}\x00{t.parameters}\x01" for t in tools)


def episode_order(cell: Cell) -> list[tuple[Task, int]]:
    """The order episodes run in.

    ``naive``: every task once, then every task again for the next repeat. ``cache``: tasks sorted by
    the prefix their first request starts with (system text, then the tools shown, in order), so that
    identical prefixes run back to back and neighbours share as long a prefix as possible; a task's
    repeats run back to back. The local server's KV cache holds only the last prompt, so only what the
    next request shares with the previous one is reused.
    """
    repeats = range(cell.spec.repeats)
    if cell.spec.order == "naive":
        return [(t, r) for r in repeats for t in cell.tasks]
    if cell.surface.request_dependent or any(t.catalog is not None for t in cell.tasks):
        keyed = sorted((_first_prefix(cell, task), i) for i, task in enumerate(cell.tasks))
        tasks = [cell.tasks[i] for _, i in keyed]
    else:
        tasks = list(cell.tasks)
    return [(t, r) for t in tasks for r in repeats]


def cell_record(cell: Cell) -> dict[str, Any]:
    """What run.json keeps of a cell: its spec (what was asked) and its provenance (what it resolved to)."""
    spec = cell.spec
    return {**vars(spec), "tasks": list(spec.tasks), "tags": list(spec.tags), **cell.provenance()}


def record_run(store: RunStore, cell: Cell) -> None:
    """Record ``cell`` in the run folder's run.json, with the machine, versions and command line (merged by cell id)."""
    store.prepare()  # idempotent: the folder made (and checked writable) when a caller did not
    store.write_run_info(
        {
            **environment_info(),
            "catalog_hashes": {cell.spec.suite: cell.suite.catalog.content_hash},
            "cells": [cell_record(cell)],
        }
    )


def _records(store: RunStore, cell: Cell) -> bool:
    """Whether the folder's run.json already records this cell identity."""
    try:
        info = json.loads(read_text(store.root / "run.json", "run record"))
    except (OSError, ValueError, ReadRefused):
        return False
    cells = info.get("cells") if isinstance(info, dict) else None
    return any(isinstance(c, dict) and c.get("cell_id") == cell.cell_id for c in cells or [])


def run_cell(
    cell: Cell,
    pool: ModelPool,
    store: RunStore,
    run_name: str,
    progress: ProgressFn | None = None,
    client: ModelClient | None = None,
    only: Collection[str] | None = None,
) -> list[EpisodeRow]:
    """Run every (task, repeat) of the cell not already in the store; return the episode rows run here.

    ``only``: just the episodes with these keys (a batch of a sequential run, bench/sequential/until_decided.py).

    Other processes may run the same cell into the same folder at once (``surfbench.bench.store.claims``): each episode
    is claimed before it runs, so they split the work and none runs twice. Episodes another live process
    holds are skipped, then waited for at the end, so that the cell's summary counts every one.
    """
    if not _records(store, cell):  # run.json is the run stage's to write: a folder run here is a run folder
        record_run(store, cell)
    catalogs = [cell.suite.catalog, cell.own_catalog, *(t.catalog for t in cell.tasks)]
    record_cell(store.root, cell.cell_id, cell.surface, [c for c in catalogs if c is not None])  # bench.store.recorded
    done = store.done_keys()
    claims = Claims(store.root)
    # a claim goes once its episode is committed (group commit too); at the end, claims of episodes never
    # committed (an error) are released: another process may run them
    with contextlib.closing(claims), store.after_each_commit(claims.release):
        if cell.spec.retry_errors:
            keys = {cell.episode_key(t, r) for t, r in episode_order(cell)}
            again = retake_errored(claims, store, keys if only is None else keys & set(only))
            if again:
                print(f"surfbench: {cell.label()}: running {len(again)} episode(s) again that ended in a "
                      "harness error", file=sys.stderr, flush=True)  # fmt: skip
                done -= again
        todo = {cell.episode_key(t, r): (t, r) for t, r in episode_order(cell)}
        total = len(cell.tasks) * cell.spec.repeats if only is None else len(set(todo) & set(only))
        todo = {key: episode for key, episode in todo.items() if key not in done and (only is None or key in only)}
        finished = total - len(todo)
        if progress:
            progress(cell, finished, total, None)
        if not todo:
            return []
        model: ModelClient = client or pool.client(cell.model_cfg)
        concurrency = cell.spec.concurrency or cell.model_cfg.concurrency
        if isinstance(model, Gated):  # the endpoint admits as many calls as episodes run (halved on 429 bursts)
            model.gate.widen(concurrency)
        rows: list[EpisodeRow] = []

        def play(key: str) -> Finished:
            """Run and score one episode (on a worker thread when concurrency > 1)."""
            task, repeat = todo[key]
            fit = first_request_fit(cell, task)  # predicted from static counts: never sent when it cannot fit
            if not fit.fits:
                return unfit_episode(cell, task, repeat, run_name, fit)
            # on llama-server with slots: the episode holds one slot for all its steps (bench.models.server_slots)
            with episode_slot(model, lambda: _first_prefix(cell, task)) as pinned:
                return play_episode(cell, key, task, repeat, pinned, run_name)

        def commit(key: str, done: Finished) -> None:
            """Write a finished episode (on the calling thread, in the cell's episode order)."""
            nonlocal finished
            # with N in flight an episode holds 1/N of the run's time: episodes finishing together are
            # group-committed (one part per interval, not N), and a SIGKILL loses at most one interval's
            took = done.wall_s / concurrency
            store.write_episode(
                key, done.episode, done.steps, done.calls, done.transcript, took_s=took, tools=done.tools
            )
            rows.append(done.episode)
            finished += 1
            if progress:
                progress(cell, finished, total, done.episode.as_dict())

        def claimed(busy: list[str]) -> Iterator[str]:
            """The keys this process claims, in order; busy ones noted, ones committed elsewhere counted."""
            nonlocal finished
            for key in todo:
                taken = claims.take(key)
                if taken == "mine":
                    yield key
                elif taken == "busy":
                    busy.append(key)
                else:  # committed by another process since done_keys()
                    finished += 1

        try:
            busy: list[str] = []
            for key, result in in_order(claimed(busy), play, concurrency):
                commit(key, result)
            if busy:
                store.flush()  # quick episodes held for a group commit: others may be waiting for them
                for key in claims.wait(busy, cell.label()):  # what is left when their owners are gone
                    commit(key, play(key))
                    store.flush()
        finally:  # held episodes are finished ones: commit them, also on errors and signals
            store.flush()
    claims.report(cell.label(), len(rows))
    if claims.by_others and progress:  # the count that others' episodes brought up (a live bar ends)
        progress(cell, total - len(claims.given_up), total, None)
    return rows
