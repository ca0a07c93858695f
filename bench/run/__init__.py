"""The run stage: cells and their episodes, played into rows.

Running cells: a cell's specification and resolved form (``cell``), whether it fits a model (``fit``), one
episode's loop (``episode``), playing and scoring it into rows (``play``, ``rows``), the runner over a
cell's episodes (``runner``), a run's settings checked (``overrides``), the run and its cells planned from them
(``plan``), a planned run played cell after cell (``execute``), and progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.run.cell import Cell as Cell
    from surfbench.bench.run.cell import CellSpec as CellSpec
    from surfbench.bench.run.episode import LoopSettings as LoopSettings
    from surfbench.bench.run.episode import run_episode as run_episode
    from surfbench.bench.run.execute import run_plan as run_plan
    from surfbench.bench.run.plan import CellPlan as CellPlan
    from surfbench.bench.run.plan import RunPlan as RunPlan
    from surfbench.bench.run.plan import plan_cell as plan_cell
    from surfbench.bench.run.plan import plan_run as plan_run
    from surfbench.bench.run.play import play_episode as play_episode
    from surfbench.bench.run.runner import resolve_cell as resolve_cell
    from surfbench.bench.run.runner import run_cell as run_cell

EXPORTS = {
    "Cell": "cell",
    "CellPlan": "plan",
    "CellSpec": "cell",
    "LoopSettings": "episode",
    "RunPlan": "plan",
    "plan_cell": "plan",
    "plan_run": "plan",
    "play_episode": "play",
    "resolve_cell": "runner",
    "run_cell": "runner",
    "run_episode": "episode",
    "run_plan": "execute",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
