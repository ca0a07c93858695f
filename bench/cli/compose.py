"""A run's Hydra overrides to the composed config of each of its cells, through Hydra's compose API.

``surfbench run`` and :func:`surfbench.run` compose here (``hydra.initialize_config_dir`` and ``compose``)
rather than through ``@hydra.main``: no ``sys.argv`` to swap, no folder made, and every cell of a sweep is
composed, an unknown config name in any of them refused, before the first one runs (Hydra's basic sweeper
checks its batch the same way). A sweep is expanded as that sweeper does it (its ``split_arguments``, written
over Hydra's public override types in :func:`expand`): the cartesian product of every ``key=a,b`` override and
of the ``hydra.sweeper.params`` a preset sets (``+sweep=dsh``), the command line winning a key both name, in
Hydra's job order.

Another launcher (``hydra/launcher=joblib``, Ray, submitit) or sweeper is Hydra's to drive:
:func:`compose_run` names it in :attr:`Composed.driver` and bench/cli/sweep.py hands the run to Hydra's own
entry (``hydra.main``, bench/cli/sweep.py's ``_hydra_main``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASIC_LAUNCHER = "hydra._internal.core_plugins.basic_launcher.BasicLauncher"
BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"
CONFIG_NAME = "config"


@dataclass(frozen=True)
class ComposedCell:
    """One cell as Hydra composes it: the job's overrides, its config with the ``hydra`` node, the group choices."""

    overrides: tuple[str, ...]
    """The job's own overrides, as Hydra's launcher lists them (``surface=full model=oracle limit=2``)."""
    config: Any
    """The composed DictConfig, ``hydra`` node included (what ``HydraConfig`` holds during a job)."""
    choices: dict[str, str]
    """The config chosen in each group: ``{"suite": "forge", "surface": "full", "model": ..., ...}``."""

    def task(self) -> Any:
        """The config a job sees: a copy without the ``hydra`` node, as ``@hydra.main`` passes it."""
        from omegaconf import open_dict, read_write

        task = copy.deepcopy(self.config)
        with read_write(task), open_dict(task):
            del task["hydra"]
        return task


@dataclass(frozen=True)
class Composed:
    """Every cell of a run, composed; or, for another launcher or sweeper, the one that must drive it."""

    cells: tuple[ComposedCell, ...]
    multirun: bool
    driver: str | None = None
    """``hydra/launcher`` or ``hydra/sweeper`` with its target when not Hydra's basic one (no cells then)."""


def compose_run(config_dir: Path, overrides: Sequence[str], multirun: bool, from_shell: bool = True) -> Composed:
    """Compose every cell of ``surfbench run [-m] OVERRIDES`` from ``config_dir``/config.yaml.

    Raises Hydra's own errors (an unknown config name, a malformed override, a sweep without ``-m``);
    ``from_shell``: their examples quote values as a shell needs them, else as Python strings hold them.
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    with initialize_config_dir(config_dir=str(config_dir.resolve()), job_name="sweep", version_base="1.3"):
        hydra = GlobalHydra.instance().hydra
        assert hydra is not None  # initialize_config_dir made it
        if not multirun:  # what compose() does, Hydra's run mode: a sweep override is refused ("add --multirun")
            config = hydra.compose_config(CONFIG_NAME, list(overrides), run_mode=RunMode.RUN, from_shell=from_shell)
            return Composed((_cell(config, overrides),), multirun=False)
        # the sweep's own config, as Hydra's multirun composes it (sweep values left out, presets applied)
        master = hydra.compose_config(CONFIG_NAME, list(overrides), run_mode=RunMode.MULTIRUN, from_shell=from_shell)
        driver = _driver(master)
        if driver is not None:
            return Composed((), multirun=True, driver=driver)
        fixed = [str(o) for o in master.hydra.overrides.hydra]  # hydra.* overrides: every job's too
        jobs = expand(master, hydra.config_loader)
        cells = tuple(
            _cell(compose(CONFIG_NAME, overrides=[*fixed, *job], return_hydra_config=True), job) for job in jobs
        )
    return Composed(cells, multirun=True)


def expand(master: Any, config_loader: Any = None) -> list[list[str]]:
    """The overrides of each job of a sweep, in Hydra's order (its basic sweeper's ``split_arguments``).

    Written here over Hydra's public override types rather than calling the basic sweeper's own method,
    which lives in a private module (``hydra._internal``): one list of ``key=value`` per key, a discrete
    sweep (``a,b``, ``range(...)``, ``choice(...)``) giving one per value, the last of a key repeated
    winning its place, then their cartesian product, as that method builds it.
    """
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    params = master.hydra.sweeper.get("params") or {}
    lines = [f"{key}={value}" for key, value in params.items()]
    lines += [str(o) for o in master.hydra.overrides.task]
    parsed = OverridesParser.create(config_loader=config_loader).parse_overrides(lines)
    choices: dict[str, list[str]] = {}
    for override in parsed:
        key = override.get_key_element()
        if not override.is_sweep_override():
            choices[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            choices[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:  # an interval sweep: an optimizing sweeper's (Optuna, Nevergrad), not the basic one's
            kind = override.value_type.name if override.value_type is not None else "this"
            raise HydraException(f"BasicSweeper does not support sweep type : {kind}")
    return [list(job) for job in itertools.product(*choices.values())]


def launch_lines(cells: Sequence[ComposedCell]) -> list[str]:
    """What Hydra's basic launcher logs before a sweep (``Launching N jobs locally``, ``#0 : overrides``)."""
    return [f"Launching {len(cells)} jobs locally", *(f"\t#{i} : {' '.join(c.overrides)}" for i, c in enumerate(cells))]


def _driver(master: Any) -> str | None:
    launcher = master.hydra.launcher.get("_target_")
    if launcher != BASIC_LAUNCHER:
        return f"hydra/launcher ({launcher})"
    sweeper = master.hydra.sweeper.get("_target_")
    if sweeper != BASIC_SWEEPER:
        return f"hydra/sweeper ({sweeper})"
    return None


def _cell(config: Any, overrides: Sequence[str]) -> ComposedCell:
    choices = {str(k): str(v) for k, v in config.hydra.runtime.choices.items() if v is not None}
    return ComposedCell(tuple(overrides), config, choices)


def unknown_config_message(exc: BaseException) -> str | None:
    """The one-line message for a Hydra error that is a group option naming no config, else None.

    ``suite=/surface=/model=/+sweep=NAME`` naming no config: the close names, not Hydra's option list.
    """
    from hydra.errors import MissingConfigException

    from surfbench.bench.base.config import unknown_config

    seen: BaseException | None = exc
    while seen is not None and not isinstance(seen, MissingConfigException):
        seen = seen.__cause__ or seen.__context__
    path = getattr(seen, "missing_cfg_file", None) or ""
    if seen is None or "/" not in path:  # the primary config itself missing: Hydra's message says it
        return None
    group, name = path.rsplit("/", 1)
    options = getattr(seen, "options", None)
    return unknown_config(group, name, list(options) if options else None)
