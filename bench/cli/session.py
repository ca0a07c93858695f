"""The guards around every run, from ``surfbench run`` or :func:`surfbench.run`, whatever launches its cells.

:func:`session` registers the overrides' secrets before Hydra sees them, checks ``results_dir`` and ``run``
before anything exists, gives Hydra a private temporary folder (bench/cli/tempdirs.py) and the cells one for
failure markers, and at the end stops this process's model servers and deletes both folders. A failed cell
leaves a marker (:func:`mark_failure`) from whatever process ran it (joblib and Ray workers find the folder
through the environment they inherit), so that the exit code counts every cell.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surfbench.bench.base.config import config_dirs, overlay_configs
from surfbench.bench.run.overrides import run_name_problem as run_name_problem  # where callers found it first

_POOL: Any = None  # one ModelPool per process: sequential cells reuse a model's server


def model_pool(no_cache: bool) -> Any:
    """This process's ModelPool (made on first use): sequential cells reuse a model's server."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.cache import ResponseCache

    global _POOL
    if _POOL is not None and no_cache and _POOL.cache is not None:
        # a cell without the response cache after cells with it: a pool made without one (a pool's clients
        # keep the cache they were made with); its servers stop, cells run one after another
        close_pool()
    if _POOL is None:
        _POOL = ModelPool(None if no_cache else ResponseCache())
    return _POOL


def close_pool() -> None:
    """Stop the servers of this process's ModelPool (the end of a run)."""
    global _POOL
    if _POOL is not None:
        _POOL.close()
        _POOL = None


FAILURE_DIR_ENV = "SURFBENCH_FAILURE_DIR"
HYDRA_DIR_ENV = "SURFBENCH_HYDRA_DIR"  # read by configs/config.yaml's hydra.run.dir and hydra.sweep.dir


@dataclass(frozen=True)
class RunSession:
    """What a run's cells share: the config folder Hydra reads, and the folder of failure markers."""

    config_dir: Path
    """``configs/``, or the merged view of the ``SURFBENCH_CONFIGS`` folders over it (bench/base/config.py)."""
    failure_dir: Path

    def failures(self) -> list[str]:
        """One redacted line per failed cell, from every process that ran one (joblib, Ray workers too)."""
        return sorted({p.read_text(encoding="utf-8") for p in self.failure_dir.glob("*.txt")})


@contextlib.contextmanager
def session(overrides: Sequence[str]) -> Iterator[RunSession]:
    """The guards around every run, from the command line or :func:`surfbench.run`; ConfigError if refused.

    The overrides' secrets are registered first (Hydra's errors and launch lines quote overrides); then
    ``results_dir`` and ``run`` are checked, before anything exists. Hydra's run and sweep folders, and a
    sweep's multirun.yaml (every override verbatim, sent to /dev/null), go to a private temporary folder
    (mode 0700, bench/cli/tempdirs.py), never under results_dir; every failing cell leaves a marker in another,
    found by worker processes through the environment they inherit. Both are deleted at the end, and the
    model servers of this process stopped.
    """
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.base.secrets import register_overrides
    from surfbench.bench.cli.tempdirs import discard_sweep_record, owned_tempdir, remove_stale

    register_overrides(overrides)  # first: Hydra's errors and its sweep launch lines quote overrides
    problem = _results_dir_problem(overrides)
    if problem:
        raise ConfigError(problem)
    remove_stale()  # the temporary folders of runs killed before they could delete theirs
    saved = {key: os.environ.get(key) for key in (FAILURE_DIR_ENV, HYDRA_DIR_ENV)}
    failure_dir = owned_tempdir("surfbench-failures-")
    hydra_dir = owned_tempdir("surfbench-hydra-")
    try:
        os.environ[FAILURE_DIR_ENV] = str(failure_dir)
        discard_sweep_record(hydra_dir / "multirun")
        os.environ[HYDRA_DIR_ENV] = str(hydra_dir)
        # SURFBENCH_CONFIGS adds folders searched before the shipped configs/: Hydra reads their merged view
        folders = config_dirs()
        try:
            primary = overlay_configs(hydra_dir / "configs") if len(folders) > 1 else folders[0]
        except OSError as exc:
            raise ConfigError(f"SURFBENCH_CONFIGS: {exc}") from None
        yield RunSession(primary, failure_dir)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        close_pool()
        shutil.rmtree(failure_dir, ignore_errors=True)
        shutil.rmtree(hydra_dir, ignore_errors=True)


def _results_dir_problem(overrides: Sequence[str]) -> str | None:
    """What is wrong with the ``results_dir`` or ``run`` of the overrides, checked before Hydra starts.

    The results folder must be creatable and writable (checked before any model call, with a clear
    message). ``run`` must name a folder directly inside it (:func:`run_name_problem`).
    """
    values = _override_values(overrides)
    for run in values.get("run", []):
        problem = run_name_problem(run)
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


def mark_failure(text: str) -> None:
    """Leave a failure marker for the session's exit code (in this process or a worker of another launcher)."""
    folder = os.environ.get(FAILURE_DIR_ENV)
    if folder and Path(folder).is_dir():
        (Path(folder) / f"{uuid.uuid4().hex}.txt").write_text(text, encoding="utf-8")
