"""Cells that cannot work on a model, found before any model call.

A first request whose static token count (system prompt, surface text, tool block, first turn, plus
the answer's ``max_tokens``) exceeds the model's context window would only end as
``context_overflow`` after it was sent: such an episode is recorded as *does not fit* (outcome ``does_not_fit``,
error ``does not fit: ...``, error type ``context_overflow``, no step) and never sent. A tool block that
breaks the provider's limits (tools per request, name pattern) is flagged when the cell is resolved.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from surfbench.bench.catalog.provider_limits import FitPrediction, check_first_request, model_limits
from surfbench.bench.contracts.records import EpisodeOutcome, EpisodeTrace
from surfbench.bench.run.cell import Fits as Fits  # the cell's predictions, kept with the cell
from surfbench.bench.run.episode import transcript_lines
from surfbench.bench.run.play import Finished
from surfbench.bench.run.rows import episode_rows
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.suites.checks import suite_checks

if TYPE_CHECKING:
    from surfbench.bench.run.cell import Cell
    from surfbench.bench.suites.suite import Task


def first_request_fit(cell: Cell, task: Task) -> FitPrediction:
    """The prediction for ``task``'s first request on the cell (cached per tool block when it is fixed)."""
    surface = cell.surface_for(task)
    fits = cell.fits
    key = (id(surface), task.turns[0] if surface.request_dependent else "")
    if key not in fits.predictions:
        limits = model_limits(cell.model_cfg)
        problems, fit = check_first_request(
            surface, task.turns[0], cell.suite.system_prompt, limits, cell.model_cfg.max_tokens
        )
        if problems and not fits.limits_flagged:
            fits.limits_flagged = True
            print(f"surfbench: {cell.label()}: breaks {cell.model_cfg.name}'s limits: {'; '.join(problems)}",
                  file=sys.stderr, flush=True)  # fmt: skip
        fits.predictions[key] = fit
    return fits.predictions[key]


def unfit_episode(cell: Cell, task: Task, repeat: int, run_name: str, fit: FitPrediction) -> Finished:
    """The episode recorded, not run: no step, outcome ``does_not_fit``, error ``does not fit: ...``.

    Its error type is context_overflow.
    """
    trace = EpisodeTrace(error=fit.why(), outcome=EpisodeOutcome.DOES_NOT_FIT)
    score = score_episode(task, trace, cell.suite.catalog_for(task), cell.suite.classifier, suite_checks(cell.suite))
    episode, steps, calls = episode_rows(cell, task, repeat, trace, score, run_name, 0)
    return Finished(episode, list(steps), list(calls), transcript_lines(trace), 0.0)
