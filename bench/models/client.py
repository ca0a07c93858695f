"""One model client for every provider, through LiteLLM: ``complete(request) -> ModelTurn``.

The local llama.cpp server is reached as ``openai/<alias>`` with its ``api_base``; hosted providers
by their LiteLLM model string and their usual environment keys. Request bytes are measured on the
HTTP request itself (an httpx hook) where LiteLLM sends through httpx's OpenAI client, and estimated
from the body LiteLLM built otherwise. Transient errors are retried with backoff; a missing key or an
unreachable endpoint is one clear :class:`ModelError`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from surfbench.bench.models.cache import ResponseCache, request_hash
from surfbench.bench.models.parsing import turn_from_output
from surfbench.bench.models.prompting import prompted_messages
from surfbench.bench.models.types import ModelRequest, ModelTurn, ParsedCall, ParseFailure, Usage
from surfbench.bench.wire import compact_json

_CAPTURE = threading.local()
_LITELLM: Any = None
_LOCK = threading.Lock()


class ModelError(RuntimeError):
    """A model call that cannot succeed as configured (missing key, unreachable endpoint, bad model)."""


class EndpointRefused(ModelError):
    """No request to this endpoint can succeed as configured.

    Credentials refused or missing, or nothing has ever answered there: the cell stops with this one
    error instead of recording every episode as a failure.
    """


class ContextOverflow(ModelError):
    """The request no longer fits the model's context window: an outcome of the surface, not a fault."""


def _capture_request(request: Any) -> None:
    sink = getattr(_CAPTURE, "sink", None)
    if sink is not None:
        try:
            sink.append(len(request.content))
        except Exception:  # a streaming body has no .content; then we fall back to the estimate
            sink.append(-1)


def litellm_module() -> Any:
    """Import LiteLLM once, offline: local price map, httpx hook for request bytes."""
    global _LITELLM
    with _LOCK:
        if _LITELLM is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            from surfbench.bench.wire import ensure_offline_tiktoken

            ensure_offline_tiktoken()
            import httpx
            import litellm

            litellm.suppress_debug_info = True
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm", "httpx"):
                logging.getLogger(name).setLevel(logging.WARNING)
            litellm.drop_params = True
            litellm.client_session = httpx.Client(event_hooks={"request": [_capture_request]}, timeout=600)
            _LITELLM = litellm
    return _LITELLM


def _transient(exc: Exception) -> bool:
    litellm = litellm_module()
    kinds = tuple(
        getattr(litellm, n)
        for n in ("RateLimitError", "ServiceUnavailableError", "InternalServerError", "Timeout", "APIConnectionError")
        if hasattr(litellm, n)
    )
    return isinstance(exc, kinds)


