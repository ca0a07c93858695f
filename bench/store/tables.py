"""The typed rows of a run's tables (episodes, steps, calls) and of a report's cells.

Each dataclass is its table's schema: the field order is the column order, the annotation gives the
column type (:mod:`surfbench.bench.store.schema` derives the Arrow schemas from these), and every field
documents its column in ``field(metadata=doc(...))``. A field marked :data:`FLATTEN` holds a record
(:class:`bench.contracts.records.StepRecord`, :class:`bench.contracts.records.CallRecord`) whose fields are
columns of the row in their own order. Lists and mappings are stored as JSON text.

Rows become dicts in one place, the results store (:meth:`Row.as_dict`, called by
:mod:`surfbench.bench.store.results`); ``row["name"]`` and ``row.get("name")`` read a column for callers that
still treat rows as dicts.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields, is_dataclass
from typing import Any, SupportsFloat, SupportsIndex, SupportsInt

from surfbench.bench.contracts.records import DOC, CallRecord, EpisodeOutcome, StepRecord, doc

FLATTEN = "flatten"
"""Field-metadata key: this field is a record whose fields are the row's columns."""


@dataclass(frozen=True)
class Column:
    """One column of a table, as a row dataclass declares it."""

    name: str
    hint: Any
    """The field's resolved annotation (``int | None``, ``list[str]``, ...)."""
    doc: str
    """Its one-line description ("" when the field has none: a test refuses that)."""


def _fields(obj: object) -> tuple[Field[object], ...]:
    if not is_dataclass(obj):
        raise TypeError("must be called with a dataclass type or instance")
    return fields(obj)


def columns(cls: type) -> list[Column]:
    """The columns of a row dataclass in order, records marked :data:`FLATTEN` expanded in place."""
    hints = typing.get_type_hints(cls)
    out: list[Column] = []
    for f in _fields(cls):
        if f.metadata.get(FLATTEN):
            out += columns(hints[f.name])
        else:
            out.append(Column(f.name, hints[f.name], str(f.metadata.get(DOC, ""))))
    return out


def as_float(value: object) -> float:
    """A number cell of a table read back (an int, a float, a numpy scalar, numeric text) as ``float(value)`` does."""
    if isinstance(value, SupportsFloat | SupportsIndex | str):
        return float(value)
    raise TypeError(f"float() argument must be a string or a real number, not {type(value).__name__!r}")


def as_int(value: object) -> int:
    """An integer cell of a table read back (a step, a count; a numpy scalar too) as ``int(value)`` does."""
    if isinstance(value, SupportsInt | SupportsIndex | str):
        return int(value)
    raise TypeError(f"int() argument must be a string or a real number, not {type(value).__name__!r}")


class Row:
    """What the row dataclasses share: one flat dict per row, and read access by column name."""

    def as_dict(self) -> dict[str, object]:
        """The row's columns in order (records marked :data:`FLATTEN` spread out), values as they are."""
        out: dict[str, object] = {}
        for f in _fields(self):
            value = getattr(self, f.name)
            if f.metadata.get(FLATTEN):
                out.update({sub.name: getattr(value, sub.name) for sub in _fields(value)})
            else:
                out[f.name] = value
        return out

    def keys(self) -> list[str]:
        """Column names in order (with ``__getitem__``: ``{**row}`` works)."""
        return list(self.as_dict())

    def __getitem__(self, name: str) -> object:
        return self.as_dict()[name]

    def get(self, name: str, default: object = None) -> object:
        """The column's value, or ``default`` when the row has no such column."""
        return self.as_dict().get(name, default)


