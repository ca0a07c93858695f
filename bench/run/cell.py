"""A cell: its specification (:class:`CellSpec`) and its resolved form (:class:`Cell`), and nothing that runs it.

Its own module, below everything that plays, scores or writes a cell's episodes (:mod:`~surfbench.bench.run.fit`,
:mod:`~surfbench.bench.run.play`, :mod:`~surfbench.bench.run.rows`, :mod:`~surfbench.bench.run.runner`): they all read a
cell, and none of them may be imported to know what a cell is. ``runner`` resolves and runs cells.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.base.config import ConfigError, SurfaceConfig, shown
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.provider_limits import FitPrediction, name_map_for
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.contracts.surface import Surface
from surfbench.bench.models import ModelConfig
from surfbench.bench.run.episode import LoopSettings
from surfbench.bench.run.overrides import MODES, ORDERS, check_whole
from surfbench.bench.score.stuck import stop_setting
from surfbench.bench.store.identity import (
    CellIdentity,
    canonical_hash,
    model_identity,
    surface_code,
    surface_text,
    task_hash,
)
from surfbench.bench.store.identity import episode_key as make_episode_key
from surfbench.bench.store.recorded import cell_records
from surfbench.bench.suites.policy import Policy, cell_policy
from surfbench.bench.suites.suite import Suite, Task


@dataclass
class Fits:
    """One cell's predictions, per tool block (one per surface when the block is fixed, per first turn when not).

    The cell owns one (``Cell.fits``) and hands it here; only this module reads or writes it.
    """

    predictions: dict[tuple[int, str], FitPrediction] = field(default_factory=dict)
    limits_flagged: bool = False
    """The cell's tool block was already reported as breaking the provider's limits (said once per cell)."""


@dataclass(frozen=True)
class CellSpec:
    suite: str
    surface: str
    model: str
    split: str | None = "dev"
    tasks: tuple[str, ...] = ()
    limit: int | None = None
    tags: tuple[str, ...] = ()
    """Only the tasks carrying every one of these tags (applied before ``limit``); (): no filter."""
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
    """End an episode at the K-th consecutive identical repeat of a failing step (bench.score.stuck); None: off."""
    grow: int | None = None
    """Grow every catalog of the suite to this many operations with pool distractors (bench.suites.grow); None: off."""
    grow_seed: int = 0
    """Seed of the distractor draw."""
    concurrency: int | None = None
    """Episodes in flight at once (bench.base.concurrency); None: the model config's. Not part of the identity:
    it changes when a reply comes, never what it says."""
    policy: dict[str, Any] = field(default_factory=dict)
    """The run's operation policy over suite.yaml's, key by key (bench.suites.policy); {}: the suite's."""

    def __post_init__(self) -> None:
        """Every setting checked once, here, in the command line's words (bench/run/overrides.py)."""
        for name in ("limit", "repeats", "max_steps", "episode_retries", "concurrency"):
            check_whole(name, getattr(self, name))
        if self.mode is not None and self.mode not in MODES:
            tail = " or null (the model config's)"
            raise ConfigError(f"mode={shown(self.mode)}: must be one of {', '.join(MODES)}{tail}")
        if self.order not in ORDERS:
            raise ConfigError(f"order={shown(self.order)}: must be one of {', '.join(ORDERS)}")
        if self.stop_on_repeat is not None and stop_setting(self.stop_on_repeat) != self.stop_on_repeat:
            why = "must be a positive number of repeats, or null (off)"
            raise ConfigError(f"stop_on_repeat={self.stop_on_repeat!r}: {why}")

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
    policy: Policy | None = field(init=False)
    """The operation policy every episode runs under (suite.yaml's, then the run's; bench.suites.policy), or None."""
    fits: Fits = field(init=False, default_factory=Fits, repr=False, compare=False)
    """What bench.run.fit predicted for this cell's first requests (its own cache, kept with the cell)."""
    _task_hashes: dict[str, str] = field(init=False, default_factory=dict, repr=False, compare=False)
    _task_surfaces: dict[int, Surface] = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        m = self.model_cfg
        self.settings = LoopSettings(
            max_steps=self.spec.max_steps or self.suite.max_steps,
            steps_per_turn=self.suite.steps_per == "turn",
            stop_on_repeat=self.spec.stop_on_repeat,
            request=m.request(self.mode),  # the model config's part of every call, passed whole to each step
        )
        self.backend_options = self.suite.backend_settings(self.spec.backend_options, judge=True)
        self.policy = cell_policy(self.suite.policy, self.spec.policy, self.suite.catalog)
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
            policy=self.policy.as_dict() if self.policy is not None else None,
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
            # original -> valid tool names (bench.catalog.provider_limits)
            "name_map": name_map_for(self.suite.catalog_spec),
            "surface_label": self.surface_label,
            "model_label": self.model_label,
            "provider": self.model_cfg.provider,
            "mode": self.mode,
            "suite_files": self.suite.file_hashes(),
            "task_hashes": {t.id: self.task_hash(t) for t in self.tasks},
            **cell_records(self.surface, self.own_catalog or self.suite.catalog),  # bench.store.recorded
            # the model config's overrides of the cache model's profiles (bench.models.cache_profiles), if any
            **({"cache_profiles": self.model_cfg.cache_profiles} if self.model_cfg.cache_profiles else {}),
        }
