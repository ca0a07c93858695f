"""Credit beyond all-or-nothing, and what the operation policy stopped, per episode (docs/metrics.md).

Measurements only: an episode's success and its first tries are the scorer's (:mod:`surfbench.bench.score.scorer`),
unchanged. Per episode:

- ``call_share``: the share of the task's expected calls matched by successful calls, with the calls check's
  matching (:mod:`surfbench.bench.suites.call_matching`: any alternative of a ``one_of``, in order unless the task's
  order is ``any``, the alternative that completes earliest), except that an expected call no call matches is
  skipped instead of ending the match: the ones after it may still be matched, after the last one that was. 1.0
  exactly when the calls check's matching holds; None for a task without expected calls.
- ``state_share``: the share of the task's state checks (per-turn and final) that hold, each judged as the
  ``turn_state`` / ``state`` checks judge it; None for a task without state checks.
- ``min_round_trips``: the fewest model calls the task can take, from its expected calls: one per user turn for
  the answer, plus one per expected call when the task is ordered (each may need the result of the one before), or
  one per user turn that has expected calls when its order is ``any`` (they can go out together; calls with no
  ``turn`` count as one more group); at most the suite's ``max_steps`` (per episode, or per user turn where the
  suite counts steps per turn): a suite of one model call per episode (BFCL's single-turn categories) ends at the
  call and asks for no answer, so its least is 1, not 2.
- ``efficiency``: ``min_round_trips`` over the round trips the episode took, for a successful episode (None
  otherwise). Above 1 when a surface did several dependent calls in one round trip (code mode's programs).
- ``policy_denials``: calls the operation policy kept from the backend (error type ``policy_denied``, or
  ``policy_refused`` for an ask the simulated user refused); ``policy_asked``: calls the policy asked the simulated
  user about (approved or refused); ``policy_recovered``: for an episode with a call kept from the backend, whether
  it still succeeded (by an allowed route: no denied call ran). All three None for a cell without a policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.records import CallRecord, EpisodeTrace
from surfbench.bench.suites.call_matching import expected_hits
from surfbench.bench.suites.checks import check_state
from surfbench.bench.suites.policy import APPROVED, REFUSED
from surfbench.bench.suites.suite_model import Task

STOPPED = (ErrorType.POLICY_DENIED, ErrorType.POLICY_REFUSED)
"""The error types of a call the policy kept from the backend."""


@dataclass(frozen=True)
class Credit:
    """One episode's partial and efficient credit and its policy counts (the module docstring defines each)."""

    call_share: float | None
    state_share: float | None
    min_round_trips: int
    efficiency: float | None
    policy_denials: int | None = None
    policy_asked: int | None = None
    policy_recovered: bool | None = None


def calls_matched(task: Task, executed: Sequence[CallRecord]) -> int:
    """How many of the task's expected calls the successful calls ``executed`` match (see ``call_share``).

    The calls check's own matching, but an unmatched expected call is skipped instead of ending the count.
    """
    return sum(hits is not None for hits in expected_hits(task, executed))


def states_holding(task: Task, trace: EpisodeTrace) -> int:
    """How many of the task's state checks hold (a per-turn one on the state after its turn, if recorded)."""
    holding = 0
    for check in task.state:
        if check.turn is None:
            holding += check_state(check, trace.state) is None
        elif check.turn < len(trace.turn_states):
            holding += check_state(check, trace.turn_states[check.turn]) is None
    return holding


def min_round_trips(task: Task, max_steps: int | None = None, steps_per: str = "episode") -> int:
    """The fewest model calls ``task`` can take (see the module docstring), within the suite's step budget.

    ``max_steps`` and ``steps_per`` are the suite's: a budget caps the count (a suite of one model call per episode,
    BFCL's single-turn categories, has no answer round trip after its call); per ``turn``, each user turn's count is
    capped, the calls without a turn counted with the first turn.
    """
    per_turn = [1] * len(task.turns) or [0]  # the answer to each user turn
    groups: list[set[int | None]] = [set() for _ in per_turn]
    for exp in task.expected:
        index = min(exp.turn or 0, len(per_turn) - 1)
        if task.order == "any":
            groups[index].add(exp.turn)  # the calls of a turn go out together; no turn: one more group
        else:
            per_turn[index] += 1  # each may need the result of the one before
    per_turn = [n + len(g) for n, g in zip(per_turn, groups, strict=True)]
    if max_steps is None:
        return sum(per_turn)
    if steps_per == "turn":
        return sum(min(n, max_steps) for n in per_turn)
    return min(sum(per_turn), max_steps)


def episode_credit(
    task: Task, trace: EpisodeTrace, success: bool, policed: bool = False, budget: tuple[int | None, str] = (None, "")
) -> Credit:
    """The episode's credit; ``policed``: the cell ran under an operation policy (else the policy counts are None).

    ``budget``: the suite's ``(max_steps, steps_per)``, which caps ``min_round_trips`` (:func:`min_round_trips`).
    """
    executed = [c for c in trace.calls if c.kind == "operation" and c.backend_ok]
    least = min_round_trips(task, *budget)
    taken = len(trace.steps)
    credit = Credit(
        call_share=calls_matched(task, executed) / len(task.expected) if task.expected else None,
        state_share=states_holding(task, trace) / len(task.state) if task.state else None,
        min_round_trips=least,
        efficiency=least / taken if success and taken and trace.error is None else None,
    )
    if not policed:
        return credit
    denied = sum(1 for c in trace.calls if c.error_type in STOPPED)
    asked = sum(1 for c in trace.calls if c.policy in (APPROVED, REFUSED))
    return Credit(
        credit.call_share, credit.state_share, least, credit.efficiency,
        policy_denials=denied, policy_asked=asked, policy_recovered=success if denied else None,
    )  # fmt: skip
