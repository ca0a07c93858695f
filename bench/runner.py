"""Run one cell (suite x surface x model x calling mode x repeats) and write its episodes."""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench.config import ConfigError, SurfaceConfig, read_group_config, surface_config
from bench.episode import Complete, LoopSettings, run_episode, transcript_lines
from bench.identity import MODEL_IDENTITY_FIELDS, CellIdentity, canonical_hash, label, model_identity, task_hash
from bench.identity import episode_key as make_episode_key
from bench.models import ModelConfig, ModelPool, model_config
from bench.records import EpisodeTrace
from bench.results import RunStore
from bench.scorer import EpisodeScore, score_episode
from bench.stuck import scan as scan_repeats
from bench.suite import Suite, Task, load_suite
from bench.taxonomy import check_declared
from surfaces import Surface, build_surface


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
    settings: LoopSettings = field(init=False)
    backend_options: dict[str, Any] = field(init=False)
    """The backend's options for every episode (suite.yaml's, then the run's)."""
    identity: CellIdentity = field(init=False)

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
        cache: dict[str, str] = self.__dict__.setdefault("_task_hashes", {})
        if task.id not in cache:
            cache[task.id] = task_hash(task)
        return cache[task.id]

    def surface_for(self, task: Task) -> Surface:
        """The cell's surface, or, for a task with its own catalog, the same surface built over that."""
        if task.catalog is None:
            return self.surface
        cache: dict[int, Surface] = self.__dict__.setdefault("_task_surfaces", {})
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
            "surface_label": self.surface_label,
            "model_label": self.model_label,
            "provider": self.model_cfg.provider,
            "mode": self.mode,
            "suite_files": self.suite.file_hashes(),
            "task_hashes": {t.id: self.task_hash(t) for t in self.tasks},
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
    for field_name in ("limit", "repeats", "max_steps", "stop_on_repeat"):
        value = getattr(spec, field_name)
        if value is not None and value < 1:
            raise ConfigError(f"{field_name}={value}: must be a positive number (or null for the default)")
    suite = load_suite(spec.suite)
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
    return Cell(spec, suite, surface_cfg, surface, model_cfg, tasks, mode, surface_label, model_label)