@dataclass(frozen=True, kw_only=True)
class EpisodeRow(Row):
    """One row of ``episodes``: who ran what, how it scored, and what it cost."""

    episode_key: str = field(metadata=doc("The episode's key: cell, task and repeat (bench.store.identity)."))
    run: str = field(metadata=doc("The run (folder name) the episode was recorded in."))
    suite: str = field(metadata=doc("Suite name."))
    task_id: str = field(metadata=doc("Task id within the suite."))
    split: str = field(metadata=doc("The task's split (dev, test)."))
    tags: list[str] = field(metadata=doc("The task's tags."))
    surface: str = field(metadata=doc("Surface label (the config name, plus any overrides)."))
    surface_config: str = field(metadata=doc("Surface config name (configs/surface/)."))
    surface_kind: str = field(metadata=doc("Surface kind (the registry's name for its class)."))
    model: str = field(metadata=doc("Model label (the config name, plus any overrides)."))
    model_config: str = field(metadata=doc("Model config name (configs/model/)."))
    cell_id: str = field(metadata=doc("Hash of everything that shapes the cell's results (bench.store.identity)."))
    task_hash: str = field(metadata=doc("Hash of the task's content."))
    params_b: float | None = field(metadata=doc("Model parameters in billions: the size axis of reports."))
    mode: str = field(metadata=doc("Calling mode: native or prompted."))
    repeat: int = field(metadata=doc("Repeat index of this task in the cell (0-based)."))
    catalog_hash: str = field(metadata=doc("Content hash of the catalog the task ran on."))
    round_trips: int = field(metadata=doc("Model calls in the episode."))
    overhead_round_trips: int = field(metadata=doc("Model calls whose tool calls were all meta calls."))
    expected_calls: int = field(metadata=doc("Operation calls the task expects (first-try denominators)."))
    first_try_correct: int = field(metadata=doc("Expected calls whose first attempt had the right arguments."))
    first_try_accuracy: float | None = field(
        metadata=doc("first_try_correct / expected_calls; None without expected calls.")
    )
    first_tries: list[dict[str, Any]] = field(
        metadata=doc("Per expected call: {op, correct, error_type} of its first attempt.")
    )
    selection_correct: bool | None = field(metadata=doc("The first canonical call named the expected first operation."))
    success: bool = field(metadata=doc("Every check of the task holds."))
    calls_ok: bool | None = field(metadata=doc("The call check's outcome (None when the task has none)."))
    state_ok: bool | None = field(metadata=doc("The final-state check's outcome (None when the task has none)."))
    answer_ok: bool | None = field(metadata=doc("The answer check's outcome (None when the task has none)."))
    refuse_ok: bool | None = field(metadata=doc("The refusal check's outcome (None when the task has none)."))
    recovered_after_error: int = field(metadata=doc("Operations that succeeded after a failed first call."))
    failed_first_tries: int = field(metadata=doc("Operations whose first call failed."))
    boundary_violations: int = field(metadata=doc("Calls to tools not shown that turn."))
    protocol_violations: int = field(metadata=doc("Operations called before they were loaded."))
    parse_failures: int = field(metadata=doc("Tool calls that could not be parsed."))
    meta_calls: int = field(metadata=doc("Help, load and search calls."))
    operation_calls: int = field(metadata=doc("Calls that named a canonical operation."))
    stable_prefix: bool = field(metadata=doc("System text and tool block were the same on every step."))
    stuck_repeats: int = field(metadata=doc("Steps that repeat the previous failing step exactly (bench.score.stuck)."))
    stuck: bool = field(metadata=doc("The same failing output was sent 3 times in a row (bench.score.stuck)."))
    prompt_tokens_total: int | None = field(metadata=doc("Provider-reported prompt tokens over all steps."))
    prompt_tokens_per_step: float | None = field(metadata=doc("Provider-reported prompt tokens per model call."))
    prompt_tokens_est_per_step: float | None = field(
        metadata=doc("Estimated (o200k_base) prompt tokens per model call.")
    )
    cached_prompt_tokens_total: int | None = field(
        metadata=doc("Prompt tokens served from the provider's cache, all steps.")
    )
    completion_tokens_total: int | None = field(metadata=doc("Provider-reported completion tokens over all steps."))
    request_bytes_per_step: float | None = field(metadata=doc("JSON request body bytes per model call."))
    tool_block_bytes_first: int | None = field(metadata=doc("Tool-block wire bytes on the first step."))
    tools_shown_first: int | None = field(metadata=doc("Tools shown on the first step."))
    latency_s: float = field(metadata=doc("Model time over all steps, seconds."))
    wall_s: float = field(metadata=doc("Wall time of the whole episode, seconds."))
    cost_usd: float = field(metadata=doc("Model cost from LiteLLM's local price map (0 for local models)."))
    cache_hits: int = field(metadata=doc("Steps served from the on-disk response cache."))
    error_types: list[str] = field(metadata=doc("Error types the episode had (bench.base.taxonomy), in order."))
    failures: list[str] = field(metadata=doc("Lines explaining each failed check."))
    final_text: str | None = field(metadata=doc("The last text-only answer, or None."))
    error: str | None = field(metadata=doc("Why it ended early, as a message (how it ended, typed: outcome)."))
    traceback: str | None = field(metadata=doc("The harness error's traceback."))
    attempts: int | None = field(default=None, metadata=doc("Times the episode ran (endpoint failures rerun it)."))
    disk_peak_bytes: int | None = field(metadata=doc("A sandboxed backend's peak disk use, bytes."))
    memory_peak_bytes: int | None = field(metadata=doc("A sandboxed backend's peak memory use, bytes."))
    expected_ops: list[str | list[str]] | None = field(
        default=None,
        metadata=doc(
            "The task's expected calls in order: an operation, or a one_of's operations as a list; None before "
            "records v2 (bench.store.recorded: readers then reload the suite)."
        ),
    )
    call_share: float | None = field(
        default=None,
        metadata=doc("Share of the expected calls matched by successful calls (bench.score.credit); None: none."),
    )
    state_share: float | None = field(
        default=None, metadata=doc("Share of the task's state checks that hold (bench.score.credit); None: none.")
    )
    min_round_trips: int | None = field(
        default=None, metadata=doc("The fewest model calls the task can take, from its expected calls.")
    )
    efficiency: float | None = field(
        default=None, metadata=doc("min_round_trips / round_trips for a successful episode; None otherwise.")
    )
    policy_denials: int | None = field(
        default=None, metadata=doc("Calls the operation policy kept from the backend (denied or refused asks).")
    )
    policy_asked: int | None = field(
        default=None, metadata=doc("Calls the policy asked the simulated user about (approved or refused).")
    )
    policy_recovered: bool | None = field(
        default=None, metadata=doc("With a call kept from the backend: the episode still succeeded; else None.")
    )
    instance_calls: int | None = field(
        default=None,
        metadata=doc("Calls that reached the backend where the task wants a pass-through value (an instance)."),
    )
    instance_right: int | None = field(
        default=None, metadata=doc("Of those, the calls that reached the instance the task names (or the default).")
    )
    outcome: EpisodeOutcome = field(
        metadata=doc(
            "How it ended: ran, does_not_fit, context_overflow or harness_error (bench.contracts.records."
            "EpisodeOutcome); runs before records v8 get it from their error text when read (bench.store.outcomes)."
        )
    )


