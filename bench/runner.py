"""Run one cell (suite x surface x model x calling mode x repeats) and write its episodes."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.catalog import Catalog
from surfbench.bench.claims import Claims, retake_errored
from surfbench.bench.concurrency import in_order
from surfbench.bench.config import ConfigError, SurfaceConfig, read_group_config, surface_config
from surfbench.bench.episode import LoopSettings
from surfbench.bench.fit import Fits, first_request_fit, unfit_episode
from surfbench.bench.grow import grow_suite, grown_label
from surfbench.bench.identity import (
    MODEL_IDENTITY_FIELDS,
    CellIdentity,
    canonical_hash,
    label,
    model_identity,
    surface_code,
    surface_text,
    task_hash,
)
from surfbench.bench.identity import episode_key as make_episode_key
from surfbench.bench.limits import name_map_for
from surfbench.bench.models import ModelConfig, ModelPool, model_config
from surfbench.bench.models.types import ModelClient
from surfbench.bench.play import Finished, play_episode
from surfbench.bench.recorded import cell_records, record_cell
from surfbench.bench.registry import build_surface
from surfbench.bench.results import RunStore
from surfbench.bench.suite import Suite, Task, load_suite
from surfbench.bench.surface import Surface
from surfbench.bench.tables import EpisodeRow


@dataclass(frozen=True)
class CellSpec:
    suite: str
    surface: str
    model: str
    split: str | None = "dev"
    tasks: tuple[str, ...] = ()
    limit: int | None = None
    repeats: int = 1
    mode: str | None = None
    """Calling mode override (``native`` / ``prompted``); default: the model config's."""
    max_steps: int | None = None
    order: str = "cache"
    """``cache``: episodes whose requests share a prefix run back to back; ``naive``: task order."""
    episode_retries: int = 1
    """How often an episode that the model endpoint failed (unreachable, server died) is run again from
    the start before it is recorded as an error; the cell goes on either way."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """Options for the suite's backend over suite.yaml's ``backend_options`` (e.g. ``disk_quota_mb``)."""
    retry_errors: bool = False
    """Run again the committed episodes of this cell that ended in a harness error (their rows are
    replaced); by default a re-run skips every committed episode, errors included."""
    stop_on_repeat: int | None = None
    """End an episode at the K-th consecutive identical repeat of a failing step (bench.stuck); None: off."""
    grow: int | None = None
    """Grow every catalog of the suite to this many operations with pool distractors (bench.grow); None: off."""
    grow_seed: int = 0
    """Seed of the distractor draw."""
    concurrency: int | None = None
    """Episodes in flight at once (bench.concurrency); None: the model config's. Not part of the identity:
    it changes when a reply comes, never what it says."""

    def label(self) -> str:
        mode = f"/{self.mode}" if self.mode else ""
        return f"{self.suite}/{self.surface}/{self.model}{mode}"


@dataclass
class Cell:
    """A cell resolved: suite, surface and model loaded and checked, before anything runs."""

    spec: CellSpec
    suite: Suite
    surface_cfg: SurfaceConfig
    surface: Surface
    model_cfg: ModelConfig
    tasks: list[Task]
    mode: str
    surface_label: str = ""
    """The surface's config name, or ``name[param=value,...]`` when run with overrides of its file."""
    model_label: str = ""
    """The model's config name, or ``name[setting=value,...]`` when run with overrides of its file."""
    own_catalog: Catalog | None = None
    """The suite's catalog before ``catalog.grow`` (None: not grown, ``suite.catalog`` is its own)."""
    settings: LoopSettings = field(init=False)
    backend_options: dict[str, Any] = field(init=False)
    """The backend's options for every episode (suite.yaml's, then the run's)."""
    identity: CellIdentity = field(init=False)
    fits: Fits = field(init=False, default_factory=Fits, repr=False, compare=False)
    """What bench.fit predicted for this cell's first requests (its own cache, kept with the cell)."""
    _task_hashes: dict[str, str] = field(init=False, default_factory=dict, repr=False, compare=False)
    _task_surfaces: dict[int, Surface] = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = self.model_cfg
        self.settings = LoopSettings(
            max_steps=self.spec.max_steps or self.suite.max_steps,
            steps_per_turn=self.suite.steps_per == "turn",
            mode=self.mode,
            prompt_format=m.prompt_format,
            temperature=m.temperature,
            max_tokens=m.max_tokens,
            seed=m.seed,
            stop_on_repeat=self.spec.stop_on_repeat,
        )
        self.backend_options = self.suite.backend_settings(self.spec.backend_options)
        self.surface_label = self.surface_label or self.surface_cfg.name
        self.model_label = self.model_label or self.model_cfg.name
        suite = self.suite
        self.identity = CellIdentity(
            suite=suite.name,
            suite_setup=canonical_hash([suite.system_prompt, suite.steps_per]),
            catalog_hash=suite.catalog.content_hash,
            surface={"name": self.surface_cfg.name, "kind": self.surface_cfg.kind, "params": self.surface_cfg.params},
            model=model_identity(m, self.mode),
            max_steps=self.settings.max_steps,
            stop_on_repeat=self.settings.stop_on_repeat,
            backend_options=self.backend_options,
            surface_text=surface_text(self.surface),  # what it shows and what it runs: an edited surface is new
            surface_code=surface_code(type(self.surface)),
        )

    @property
    def cell_id(self) -> str:
        return self.identity.cell_id

    def label(self) -> str:
        """``suite/surface/model`` with the labels that tell overridden cells apart."""
        mode = f"/{self.spec.mode}" if self.spec.mode else ""
        return f"{self.suite.name}/{self.surface_label}/{self.model_label}{mode}"

    @property
    def declared_error_types(self) -> frozenset[str]:
        """Error types beyond the core ones that this cell's suite and surface declare."""
        return frozenset(self.suite.error_types) | frozenset(type(self.surface).error_types)

    def task_hash(self, task: Task) -> str:
        cache = self._task_hashes
        if task.id not in cache:
            cache[task.id] = task_hash(task)
        return cache[task.id]

    def surface_for(self, task: Task) -> Surface:
        """The cell's surface, or, for a task with its own catalog, the same surface built over that."""
        if task.catalog is None:
            return self.surface
        cache = self._task_surfaces
        key = id(task.catalog)
        if key not in cache:
            cfg = self.surface_cfg
            try:
                cache[key] = build_surface(task.catalog, cfg.kind, cfg.params, name=cfg.name)
            except (ValueError, TypeError, KeyError) as exc:
                why = f"task {task.id!r}: surface {cfg.name!r} cannot be built over its catalog: {exc}"
                raise ConfigError(why) from None
        return cache[key]

    def episode_key(self, task: Task, repeat: int) -> str:
        """Readable prefix + a hash of the cell identity, the exact task id, its content and the repeat."""
        parts = (self.suite.name, self.surface_label, self.model_label, self.mode)
        return make_episode_key(parts, self.cell_id, task.id, self.task_hash(task), repeat)

    def provenance(self) -> dict[str, Any]:
        """What run.json keeps of this cell: its identity, labels, and each task's content hash."""
        return {
            "cell_id": self.cell_id,
            "identity": self.identity.as_dict(),
            "suite": self.suite.name,
            "surface": self.surface_cfg.name,
            "model": self.model_cfg.name,
            "catalog_hash": self.identity.catalog_hash,
            "catalog_size": len(self.suite.catalog),  # the scale axis (grown or the suite's own)
            "name_map": name_map_for(self.suite.catalog_spec),  # original -> valid tool names (bench.limits)
            "surface_label": self.surface_label,
            "model_label": self.model_label,
            "provider": self.model_cfg.provider,
            "mode": self.mode,
            "suite_files": self.suite.file_hashes(),
            "task_hashes": {t.id: self.task_hash(t) for t in self.tasks},
            **cell_records(self.surface, self.own_catalog or self.suite.catalog),  # bench.recorded
        }


