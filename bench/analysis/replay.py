"""Recorded episodes rebuilt from a run's tables, and scored again, whole or cut short.

A run keeps every step and tool call but not the backend state: the state after a cut is recomputed
by replaying the kept calls that reached the backend (``kind == "operation"``) on a fresh backend
for the task, which suites make deterministic. Cutting after step ``cut`` gives exactly the trace the
loop would have left had it stopped there (:mod:`surfbench.bench.score.stuck`): the same steps and calls, no final
answer, no later user turn, and no harness error (a recorded error happened after the last recorded
step, so after any cut).

Scored whole (no cut), an episode should get its recorded scores back: :func:`self_check` says
where it does not (a task or catalog edited since the run, an older scorer, a backend that does not
replay the same way).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from surfbench.bench.base.values import decoded
from surfbench.bench.contracts.backend import ToolError
from surfbench.bench.contracts.records import CallRecord, EpisodeOutcome, EpisodeTrace, StepRecord
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.score.stuck import STUCK_REPEAT
from surfbench.bench.store.results import load_runs
from surfbench.bench.suites.checks import suite_checks
from surfbench.bench.suites.suite import Suite, SuiteError, Task, load_suite

SELF_CHECK_FIELDS = (
    "success", "expected_calls", "first_try_correct", "selection_correct", "calls_ok", "state_ok", "answer_ok",
    "refuse_ok", "round_trips", "recovered_after_error", "failed_first_tries", "boundary_violations",
    "protocol_violations", "parse_failures", "error_types",
)  # fmt: skip
"""Per-episode scores a whole-episode replay must reproduce."""

R = TypeVar("R", StepRecord, CallRecord)
"""A record a table row becomes."""


@dataclass(frozen=True)
class RecordedEpisode:
    """One episode as a run's tables hold it."""

    key: str
    row: dict[str, Any]
    """Its row of the episodes table (missing values as None)."""
    steps: list[StepRecord]
    calls: list[CallRecord]


@dataclass(frozen=True)
class Rescored:
    """An episode replayed (possibly cut short) and scored."""

    trace: EpisodeTrace
    score: EpisodeScore
    diverged: tuple[str, ...] = ()
    """Calls whose replayed backend outcome differs from the recorded one (the replay is then suspect)."""


def clean(value: object) -> object:
    """A table value as plain Python: NaN / NA -> None, numpy scalars -> Python scalars."""
    if value is None:
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value


def decode_arguments(value: object) -> object:
    """Arguments as recorded: objects and lists were stored as JSON text; other text is kept as it is."""
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        return parsed if isinstance(parsed, dict | list) else value
    return value


def _record(cls: type[R], row: Mapping[str, object], decode: frozenset[str] = frozenset()) -> R:
    """A record dataclass from a table row; columns an older run lacks get a neutral value."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        value = clean(row.get(f.name))
        if f.name in decode:
            value = decode_arguments(value)
        if value is None and "None" not in str(f.type):
            value = {"int": 0, "float": 0.0, "bool": False, "str": ""}.get(str(f.type).strip("'\""), value)
        values[f.name] = value
    return cls(**values)


def load_episodes(run: str | Path) -> list[RecordedEpisode]:
    """Every episode of a run folder, with its steps and calls in order."""
    episodes = load_runs([run])
    if not len(episodes):
        return []
    steps_by: dict[str, list[StepRecord]] = {}
    calls_by: dict[str, list[CallRecord]] = {}
    for row in load_runs([run], "steps").to_dict("records"):
        steps_by.setdefault(str(row["episode_key"]), []).append(_record(StepRecord, row))
    for row in load_runs([run], "calls").to_dict("records"):
        calls_by.setdefault(str(row["episode_key"]), []).append(_record(CallRecord, row, frozenset({"arguments"})))
    out = []
    for row in episodes.to_dict("records"):
        key = str(row["episode_key"])
        out.append(
            RecordedEpisode(
                key=key,
                row={k: clean(v) for k, v in row.items()},
                steps=sorted(steps_by.get(key, []), key=lambda s: s.step),
                calls=sorted(calls_by.get(key, []), key=lambda c: (c.step, c.index)),
            )
        )
    return out


@dataclass
class Suites:
    """Suites and their tasks, loaded once; a suite that cannot be loaded is remembered with why."""

    loaded: dict[str, Suite] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, dict[str, Task]] = field(default_factory=dict)
    """Each loaded suite's tasks by id."""

    def task(self, suite_name: str, task_id: str) -> tuple[Suite, Task] | str:
        """The suite and task, or why not."""
        if suite_name in self.problems:
            return self.problems[suite_name]
        if suite_name not in self.loaded:
            try:
                self.loaded[suite_name] = load_suite(suite_name)
            except (SuiteError, OSError, ValueError) as exc:
                self.problems[suite_name] = f"suite {suite_name!r} cannot be loaded: {exc}"
                return self.problems[suite_name]
        suite = self.loaded[suite_name]
        if suite_name not in self.tasks:
            self.tasks[suite_name] = {t.id: t for t in suite.tasks}
        tasks = self.tasks[suite_name]
        if task_id not in tasks:
            return f"suite {suite_name!r} has no task {task_id!r} any more"
        return suite, tasks[task_id]


