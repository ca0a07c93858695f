"""The episode loop: the model is the agent.

Call the model; run its tool calls (in order) through the surface; feed the results back; stop on a
text-only answer, on ``max_steps``, on a harness error, or (``stop_on_repeat``) when the model is stuck
sending the same failing output again (:mod:`surfbench.bench.score.stuck`). A tool error (rejection, failed
operation) goes back to the model as the tool's result; a harness error ends the episode and is
recorded with its traceback.

One tool call may run a program (code mode, :mod:`surfbench.bench.contracts.program`): the surface dispatches
it as a :class:`~surfbench.bench.contracts.program.ProgramDispatch`, the loop runs it with an executor, and every
call the program makes is executed on this loop's backend and recorded as a call of the same step,
followed by the program's own record, whose result is what the model gets back. The peaks its
sandbox measured (memory, scratch disk) become the episode's ``usage``, as a sandboxed backend's do.

An operation policy (:mod:`surfbench.bench.suites.policy`) is enforced in :func:`_execute`, the one place every
canonical call passes on its way to the backend, direct or made by a program: after the surface routed and validated
it, a call the policy denies (or an ask the simulated user refuses) is recorded as rejected and never runs.

Every tool result is redacted (:func:`surfbench.bench.base.secrets.redact`) before it goes back to the model,
not only before it is written: a registered secret a command, a program or a backend turns up never
reaches the model endpoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from surfbench.bench.base.secrets import redact
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.base.validation import validate_args
from surfbench.bench.catalog.wire import compact_json, count_tokens, tool_wire_text, utf8_len
from surfbench.bench.contracts.backend import Backend, ReportsErrorType, ToolError
from surfbench.bench.contracts.program import Executed, ProgramDispatch
from surfbench.bench.contracts.records import CallRecord, EpisodeOutcome, EpisodeTrace, StepRecord
from surfbench.bench.contracts.surface import Dispatch, Session, ToolCall
from surfbench.bench.models.client import ContextOverflow, EndpointRefused
from surfbench.bench.models.segments import request_segments
from surfbench.bench.models.types import ModelClient, ModelRequest, ModelTurn, ParsedCall
from surfbench.bench.score.stuck import STUCK_REPEAT, RepeatTracker
from surfbench.bench.store.tool_texts import text_hash
from surfbench.bench.suites.policy import Enforcer
from surfbench.bench.suites.suite import Task

RESULT_CHARS = 4000  # a tool result longer than this is cut (the model sees the cut)


@dataclass(frozen=True)
class LoopSettings:
    max_steps: int = 6
    steps_per_turn: bool = False
    """``max_steps`` counts each user turn's model calls (BFCL's multi-turn rule), not the episode's."""
    stop_on_repeat: int | None = None
    """End the episode at the K-th consecutive identical repeat of a failing step (bench.score.stuck); None: never."""
    request: ModelRequest = field(default_factory=lambda: ModelRequest(messages=()))
    """What every model call asks besides its messages and tools: the calling mode, the prompt format, the sampling
    settings and the stop inside a step (``ModelConfig.request``); each step's request is this one, passed whole,
    with the step's messages and tools."""


def _result_text(value: object) -> str:
    text = value if isinstance(value, str) else compact_json(value)
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + f"... [cut at {RESULT_CHARS} characters]"


def _assistant_message(turn: ModelTurn) -> dict[str, Any]:
    # an empty answer is "" (not None): the next user turn sends it back, and a chat template reading
    # message.content fails on a message without one (llama.cpp drops None-valued fields)
    msg: dict[str, Any] = {"role": "assistant", "content": turn.text or ("" if not turn.tool_calls else None)}
    if turn.tool_calls:
        msg["tool_calls"] = [
            {
                "id": call.id or f"call_{i}",
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.arguments if isinstance(call.arguments, str) else compact_json(call.arguments),
                },
            }
            for i, call in enumerate(turn.tool_calls)
        ]
        if turn.parse_format:  # the call was written as text: keep the history in native shape only
            msg["content"] = None
    return msg


def system_text(system_prompt: str, surface_text: str) -> str:
    """The system message: the suite's prompt, then whatever text the surface adds (e.g. a catalog)."""
    return f"{system_prompt}\n\n{surface_text}".strip() if surface_text else system_prompt


