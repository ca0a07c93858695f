"""``surfbench.run(RunSpec(...))``: a run from Python, the layer the ``surfbench run`` command stands on.

A :class:`RunSpec` names a run with typed fields (the suite, the surfaces and models to cross, the settings of
configs/config.yaml) plus any other Hydra override; :func:`run` composes its cells with Hydra's compose API
(bench/cli/compose.py), plans the run (bench/run/plan.py) and runs it in this process, one cell after another (the
model servers shared, bench/run/execute.py), and returns a
:class:`RunResult`: each cell's id, folder, episodes and summary, and the folder read back by the typed
reader (``.runs``, what ``surfbench.load`` returns). The guards are those of ``surfbench run``
(bench/cli/session.py): secrets registered before Hydra sees an override, ``results_dir`` and ``run`` checked
before anything is written, Hydra's folders in a private temporary folder, failed cells counted.

The same spec on the command line is ``surfbench run [-m] *spec.overrides()`` (``-m`` when it has more than
one cell): the same cells, the same folder, so either resumes the other's run. Two differences, both of a
library: :func:`run` leaves the process's signal handlers alone (``surfbench run`` turns SIGTERM into a clean
stop), and another Hydra launcher (``hydra/launcher=joblib``, Ray, submitit) is the command line's only.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.secrets import redact
from surfbench.bench.cli.compose import compose_run, unknown_config_message
from surfbench.bench.cli.session import session
from surfbench.bench.cli.sweep import CellRun, run_cells

if TYPE_CHECKING:
    from surfbench.bench.store.reader import Runs

__all__ = ["CellRun", "RunFailed", "RunResult", "RunSpec", "run"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class RunSpec:
    """What to run; a field left ``None`` (or empty) keeps configs/config.yaml's value.

    ``RunSpec(suite="notes_mcp", surfaces=["full", "dispatcher"], models=["qwen2.5-coder-0.5b-instruct"],
    limit=4)`` is ``surfbench run -m suite=notes_mcp surface=full,dispatcher model=... limit=4``. Several
    surfaces or models, or a sweep in ``overrides`` (``catalog.grow=null,64``) or a ``sweep`` preset, cross
    into several cells; a value of the wrong type is refused with the command line's message for it.
    """

    suite: str | None = None
    """A config of configs/suite/ (default: config.yaml's, forge)."""
    surfaces: Sequence[str] = ()
    """Configs of configs/surface/, one cell each (a string: one name, or ``"full,core"``)."""
    models: Sequence[str] = ()
    """Configs of configs/model/, one cell each (crossed with the surfaces)."""
    split: str | None = None
    """dev, test or all."""
    tasks: Sequence[str] | None = None
    """Task ids to run (empty or None: every task of the split)."""
    limit: int | None = None
    """The first N tasks."""
    tags: Sequence[str] | None = None
    """Only the tasks carrying every one of these tags (``["hot"]``; empty or None: no filter)."""
    repeats: int | None = None
    """Episodes per task."""
    mode: str | None = None
    """native or prompted (None: the model config's)."""
    max_steps: int | None = None
    concurrency: int | None = None
    """Episodes of a cell in flight at once (None: the model config's)."""
    no_cache: bool | None = None
    """True: always call the model (the response cache is neither read nor written)."""
    run: str | None = None
    """The run folder's name inside ``results_dir`` (None: derived from the cell, or the sweep)."""
    results_dir: PathLike | None = None
    sweep: str | None = None
    """A preset of configs/sweep/ (``+sweep=NAME``): its cells and settings."""
    overrides: Sequence[str] = ()
    """Any other Hydra override, as on the command line (``surface.params.k=5``, ``+backend_options.x=1``)."""
    configs: Sequence[PathLike] = field(default=())
    """Folders of configs searched before the shipped ones, for this run (as ``SURFBENCH_CONFIGS``)."""

    def __post_init__(self) -> None:  # a string is one value (or "a,b"), never a sequence of letters
        for name in ("surfaces", "models", "tasks", "tags"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = [n.strip() for n in value.split(",") if n.strip()]
            if value is not None:
                object.__setattr__(self, name, tuple(value))
        for name in ("overrides", "configs"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str | os.PathLike) else tuple(value))

    def overrides_list(self) -> list[str]:
        """The Hydra overrides of this spec: what ``surfbench run`` takes for the same run (``-m`` aside)."""
        out = [f"{key}={_name(key, value)}" for key, value in (("suite", self.suite), ("+sweep", self.sweep)) if value]
        for key, names in (("surface", self.surfaces), ("model", self.models)):
            if names:
                out.append(f"{key}={','.join(_name(key, n) for n in names)}")
        settings: list[tuple[str, Any]] = [
            ("split", self.split), ("tasks", None if self.tasks is None else list(self.tasks)), ("limit", self.limit),
            ("tags", None if self.tags is None else list(self.tags)), ("repeats", self.repeats), ("mode", self.mode),
            ("max_steps", self.max_steps),
            ("concurrency", self.concurrency), ("no_cache", self.no_cache), ("run", self.run),
            ("results_dir", None if self.results_dir is None else os.fspath(self.results_dir)),
        ]  # fmt: skip
        out += [f"{key}={_value(value)}" for key, value in settings if value is not None]
        return [*out, *self.overrides]


@dataclass(frozen=True)
class RunResult:
    """A finished run: the cells this call ran (each with its folder, episodes and summary)."""

    cells: tuple[CellRun, ...]

    @property
    def folders(self) -> tuple[Path, ...]:
        """The run folders written, in cell order (one, unless cells of several suites had no ``run`` name)."""
        return tuple(dict.fromkeys(c.folder for c in self.cells))

    @property
    def folder(self) -> Path:
        """The run folder (the first of :attr:`folders`)."""
        return self.folders[0]

    @property
    def new_episodes(self) -> int:
        """Episodes this call ran, over every cell (0: the run was complete, nothing ran again)."""
        return sum(c.new_episodes for c in self.cells)

    @cached_property
    def runs(self) -> Runs:
        """The folders read back with ``surfbench.load``: typed cells, episodes, steps and calls frames."""
        from surfbench.bench.store.reader import load

        return load(*self.folders)


class RunFailed(RuntimeError):
    """Some cells of a run failed (each printed as it failed); ``result`` holds the cells that ran."""

    def __init__(self, failures: Sequence[str], result: RunResult) -> None:
        self.failures = list(failures)
        self.result = result
        count = f"{len(self.failures)} cell(s) failed"
        super().__init__(f"{count}: " + "; ".join(self.failures))


def run(spec: RunSpec) -> RunResult:
    """Run every cell of ``spec`` in this process and return them; a re-run of the same spec resumes.

    Raises :class:`~surfbench.bench.base.config.ConfigError` (one line, redacted) for a run refused before any
    cell (an unknown config name, a bad override, a ``results_dir`` that cannot be written), and
    :class:`RunFailed` when a cell failed (the other cells still ran).
    """
    from hydra.errors import HydraException

    overrides = spec.overrides_list()
    with _config_folders(spec.configs), session(overrides) as where:
        try:
            composed = compose_run(where.config_dir, overrides, multirun=True, from_shell=False)
        except Exception as exc:
            unknown = unknown_config_message(exc)
            if unknown is None and not isinstance(exc, HydraException):
                raise
            cause = f" ({exc.__cause__})" if unknown is None and exc.__cause__ is not None else ""
            raise ConfigError(redact(unknown or f"{exc}{cause}")) from None
        if composed.driver is not None:
            raise ConfigError(
                f"{composed.driver}: surfbench.run runs its cells in this process; "
                "for another launcher use the command line, surfbench run -m ... hydra/launcher=NAME"
            )
        # one cell: the folder ``surfbench run`` (no -m) names; several: the sweep's
        cells = run_cells(replace(composed, multirun=len(composed.cells) > 1))
        failed = where.failures()
    result = RunResult(tuple(cells))
    if failed:
        raise RunFailed(failed, result)
    return result


@contextlib.contextmanager
def _config_folders(folders: Sequence[PathLike]) -> Iterator[None]:
    """``SURFBENCH_CONFIGS`` with ``folders`` first, for the duration of a run."""
    if not folders:
        yield
        return
    saved = os.environ.get("SURFBENCH_CONFIGS")
    os.environ["SURFBENCH_CONFIGS"] = os.pathsep.join([*(os.fspath(f) for f in folders), *([saved] if saved else [])])
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SURFBENCH_CONFIGS", None)
        else:
            os.environ["SURFBENCH_CONFIGS"] = saved


_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]*")
_BARE = re.compile(r"[A-Za-z_/.][A-Za-z0-9_./:@-]*")  # read by Hydra as this very string
_KEYWORDS = {"null", "true", "false", "nan", "inf"}


def _name(key: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(f"{key}={name!r}: not a config name (the stem of a file in configs/{key.lstrip('+')}/)")
    return name


def _value(value: object) -> str:
    """``value`` as a Hydra override value that reads back as the same value (strings quoted when needed)."""
    if value is None or isinstance(value, bool):
        return "null" if value is None else str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ",".join(_value(v) for v in value) + "]"
    text = str(value)
    if _BARE.fullmatch(text) and text.lower() not in _KEYWORDS:
        return text
    # quoted: a backslash run before a quote or the end is doubled, a quote escaped (Hydra's grammar)
    return "'" + re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text).replace("'", "\\'") + "'"
