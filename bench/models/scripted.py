"""A scripted model client for tests: replays fixed turns, never produces reported results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.models.parsing import turn_from_output
from surfbench.bench.models.types import ModelRequest, ModelTurn, ParsedCall, Usage

Script = Sequence[ModelTurn | str | list[tuple[str, Any]] | Callable[[ModelRequest], ModelTurn]]


def call_turn(*calls: tuple[str, Any], text: str = "") -> ModelTurn:
    """A turn with native tool calls: ``call_turn(("issue_get", {"number": 1}))``."""
    return ModelTurn(
        text=text, tool_calls=tuple(ParsedCall(name, args, id=f"call_{i}") for i, (name, args) in enumerate(calls))
    )


def text_turn(text: str) -> ModelTurn:
    """A text answer; tool calls written in the text are parsed as the real client would."""
    return turn_from_output(text)


class ScriptedClient:
    """Returns the scripted turns in order; past the end it answers "done" in text."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append(request)
        step = self.script[len(self.requests) - 1] if len(self.requests) <= len(self.script) else "done"
        if callable(step):
            turn = step(request)
        elif isinstance(step, str):
            turn = text_turn(step)
        elif isinstance(step, list):
            turn = call_turn(*step)
        else:
            turn = step
        return with_usage(turn, request)


def with_usage(turn: ModelTurn, request: ModelRequest) -> ModelTurn:
    """Scripted turns get request bytes and a rough token count (4 bytes a token) from the request."""
    body = compact_json(
        {
            "messages": list(request.messages),
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools
            ],
        }
    )
    usage = turn.usage if turn.usage.prompt_tokens is not None else Usage(len(body) // 4, 8, None)
    return replace(turn, request_bytes=turn.request_bytes or len(body.encode()), usage=usage)


class OracleClient:
    """For tests of sweeps, reports and gates: replays each task's reference calls.

    It finds the task by the first user message, calls each expected operation (as a typed tool when
    one is shown, else through the dispatcher tool; of a ``one_of``, the first alternative, whose op and
    args the expected call carries), then answers with the task's answer words.
    Results it produces are labelled scripted in run.json and in reports: never a measurement.
    """

    name = "scripted-oracle"

    def __init__(self, suite: str, delay_s: float = 0.0) -> None:
        from surfbench.bench.suites.suite import load_suite

        self.suite = load_suite(suite)
        self.delay_s = delay_s
        self.by_turn: dict[str, list[Any]] = {}
        for t in self.suite.tasks:
            self.by_turn.setdefault(t.turns[0], []).append(t)

    def complete(self, request: ModelRequest) -> ModelTurn:
        import time

        from surfbench.bench.suites.matchers import example_args

        if self.delay_s:
            time.sleep(self.delay_s)
        first_user = next((m["content"] for m in request.messages if m["role"] == "user"), "")
        names = {t.name for t in request.tools}
        same_text = self.by_turn.get(first_user, [])  # BFCL repeats questions with other functions
        exact = [t for t in same_text if t.catalog is not None and set(t.catalog.names) == names]
        task = next(iter(exact), None) or next((t for t in same_text if all(e.op in names for e in t.expected)), None)
        task = task or (same_text[0] if same_text else None)
        done = sum(len(m.get("tool_calls") or []) for m in request.messages if m["role"] == "assistant")
        user_turn = sum(1 for m in request.messages if m["role"] == "user") - 1
        later = done < len(task.expected) and (task.expected[done].turn or 0) > user_turn if task else False
        if task is None or done >= len(task.expected) or later:  # all done, or the rest is for a later turn
            words = (
                " ".join(map(str, (task.answer.get("contains", []) + task.answer.get("any_of", [])[:1])))
                if task
                else ""
            )
            return text_turn(words or "Done.")
        catalog = self.suite.catalog_for(task)

        def reference(e: Any) -> dict[str, Any]:
            """The expected call's arguments; optional ones ("" accepted, not required) are left out."""
            if e.oracle_args is not None:
                return dict(e.oracle_args)
            op = catalog.get(e.op)
            required = set(op.required) if op else set()
            args = example_args(e.args)
            return {
                k: v
                for k, v in args.items()
                if k in required or not (isinstance(e.args.get(k), list) and "" in e.args[k])
            }

        exp = task.expected[done]
        args = reference(exp)
        if task.exact_calls and all(e.op in names for e in task.expected):  # BFCL: every call in one answer
            return with_usage(call_turn(*[(e.op, reference(e)) for e in task.expected]), request)
        if exp.op in names:
            return with_usage(call_turn((exp.op, args)), request)
        dispatcher = next((t.name for t in request.tools if t.name + "_help" in names), None)
        if dispatcher:
            return with_usage(call_turn((dispatcher, {"operation": exp.op, "args": args})), request)
        return with_usage(text_turn("I cannot do that with these tools."), request)