def _shipped(group: str, name: str) -> dict[str, Any] | None:
    """The config file as shipped (no overrides), or None where there is none (a config passed as data)."""
    try:
        return read_group_config(group, name)
    except ConfigError:
        return None


def resolve_cell(
    spec: CellSpec, surface_data: dict[str, Any] | None = None, model_data: dict[str, Any] | None = None
) -> Cell:
    """Load and check everything a cell needs (fails fast, before any model call).

    ``surface_data`` / ``model_data``: the group configs as Hydra composed them (with overrides such as
    ``surface.params.k=10`` or ``model.threads=1``); without them the YAML files are read.
    """
    if spec.episode_retries < 0:
        raise ConfigError(f"episode_retries={spec.episode_retries}: must be 0 or more")
    for field_name in ("limit", "repeats", "max_steps", "stop_on_repeat", "concurrency"):
        value = getattr(spec, field_name)
        if value is not None and value < 1:
            raise ConfigError(f"{field_name}={value}: must be a positive number (or null for the default)")
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
    model_cfg = model_config(spec.model, model_data)
    tasks = suite.select(spec.split, list(spec.tasks) or None, spec.limit)
    if not tasks:  # nothing to run: refuse before a run folder is made, not crash on an empty table later
        splits = sorted({t.split for t in suite.tasks})
        raise ConfigError(
            f"suite {suite.name!r} ({suite.folder}): no task selected by split={spec.split} "
            f"tasks={list(spec.tasks) or 'all'} limit={spec.limit}; its {len(suite.tasks)} task(s) are in "
            f"split(s) {', '.join(splits) or 'none'} (split=all runs every one)"
        )
    mode = spec.mode or model_cfg.mode
    if mode not in ("native", "prompted"):
        raise ValueError(f"mode must be 'native' or 'prompted', got {mode!r}")
    if spec.order not in ("cache", "naive"):
        raise ValueError(f"order must be 'cache' or 'naive', got {spec.order!r}")
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
    if model_data is not None:
        shipped = _shipped("model", spec.model)
        if shipped is not None:
            base_model = model_config(spec.model, shipped)
            fields_ = [f for f in MODEL_IDENTITY_FIELDS if f != "mode"]  # the mode has its own column
            model_label = label(
                model_cfg.name,
                {f: getattr(model_cfg, f) for f in fields_},
                {f: getattr(base_model, f) for f in fields_},
            )
    if spec.grow:  # cells of a scale sweep differ only in their catalog: the label tells them apart
        surface_label = grown_label(surface_label, spec.grow)
    return Cell(spec, suite, surface_cfg, surface, model_cfg, tasks, mode, surface_label, model_label, own_catalog)


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


