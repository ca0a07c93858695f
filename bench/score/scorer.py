"""Turn an episode's calls and final state into the metrics of docs/metrics.md (the metric definitions).

Measurements (they never decide success):

- first-try argument accuracy: for each expected call, the first call the model made to that same
  operation (after routing; the k-th expected call of an operation pairs with the k-th call to it)
  passed the operation's schema and its arguments match the expected matchers (for a ``one_of``: the
  first call to any alternative's operation, judged by that alternative's matchers; a sequence
  alternative is right when each of its calls is: bench.score.first_try);
- tool selection: the first call naming a canonical operation names the expected first operation
  (any expected operation when the task's order is ``any``: parallel calls have no first; any
  alternative of a ``one_of``, a sequence's first call, or any of its calls with ``any_order``);
- recovered after error: an operation whose first call failed validation and a later call succeeded;
- round trips, overhead round trips, boundary / protocol violations, parse failures, stable prefix.

Success: every check that applies passes (the built-in checks of :mod:`surfbench.bench.suites.checks`: calls,
per-turn state, final state, answer, refusal; then the suite's own, in suite.yaml's order), the episode
ended without a harness error, and, when no check applies, with a final text answer.

``failures`` and ``error_types`` come in a fixed order: first tries, selection, the failed checks (in
the order above; each failure line ends with ``(check: NAME)``), how the episode ended (stopped, no
answer, harness error), rejected calls, the suite's ``classify`` hook, parse failures.

``outcome`` (:class:`~surfbench.bench.contracts.records.EpisodeOutcome`): how the episode ended, from the trace's
typed ``outcome`` (the loop and bench.run.fit set it beside the error), never from the error's text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.contracts.records import CallRecord, EpisodeOutcome, EpisodeTrace
from surfbench.bench.score.first_try import FirstTry
from surfbench.bench.score.first_try import first_tries as compute_first_tries
from surfbench.bench.suites.checks import (
    BUILTIN_CHECKS,
    Check,
    CheckResult,
    check_answer,
    check_state,
    lookup,
    run_checks,
)
from surfbench.bench.suites.suite import Task

__all__ = ["EpisodeScore", "FirstTry", "check_answer", "check_state", "lookup", "outcome_of", "score_episode"]


@dataclass(frozen=True)
class EpisodeScore:
    round_trips: int
    overhead_round_trips: int
    expected_calls: int
    first_try_correct: int
    first_tries: tuple[FirstTry, ...]
    selection_correct: bool | None
    success: bool
    calls_ok: bool | None
    state_ok: bool | None
    answer_ok: bool | None
    refuse_ok: bool | None
    recovered_after_error: int
    failed_first_tries: int
    boundary_violations: int
    protocol_violations: int
    parse_failures: int
    meta_calls: int
    operation_calls: int
    stable_prefix: bool
    outcome: EpisodeOutcome
    """How the episode ended (:func:`outcome_of`): the episodes table's ``outcome``."""
    error_types: tuple[str, ...]
    """Every failure in the episode, one entry per failed check (fixed taxonomy)."""
    failures: tuple[str, ...] = field(default_factory=tuple)
    """Human-readable lines explaining each failed check (a check's lines end with ``(check: NAME)``)."""
    checks: tuple[CheckResult, ...] = field(default_factory=tuple)
    """Every check that ran, in order, applicable or not (``passed`` None)."""

    @property
    def first_try_accuracy(self) -> float | None:
        return self.first_try_correct / self.expected_calls if self.expected_calls else None