def run_episode(
    task: Task,
    session: Session,
    backend: Backend,
    client: ModelClient,
    settings: LoopSettings,
    system_prompt: str,
    catalog_ops: Callable[[str], dict[str, Any] | None],
    policy: Enforcer | None = None,
) -> EpisodeTrace:
    """Run one task to the end; never raises for model or tool behaviour.

    ``policy``: the cell's operation policy over this episode's catalog (None: every routed call runs).
    """
    trace = EpisodeTrace()
    started = time.perf_counter()
    system = system_text(system_prompt, session.system_text())
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    step = 0
    repeats = RepeatTracker()
    try:
        for turn_text in task.turns:
            messages.append({"role": "user", "content": turn_text})
            trace.final_text = None
            limit = step + settings.max_steps if settings.steps_per_turn else settings.max_steps
            while step < limit:
                tools = session.tools()
                shown = session.operations_shown()
                request = replace(settings.request, messages=tuple(messages), tools=tuple(tools))
                sent_at = time.time()  # the cache model's clock (bench.promptcache: entries expire)
                turn = client.complete(request)
                groups, peaks = _run_calls(turn, session, backend, step, catalog_ops, policy)
                for name, peak in peaks.items():  # the largest peaks any program of the episode reached
                    trace.usage[name] = max(trace.usage.get(name) or 0, peak)
                calls = [record for group in groups for record in group]
                trace.calls += calls
                recorded, texts = _step_record(
                    step, request, turn, tools, system, calls, _listed(shown, session), sent_at
                )
                trace.steps.append(recorded)
                for digest, text in texts.items():
                    trace.tool_texts.setdefault(digest, text)
                step += 1
                run = repeats.observe(trace.steps[-1], calls)
                messages.append(_assistant_message(turn))
                for call, group in zip(turn.tool_calls, groups, strict=False):  # the group's last record answers
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": redact(group[-1].result)})
                if settings.stop_on_repeat is not None and run >= settings.stop_on_repeat:
                    trace.stopped = STUCK_REPEAT  # scored like max_steps: no answer, no further user turn
                    break
                if turn.tool_calls:
                    continue
                if turn.parse_failures:
                    why = turn.parse_failures[0].reason
                    messages.append(
                        {
                            "role": "user",
                            "content": f"Your tool call could not be parsed ({why}). Send it again as valid JSON "
                            '{"name": TOOL, "arguments": {...}}, or answer in plain text.',
                        }
                    )
                    continue
                trace.final_text = turn.text
                break
            else:
                break  # max_steps reached inside this user turn: no more turns
            if trace.stopped:
                break  # stopped as stuck inside this user turn: like max_steps, no more turns
            if task.checks_turns:
                trace.turn_states.append(backend.state())
    except EndpointRefused:  # no request can succeed as configured: stop the cell with this one error
        raise
    except ContextOverflow as exc:  # the conversation outgrew the model: an outcome, recorded as such
        trace.error, trace.error_class = f"{ErrorType.CONTEXT_OVERFLOW}: {exc}", type(exc)
        trace.outcome = EpisodeOutcome.CONTEXT_OVERFLOW
    except Exception as exc:  # the harness's own failure (model unreachable, backend bug): end, record
        trace.error, trace.error_class = f"{type(exc).__name__}: {exc}", type(exc)
        trace.outcome, trace.traceback = EpisodeOutcome.HARNESS_ERROR, traceback.format_exc()
    trace.messages = messages
    try:
        trace.state = backend.state()
    except Exception as exc:
        if trace.error is None:
            trace.error, trace.error_class = f"state(): {type(exc).__name__}: {exc}", type(exc)
            trace.outcome = EpisodeOutcome.HARNESS_ERROR
        trace.traceback = trace.traceback or traceback.format_exc()
    trace.wall_s = time.perf_counter() - started
    return trace


def _run_calls(
    turn: ModelTurn,
    session: Session,
    backend: Backend,
    step: int,
    catalog_ops: Callable[[str], dict[str, Any] | None],
    policy: Enforcer | None = None,
) -> tuple[list[list[CallRecord]], dict[str, int]]:
    """Per tool call, its records: one, or a program's canonical calls followed by the program's own.

    With them, the largest peaks the step's programs reached (:func:`_run_program`).
    """
    groups: list[list[CallRecord]] = []
    peaks: dict[str, int] = {}
    index = 0
    for call in turn.tool_calls:
        records, reached = _run_call(call, session, backend, step, index, catalog_ops, policy)
        groups.append(records)
        for name, peak in reached.items():
            peaks[name] = max(peaks.get(name, 0), peak)
        index += len(records)
    return groups, peaks