def _turn_ended(step: StepRecord) -> bool:
    """A text answer with nothing to parse: the loop ends the user turn there (and moves to the next)."""
    return step.tool_calls == 0 and step.parse_failures == 0


def rebuild(
    suite: Suite, task: Task, episode: RecordedEpisode, cut: int | None = None
) -> tuple[EpisodeTrace, list[str]]:
    """The episode's trace, cut after step index ``cut`` (None: whole), with its state replayed."""
    steps = episode.steps if cut is None else episode.steps[: cut + 1]
    last = steps[-1].step if steps else -1
    calls = [c for c in episode.calls if c.step <= last] if cut is not None else list(episode.calls)
    by_step: dict[int, list[CallRecord]] = {}
    for c in calls:
        by_step.setdefault(c.step, []).append(c)
    row = episode.row
    trace = EpisodeTrace(steps=list(steps), calls=calls)
    diverged: list[str] = []
    error: str | None = row.get("error") if cut is None else None
    recorded = row.get("outcome")  # typed by the reader (bench.store.outcomes), older runs' too
    outcome = EpisodeOutcome(recorded) if error and recorded is not None else None
    backend = suite.new_backend(task)
    try:
        for i, step in enumerate(steps):
            for c in by_step.get(step.step, []):
                if c.kind != "operation" or c.operation is None:
                    continue
                try:
                    backend.call(c.operation, c.arguments if isinstance(c.arguments, Mapping) else {})
                    ok = True
                except ToolError:
                    ok = False
                if c.backend_ok is not None and ok != c.backend_ok:
                    diverged.append(
                        f"step {c.step} call {c.index} {c.operation}: recorded ok={c.backend_ok}, replay {ok}"
                    )
            stopped_here = cut is not None and i == len(steps) - 1
            if task.checks_turns and _turn_ended(step) and not stopped_here:
                trace.turn_states.append(backend.state())
    except Exception as exc:  # the backend failed where the recorded run went on: say so, score what there is
        diverged.append(f"replay failed: {type(exc).__name__}: {exc}")
    try:
        trace.state = backend.state()
    except Exception as exc:
        if not error:
            error, outcome = f"state(): {type(exc).__name__}: {exc}", EpisodeOutcome.HARNESS_ERROR
    trace.error, trace.outcome = error, outcome
    if cut is None:
        trace.final_text = row.get("final_text")
        recorded_types = decoded(row.get("error_types") or None)  # JSON text, or a list in newer parts
        if recorded_types is not None and STUCK_REPEAT in list(recorded_types):  # a run recorded with the stop on
            trace.stopped = STUCK_REPEAT
    else:
        trace.stopped = STUCK_REPEAT
    return trace, diverged


def rescore(suite: Suite, task: Task, episode: RecordedEpisode, cut: int | None = None) -> Rescored:
    trace, diverged = rebuild(suite, task, episode, cut)
    score = score_episode(task, trace, suite.catalog_for(task), suite.classifier, suite_checks(suite))
    return Rescored(trace, score, tuple(diverged))


def score_value(score: EpisodeScore, name: str) -> object:
    if name == "error_types":
        return sorted(score.error_types)
    return getattr(score, name)


def recorded_value(row: Mapping[str, Any], name: str) -> Any:
    value = row.get(name)
    if name == "error_types":
        types = decoded(value)
        return sorted(types) if types is not None else []
    return value


def same_value(got: object, want: object) -> bool:
    """Equal, counting an int column read back as floats (it had gaps) as ints."""
    if isinstance(want, float) and not isinstance(got, float) and want.is_integer():
        want = int(want)
    return bool(got == want)


def self_check(episode: RecordedEpisode, whole: Rescored) -> list[str]:
    """The fields whose recorded value the whole-episode replay does not reproduce."""
    return [
        name
        for name in SELF_CHECK_FIELDS
        if name in episode.row and not same_value(score_value(whole.score, name), recorded_value(episode.row, name))
    ]


def cell_label(row: Mapping[str, object]) -> str:
    return f"{row.get('suite')}/{row.get('surface')}/{row.get('model')}/{row.get('mode')}"


def group_by_cell(episodes: Iterable[RecordedEpisode]) -> dict[str, list[RecordedEpisode]]:
    """Episodes per cell (suite, surface, model, mode; and cell id where the run records one)."""
    out: dict[str, list[RecordedEpisode]] = {}
    for ep in episodes:
        label = cell_label(ep.row)
        cell_id = ep.row.get("cell_id")
        out.setdefault(f"{label} [{cell_id}]" if cell_id else label, []).append(ep)
    return dict(sorted(out.items()))