def score_episode(
    task: Task,
    trace: EpisodeTrace,
    catalog: Catalog,
    classify: Callable[..., list[str]] | None = None,
    checks: Sequence[Check] = (),
) -> EpisodeScore:
    """Score one episode.

    Args:
        task: the task the episode ran.
        trace: what happened.
        catalog: the task's catalog.
        classify: the suite's failure-mode hook (its error types are added).
        checks: the suite's own checks (:func:`bench.suites.checks.suite_checks`), run after the built-in ones.
    """
    calls = trace.calls
    failures: list[str] = []
    errors: list[str] = []
    first_tries = compute_first_tries(task, calls)
    for ft in first_tries:
        if not ft.correct and ft.error_type:
            errors.append(ft.error_type)
            failures.append(f"first try: {ft.detail}")
    selection = _selection(task, calls, errors, failures)

    results = run_checks((*BUILTIN_CHECKS, *checks), task, trace, catalog)
    for result in results:
        if result.passed is False:
            errors += result.error_types
            failures += result.failure_lines()
    calls_ok, turn_state_ok, state_ok, answer_ok, refuse_ok = (r.passed for r in results[: len(BUILTIN_CHECKS)])
    if turn_state_ok is not None:
        state_ok = turn_state_ok and state_ok is not False

    if trace.stopped and trace.error is None:  # ended early (stop_on_repeat): scored as if max_steps were reached
        errors.append(trace.stopped)
        failures.append(f"no final text answer (stopped: {trace.stopped})")
    elif trace.final_text is None and trace.error is None:
        errors.append(ErrorType.NO_ANSWER)
        failures.append("no final text answer (max_steps reached)")
    outcome = outcome_of(trace)
    if trace.error and outcome.error_type is not None:
        errors.append(outcome.error_type)
        failures.append(trace.error)

    applicable = [r.passed for r in results if r.passed is not None]
    success = trace.error is None and all(applicable) and (bool(applicable) or trace.final_text is not None)

    recovered, failed_first = _recovery(calls)
    for c in calls:  # rejections (schema errors are counted through first tries)
        if c.error_type and c.error_type != ErrorType.SCHEMA_INVALID:
            errors.append(c.error_type)
    if classify is not None:
        errors += [str(e) for e in classify(task, calls)]
    parse_failures = sum(s.parse_failures for s in trace.steps) + sum(1 for c in calls if c.kind == "parse_error")
    errors += [ErrorType.PARSE_FAILURE] * sum(s.parse_failures for s in trace.steps)
    return EpisodeScore(
        round_trips=len(trace.steps),
        overhead_round_trips=sum(1 for s in trace.steps if s.overhead),
        expected_calls=len(task.expected),
        first_try_correct=sum(1 for ft in first_tries if ft.correct),
        first_tries=tuple(first_tries),
        selection_correct=selection,
        success=success,
        calls_ok=calls_ok,
        state_ok=state_ok,
        answer_ok=answer_ok,
        refuse_ok=refuse_ok,
        recovered_after_error=recovered,
        failed_first_tries=failed_first,
        boundary_violations=sum(1 for c in calls if c.error_type == ErrorType.NOT_EXPOSED),
        protocol_violations=sum(1 for c in calls if c.error_type == ErrorType.NOT_LOADED),
        parse_failures=parse_failures,
        meta_calls=sum(1 for c in calls if c.kind == "meta"),
        operation_calls=sum(1 for c in calls if c.kind == "operation"),
        stable_prefix=len({s.prefix_hash for s in trace.steps}) <= 1,
        outcome=outcome,
        error_types=tuple(errors),
        failures=tuple(failures),
        checks=results,
    )


def _selection(task: Task, calls: Sequence[CallRecord], errors: list[str], failures: list[str]) -> bool | None:
    """Whether the first call naming an operation names the expected first one (None: no expected call)."""
    if not task.expected:
        return None
    named = [c for c in calls if c.operation is not None]
    firsts = {op for e in task.expected for op in e.ops} if task.order == "any" else set(task.expected[0].first_ops)
    selection = bool(named) and named[0].operation in firsts
    if not selection:
        errors.append(ErrorType.WRONG_OPERATION)
        got = named[0].operation if named else "no operation"
        failures.append(f"selection: expected {task.expected[0].label} first, got {got}")
    return selection


def outcome_of(trace: EpisodeTrace) -> EpisodeOutcome:
    """How the episode ended: the trace's typed ``outcome``; the error's text is never read.

    Without one: ``harness_error`` if the trace has an error (a trace built outside the loop), ``ran`` if not.
    """
    if trace.error is None:
        return EpisodeOutcome.RAN
    ended = trace.outcome
    return ended if ended is not None and ended is not EpisodeOutcome.RAN else EpisodeOutcome.HARNESS_ERROR


def _recovery(calls: Sequence[CallRecord]) -> tuple[int, int]:
    """(operations whose first call failed validation and a later call succeeded, such failed operations)."""
    first_failed: set[str] = set()
    seen: set[str] = set()
    recovered: set[str] = set()
    for c in calls:
        if c.operation is None:
            continue
        if c.operation not in seen:
            seen.add(c.operation)
            if c.schema_valid is False or c.error_type == ErrorType.SCHEMA_INVALID:
                first_failed.add(c.operation)
            continue
        if c.operation in first_failed and c.kind == "operation" and c.backend_ok:
            recovered.add(c.operation)
    return len(recovered), len(first_failed)
