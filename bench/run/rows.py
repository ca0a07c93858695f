"""An episode as table rows: one episodes row, its steps and its calls (the row types: bench/store/tables.py)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from surfbench.bench.contracts.records import EpisodeTrace
from surfbench.bench.score.credit import episode_credit
from surfbench.bench.score.scorer import EpisodeScore
from surfbench.bench.score.stuck import scan as scan_repeats
from surfbench.bench.store.tables import CallRow, EpisodeRow, StepRow
from surfbench.bench.suites.expected import OneOfCall
from surfbench.bench.suites.instances import instance_tally
from surfbench.bench.suites.suite import Task

if TYPE_CHECKING:  # the runner builds cells and imports this module, not the other way round
    from surfbench.bench.run.cell import Cell


class EpisodeRows(NamedTuple):
    """One episode's rows in the three tables (unpacks as ``episode, steps, calls``)."""

    episode: EpisodeRow
    steps: list[StepRow]
    calls: list[CallRow]


def _mean(values: Sequence[float | int | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return round(statistics.fmean(clean), 3) if clean else None


def _total(values: Sequence[int | None]) -> int | None:
    clean = [v for v in values if v is not None]
    return sum(clean) if clean else None


def episode_rows(
    cell: Cell,
    task: Task,
    repeat: int,
    trace: EpisodeTrace,
    score: EpisodeScore,
    run: str,
    attempts: int | None = None,
) -> EpisodeRows:
    """The rows one scored episode adds to the episodes, steps and calls tables."""
    key = cell.episode_key(task, repeat)
    steps = trace.steps
    first_pos = {ft.call_position: ft for ft in score.first_tries if ft.call_position is not None}
    stuck = scan_repeats(steps, trace.calls)
    state = trace.state if isinstance(trace.state, dict) else {}
    usage = state.get("usage") or trace.usage  # a sandboxed backend's peaks (tasks/workspace), or its programs'
    tally = instance_tally(task, trace.calls, cell.surface_for(task).catalog)  # bench.suites.instances
    credit = episode_credit(  # bench.score.credit; the suite's step budget caps the fewest round trips
        task, trace, score.success, policed=cell.policy is not None, budget=(cell.suite.max_steps, cell.suite.steps_per)
    )
    episode = EpisodeRow(
        episode_key=key,
        run=run,
        suite=cell.suite.name,
        task_id=task.id,
        split=task.split,
        tags=list(task.tags),
        surface=cell.surface_label,
        surface_config=cell.surface_cfg.name,
        surface_kind=cell.surface_cfg.kind,
        model=cell.model_label,
        model_config=cell.model_cfg.name,
        cell_id=cell.cell_id,
        task_hash=cell.task_hash(task),
        params_b=cell.model_cfg.params_b,
        mode=cell.mode,
        repeat=repeat,
        catalog_hash=cell.suite.catalog_for(task).content_hash,
        round_trips=score.round_trips,
        overhead_round_trips=score.overhead_round_trips,
        expected_calls=score.expected_calls,
        first_try_correct=score.first_try_correct,
        first_try_accuracy=score.first_try_accuracy,
        first_tries=[
            {"op": ft.operation, "correct": ft.correct, "error_type": ft.error_type} for ft in score.first_tries
        ],
        selection_correct=score.selection_correct,
        success=score.success,
        calls_ok=score.calls_ok,
        state_ok=score.state_ok,
        answer_ok=score.answer_ok,
        refuse_ok=score.refuse_ok,
        recovered_after_error=score.recovered_after_error,
        failed_first_tries=score.failed_first_tries,
        boundary_violations=score.boundary_violations,
        protocol_violations=score.protocol_violations,
        parse_failures=score.parse_failures,
        meta_calls=score.meta_calls,
        operation_calls=score.operation_calls,
        stable_prefix=score.stable_prefix,
        stuck_repeats=stuck.repeats,
        stuck=stuck.stuck,
        prompt_tokens_total=_total([s.prompt_tokens for s in steps]),
        prompt_tokens_per_step=_mean([s.prompt_tokens for s in steps]),
        prompt_tokens_est_per_step=_mean([s.prompt_tokens_est for s in steps]),
        cached_prompt_tokens_total=_total([s.cached_prompt_tokens for s in steps]),
        completion_tokens_total=_total([s.completion_tokens for s in steps]),
        request_bytes_per_step=_mean([s.request_bytes for s in steps]),
        tool_block_bytes_first=steps[0].tool_block_bytes if steps else None,
        tools_shown_first=steps[0].tools_shown if steps else None,
        latency_s=round(sum(s.latency_s for s in steps), 3),
        wall_s=round(trace.wall_s, 3),
        cost_usd=round(sum(s.cost_usd for s in steps), 6),
        cache_hits=sum(1 for s in steps if s.cache_hit),
        error_types=list(score.error_types),
        failures=list(score.failures),
        final_text=trace.final_text,
        error=trace.error,
        traceback=trace.traceback,
        attempts=attempts,
        disk_peak_bytes=usage.get("disk_peak_bytes"),
        memory_peak_bytes=usage.get("memory_peak_bytes"),
        expected_ops=[list(e.ops) if isinstance(e, OneOfCall) else e.op for e in task.expected],
        call_share=credit.call_share,
        state_share=credit.state_share,
        min_round_trips=credit.min_round_trips,
        efficiency=credit.efficiency,
        policy_denials=credit.policy_denials,
        policy_asked=credit.policy_asked,
        policy_recovered=credit.policy_recovered,
        instance_calls=tally.calls if tally is not None else None,
        instance_right=tally.right if tally is not None else None,
        outcome=score.outcome,
    )
    step_rows = [StepRow(key, s) for s in steps]
    call_rows = []
    for pos, c in enumerate(trace.calls):
        ft = first_pos.get(pos)
        call_rows.append(CallRow(key, c, ft.operation if ft else None, ft.correct if ft else None))
    return EpisodeRows(episode, step_rows, call_rows)