def _mean(values: Sequence[float | int | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return round(statistics.fmean(clean), 3) if clean else None


def _total(values: Sequence[int | None]) -> int | None:
    clean = [v for v in values if v is not None]
    return sum(clean) if clean else None


def episode_rows(
    cell: Cell, task: Task, repeat: int, trace: EpisodeTrace, score: EpisodeScore, run: str
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    key = cell.episode_key(task, repeat)
    steps = trace.steps
    first_pos = {ft.call_position: ft for ft in score.first_tries if ft.call_position is not None}
    stuck = scan_repeats(steps, trace.calls)
    state = trace.state if isinstance(trace.state, dict) else {}
    usage = state.get("usage") or {}  # a sandboxed backend's peaks (tasks/workspace)
    episode = {
        "episode_key": key,
        "run": run,
        "suite": cell.suite.name,
        "task_id": task.id,
        "split": task.split,
        "tags": list(task.tags),
        "surface": cell.surface_label,
        "surface_config": cell.surface_cfg.name,
        "surface_kind": cell.surface_cfg.kind,
        "model": cell.model_label,
        "model_config": cell.model_cfg.name,
        "cell_id": cell.cell_id,
        "task_hash": cell.task_hash(task),
        "params_b": cell.model_cfg.params_b,
        "mode": cell.mode,
        "repeat": repeat,
        "catalog_hash": cell.suite.catalog_for(task).content_hash,
        "round_trips": score.round_trips,
        "overhead_round_trips": score.overhead_round_trips,
        "expected_calls": score.expected_calls,
        "first_try_correct": score.first_try_correct,
        "first_try_accuracy": score.first_try_accuracy,
        "first_tries": [
            {"op": ft.operation, "correct": ft.correct, "error_type": ft.error_type} for ft in score.first_tries
        ],
        "selection_correct": score.selection_correct,
        "success": score.success,
        "calls_ok": score.calls_ok,
        "state_ok": score.state_ok,
        "answer_ok": score.answer_ok,
        "refuse_ok": score.refuse_ok,
        "recovered_after_error": score.recovered_after_error,
        "failed_first_tries": score.failed_first_tries,
        "boundary_violations": score.boundary_violations,
        "protocol_violations": score.protocol_violations,
        "parse_failures": score.parse_failures,
        "meta_calls": score.meta_calls,
        "operation_calls": score.operation_calls,
        "stable_prefix": score.stable_prefix,
        "disk_peak_bytes": usage.get("disk_peak_bytes"),
        "memory_peak_bytes": usage.get("memory_peak_bytes"),
        "stuck_repeats": stuck.repeats,
        "stuck": stuck.stuck,
        "prompt_tokens_total": _total([s.prompt_tokens for s in steps]),
        "prompt_tokens_per_step": _mean([s.prompt_tokens for s in steps]),
        "prompt_tokens_est_per_step": _mean([s.prompt_tokens_est for s in steps]),
        "cached_prompt_tokens_total": _total([s.cached_prompt_tokens for s in steps]),
        "completion_tokens_total": _total([s.completion_tokens for s in steps]),
        "request_bytes_per_step": _mean([s.request_bytes for s in steps]),
        "tool_block_bytes_first": steps[0].tool_block_bytes if steps else None,
        "tools_shown_first": steps[0].tools_shown if steps else None,
        "latency_s": round(sum(s.latency_s for s in steps), 3),
        "wall_s": round(trace.wall_s, 3),
        "cost_usd": round(sum(s.cost_usd for s in steps), 6),
        "cache_hits": sum(1 for s in steps if s.cache_hit),
        "error_types": list(score.error_types),
        "failures": list(score.failures),
        "final_text": trace.final_text,
        "error": trace.error,
        "traceback": trace.traceback,
    }
    step_rows = [{"episode_key": key, **asdict(s)} for s in steps]
    call_rows = []
    for pos, c in enumerate(trace.calls):
        ft = first_pos.get(pos)
        row = {"episode_key": key, **asdict(c)}
        row["first_try_for"] = ft.operation if ft else None
        row["first_try_correct"] = ft.correct if ft else None
        call_rows.append(row)
    return episode, step_rows, call_rows


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


def _endpoint_failure(trace: EpisodeTrace) -> bool:
    """The episode ended because the model endpoint failed (not because of anything the model did)."""
    return bool(trace.error) and str(trace.error).startswith(("ModelError", "ServerError"))


def run_cell(
    cell: Cell,
    pool: ModelPool,
    store: RunStore,
    run_name: str,
    progress: ProgressFn | None = None,
    client: Complete | None = None,
) -> list[dict[str, Any]]:
    """Run every (task, repeat) of the cell not already in the store; return all its episode rows."""
    done = store.done_keys()
    if cell.spec.retry_errors:
        again = store.errored_keys() & {cell.episode_key(t, r) for t, r in episode_order(cell)}
        if again:
            print(f"surfbench: {cell.label()}: running {len(again)} episode(s) again that ended in a "
                  "harness error", file=sys.stderr, flush=True)  # fmt: skip
            store.discard(again)
            done -= again
    todo = [(t, r) for t, r in episode_order(cell) if cell.episode_key(t, r) not in done]
    total = len(cell.tasks) * cell.spec.repeats
    finished = total - len(todo)
    if progress:
        progress(cell, finished, total, None)
    if not todo:
        return []
    model: Complete = client or pool.client(cell.model_cfg)
    rows = []
    try:
        for task, repeat in todo:
            catalog = cell.suite.catalog_for(task)

            def schema_of(name: str, catalog: Any = catalog) -> dict[str, Any] | None:
                op = catalog.get(name)
                return op.parameters if op else None

            settings = cell.settings if repeat == 0 else replace(cell.settings, seed=(cell.settings.seed or 0) + repeat)
            attempts = 0
            while True:
                attempts += 1
                backend = cell.suite.new_backend(task, cell.backend_options)
                session = cell.surface_for(task).session(task.turns[0])
                try:
                    trace = run_episode(task, session, backend, model, settings, cell.suite.system_prompt, schema_of)
                finally:  # a sandboxed backend holds processes and memory until closed
                    getattr(backend, "close", lambda: None)()
                if not _endpoint_failure(trace) or attempts > cell.spec.episode_retries:
                    break
                print(
                    f"surfbench: {cell.episode_key(task, repeat)}: {trace.error}; running the episode again "
                    f"({attempts}/{cell.spec.episode_retries})",
                    file=sys.stderr,
                    flush=True,
                )
            score = score_episode(task, trace, catalog, cell.suite.classifier)
            check_declared(score.error_types, cell.declared_error_types, f"{cell.label()}, task {task.id!r}")
            episode, steps, calls = episode_rows(cell, task, repeat, trace, score, run_name)
            episode["attempts"] = attempts
            store.write_episode(
                episode["episode_key"], episode, steps, calls, transcript_lines(trace), took_s=trace.wall_s
            )
            rows.append(episode)
            finished += 1
            if progress:
                progress(cell, finished, total, episode)
    finally:  # held episodes are finished ones: commit them, also on errors and signals
        store.flush()
    return rows
