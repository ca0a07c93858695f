"""``surfbench run``: one cell or a Hydra multirun sweep over cells.

Hydra composes ``configs/config.yaml`` with the groups ``suite``, ``surface``, ``model`` (and
``sweep`` presets); ``-m`` runs the cartesian product through the configured launcher (basic: in
this process, one cell after another, sharing each model server; joblib: worker processes, each
with its own servers on free ports; Ray and submitit: see docs/sweeps-and-gates.md). Every cell writes into the
same run folder; a re-run resumes.
"""

from __future__ import annotations

import os
import shutil
import sys
import traceback
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.config import config_dirs, overlay_configs
from surfbench.bench.secrets import redact

if TYPE_CHECKING:
    from surfbench.bench.tables import CellSummary

_POOL: Any = None  # one ModelPool per process: sequential cells reuse a model's server


def _pool(no_cache: bool) -> Any:
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.cache import ResponseCache

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

    from surfbench.bench.config import ConfigError

    value = OmegaConf.to_container(node, resolve=True) if node is not None and OmegaConf.is_config(node) else node
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"backend_options={value!r}: must be a mapping, e.g. +backend_options.disk_quota_mb=512")
    return {str(k): v for k, v in value.items()}


def run_job(cfg: Any, choices: dict[str, str], multirun: bool) -> CellSummary:
    """Run the cell a Hydra job describes; return its summary (what ``surfbench run`` prints)."""
    from surfbench.bench.grow import grow_fields
    from surfbench.bench.metrics import format_summary, summarize_cell
    from surfbench.bench.overrides import run_settings
    from surfbench.bench.progress import make_progress
    from surfbench.bench.results import RunStore, environment_info, load_runs, safe_name
    from surfbench.bench.runner import CellSpec, resolve_cell, run_cell

    # every top-level override checked strictly (limit=1.5, no_cache=maybe, +foo=1 are errors naming
    # the override), before the pool, the store or run.json exist
    settings = run_settings(cfg)
    spec = CellSpec(
        suite=str(cfg.suite.get("name") or choices["suite"]) if cfg.get("suite") else choices["suite"],
        surface=choices["surface"],
        model=choices["model"],
        split=settings.split,
        tasks=settings.tasks,
        limit=settings.limit,
        repeats=settings.repeats,
        mode=settings.mode,
        max_steps=settings.max_steps,
        order=settings.order,
        episode_retries=settings.episode_retries,
        retry_errors=settings.retry_errors,
        stop_on_repeat=settings.stop_on_repeat,
        backend_options=_options(cfg.get("backend_options")),
        **grow_fields(cfg.get("catalog")),
        concurrency=settings.concurrency,
    )

    from omegaconf import OmegaConf

    def group(key: str) -> dict[str, Any] | None:
        node = cfg.get(key)
        return OmegaConf.to_container(node, resolve=True) if node is not None else None  # type: ignore[return-value]

    cell = resolve_cell(spec, group("surface"), group("model"))
    default_run = (
        f"sweep-{spec.suite}-{spec.split}" if multirun else f"{spec.suite}-{spec.split}-{spec.surface}-{spec.model}"
    )
    run_name = settings.run or safe_name(default_run)
    pool = _pool(settings.no_cache)
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
    run_cell(cell, pool, store, run_name, progress=make_progress(settings.progress))
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
    """Entry point of ``surfbench run``; returns the exit code (0 ok, 2 bad input or failed cells).

    A refused run (a bad override, an unknown option, a ``run`` name leaving ``results_dir``) prints
    its error, redacted, and leaves nothing under ``results_dir``: Hydra's own folders go to a private
    temporary folder that is deleted at the end (``hydra:`` in configs/config.yaml).
    """
    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException
    from hydra.types import RunMode
    from omegaconf import DictConfig

    from surfbench.bench.config import ConfigError
    from surfbench.bench.models.server import install_signal_handlers
    from surfbench.bench.secrets import register_overrides
    from surfbench.bench.tempdirs import discard_sweep_record, owned_tempdir, remove_stale

    register_overrides(overrides)  # first: Hydra's errors and its sweep launch lines quote overrides
    problem = _results_dir_problem(overrides)
    if problem:
        print(f"surfbench: error: {redact(problem)}", file=sys.stderr)
        return 2
    install_signal_handlers()
    remove_stale()  # the temporary folders of runs killed before they could delete theirs
    # Every failing cell leaves a marker file here, also from other processes (joblib, Ray), which find
    # the folder through the environment they inherit: the exit code counts every cell.
    failure_dir = owned_tempdir("surfbench-failures-")
    os.environ[FAILURE_DIR_ENV] = str(failure_dir)
    # Hydra creates its run folder, and a sweep's multirun.yaml with every override verbatim, before any
    # job starts: here (mode 0700) instead of under results_dir, deleted when the run ends; the
    # multirun.yaml goes to /dev/null, so that a killed run leaves no override behind (bench/tempdirs.py).
    hydra_dir = owned_tempdir("surfbench-hydra-")
    discard_sweep_record(hydra_dir / "multirun")
    os.environ[HYDRA_DIR_ENV] = str(hydra_dir)

    # SURFBENCH_CONFIGS adds folders searched before the shipped configs/: Hydra reads their merged view
    try:
        folders = config_dirs()
        primary = overlay_configs(hydra_dir / "configs") if len(folders) > 1 else folders[0]
    except (ConfigError, OSError) as exc:
        shutil.rmtree(failure_dir, ignore_errors=True)
        shutil.rmtree(hydra_dir, ignore_errors=True)
        os.environ.pop(HYDRA_DIR_ENV, None)
        print(f"surfbench: error: {redact(str(exc))}", file=sys.stderr)
        return 2

    @hydra.main(version_base="1.3", config_path=str(primary.resolve()), config_name="config")
    def app(cfg: DictConfig) -> CellSummary | None:
        hc = HydraConfig.get()
        register_overrides(hc.overrides.task)  # a joblib or Ray worker process knows only its job's
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if v is not None}
        multirun = hc.mode == RunMode.MULTIRUN
        try:
            # the composed value too: a sweep preset (+sweep=...) or an interpolation can set it
            problem = _run_name_problem(cfg.get("run"))
            if problem:
                raise ConfigError(problem)
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
    full_error = os.environ.get("HYDRA_FULL_ERROR")
    # Hydra prints its own errors (an unknown option, a bad override) with the override in them, which
    # may hold a password: set, it raises them instead, and they are printed here, redacted.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        app()
    except SystemExit as exc:  # --help, or an argument Hydra's command line refuses
        code = exc.code if isinstance(exc.code, int) else 1
        return 0 if code == 0 else 2
    except Exception as exc:  # Hydra's own errors: before any job, so nothing was written
        unknown = _unknown_config(exc)
        if unknown is not None:  # suite=/surface=/model=NAME naming no config: one line, not Hydra's list
            print(f"surfbench: error: {redact(unknown)}", file=sys.stderr)
            return 2
        cause = exc.__cause__
        detail = f"\n{cause}" if isinstance(exc, HydraException) and cause is not None else ""
        print(f"surfbench: error: {redact(f'{exc}{detail}')}", file=sys.stderr)
        if full_error or not isinstance(exc, HydraException):
            print(redact(traceback.format_exc()), file=sys.stderr)
        return 2
    finally:
        sys.argv = saved
        if full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = full_error
        os.environ.pop(HYDRA_DIR_ENV, None)
        _close_pool()
        failed = sorted({p.read_text() for p in failure_dir.glob("*.txt")})
        shutil.rmtree(failure_dir, ignore_errors=True)
        shutil.rmtree(hydra_dir, ignore_errors=True)
    if len(failed) > 1:
        print(f"surfbench: {len(failed)} cells failed:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 2 if failed else 0


FAILURE_DIR_ENV = "SURFBENCH_FAILURE_DIR"
HYDRA_DIR_ENV = "SURFBENCH_HYDRA_DIR"  # read by configs/config.yaml's hydra.run.dir and hydra.sweep.dir
COMMIT_INTERVAL_S = 0.5  # quick episodes (scripted, cached) are committed in groups at most this old


def _results_dir_problem(overrides: Sequence[str]) -> str | None:
    """What is wrong with the ``results_dir`` or ``run`` of the overrides, checked before Hydra starts.

    The results folder must be creatable and writable (checked before any model call, with a clear
    message). ``run`` must name a folder directly inside it (:func:`_run_name_problem`).
    """
    values = _override_values(overrides)
    for run in values.get("run", []):
        problem = _run_name_problem(run)
        if problem:
            return problem
    value = (values.get("results_dir") or ["results"])[-1]
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


def _run_name_problem(run: Any) -> str | None:
    """Why ``run`` cannot be a run name, or None; None and ``""`` mean the name derived from the cell.

    A run is one folder directly inside ``results_dir``: no ``/`` nor backslash, no ``..``, not absolute.
    ``run=../../x`` would write outside ``results_dir``; a nested ``run=team/a`` is refused too, so that
    every run is found by listing ``results_dir`` (use ``results_dir=results/team run=a``).
    """
    if run is None or isinstance(run, bool | list | dict) or run == "":
        return None  # not a name: bench/overrides.py refuses the wrong types with its own message
    name = str(run)
    if name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        return (
            f"run={name}: must be a folder name inside results_dir (no '/', '..' or absolute path); "
            "for a folder elsewhere, use results_dir=PARENT run=NAME"
        )
    return None


def _override_values(overrides: Sequence[str]) -> dict[str, list[str]]:
    """The values the overrides give each key, as Hydra reads them (each value of a sweep ``a,b``).

    An override Hydra cannot parse is left out: Hydra refuses it with its own message.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    parser = OverridesParser.create()
    values: dict[str, list[str]] = {}
    for text in overrides:
        if text.startswith("-"):  # -m, --cfg ...: not an override
            continue
        try:
            override = parser.parse_override(text)
        except HydraException:
            continue
        if override.is_delete():
            continue
        if override.is_sweep_override():
            found = list(override.sweep_string_iterator())
        else:
            value = override.value()
            found = [] if value is None else [str(value)]
        values.setdefault(override.key_or_group, []).extend(found)
    return values


def _unknown_config(exc: BaseException) -> str | None:
    """The one-line message for a Hydra error that is a group option naming no config, else None."""
    from hydra.errors import MissingConfigException

    from surfbench.bench.config import unknown_config

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, MissingConfigException):
        seen = seen.__cause__ or seen.__context__
    path = getattr(seen, "missing_cfg_file", None) or ""
    if seen is None or "/" not in path:  # the primary config itself missing: Hydra's message says it
        return None
    group, name = path.rsplit("/", 1)
    options = getattr(seen, "options", None)
    return unknown_config(group, name, list(options) if options else None)


def _mark_failure(text: str) -> None:
    folder = os.environ.get(FAILURE_DIR_ENV)
    if folder and Path(folder).is_dir():
        (Path(folder) / f"{uuid.uuid4().hex}.txt").write_text(text, encoding="utf-8")


def _user_error(exc: Exception) -> bool:
    from surfbench.bench.catalog import CatalogError
    from surfbench.bench.config import ConfigError
    from surfbench.bench.models import ModelError, ModelUnavailable, ServerError
    from surfbench.bench.results import ResultsError

    return isinstance(exc, CatalogError | ConfigError | ModelError | ModelUnavailable | ServerError | ResultsError)
