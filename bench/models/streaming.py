"""One streamed chat completion from an OpenAI-compatible endpoint, ended early at a repeated call.

Used by the model client when a model config sets ``stop_on_repeated_call: K`` (bench.models.repeats): the
answer is read as it is generated (server-sent events) and the connection is closed as soon as the text holds
one complete call K times. llama-server stops generating for a client that has gone away (checked by
``scripts/bench_repeat_stop.py`` and ``tests/bench/test_repeat_stop.py``), so the tokens after the cut are never
computed.

Sent with httpx, not through LiteLLM: the stop needs the connection closed at a chosen moment, which LiteLLM's
stream wrapper does not offer; httpx is the HTTP client LiteLLM itself sends with. The body is the one LiteLLM
would send for ``openai/<name>`` (the ``openai/`` prefix dropped, llama.cpp's own fields at the top level),
plus ``stream``, ``stream_options.include_usage`` and llama.cpp's ``timings_per_token``, so the counts of an
answer cut short are known too: every llama-server chunk carries its ``timings`` (``prompt_n``, ``cache_n``,
``predicted_n``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx

from surfbench.bench.models.repeats import cut_at


class StreamHTTPError(RuntimeError):
    """The endpoint answered the streamed request with an HTTP error."""

    def __init__(self, status_code: int, text: str) -> None:
        super().__init__(f"HTTP {status_code}: {text[:300]}")
        self.status_code = status_code


@dataclass
class Streamed:
    """What a streamed answer held when it ended (by itself or cut)."""

    text: str = ""
    finish_reason: str | None = None
    """The server's, or ``repeated_call`` when the stop cut the answer."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    server_cache_n: int | None = None
    server_prompt_n: int | None = None
    request_bytes: int = 0
    latency_s: float = 0.0
    native: list[tuple[Any, Any, Any]] = field(default_factory=list)
    """Native tool calls as ``(name, arguments, id)`` (assembled from the deltas)."""


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def wire_body(payload: Mapping[str, object], extra: Mapping[str, object]) -> dict[str, object]:
    """The streamed request's JSON body: ``payload`` as LiteLLM would send it, streamed."""
    body = {k: v for k, v in payload.items() if k != "model"}
    model = str(payload.get("model") or "")
    body = {"model": model.split("/", 1)[1] if model.startswith("openai/") else model, **body, **extra}
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    body["timings_per_token"] = True
    return body


def stream_completion(
    base: str, body: Mapping[str, object], api_key: str | None, timeout_s: float, repeated_call: int
) -> Streamed:
    """POST ``body`` to ``base``/chat/completions and read the answer until it ends or repeats a call.

    At the ``repeated_call``-th copy of one call the connection is closed and the text kept up to that call's line.
    """
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    out = Streamed(request_bytes=len(data))
    parts: list[str] = []
    calls: dict[int, _StreamCall] = {}
    started = time.perf_counter()
    with (
        httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 30.0))) as http,
        http.stream("POST", base.rstrip("/") + "/chat/completions", content=data, headers=headers) as response,
    ):
        if response.status_code >= 400:
            raise StreamHTTPError(response.status_code, response.read().decode("utf-8", "replace"))
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            chunk = line[5:].strip()
            if chunk == "[DONE]":
                break
            try:
                event = json.loads(chunk)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if isinstance(event.get("error"), dict):  # llama-server reports a failure inside the stream
                raise StreamHTTPError(int(event["error"].get("code") or 500), str(event["error"].get("message")))
            _counts(out, event)
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                if isinstance(delta.get("content"), str) and delta["content"]:
                    parts.append(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    _tool_delta(calls, tc)
                if choice.get("finish_reason"):
                    out.finish_reason = str(choice["finish_reason"])
            if parts and "\n" in parts[-1]:  # a call is complete only at its line's end
                text = "".join(parts)
                at = cut_at(text, repeated_call)
                if at is not None:
                    parts = [text[:at]]
                    out.finish_reason = "repeated_call"
                    break  # leaving the block closes the connection: the server stops generating
    out.latency_s = time.perf_counter() - started
    out.text = "".join(parts)
    out.native = [(c["name"] or None, c["arguments"], c["id"] or None) for _, c in sorted(calls.items())]
    return out


def _counts(out: Streamed, event: Mapping[str, object]) -> None:
    usage = event.get("usage")
    if isinstance(usage, dict):
        out.prompt_tokens = _count(usage.get("prompt_tokens"))
        out.completion_tokens = _count(usage.get("completion_tokens"))
    timings = event.get("timings")
    if isinstance(timings, dict):
        out.server_cache_n = _count(timings.get("cache_n"))
        out.server_prompt_n = _count(timings.get("prompt_n"))
        predicted = _count(timings.get("predicted_n"))
        if predicted is not None and usage is None:  # the counts so far, for an answer cut before its usage
            out.completion_tokens = predicted
            if out.server_prompt_n is not None:
                out.prompt_tokens = out.server_prompt_n + (out.server_cache_n or 0)


class _StreamCall(TypedDict):
    """One native call as its deltas are assembled: the name, arguments and id so far."""

    name: str
    arguments: str
    id: str


def _tool_delta(calls: dict[int, _StreamCall], tc: object) -> None:
    if not isinstance(tc, dict):
        return
    index: int = tc["index"] if isinstance(tc.get("index"), int) else len(calls)
    call = calls.setdefault(index, {"name": "", "arguments": "", "id": ""})
    if tc.get("id"):
        call["id"] = str(tc["id"])
    fn = tc.get("function") or {}
    if fn.get("name"):
        call["name"] += str(fn["name"])
    if isinstance(fn.get("arguments"), str):
        call["arguments"] += fn["arguments"]
