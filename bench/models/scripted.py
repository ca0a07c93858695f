"""A scripted model client for tests: replays fixed turns, never produces reported results."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from bench.models.parsing import parse_text_calls
from bench.models.types import ModelRequest, ModelTurn, ParsedCall, Usage
from bench.wire import compact_json

Script = Sequence[ModelTurn | str | list[tuple[str, Any]] | Callable[[ModelRequest], ModelTurn]]


def call_turn(*calls: tuple[str, Any], text: str = "") -> ModelTurn:
    """A turn with native tool calls: ``call_turn(("issue_get", {"number": 1}))``."""
    return ModelTurn(
        text=text, tool_calls=tuple(ParsedCall(name, args, id=f"call_{i}") for i, (name, args) in enumerate(calls))
    )


def text_turn(text: str) -> ModelTurn:
    """A text answer; tool calls written in the text are parsed as the real client would."""
    parsed = parse_text_calls(text)
    return ModelTurn(text=text, tool_calls=parsed.calls, parse_failures=parsed.failures, parse_format=parsed.format)


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
        body = compact_json({"messages": list(request.messages), "tools": [t.name for t in request.tools]})
        usage = turn.usage if turn.usage.prompt_tokens is not None else Usage(len(body) // 4, 8, None)
        return replace(turn, request_bytes=turn.request_bytes or len(body.encode()), usage=usage)
