"""Stuck episodes: a model that sends the same failing output again, step after step.

Definitions (shared by the episode loop, which may stop on them, and by ``surfbench whatif``, which
replays recorded runs with them, so that both agree by construction):

- A step *failed* when one of its tool calls failed (``kind`` ``rejected`` or ``parse_error``,
  ``schema_valid`` False, ``backend_ok`` False, or a program the surface ran, ``meta`` ``code``,
  ended with an error type: it did not parse, raised, timed out or called nothing), or when it made
  no tool call but had output that claimed one and could not be parsed (``parse_failures`` > 0).
- A step's *output* is the list of its tool calls as (tool name, canonical arguments JSON) pairs, in
  order; for a step without tool calls, its text. Canonical arguments: JSON with sorted keys, and
  arguments sent as a JSON string are decoded first (the same call whether wrapped or not).
- Step s *repeats* step s-1 when step s-1 failed and step s has the same output. A text answer
  that ended a user turn is not a failure, so answering two user turns alike is never a repeat;
  an identical unparseable call sent again after the loop asked for valid JSON is.
- Consecutive repeats are counted 1, 2, ...: the *run* of a step is 0 when it does not repeat its
  predecessor, else the predecessor's run + 1 (a repeat that itself fails keeps the run going; one
  that succeeds ends it, since the step after it no longer follows a failure).
- ``stuck_repeats`` of an episode: its repeat steps (the sum over all runs).
- ``stuck``: its longest run is at least :data:`STUCK_RUN` (2): the same failing output three times in
  a row, which is what the shipped default ``stop_on_repeat=2`` ends (so with the default, stuck
  episodes are the stopped ones; the count stays comparable across runs with other settings). One
  identical retry is allowed: it is a reasonable answer to a transient error on a real service; on the
  reference runs a model that repeated a failing output once repeated it a second time in 80-92% of
  cases, and none of the episodes that later left such a loop succeeded.
- ``stop_on_repeat=K``: the loop ends the episode right after the step whose run reaches K (that
  step's calls still run; the next model call is not made), as if ``max_steps`` had been reached;
  the scorer records the error type ``stuck_repeat`` instead of ``no_answer``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.program import PROGRAM_META
from surfbench.bench.contracts.records import CallRecord, StepRecord

STUCK_REPEAT = ErrorType.STUCK_REPEAT
"""Error type (and ``EpisodeTrace.stopped`` value) of an episode ended by ``stop_on_repeat``."""
STUCK_RUN = 2
"""An episode is ``stuck`` when this many consecutive repeats happened (see the module docstring)."""


@dataclass(frozen=True)
class CallSignature:
    """What makes two tool calls the same: the tool and its canonical arguments."""

    tool: str
    arguments: str


@dataclass(frozen=True)
class StepOutput:
    """What the model sent in one step: its calls, or (without calls) its text."""

    calls: tuple[CallSignature, ...]
    text: str


def canonical_arguments(arguments: object) -> str:
    """Arguments as canonical JSON; a JSON string is decoded first, other strings are kept as they are.

    Never raises: text too deeply nested to decode is compared as it was sent.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return json.dumps(arguments, ensure_ascii=False)
    try:
        return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    except (ValueError, TypeError, RecursionError):
        return repr(arguments)


def call_failed(call: CallRecord) -> bool:
    """The call did not do what the model asked (rejected, unparseable, invalid, failed; a failed program)."""
    failed = call.kind in ("rejected", "parse_error") or call.schema_valid is False or call.backend_ok is False
    return failed or (call.meta == PROGRAM_META and call.error_type is not None)


def step_output(step: StepRecord, calls: Sequence[CallRecord]) -> StepOutput:
    signatures = tuple(CallSignature(c.tool, canonical_arguments(c.arguments)) for c in calls)
    return StepOutput(signatures, "" if signatures else step.text)


def step_failed(step: StepRecord, calls: Sequence[CallRecord]) -> bool:
    return any(call_failed(c) for c in calls) or (not calls and step.parse_failures > 0)


@dataclass
class RepeatTracker:
    """Follows an episode step by step; :meth:`observe` returns each step's run of repeats."""

    runs: list[int] = field(default_factory=list)
    """The run of every step observed so far (0: not a repeat)."""
    _previous: StepOutput | None = None
    _previous_failed: bool = False

    def observe(self, step: StepRecord, calls: Sequence[CallRecord]) -> int:
        output = step_output(step, calls)
        repeat = self._previous_failed and output == self._previous
        run = (self.runs[-1] + 1) if repeat and self.runs else 0
        self.runs.append(run)
        self._previous, self._previous_failed = output, step_failed(step, calls)
        return run

    @property
    def repeats(self) -> int:
        return sum(1 for r in self.runs if r > 0)

    @property
    def longest_run(self) -> int:
        return max(self.runs, default=0)

    @property
    def stuck(self) -> bool:
        return self.longest_run >= STUCK_RUN

    def stop_step(self, k: int | None) -> int | None:
        """Index of the step whose run reaches ``k`` (where ``stop_on_repeat=k`` ends the episode), if any."""
        if k is None:
            return None
        return next((i for i, run in enumerate(self.runs) if run >= k), None)


def scan(steps: Sequence[StepRecord], calls: Sequence[CallRecord]) -> RepeatTracker:
    """Observe a whole recorded episode (calls are matched to steps by their ``step`` field)."""
    by_step: dict[int, list[CallRecord]] = {}
    for c in calls:
        by_step.setdefault(c.step, []).append(c)
    tracker = RepeatTracker()
    for s in steps:
        tracker.observe(s, sorted(by_step.get(s.step, []), key=lambda c: c.index))
    return tracker


def stop_setting(value: Any) -> int | None:
    """``stop_on_repeat`` as configured: null, 0 or "off" turn it off; otherwise a positive whole number."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "off", "none", "null")):
        return None
    why = f"stop_on_repeat={value!r}: must be a positive number of repeats, or null (off)"
    if isinstance(value, bool):
        raise ConfigError(why)
    try:
        k = float(value)
    except (TypeError, ValueError):
        raise ConfigError(why) from None
    if k < 0 or not k.is_integer():
        raise ConfigError(why)
    return int(k) or None
