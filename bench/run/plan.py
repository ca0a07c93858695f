"""The plan of a run: what to run, every setting checked once, before anything runs or is written.

A :class:`RunPlan` is the whole run (:func:`plan_run`, what ``surfbench run`` and :func:`surfbench.run` both do
through bench/cli/sweep.py): its cells in order, each a :class:`CellPlan` or, when its planning failed, a
:class:`PlanFailure` reported at its turn, and whether it is a sweep's and sequential. A :class:`CellPlan` is built
from one cell as Hydra composed it (:func:`plan_cell`): the top-level settings checked strictly
(:func:`~surfbench.bench.run.overrides.run_settings`), the cell's :class:`~surfbench.bench.run.cell.CellSpec` made
from them (the settings the two records share passed by name, :func:`cell_spec`, never copied one by one), the
surface and model configs as composed (overrides such as ``surface.params.k=5`` in them), and the run folder.
:meth:`CellPlan.resolve` turns it into the :class:`~surfbench.bench.run.cell.Cell` that
:func:`~surfbench.bench.run.runner.run_cell` plays; bench/run/execute.py runs a whole plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.base.config import ConfigError
from surfbench.bench.run.cell import Cell, CellSpec
from surfbench.bench.run.overrides import RunSettings, run_name_problem, run_settings

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from surfbench.bench.models.spec import ModelConfig

_SPEC_FIELDS = {f.name for f in fields(CellSpec)}
SHARED_SETTINGS = tuple(f.name for f in fields(RunSettings) if f.name in _SPEC_FIELDS)
"""The settings a run's :class:`RunSettings` gives each of its cells' :class:`CellSpec` (same name, same meaning)."""


@dataclass(frozen=True)
class CellPlan:
    """One cell of a run, planned: its checked settings, its spec, the composed group configs, its folder and label."""

    settings: RunSettings
    """The run's top-level settings as this cell's composition checked them (a sweep may vary them per cell)."""
    spec: CellSpec
    """What the cell runs (recorded in run.json's ``cells``)."""
    surface_data: Mapping[str, object] | None
    """The surface config as Hydra composed it (None: read configs/surface/NAME.yaml)."""
    model_data: Mapping[str, object] | None
    """The model config as Hydra composed it (None: read configs/model/NAME.yaml)."""
    run_name: str
    """The run folder's name inside ``results_dir`` (``run``, or derived from the cell or the sweep)."""
    folder: Path
    """``results_dir/run_name``."""
    label: str
    """``suite/surface/model`` as the run chose them: what a failure of the cell is reported under."""
    model: ModelConfig | None = None
    """The model config ``model_data`` gives, read and checked when the cell was planned (a setting its provider
    does not read, a stop that cannot work: refused then, before any cell of the run runs); None: at resolve."""

    def resolve(self) -> Cell:
        """The cell loaded and checked (suite, surface, model, tasks): fails before any model call."""
        from surfbench.bench.run.runner import resolve_cell

        def data(group: Mapping[str, object] | None) -> dict[str, object] | None:
            return None if group is None else dict(group)

        return resolve_cell(self.spec, data(self.surface_data), data(self.model_data), self.model)


def cell_spec(
    settings: RunSettings,
    suite: str,
    surface: str,
    model: str,
    backend_options: Mapping[str, object] | None = None,
    policy: Mapping[str, object] | None = None,
    grow: int | None = None,
    grow_seed: int = 0,
) -> CellSpec:
    """The spec of one cell of a run: the run's shared settings (:data:`SHARED_SETTINGS`) and the cell's own."""
    shared = {name: getattr(settings, name) for name in SHARED_SETTINGS}
    return CellSpec(
        suite=suite,
        surface=surface,
        model=model,
        backend_options=dict(backend_options or {}),
        policy=dict(policy or {}),
        grow=grow,
        grow_seed=grow_seed,
        **shared,
    )


def plan_cell(cfg: DictConfig, choices: Mapping[str, str], multirun: bool, sequential: bool = False) -> CellPlan:
    """The plan of the cell one composed config describes; ConfigError naming the override for a bad setting.

    ``choices``: the config Hydra chose in each group; ``multirun``: a sweep's cell (the run folder is the
    sweep's unless ``run`` names one); ``sequential``: the caller runs the cells batch by batch
    (bench/sequential/until_decided.py).
    """
    from omegaconf import OmegaConf

    from surfbench.bench.models import model_config
    from surfbench.bench.store.results import safe_name
    from surfbench.bench.suites.grow import grow_fields
    from surfbench.bench.suites.policy import RUN_WHERE, policy_mapping

    # the composed value too: a sweep preset (+sweep=...) or an interpolation can set it
    problem = run_name_problem(cfg.get("run"))
    if problem:
        raise ConfigError(problem)
    # every top-level override checked strictly (limit=1.5, no_cache=maybe, +foo=1 are errors naming
    # the override), before the pool, the store or run.json exist
    settings = run_settings(cfg)
    if settings.until_decided and not sequential:  # Hydra's other launchers run each cell on its own
        raise ConfigError(
            f"until_decided={settings.until_decided}: a sequential run pairs its cells batch by batch in one "
            "process: run it with Hydra's basic launcher (no hydra/launcher=...), e.g. surfbench run -m "
            "surface=full,dispatcher until_decided=configs/gate/dsh-sequential.yaml budget=200"
        )

    def group(key: str) -> dict[str, object] | None:
        node = cfg.get(key)
        if node is None:
            return None
        value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        return {str(k): v for k, v in value.items()} if isinstance(value, dict) else None

    suite_node = cfg.get("suite")
    suite = str(suite_node.get("name") or choices["suite"]) if suite_node else choices["suite"]
    options = _options(cfg.get("backend_options"))
    policy = policy_mapping(cfg.get("policy"), RUN_WHERE)  # bench.suites.policy: checked here, merged with the suite's
    grown = grow_fields(cfg.get("catalog"))
    spec = cell_spec(
        settings,
        suite=suite,
        surface=choices["surface"],
        model=choices["model"],
        backend_options=options,
        policy={k: list(v) if isinstance(v, tuple) else v for k, v in policy.items()},
        grow=grown["grow"],
        grow_seed=grown["grow_seed"],
    )
    default_run = (
        f"sweep-{spec.suite}-{spec.split}" if multirun else f"{spec.suite}-{spec.split}-{spec.surface}-{spec.model}"
    )
    run_name = settings.run or safe_name(default_run)
    folder = Path(str(cfg.results_dir)) / run_name
    model_data = group("model")
    model = model_config(spec.model, model_data)  # the model config checked now, not at the cell's turn
    return CellPlan(settings, spec, group("surface"), model_data, run_name, folder, cell_label(choices), model)


def cell_label(choices: Mapping[str, str]) -> str:
    """``suite/surface/model``: the configs a cell's composition chose, as a failure of the cell is reported."""
    return f"{choices.get('suite')}/{choices.get('surface')}/{choices.get('model')}"


@dataclass(frozen=True)
class PlanFailure:
    """A cell whose planning failed: reported at its turn in the run, the other cells going on."""

    label: str
    """``suite/surface/model`` (:func:`cell_label`)."""
    error: Exception
    """What :func:`plan_cell` raised (a :class:`~surfbench.bench.base.config.ConfigError` for a bad setting)."""


@dataclass(frozen=True)
class RunPlan:
    """A whole run, planned: its cells in order and how they run."""

    cells: tuple[CellPlan | PlanFailure, ...]
    """Every composed cell in the run's order: its plan, or why it could not be planned."""
    multirun: bool
    """A sweep's cells (the run folder is the sweep's unless ``run`` names one)."""
    sequential: bool = False
    """The cells run paired, batch by batch (``until_decided``, bench/sequential/until_decided.py)."""

    @property
    def planned(self) -> tuple[CellPlan, ...]:
        """The cells that were planned, in order."""
        return tuple(c for c in self.cells if isinstance(c, CellPlan))

    @property
    def failures(self) -> tuple[PlanFailure, ...]:
        """The cells whose planning failed, in order."""
        return tuple(c for c in self.cells if isinstance(c, PlanFailure))


def plan_run(
    cells: Iterable[tuple[DictConfig, Mapping[str, str]]], multirun: bool, sequential: bool = False
) -> RunPlan:
    """The plan of a run from its composed cells, each ``(config, choices)`` as :func:`plan_cell` takes them.

    The cells are planned one at a time, in order (a caller that must set something up per cell, such as
    Hydra's ``HydraConfig`` for ``${hydra:...}``, gives them lazily); a cell whose planning fails is kept as a
    :class:`PlanFailure`, so that it is reported at its turn and the other cells run.
    """
    planned: list[CellPlan | PlanFailure] = []
    for cfg, choices in cells:
        try:
            planned.append(plan_cell(cfg, choices, multirun, sequential))
        except Exception as exc:  # the cell is reported at its turn; the other cells of a sweep go on
            planned.append(PlanFailure(cell_label(choices), exc))
    return RunPlan(tuple(planned), multirun, sequential)


def _options(node: object) -> dict[str, object]:
    """``backend_options`` as Hydra composed it: a mapping of option names, or an error naming it."""
    from omegaconf import OmegaConf

    value = OmegaConf.to_container(node, resolve=True) if node is not None and OmegaConf.is_config(node) else node
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"backend_options={value!r}: must be a mapping, e.g. +backend_options.disk_quota_mb=512")
    return {str(k): v for k, v in value.items()}
