"""One episode as the viewer shows it: its steps (request, model turn, tool calls), its checks, where it diverged.

Built from what the run stored: the episodes row (checks, first tries, failure lines), the steps and calls rows
(sizes, tokens, routing, validation, results) and the transcript (system text, user turns, the model's messages).
The transcript's assistant messages are the steps in order; a user message between them is a new request
turn (or the loop's "send it again" after a parse failure); tool messages are the calls' results, which the
calls rows also hold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.store.tables import as_int
from surfbench.bench.view.index import listed, missing

BUILTIN = {"calls": "calls_ok", "state": "state_ok", "answer": "answer_ok", "refusal": "refuse_ok"}
"""The built-in checks and the episode column holding each one's outcome (bench.suites.checks)."""
_CHECK_TAG = re.compile(r"^(.*) \(check: ([\w.:-]+)\)$", re.S)


@dataclass
class StepView:
    """One model call: what was new in its request, what the model sent back, and its tool calls."""

    index: int
    record: dict[str, Any] = field(default_factory=dict)
    """Its steps row (empty when the run stored none)."""
    new_messages: list[dict[str, Any]] = field(default_factory=list)
    """User messages added to the request since the previous step."""
    assistant: dict[str, Any] | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Its calls rows, in order."""


@dataclass(frozen=True)
class CheckView:
    """One check of the episode: its outcome (None: the task has none) and the lines saying why it failed."""

    name: str
    passed: bool | None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Divergence:
    """Where an episode first left its expected calls: the call (step, index) or its end, and how."""

    step: int | None
    """The step of the diverging call (None: the episode ended before an expected call)."""
    index: int | None
    text: str


def steps(messages: Sequence[Mapping[str, object]], step_rows: Sequence[Mapping[str, object]],
          call_rows: Sequence[Mapping[str, object]]) -> list[StepView]:  # fmt: skip
    """The episode's steps from its transcript messages and its steps and calls rows."""
    out: list[StepView] = []
    pending: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            out.append(StepView(len(out), new_messages=pending, assistant=dict(message)))
            pending = []
        elif role == "user":
            pending.append(dict(message))
    by_step = {as_int(r["step"]): dict(r) for r in step_rows}
    for n in range(len(out), max(by_step, default=-1) + 1):  # a step without a message (the run ended in it)
        out.append(StepView(n, new_messages=pending))
        pending = []
    for view in out:
        view.record = by_step.get(view.index, {})
    for call in call_rows:
        if 0 <= as_int(call["step"]) < len(out):
            out[as_int(call["step"])].calls.append(dict(call))
    return out


def system_text(messages: Sequence[Mapping[str, object]]) -> str:
    first = messages[0] if messages else {}
    return str(first.get("content") or "") if first.get("role") == "system" else ""


def checks(row: Mapping[str, object]) -> tuple[list[CheckView], list[str]]:
    """The episode's checks with their reasons, and the failure lines that belong to no check.

    A failure line ends with ``(check: NAME)`` when a check wrote it; lines of runs made before that are given
    to the one built-in check that failed, when exactly one did. ``first try:`` and ``selection:`` lines are the
    first-try and selection results (shown with the first tries), so they are left out here.
    """
    lines = [str(x) for x in listed(row.get("failures"))]
    by_check: dict[str, list[str]] = {}
    loose: list[str] = []
    for line in lines:
        if line.startswith(("first try: ", "selection: ")):
            continue
        m = _CHECK_TAG.match(line)
        if m:
            name = "state" if m.group(2) == "turn_state" else m.group(2)
            by_check.setdefault(name, []).append(m.group(1))
        else:
            loose.append(line)
    outcomes = {name: _bool(row.get(column)) for name, column in BUILTIN.items()}
    failed = [name for name, ok in outcomes.items() if ok is False]
    if len(failed) == 1 and not by_check.get(failed[0]):
        answer_lines = [x for x in loose if x.startswith("no final text answer")]
        by_check[failed[0]] = [x for x in loose if x not in answer_lines]
        loose = answer_lines
    out = [CheckView(name, ok, tuple(by_check.pop(name, []))) for name, ok in outcomes.items() if ok is not None]
    out += [CheckView(name, False, tuple(reasons)) for name, reasons in by_check.items()]  # a suite's own checks
    return out, loose


def first_tries(row: Mapping[str, object]) -> list[tuple[str, bool, str, str]]:
    """Per expected call: (operation, first attempt correct, error type, why), from ``first_tries`` and failures."""
    why: dict[str, str] = {}
    for line in listed(row.get("failures")):
        text = str(line)
        if text.startswith("first try: "):
            op, _, detail = text.removeprefix("first try: ").partition(": ")
            op = op.split(" was never called")[0]
            why.setdefault(op, detail or "was never called")
    out = []
    for t in listed(row.get("first_tries")):
        if isinstance(t, Mapping):
            op = str(t.get("op"))
            ok = bool(t.get("correct"))
            out.append((op, ok, "" if ok else str(t.get("error_type") or ""), "" if ok else why.get(op, "")))
    return out


def first_divergence(expected: Sequence[Sequence[str]], calls: Sequence[Mapping[str, object]]) -> Divergence | None:
    """The first call that leaves the expected calls, or the end that left one uncalled; None: it followed them.

    Meta calls (help, load, search) are not canonical calls and never diverge. A call to an operation still
    expected (in any order) matches it, unless it is that operation's first attempt and its arguments were wrong
    (``first_try_correct``); any other call (another operation, a rejected or unparseable call, a call after
    every expected one) diverges.
    """
    remaining = [set(alternatives) for alternatives in expected]
    for call in calls:
        kind, op = str(call.get("kind")), call.get("operation")
        if kind == "meta":
            continue
        step, index = as_int(call["step"]), as_int(call["index"])
        name = str(op) if not missing(op) else str(call.get("tool"))
        if kind in ("rejected", "parse_error"):
            why = call.get("error_type")
            return Divergence(step, index, f"{name}: {kind.replace('_', ' ')}" + (f" ({why})" if why else ""))
        match = next((i for i, ops in enumerate(remaining) if name in ops), None)
        if match is None:
            wanted = " or ".join(sorted(remaining[0])) if remaining else "nothing more"
            return Divergence(step, index, f"called {name}, expected {wanted}")
        if call.get("first_try_for") == name and _bool(call.get("first_try_correct")) is False:
            return Divergence(step, index, f"{name}: wrong arguments on the first try")
        if kind == "operation" and _bool(call.get("backend_ok")) is False:
            return Divergence(step, index, f"{name}: the operation failed")
        remaining.pop(match)
    if remaining:
        return Divergence(None, None, f"ended before calling {' or '.join(sorted(remaining[0]))}")
    return None


def _bool(value: object) -> bool | None:
    return None if missing(value) else bool(value)
