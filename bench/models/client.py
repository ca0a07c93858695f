"""One model client for every provider, through LiteLLM: ``complete(request) -> ModelTurn``.

The local llama.cpp server is reached as ``openai/<alias>`` with its ``api_base``; hosted providers
by their LiteLLM model string and their usual environment keys. Request bytes are measured on the
HTTP request itself (an httpx hook) where LiteLLM sends through httpx's OpenAI client, and estimated
from the body LiteLLM built otherwise. Transient errors are retried with backoff; a missing key or an
unreachable endpoint is one clear :class:`ModelError`.

Rate limits (HTTP 429, a provider's rate-limit or overloaded error) are not failures: the call waits
(``Retry-After`` / ``retry-after-ms`` when the endpoint sends one, else exponential backoff with jitter)
and is sent again, up to ``rate_limit_retries`` times, outside the transient-error budget. Every call
passes the client's :class:`~surfbench.bench.base.concurrency.EndpointGate` (adaptive in-flight limit, rpm /
tpm budgets). Usage and cost per call: :mod:`surfbench.bench.models.cost`.

On llama-server the turn also carries the server's own counts (``timings.cache_n``, ``timings.prompt_n``) and
the slot; with ``slots`` > 1 an episode's requests are pinned to one slot (``id_slot``, sent outside what the
cache key hashes: the slot never changes the answer; :mod:`surfbench.bench.models.server_slots`).
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any, Protocol, Required, TypedDict, cast

import httpx

from surfbench.bench.base.concurrency import EndpointGate, EndpointRing, park
from surfbench.bench.base.secrets import redact
from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.models.cache import ResponseCache, request_hash
from surfbench.bench.models.cached_turns import CachedTurn, turn_from_json, turn_to_json
from surfbench.bench.models.cost import call_cost, call_usage, prices
from surfbench.bench.models.litellm_setup import CAPTURE, litellm_module
from surfbench.bench.models.parsing import turn_from_output
from surfbench.bench.models.prefix_store import PrefixStore
from surfbench.bench.models.prompting import prompted_messages
from surfbench.bench.models.repeats import dedupe_calls
from surfbench.bench.models.server_slots import PinnedClient, SlotPool
from surfbench.bench.models.streaming import StreamHTTPError, stream_completion, wire_body
from surfbench.bench.models.types import ModelRequest, ModelTurn, Usage


class ModelError(RuntimeError):
    """A model call that cannot succeed as configured (missing key, unreachable endpoint, bad model)."""


class EndpointRefused(ModelError):
    """No request to this endpoint can succeed as configured.

    Credentials refused or missing, or nothing has ever answered there: the cell stops with this one
    error instead of recording every episode as a failure.
    """


class RateLimited(ModelError):
    """The endpoint kept answering 429 (or its provider's rate-limit error) for every retry."""


class ContextOverflow(ModelError):
    """The request no longer fits the model's context window: an outcome of the surface, not a fault."""


def _transient(exc: Exception) -> bool:
    if isinstance(exc, StreamHTTPError):  # a streamed call (stop_on_repeated_call): the server's 5xx
        return exc.status_code >= 500
    if isinstance(exc, httpx.TransportError):  # a streamed call's connection failed or timed out
        return True
    litellm = litellm_module()
    kinds = tuple(
        getattr(litellm, n)
        for n in ("RateLimitError", "ServiceUnavailableError", "InternalServerError", "Timeout", "APIConnectionError")
        if hasattr(litellm, n)
    )
    return isinstance(exc, kinds)


def rate_limited(exc: BaseException) -> bool:
    """Whether the error is the endpoint asking to slow down (429, a rate-limit or overloaded error)."""
    if type(exc).__name__ == "RateLimitError" or getattr(exc, "status_code", None) in (429, 529):
        return True
    return _in_chain(exc, "rate limit") or _in_chain(exc, "Rate limit") or _in_chain(exc, "overloaded_error")


def retry_after_s(exc: BaseException) -> float | None:
    """The wait the endpoint asked for (``retry-after-ms``, ``Retry-After`` seconds or HTTP date), if any."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(float(ms) / 1000.0, 0.0)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        when = email.utils.parsedate_to_datetime(str(value)) if str(value).strip() else None
        return None if when is None else max(when.timestamp() - time.time(), 0.0)


class _Message(Protocol):
    @property
    def content(self) -> str | None: ...


class _Choice(Protocol):
    @property
    def message(self) -> _Message: ...


class _Response(Protocol):
    """What :meth:`LiteLLMClient._turn` reads of a LiteLLM response besides the fields it looks up by name."""

    @property
    def choices(self) -> Sequence[_Choice]: ...


class WirePayload(TypedDict, total=False):
    """What is sent to the model (and hashed into the cache key): :meth:`LiteLLMClient.wire_payload`."""

    model: Required[str]
    messages: Required[list[dict[str, object]]]
    """OpenAI-format chat messages (prompted mode: rendered to text turns)."""
    temperature: Required[float]
    max_tokens: int
    seed: int
    repeat_penalty: float
    tools: list[dict[str, object]]
    """OpenAI-format tool specs (native mode only)."""


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
        start: Callable[[], str | list[str]] | None = None,
        identity: str = "",
        revive: Callable[[], str | list[str] | None] | None = None,
        max_revivals: int = 3,
        gate: EndpointGate | None = None,
        rate_limit_retries: int = 12,
        max_backoff_s: float = 60.0,
        cache_control: str | None = None,
        slots: int = 1,
        prefix_store: PrefixStore | None = None,
    ) -> None:
        """A client for LiteLLM model string ``model``.

        ``gate``: admission of calls to this endpoint (default: one call at a time, no budgets; the
        runner widens it to the cell's concurrency). ``cache_control="tools"``: an Anthropic prompt-cache
        breakpoint after the tool block (native mode). ``slots`` > 1: the server's slots (llama-server), which
        episodes hold one each (:meth:`pinned`, :func:`surfbench.bench.models.server_slots.episode_slot`).
        ``prefix_store``: a local server's computed prompt prefix saved and restored across sessions
        (``keep_prefix``, bench.models.prefix_store).
        """
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
        self.gate = gate or EndpointGate()
        self.rate_limit_retries = rate_limit_retries
        self.max_backoff_s = max_backoff_s
        self.cache_control = cache_control
        self.rate_limit_waits = 0
        """Calls sent again because the endpoint rate-limited them."""
        self._prices = None if is_local else prices(model)
        self._lock = threading.Lock()  # a local server starts / is revived once, whatever the threads
        self.ring: EndpointRing | None = None
        self.bases: list[str] = []
        self.prefix_store = prefix_store
        self.slots = SlotPool(slots) if slots > 1 else None
        """The server's slots, one per episode in flight (None: one slot, nothing pinned, nothing sent)."""

    def pinned(self, slot: int) -> PinnedClient:
        """This client with every request pinned to slot ``slot`` of the server (one episode's view)."""
        if self.slots is None or not 0 <= slot < self.slots.n:
            raise ValueError(f"{self.model}: no slot {slot} (the server has {self.slots.n if self.slots else 1})")
        return PinnedClient(self, slot)

    # -- request building ---------------------------------------------------------------------
    def wire_payload(self, req: ModelRequest) -> WirePayload:
        """What is sent (and hashed): messages and tools as the calling mode renders them."""
        if req.mode == "prompted":
            messages = prompted_messages(req.messages, req.tools, req.prompt_format)
            tools: list[dict[str, object]] = []
        else:
            messages = list(req.messages)
            tools = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                }
                for t in req.tools
            ]
            if tools and self.cache_control == "tools":  # Anthropic caches everything up to this breakpoint
                tools[-1] = {**tools[-1], "cache_control": {"type": "ephemeral"}}
        payload: WirePayload = {"model": self.model, "messages": messages, "temperature": req.temperature}
        payload["max_tokens"] = req.max_tokens
        if req.seed is not None:
            payload["seed"] = req.seed
        if req.repeat_penalty is not None:  # llama.cpp's field; absent, the key and body are as before
            payload["repeat_penalty"] = req.repeat_penalty
        if tools:
            payload["tools"] = tools
        return payload

    # -- the call -------------------------------------------------------------------------------
    def complete(self, req: ModelRequest, slot: int | None = None) -> ModelTurn:
        """The turn for ``req``; ``slot``: the server slot to run it on (sent as ``id_slot``, not in the key)."""
        payload = self.wire_payload(req)
        # a local server's port changes from run to run: the weights' hash stands for the endpoint
        endpoint = self.identity if self.is_local else f"{self.identity}@{self.api_base or ''}"
        stop = req.stop_on_repeated_call
        # the stop changes the answer: in the key when on; off, the key is as before
        hashed = {"stop_on_repeated_call": stop} if stop is not None else {}
        key = request_hash({"endpoint": endpoint, "mode": req.mode, "fmt": req.prompt_format, **payload, **hashed})
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return turn_from_json(cast(CachedTurn, hit), cache_hit=True, key=key)
        turn = self._call_with_retries(payload, key, slot, stop)
        if self.cache is not None:
            with self._lock:  # two episodes may send the same request at once; one writes the entry
                self.cache.put(key, turn_to_json(turn))
        return turn

    def _call_with_retries(
        self, payload: WirePayload, key: str, slot: int | None = None, stop: int | None = None
    ) -> ModelTurn:
        with self._lock:
            if self._start is not None:  # a local server starts on the first request the cache cannot answer
                started = self._start()
                if isinstance(started, list):  # n_parallel servers: each call goes to a free one
                    self.ring, self.bases = EndpointRing(started), started
                self.api_base = started[0] if isinstance(started, list) else started
                self._start = None
                self.answered = True  # the server answered before start() returned
        litellm = litellm_module()
        attempt = 0
        waits = 0
        estimate = len(compact_json(payload)) // 4 + int(payload.get("max_tokens") or 0) if self.gate.tpm else 0
        while True:
            self.gate.acquire(estimate)
            outcome = "error"
            used: int | None = None
            try:
                if self.prefix_store is not None and self.api_base:
                    self.prefix_store.before(self.api_base, payload)
                if stop is not None:
                    turn = self._stream_once(payload, key, slot, stop)
                else:
                    turn = self._call_once(litellm, payload, key, slot)
                if self.prefix_store is not None and self.api_base:
                    self.prefix_store.after(self.api_base, payload, turn.usage.prompt_tokens)
                self.answered = True
                outcome = "ok"
                used = (turn.usage.prompt_tokens or 0) + (turn.usage.completion_tokens or 0)
                return turn
            except Exception as exc:
                if rate_limited(exc):
                    outcome = "rate_limited"
                    if waits >= self.rate_limit_retries:
                        raise RateLimited(
                            f"{self.model}: still rate-limited after {waits + 1} attempt(s) "
                            f"({_first_line(exc)}); lower concurrency= or set rpm / tpm in the model config"
                        ) from exc
                    self.gate.release(outcome)  # counted now; the slot is free while this call waits
                    outcome = "released"
                    self._wait_rate_limit(exc, waits)
                    waits += 1
                    continue
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
                    with self._lock:  # None unless the local server died; then a new one, send again
                        new_base = self._revive()
                        if isinstance(new_base, list):
                            self.ring.replace(self.bases, new_base) if self.ring else None
                            self.bases, new_base = new_base, new_base[0]
                        if new_base is not None:
                            self.api_base = new_base
                            self.revivals_left -= 1
                            self.revivals += 1
                    if new_base is not None:
                        continue
                if not _transient(exc) or attempt >= self.retries:
                    where = f" at {self.api_base}" if self.api_base else ""
                    unreachable = _in_chain(exc, "Connection error", "Connect")
                    message = redact(  # an api_base's password, a key the provider quoted back: never in an error
                        f"{self.model}{where}: call {'unreachable' if unreachable else 'failed'} after "
                        f"{attempt + 1} attempt(s): {type(exc).__name__}: {_first_line(exc)}"
                    )
                    if unreachable and not self.answered:  # a wrong api_base or a server that is not up
                        raise EndpointRefused(f"{message}; nothing has answered there yet: check api_base") from exc
                    raise ModelError(message) from exc
                time.sleep(self.backoff_s * (2**attempt))
                attempt += 1
            finally:
                if outcome != "released":
                    self.gate.release(outcome, used, estimate)

    def _wait_rate_limit(self, exc: BaseException, waits: int) -> None:
        """Sleep as long as the endpoint asked (plus up to 10%), else exponential backoff with full jitter."""
        asked = retry_after_s(exc)
        if asked is not None:
            delay = min(asked, self.max_backoff_s) * (1.0 + random.uniform(0.0, 0.1))
        else:
            delay = min(self.max_backoff_s, self.backoff_s * (2**waits)) * random.uniform(0.5, 1.0)
        with self._lock:
            self.rate_limit_waits += 1
        park(delay)  # an episode in a pool gives its slot to a queued one while it waits

    def _call_once(self, litellm: ModuleType, payload: WirePayload, key: str, slot: int | None = None) -> ModelTurn:
        kwargs = dict(payload)
        extra = {"repeat_penalty": kwargs.pop("repeat_penalty")} if "repeat_penalty" in kwargs else {}
        if slot is not None:  # llama-server's own body field; LiteLLM passes extra_body through as is
            extra["id_slot"] = slot
        if extra:
            kwargs["extra_body"] = extra
        base = self.ring.take() if self.ring is not None else self.api_base
        if base:
            kwargs["api_base"] = base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        sink: list[int] = []
        CAPTURE.sink = sink
        started = time.perf_counter()
        try:
            response = litellm.completion(timeout=self.timeout_s, num_retries=0, **kwargs)
        finally:
            CAPTURE.sink = None
            if self.ring is not None and base:
                self.ring.give(base)
        latency = time.perf_counter() - started
        measured = [n for n in sink if n >= 0]
        if measured:
            request_bytes, source = measured[-1], "wire"
        else:
            request_bytes, source = len(compact_json(payload).encode("utf-8")), "estimated"
        return self._turn(litellm, response, latency, request_bytes, source, key, slot)

    def _stream_once(self, payload: WirePayload, key: str, slot: int | None, stop: int) -> ModelTurn:
        """One streamed call, cut at the ``stop``-th copy of one complete call (bench.models.streaming)."""
        extra = {"repeat_penalty": payload["repeat_penalty"]} if "repeat_penalty" in payload else {}
        if slot is not None:
            extra["id_slot"] = slot
        body = wire_body({k: v for k, v in payload.items() if k != "repeat_penalty"}, extra)
        base = self.ring.take() if self.ring is not None else self.api_base
        if not base:
            raise EndpointRefused(f"{self.model}: stop_on_repeated_call streams from an api_base, and none is set")
        try:
            out = stream_completion(base, body, self.api_key, self.timeout_s, stop)
        except StreamHTTPError as exc:
            if exc.status_code == 400 and ("context" in str(exc) or "exceed" in str(exc)):
                raise ContextOverflow(f"{self.model}: {_first_line(exc)}") from None
            raise
        finally:
            if self.ring is not None and base:
                self.ring.give(base)
        turn = turn_from_output(
            out.text,
            out.native,
            usage=Usage(out.prompt_tokens, out.completion_tokens, None, out.server_cache_n, out.server_prompt_n),
            request_bytes=out.request_bytes,
            request_bytes_source="wire",
            latency_s=out.latency_s,
            cost_usd=0.0
            if self.is_local
            else call_cost(
                call_usage({"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens}),
                self._prices,
            ),
            finish_reason=out.finish_reason,
            request_hash=key,
            slot=slot,
        )
        return replace(turn, tool_calls=dedupe_calls(turn.tool_calls))  # a repeated call runs once

    def _turn(
        self,
        litellm: ModuleType,
        response: _Response,
        latency: float,
        request_bytes: int,
        source: str,
        key: str,
        slot: int | None = None,
    ) -> ModelTurn:
        choice = response.choices[0]
        message = choice.message
        native = []
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            native.append((getattr(fn, "name", None), getattr(fn, "arguments", None), getattr(tc, "id", None)))
        usage = call_usage(getattr(response, "usage", None))
        cost = 0.0 if self.is_local else call_cost(usage, self._prices)
        cache_n, prompt_n, reported_slot = llama_server_counts(response)
        return turn_from_output(
            message.content,
            native,
            usage=Usage(usage.prompt_tokens, usage.completion_tokens, usage.cache_read_tokens, cache_n, prompt_n),
            request_bytes=request_bytes,
            request_bytes_source=source,
            latency_s=latency,
            cost_usd=cost,
            finish_reason=getattr(choice, "finish_reason", None),
            request_hash=key,
            slot=reported_slot if reported_slot is not None else slot,
        )


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def llama_server_counts(response: object) -> tuple[int | None, int | None, int | None]:
    """``(cache_n, prompt_n, id_slot)`` a llama-server response reports, each None where it says nothing.

    ``timings`` (``cache_n``: prompt tokens taken from the slot's KV cache; ``prompt_n``: computed) is in every
    llama-server completion; ``id_slot`` only in its own ``/completion`` answers, not in the OpenAI-style ones.
    LiteLLM keeps a response's extra top-level fields as attributes.
    """

    def get(obj: object, name: str) -> object:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    timings = get(response, "timings")
    if timings is None:
        return None, None, _count(get(response, "id_slot"))
    return _count(get(timings, "cache_n")), _count(get(timings, "prompt_n")), _count(get(response, "id_slot"))


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
