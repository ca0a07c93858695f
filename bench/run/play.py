"""Play one episode of a cell: run it (again, if the endpoint failed it), score it, build its rows.

Nothing here writes shared state, so :func:`play_episode` may run on a worker thread
(``bench.base.concurrency``); the caller writes the rows it returns.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.taxonomy import check_declared
from surfbench.bench.contracts.backend import Closable
from surfbench.bench.contracts.records import EpisodeTrace
from surfbench.bench.models.client import ContextOverflow, ModelError
from surfbench.bench.models.server import ServerError
from surfbench.bench.models.types import ModelClient
from surfbench.bench.run.episode import run_episode, transcript_lines
from surfbench.bench.run.rows import episode_rows
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.tables import EpisodeRow
from surfbench.bench.suites.checks import suite_checks

if TYPE_CHECKING:
    from surfbench.bench.run.cell import Cell
    from surfbench.bench.suites.suite import Task


@dataclass(frozen=True)
class Finished:
    """One episode run and scored, its rows not yet written."""

    episode: EpisodeRow
    steps: list[Any]
    calls: list[Any]
    transcript: list[str]
    wall_s: float
    """The episode's wall time (the store commits quick episodes in groups)."""
    tools: dict[str, str] = field(default_factory=dict)
    """The wire text of each tool its steps showed, by hash (the run's tools table, bench.store.tool_texts)."""


ENDPOINT_FAILURES: tuple[type[BaseException], ...] = (ModelError, ServerError)
"""What the model endpoint raises when it failed a call (unreachable, rate limited past every retry, its local
server died), :class:`~surfbench.bench.models.client.RateLimited` included; a
:class:`~surfbench.bench.models.client.ContextOverflow` is an outcome of the surface, never run again."""


def endpoint_failure(trace: EpisodeTrace) -> bool:
    """The episode ended because the model endpoint failed (not because of anything the model did).

    Decided by the class of the exception the episode loop recorded, never by its message.
    """
    cls = trace.error_class
    return cls is not None and issubclass(cls, ENDPOINT_FAILURES) and not issubclass(cls, ContextOverflow)


def close_backend(backend: object) -> None:
    """Close an episode's backend where it declares ``close`` (:class:`Closable`); else leave it as it is."""
    if isinstance(backend, Closable):
        backend.close()


def play_episode(cell: Cell, key: str, task: Task, repeat: int, model: ModelClient, run_name: str) -> Finished:
    """Run episode ``key`` (up to ``episode_retries`` more times if the endpoint failed it) and score it."""
    catalog = cell.suite.catalog_for(task)

    def schema_of(name: str, catalog: Any = catalog) -> dict[str, Any] | None:
        op = catalog.get(name)
        return op.parameters if op else None

    base = cell.settings
    seed = (base.request.seed or 0) + repeat  # each repeat its own seed
    settings = base if repeat == 0 else replace(base, request=replace(base.request, seed=seed))
    policy = cell.policy.bind(catalog) if cell.policy is not None else None  # bench.suites.policy
    attempts = 0
    while True:
        attempts += 1
        backend = cell.suite.new_backend(task, cell.backend_options)
        session = cell.surface_for(task).session(task.turns[0])
        try:
            trace = run_episode(task, session, backend, model, settings, cell.suite.system_prompt, schema_of, policy)
        finally:  # a sandboxed backend holds processes and memory until closed
            close_backend(backend)
        if not endpoint_failure(trace) or attempts > cell.spec.episode_retries:
            break
        print(
            f"surfbench: {key}: {trace.error}; running the episode again ({attempts}/{cell.spec.episode_retries})",
            file=sys.stderr,
            flush=True,
        )
    score = score_episode(task, trace, catalog, cell.suite.classifier, suite_checks(cell.suite))
    check_declared(score.error_types, cell.declared_error_types, f"{cell.label()}, task {task.id!r}")
    episode, steps, calls = episode_rows(cell, task, repeat, trace, score, run_name, attempts)
    return Finished(episode, list(steps), list(calls), transcript_lines(trace), trace.wall_s, trace.tool_texts)
