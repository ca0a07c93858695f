"""``surfbench run``: one cell or a Hydra multirun sweep over cells.

Hydra composes ``configs/config.yaml`` with the groups ``suite``, ``surface``, ``model`` (and
``sweep`` presets); ``-m`` runs the cartesian product through the configured launcher (basic: in
this process, one cell after another, sharing each model server; joblib: worker processes, each
with its own servers on free ports; Ray and submitit: see the README). Every cell writes into the
same run folder; a re-run resumes.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import traceback
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.config import config_dir
from bench.secrets import redact

_POOL: Any = None  # one ModelPool per process: sequential cells reuse a model's server


def _pool(no_cache: bool) -> Any:
    from bench.models import ModelPool
    from bench.models.cache import ResponseCache

    global _POOL
    if _POOL is None:
        _POOL = ModelPool(None if no_cache else ResponseCache())
    elif no_cache:
        _POOL.cache = None
    return _POOL


def _close_pool() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None


def _options(node: Any) -> dict[str, Any]:
    """``backend_options`` as Hydra composed it: a mapping of option names, or an error naming it."""
    from omegaconf import OmegaConf

    from bench.config import ConfigError

    value = OmegaConf.to_container(node, resolve=True) if node is not None and OmegaConf.is_config(node) else node
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"backend_options={value!r}: must be a mapping, e.g. +backend_options.disk_quota_mb=512")
    return {str(k): v for k, v in value.items()}


def run_job(cfg: Any, choices: dict[str, str], multirun: bool) -> dict[str, Any]:
    """Run the cell a Hydra job describes; return its summary (what ``surfbench run`` prints)."""
    from bench.metrics import format_summary, summarize_cell
    from bench.progress import make_progress
    from bench.results import RunStore, environment_info, load_runs, safe_name
    from bench.runner import CellSpec, resolve_cell, run_cell
    from bench.stuck import stop_setting

    spec = CellSpec(
        suite=str(cfg.suite.get("name") or choices["suite"]) if cfg.get("suite") else choices["suite"],
        surface=choices["surface"],
        model=choices["model"],
        split=str(cfg.split),
        tasks=tuple(str(t) for t in (cfg.tasks or [])),
        limit=int(cfg.limit) if cfg.limit is not None else None,
        repeats=int(cfg.repeats),
        mode=str(cfg.mode) if cfg.mode else None,
        max_steps=int(cfg.max_steps) if cfg.max_steps is not None else None,
        order=str(cfg.order),
        episode_retries=int(cfg.get("episode_retries", 1)),
        retry_errors=bool(cfg.get("retry_errors", False)),
        stop_on_repeat=stop_setting(cfg.get("stop_on_repeat")),
        backend_options=_options(cfg.get("backend_options")),
    )

    from omegaconf import OmegaConf

    def group(key: str) -> dict[str, Any] | None:
        node = cfg.get(key)
        return OmegaConf.to_container(node, resolve=True) if node is not None else None  # type: ignore[return-value]

    cell = resolve_cell(spec, group("surface"), group("model"))
    default_run = (
        f"sweep-{spec.suite}-{spec.split}" if multirun else f"{spec.suite}-{spec.split}-{spec.surface}-{spec.model}"
    )
    run_name = str(cfg.run) if cfg.run else safe_name(default_run)
    pool = _pool(bool(cfg.no_cache))
    pool.client(cell.model_cfg)  # weights pulled, API key set: fail before anything is written
    store = RunStore(Path(str(cfg.results_dir)) / run_name, commit_interval_s=COMMIT_INTERVAL_S)
    store.prepare()
    store.write_run_info(
        {
            **environment_info(),
            "catalog_hashes": {spec.suite: cell.suite.catalog.content_hash},
            "cells": [{**vars(spec), "tasks": list(spec.tasks), **cell.provenance()}],
        }
    )
    print(
        f"run {run_name}: {cell.label()} ({cell.mode}), {len(cell.tasks)} task(s) x {spec.repeats}",
        file=sys.stderr,
    )
    run_cell(cell, pool, store, run_name, progress=make_progress(str(cfg.progress)))
    frame = load_runs([store.root])
    keys = {cell.episode_key(t, r) for t in cell.tasks for r in range(spec.repeats)}
    mine = frame[frame["episode_key"].isin(keys)]  # this cell's identity and today's tasks, nothing older
    summary = summarize_cell(mine.to_dict("records"))
    print(f"{cell.label()} ({cell.mode}), {len(cell.tasks)} tasks, results in {store.root}")
    print(format_summary(summary))
    if summary.get("harness_errors"):
        print(
            f"surfbench: {summary['harness_errors']} episode(s) of {cell.label()} ended in a harness error "
            "(see the error column); "
            "once the cause is fixed, the same command with retry_errors=true runs them again",
            file=sys.stderr,
        )
    return summary


def main(overrides: Sequence[str]) -> int:
    """Entry point of ``surfbench run``; returns the exit code (0 ok, 2 bad input or failed cells)."""
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from bench.models.server import install_signal_handlers

    problem = _results_dir_problem(overrides)
    if problem:
        print(f"surfbench: error: {problem}", file=sys.stderr)
        return 2
    install_signal_handlers()
    # Every failing cell leaves a marker file here, also from other processes (joblib, Ray), which find
    # the folder through the environment they inherit: the exit code counts every cell.
    failure_dir = Path(tempfile.mkdtemp(prefix="surfbench-failures-"))
    os.environ[FAILURE_DIR_ENV] = str(failure_dir)

    @hydra.main(version_base="1.3", config_path=str(config_dir()), config_name="config")
    def app(cfg: DictConfig) -> dict[str, Any] | None:
        hc = HydraConfig.get()
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if v is not None}
        multirun = hc.mode == RunMode.MULTIRUN
        try:
            return run_job(cfg, choices, multirun)
        except Exception as exc:  # one failing cell is reported; the other cells of a sweep go on
            label = f"{choices.get('suite')}/{choices.get('surface')}/{choices.get('model')}"
            message = redact(f"{label}: {exc}")
            _mark_failure(message)
            print(f"surfbench: error in cell {message}", file=sys.stderr)
            if not _user_error(exc):
                print(redact(traceback.format_exc()), file=sys.stderr)
            return None

    saved = sys.argv
    sys.argv = ["surfbench run", *overrides]
    try:
        app()
    except SystemExit as exc:  # Hydra's own errors (unknown group option, bad override) exit 1
        code = exc.code if isinstance(exc.code, int) else 1
        return 0 if code == 0 else 2
    finally:
        sys.argv = saved
        _close_pool()
        failed = sorted({p.read_text() for p in failure_dir.glob("*.txt")})
        shutil.rmtree(failure_dir, ignore_errors=True)
    if len(failed) > 1:
        print(f"surfbench: {len(failed)} cells failed:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 2 if failed else 0


FAILURE_DIR_ENV = "SURFBENCH_FAILURE_DIR"
COMMIT_INTERVAL_S = 0.5  # quick episodes (scripted, cached) are committed in groups at most this old


def _results_dir_problem(overrides: Sequence[str]) -> str | None:
    """Hydra writes under ``results_dir`` before any cell runs: check it first, with a clear message."""
    value = next((o.split("=", 1)[1] for o in overrides if o.startswith("results_dir=")), "results")
    folder = Path(value)
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                return (
                    f"results directory {folder} cannot be created: {parent} is a file; "
                    "choose another with results_dir=..."
                )
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"results directory {folder}: {parent} is not writable; choose another with results_dir=..."
            return None
    return None


def _mark_failure(text: str) -> None:
    folder = os.environ.get(FAILURE_DIR_ENV)
    if folder and Path(folder).is_dir():
        (Path(folder) / f"{uuid.uuid4().hex}.txt").write_text(text, encoding="utf-8")


def _user_error(exc: Exception) -> bool:
    from bench.catalog import CatalogError
    from bench.config import ConfigError
    from bench.models import ModelError, ModelUnavailable, ServerError
    from bench.results import ResultsError

    return isinstance(exc, CatalogError | ConfigError | ModelError | ModelUnavailable | ServerError | ResultsError)