@dataclass(frozen=True)
class StepRow(Row):
    """One row of ``steps``: the episode's key, then the step's record."""

    episode_key: str = field(metadata=doc("The episode this step belongs to."))
    step: StepRecord = field(metadata={**doc("The model call (its fields are the columns)."), FLATTEN: True})


@dataclass(frozen=True)
class CallRow(Row):
    """One row of ``calls``: the episode's key, the call's record, and the first try it was."""

    episode_key: str = field(metadata=doc("The episode this call belongs to."))
    call: CallRecord = field(metadata={**doc("The tool call (its fields are the columns)."), FLATTEN: True})
    first_try_for: str | None = field(
        default=None, metadata=doc("The expected operation this call was the first attempt at, if any.")
    )
    first_try_correct: bool | None = field(default=None, metadata=doc("Whether that first attempt was correct."))


@dataclass(frozen=True, kw_only=True)
class CellSummary(Row):
    """A cell's aggregate numbers (bench.analysis.metrics.summarize_cell); the metrics are METRICS."""

    episodes: int = field(metadata=doc("Episodes in the cell."))
    success_rate: float | None = field(metadata=doc("Share of episodes whose checks all hold."))
    first_try_accuracy: float | None = field(
        metadata=doc("First-try argument accuracy, micro-averaged over expected calls.")
    )
    first_try_ci_low: float | None = field(metadata=doc("Low end of its 95% Wilson interval."))
    first_try_ci_high: float | None = field(metadata=doc("High end of its 95% Wilson interval."))
    expected_calls: int = field(metadata=doc("Expected calls over the cell (the first-try denominator)."))
    selection_accuracy: float | None = field(
        metadata=doc("Share of episodes whose first canonical call was the expected one.")
    )
    round_trips: float | None = field(metadata=doc("Model calls per episode."))
    overhead_round_trips: float | None = field(metadata=doc("Model calls with only meta calls, per episode."))
    prompt_tokens_per_step: float | None = field(metadata=doc("Provider-reported prompt tokens per model call."))
    request_bytes_per_step: float | None = field(metadata=doc("JSON request body bytes per model call."))
    recovered_after_error: int = field(metadata=doc("Operations recovered after a failed first call, over the cell."))
    failed_first_tries: int = field(metadata=doc("Operations whose first call failed, over the cell."))
    boundary_violations: float | None = field(metadata=doc("Calls to tools not shown, per episode."))
    protocol_violations: float | None = field(metadata=doc("Operations called before loading, per episode."))
    parse_failures: float | None = field(metadata=doc("Unparseable tool calls, per episode."))
    stable_prefix_rate: float | None = field(metadata=doc("Share of episodes with an unchanged tool block."))
    latency_s: float | None = field(metadata=doc("Model time per episode, seconds."))
    stuck_rate: float | None = field(
        metadata=doc("Share of stuck episodes; None for runs recorded before stuck detection.")
    )
    harness_errors: int = field(metadata=doc("Episodes ended by a harness error (not a context overflow)."))
    context_overflows: int = field(metadata=doc("Episodes whose conversation outgrew the model's context."))
    does_not_fit: int = field(
        default=0,
        metadata=doc("Episodes not run: their first request could not fit the model's context (bench.run.fit)."),
    )
    cached_share: float | None = field(
        default=None, metadata=doc("Cached prompt tokens / prompt tokens, where the provider reports them.")
    )
    cost_per_episode: float | None = field(
        default=None, metadata=doc("Mean model cost per episode, USD (LiteLLM's bundled price map).")
    )
    cost_per_solved: float | None = field(
        default=None, metadata=doc("The cell's model cost over its solved episodes, USD; None when none was solved.")
    )
    call_share: float | None = field(default=None, metadata=doc("Mean share of expected calls matched."))
    call_share_ci_low: float | None = field(default=None, metadata=doc("Low end of its 95% BCa interval."))
    call_share_ci_high: float | None = field(default=None, metadata=doc("High end of its 95% BCa interval."))
    state_share: float | None = field(default=None, metadata=doc("Mean share of state checks holding."))
    state_share_ci_low: float | None = field(default=None, metadata=doc("Low end of its 95% BCa interval."))
    state_share_ci_high: float | None = field(default=None, metadata=doc("High end of its 95% BCa interval."))
    efficiency: float | None = field(
        default=None, metadata=doc("Mean min_round_trips / round_trips over the successful episodes.")
    )
    efficiency_ci_low: float | None = field(default=None, metadata=doc("Low end of its 95% BCa interval."))
    efficiency_ci_high: float | None = field(default=None, metadata=doc("High end of its 95% BCa interval."))
    policy_denials: float | None = field(
        default=None, metadata=doc("Calls the operation policy kept from the backend, per episode; None: no policy.")
    )
    policy_recovered: float | None = field(
        default=None, metadata=doc("Share of the episodes with such a call that still succeeded.")
    )
    instance_accuracy: float | None = field(
        default=None, metadata=doc("Share of the calls that reached the instance their task names; None: no such call.")
    )
    instance_accuracy_ci_low: float | None = field(default=None, metadata=doc("Low end of its 95% Wilson interval."))
    instance_accuracy_ci_high: float | None = field(default=None, metadata=doc("High end of its 95% Wilson interval."))
    extra: Mapping[str, float | None] = field(
        default_factory=dict,
        metadata=doc("The registered metrics' values (bench.analysis.metrics.register_metric), and their intervals."),
    )

    def metric(self, name: str) -> float | None:
        """The value of metric ``name`` (a METRICS name the summary holds), or of one of its interval's ends.

        ``NAME_ci_low`` / ``NAME_ci_high`` name the ends; a registered metric's values are in :attr:`extra`.
        """
        value: float | None = self.extra[name] if name in self.extra else getattr(self, name)
        return value