def _run_call(
    call: ParsedCall,
    session: Session,
    backend: Backend,
    step: int,
    index: int,
    catalog_ops: Callable[[str], dict[str, Any] | None],
    policy: Enforcer | None = None,
) -> tuple[list[CallRecord], dict[str, int]]:
    """The call's records, and the peaks its program reached (none for a direct call)."""
    if call.arguments_error:
        text = f"Could not parse the arguments of {call.name}: {call.arguments_error}. Send valid JSON."
        return [
            CallRecord(
                step, index, call.name, call.arguments, "parse_error", error_type=ErrorType.PARSE_FAILURE, result=text
            )
        ], {}
    outcome: Dispatch = session.dispatch(ToolCall(call.name, call.arguments, call.id))
    if isinstance(outcome, ProgramDispatch) and outcome.run is not None:
        return _run_program(outcome, call, backend, step, index, catalog_ops, policy)
    return [_execute(outcome, call.name, call.arguments, step, index, backend, catalog_ops, policy)[0]], {}


def _run_program(
    outcome: ProgramDispatch,
    call: ParsedCall,
    backend: Backend,
    step: int,
    index: int,
    catalog_ops: Callable[[str], dict[str, Any] | None],
    policy: Enforcer | None = None,
) -> tuple[list[CallRecord], dict[str, int]]:
    """A program's calls, each executed and recorded like a direct call of this step, then the program's record.

    With them, the peaks the program reached (``memory_peak_bytes``, ``disk_peak_bytes``), those its sandbox
    measured; the episode's ``usage`` keeps the largest.
    """
    assert outcome.run is not None
    records: list[CallRecord] = []

    def execute(function: str, arguments: Any, dispatch: Dispatch) -> Executed:
        record, value = _execute(
            dispatch, function, arguments, step, index + len(records), backend, catalog_ops, policy
        )
        records.append(record)
        if record.kind == "operation" and record.backend_ok:
            return Executed(True, value)
        if record.kind == "meta" and record.error_type is None:
            return Executed(True, dispatch.text)
        # the surface's teaching text for its own rejection; the backend's error, or the policy's, otherwise
        said = record.result if record.kind == "operation" or record.policy is not None else dispatch.text
        return Executed(False, error=said, error_type=record.error_type)

    result = outcome.run(execute)
    measured = (("memory_peak_bytes", result.memory_peak_bytes), ("disk_peak_bytes", result.disk_peak_bytes))
    peaks = {name: peak for name, peak in measured if peak is not None}
    args = outcome.args if outcome.args is not None else call.arguments
    # the surface cut the program's output to its own limit (code mode: 16 KB), not RESULT_CHARS
    program = CallRecord(
        step, index + len(records), call.name, args, outcome.kind, None, outcome.meta, result.error_type, None, None,
        result.text,
    )  # fmt: skip
    return [*records, program], peaks


def _execute(
    outcome: Dispatch,
    tool: str,
    arguments: Any,
    step: int,
    index: int,
    backend: Backend,
    catalog_ops: Callable[[str], dict[str, Any] | None],
    policy: Enforcer | None = None,
) -> tuple[CallRecord, Any]:
    """Record a dispatched call; an operation runs on the backend first. Returns the record and the raw result.

    An operation the policy does not let run never reaches the backend: a rejected record with the policy's error.
    """
    schema_valid = None
    if outcome.operation is not None:
        schema = catalog_ops(outcome.operation)
        if schema is not None:
            schema_valid = not validate_args(outcome.args if outcome.args is not None else {}, schema)
    args = outcome.args if outcome.args is not None else arguments
    if outcome.kind != "operation":
        return CallRecord(
            step, index, tool, args, outcome.kind, outcome.operation, outcome.meta, outcome.error_type,
            schema_valid, None, _result_text(outcome.text),
            None if outcome.hits is None else [hit.as_dict() for hit in outcome.hits],
        ), None  # fmt: skip
    assert outcome.operation is not None and outcome.args is not None
    verdict = policy.judge(outcome.operation) if policy is not None else None
    if verdict is not None and not verdict.runs:
        return CallRecord(
            step, index, tool, outcome.args, "rejected", outcome.operation, None, verdict.error_type, schema_valid,
            None, _result_text(verdict.text), policy=verdict.outcome,
        ), None  # fmt: skip
    error_type: str | None
    result: Any = None
    try:
        result = backend.call(outcome.operation, outcome.args)
        ok, text, error_type = True, _result_text(result), None
    except ToolError as exc:
        ok, text, error_type = False, f"Error: {exc}", ErrorType.BACKEND_ERROR
    # a sandboxed backend names the limit the call ran into (disk quota, memory cap): more specific
    if isinstance(backend, ReportsErrorType):
        error_type = backend.last_error_type or error_type
    record = CallRecord(
        step, index, tool, outcome.args, "operation", outcome.operation, None, error_type, schema_valid, ok, text,
        policy=verdict.outcome if verdict is not None else None,
    )  # fmt: skip
    return record, result