class LiteLLMClient:
    """``complete`` with retries, response cache and typed turns."""

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        cache: ResponseCache | None = None,
        retries: int = 3,
        backoff_s: float = 1.0,
        timeout_s: float = 600.0,
        is_local: bool = False,
        start: Callable[[], str] | None = None,
        identity: str = "",
        revive: Callable[[], str | None] | None = None,
        max_revivals: int = 3,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self._start = start
        self._revive = revive
        self.revivals_left = max_revivals
        self.revivals = 0
        self.identity = identity or model
        self.api_key = api_key
        self.cache = cache
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.is_local = is_local
        self.name = model
        self.answered = False
        """Whether the endpoint has answered once (a local server that started counts)."""

    # -- request building ---------------------------------------------------------------------
    def wire_payload(self, req: ModelRequest) -> dict[str, Any]:
        """What is sent (and hashed): messages and tools as the calling mode renders them."""
        if req.mode == "prompted":
            messages = prompted_messages(req.messages, req.tools, req.prompt_format)
            tools: list[dict[str, Any]] = []
        else:
            messages = list(req.messages)
            tools = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in req.tools
            ]
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": req.temperature}
        payload["max_tokens"] = req.max_tokens
        if req.seed is not None:
            payload["seed"] = req.seed
        if tools:
            payload["tools"] = tools
        return payload

    # -- the call -------------------------------------------------------------------------------
    def complete(self, req: ModelRequest) -> ModelTurn:
        payload = self.wire_payload(req)
        # a local server's port changes from run to run: the weights' hash stands for the endpoint
        endpoint = self.identity if self.is_local else f"{self.identity}@{self.api_base or ''}"
        key = request_hash({"endpoint": endpoint, "mode": req.mode, "fmt": req.prompt_format, **payload})
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return _turn_from_json(hit, cache_hit=True, key=key)
        turn = self._call_with_retries(payload, key)
        if self.cache is not None:
            self.cache.put(key, _turn_to_json(turn))
        return turn

    def _call_with_retries(self, payload: dict[str, Any], key: str) -> ModelTurn:
        if self._start is not None:  # a local server starts on the first request the cache cannot answer
            self.api_base = self._start()
            self._start = None
            self.answered = True  # the server answered before start() returned
        litellm = litellm_module()
        attempt = 0
        while True:
            try:
                turn = self._call_once(litellm, payload, key)
                self.answered = True
                return turn
            except Exception as exc:
                if "ContextWindowExceeded" in type(exc).__name__:
                    raise ContextOverflow(f"{self.model}: {_first_line(exc)}") from None
                auth = getattr(litellm, "AuthenticationError", ())
                if (auth and isinstance(exc, auth)) or _in_chain(exc, "Missing credentials"):
                    raise EndpointRefused(
                        f"{self.model}: the provider rejected or missed the credentials ({type(exc).__name__}); "
                        "set api_key_env in the model config and export that variable (or the provider's usual "
                        "one, e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY)"
                    ) from None
                if self._revive is not None and self.revivals_left > 0:
                    new_base = self._revive()  # None unless the local server died; then a new one, send again
                    if new_base is not None:
                        self.api_base = new_base
                        self.revivals_left -= 1
                        self.revivals += 1
                        continue
                if not _transient(exc) or attempt >= self.retries:
                    where = f" at {self.api_base}" if self.api_base else ""
                    unreachable = _in_chain(exc, "Connection error", "Connect")
                    message = (
                        f"{self.model}{where}: call {'unreachable' if unreachable else 'failed'} after "
                        f"{attempt + 1} attempt(s): {type(exc).__name__}: {_first_line(exc)}"
                    )
                    if unreachable and not self.answered:  # a wrong api_base or a server that is not up
                        raise EndpointRefused(f"{message}; nothing has answered there yet: check api_base") from exc
                    raise ModelError(message) from exc
                time.sleep(self.backoff_s * (2**attempt))
                attempt += 1

    def _call_once(self, litellm: Any, payload: dict[str, Any], key: str) -> ModelTurn:
        kwargs = dict(payload)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        sink: list[int] = []
        _CAPTURE.sink = sink
        started = time.perf_counter()
        try:
            response = litellm.completion(timeout=self.timeout_s, num_retries=0, **kwargs)
        finally:
            _CAPTURE.sink = None
        latency = time.perf_counter() - started
        measured = [n for n in sink if n >= 0]
        if measured:
            request_bytes, source = measured[-1], "wire"
        else:
            request_bytes, source = len(compact_json(payload).encode("utf-8")), "estimated"
        return self._turn(litellm, response, latency, request_bytes, source, key)

    def _turn(
        self, litellm: Any, response: Any, latency: float, request_bytes: int, source: str, key: str
    ) -> ModelTurn:
        choice = response.choices[0]
        message = choice.message
        native = []
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            native.append((getattr(fn, "name", None), getattr(fn, "arguments", None), getattr(tc, "id", None)))
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        cost = 0.0
        if not self.is_local:
            try:
                cost = float(litellm.completion_cost(completion_response=response) or 0.0)
            except Exception:  # no price known for this model: report 0 rather than fail the run
                cost = 0.0
        return turn_from_output(
            message.content,
            native,
            usage=Usage(
                prompt_tokens=getattr(usage, "prompt_tokens", None),
                completion_tokens=getattr(usage, "completion_tokens", None),
                cached_prompt_tokens=cached,
            ),
            request_bytes=request_bytes,
            request_bytes_source=source,
            latency_s=latency,
            cost_usd=cost,
            finish_reason=getattr(choice, "finish_reason", None),
            request_hash=key,
        )


def _in_chain(exc: BaseException, text: str, class_part: str | None = None) -> bool:
    """Whether ``text`` is in the message (or ``class_part`` in the class name) of the error or one it wraps.

    LiteLLM wraps openai's errors (themselves wrapping httpx's) in whatever class it likes,
    InternalServerError included, so a connection or credentials error is found by looking down the chain.
    """
    seen: set[int] = set()
    node: BaseException | None = exc
    while node is not None and id(node) not in seen:
        seen.add(id(node))
        if text in str(node) or (class_part is not None and class_part in type(node).__name__):
            return True
        node = node.__cause__ or node.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def _turn_to_json(turn: ModelTurn) -> dict[str, Any]:
    data = asdict(turn)
    data.pop("cache_hit", None)
    return data


def _turn_from_json(data: dict[str, Any], cache_hit: bool, key: str) -> ModelTurn:
    return ModelTurn(
        text=data.get("text", ""),
        tool_calls=tuple(ParsedCall(**c) for c in data.get("tool_calls", [])),
        parse_failures=tuple(ParseFailure(**f) for f in data.get("parse_failures", [])),
        parse_format=data.get("parse_format"),
        usage=Usage(**data.get("usage", {})),
        request_bytes=data.get("request_bytes", 0),
        request_bytes_source=data.get("request_bytes_source", "wire"),
        latency_s=data.get("latency_s", 0.0),
        cost_usd=data.get("cost_usd", 0.0),
        finish_reason=data.get("finish_reason"),
        cache_hit=cache_hit,
        request_hash=key,
    )