def run_cell(
    cell: Cell,
    pool: ModelPool,
    store: RunStore,
    run_name: str,
    progress: ProgressFn | None = None,
    client: ModelClient | None = None,
) -> list[EpisodeRow]:
    """Run every (task, repeat) of the cell not already in the store; return the episode rows run here.

    Other processes may run the same cell into the same folder at once (``surfbench.bench.claims``): each episode
    is claimed before it runs, so they split the work and none runs twice. Episodes another live process
    holds are skipped, then waited for at the end, so that the cell's summary counts every one.
    """
    catalogs = [cell.suite.catalog, cell.own_catalog, *(t.catalog for t in cell.tasks)]
    record_cell(store.root, cell.cell_id, cell.surface, [c for c in catalogs if c is not None])  # bench.recorded
    done = store.done_keys()
    claims = Claims(store.root)
    store.after_commit = claims.release  # a claim goes once its episode is committed (group commit too)
    try:
        if cell.spec.retry_errors:
            again = retake_errored(claims, store, {cell.episode_key(t, r) for t, r in episode_order(cell)})
            if again:
                print(f"surfbench: {cell.label()}: running {len(again)} episode(s) again that ended in a "
                      "harness error", file=sys.stderr, flush=True)  # fmt: skip
                done -= again
        todo = {cell.episode_key(t, r): (t, r) for t, r in episode_order(cell)}
        todo = {key: episode for key, episode in todo.items() if key not in done}
        total = len(cell.tasks) * cell.spec.repeats
        finished = total - len(todo)
        if progress:
            progress(cell, finished, total, None)
        if not todo:
            return []
        model: ModelClient = client or pool.client(cell.model_cfg)
        concurrency = cell.spec.concurrency or cell.model_cfg.concurrency
        gate = getattr(model, "gate", None)
        if gate is not None:  # the endpoint admits as many calls as episodes run (halved on 429 bursts)
            gate.widen(concurrency)
        rows: list[EpisodeRow] = []

        def play(key: str) -> Finished:
            """Run and score one episode (on a worker thread when concurrency > 1)."""
            task, repeat = todo[key]
            fit = first_request_fit(cell, task)  # predicted from static counts: never sent when it cannot fit
            if not fit.fits:
                return unfit_episode(cell, task, repeat, run_name, fit)
            return play_episode(cell, key, task, repeat, model, run_name)

        def commit(key: str, done: Finished) -> None:
            """Write a finished episode (on the calling thread, in the cell's episode order)."""
            nonlocal finished
            # with N in flight an episode holds 1/N of the run's time: episodes finishing together are
            # group-committed (one part per interval, not N), and a SIGKILL loses at most one interval's
            took = done.wall_s / concurrency
            store.write_episode(key, done.episode, done.steps, done.calls, done.transcript, took_s=took)
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
    finally:
        store.after_commit = None
        claims.close()  # claims of episodes never committed (an error): another process may run them
    claims.report(cell.label(), len(rows))
    if claims.by_others and progress:  # the count that others' episodes brought up (a live bar ends)
        progress(cell, total - len(claims.given_up), total, None)
    return rows