def _listed(shown: list[str], session: Session) -> tuple[int, list[str] | None]:
    """The step's operations shown as recorded: their count, and their names (None: the whole catalog).

    A surface that shows every operation (full, dispatcher, code) would repeat the catalog on every step; the
    run's catalogs table holds it once (bench.store.recorded). A request-dependent surface keeps its rank order.
    """
    every = len(shown) == len(session.surface.catalog) and not session.surface.request_dependent
    return len(shown), None if every else shown


def _step_record(
    step: int,
    request: ModelRequest,
    turn: ModelTurn,
    tools: list[Any],
    system: str,
    calls: list[CallRecord],
    shown: tuple[int, list[str] | None],
    sent_at: float | None = None,
) -> tuple[StepRecord, dict[str, str]]:
    """The step's record, and the wire text of each tool shown by the hash the record names."""
    wire = [tool_wire_text(t) for t in tools]  # serialised once: hash, bytes and token estimate
    hashes = [text_hash(w) for w in wire]  # the run's tools table holds each text once (bench.store.tool_texts)
    texts = dict(zip(hashes, wire, strict=True))  # a hash names one text
    tool_text = "".join(wire)
    prefix_hash = hashlib.sha256((system + "\x00" + "\x00".join(wire)).encode()).hexdigest()[:16]
    rendered = compact_json({"messages": list(request.messages), "tools": [t.name for t in tools]})
    overhead = bool(calls) and all(c.kind == "meta" for c in calls)
    record = StepRecord(
        step=step,
        request_bytes=turn.request_bytes,
        request_bytes_source=turn.request_bytes_source,
        prompt_tokens=turn.usage.prompt_tokens,
        prompt_tokens_est=count_tokens(rendered, "o200k_base") + _tool_tokens(tool_text),
        cached_prompt_tokens=turn.usage.cached_prompt_tokens,
        completion_tokens=turn.usage.completion_tokens,
        latency_s=turn.latency_s,
        tools_shown=len(tools),
        tool_block_bytes=sum(utf8_len(w) for w in wire),
        prefix_hash=prefix_hash,
        tool_calls=len(turn.tool_calls),
        overhead=overhead,
        parse_format=turn.parse_format,
        parse_failures=len(turn.parse_failures),
        cache_hit=turn.cache_hit,
        finish_reason=turn.finish_reason,
        cost_usd=turn.cost_usd,
        text=(turn.text or "")[:2000],
        shown_count=shown[0],
        operations_shown=shown[1],
        sent_at=sent_at,
        segments=request_segments(system, wire, request.messages, _tool_tokens(tool_text) if wire else None),
        tool_hashes=hashes,
        server_cache_n=turn.usage.server_cache_n,
        server_prompt_n=turn.usage.server_prompt_n,
        slot=turn.slot,
    )
    return record, texts


@functools.lru_cache(maxsize=4096)
def _tool_tokens(tool_text: str) -> int:
    """Tokens of a tool block, counted once per distinct block (steps repeat it)."""
    return count_tokens(tool_text, "o200k_base")


def transcript_lines(trace: EpisodeTrace) -> list[str]:
    """The episode as JSON lines: messages, then the trace's summary (for the per-episode transcript)."""
    lines = [_json_line({"message": m}) for m in trace.messages]
    lines.append(_json_line({"final_text": trace.final_text, "error": trace.error, "traceback": trace.traceback}))
    return lines


def _json_line(value: object) -> str:
    """Readable UTF-8 JSON; text a model sent that is not valid Unicode is kept, as JSON escapes."""
    line = json.dumps(value, ensure_ascii=False, default=str)
    try:
        line.encode("utf-8")
        return line
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, default=str)
