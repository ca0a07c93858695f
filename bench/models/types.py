"""What crosses the model-client boundary: the request, the typed turn that comes back, and the client."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from surfbench.bench.catalog.wire import HasToolFields

if TYPE_CHECKING:
    from surfbench.bench.base.concurrency import EndpointGate

CallingMode = Literal["native", "prompted"]


@dataclass(frozen=True)
class ParsedCall:
    """One tool call the model made, from the ``tool_calls`` field or parsed out of its text."""

    name: str
    """Tool name as the model wrote it."""
    arguments: Any
    """Parsed arguments (normally a dict); the raw string when it was not valid JSON."""
    id: str = ""
    """Call id (from the provider, or made up for calls parsed from text)."""
    source: str = "tool_calls"
    """Where it came from: ``tool_calls``, ``tool_call_tag``, ``json_block`` or ``bare_json``."""
    arguments_error: str | None = None
    """Why the arguments could not be parsed, when they could not."""


@dataclass(frozen=True)
class ParseFailure:
    """Model output that claimed a tool call but could not be parsed."""

    source: str
    """The format it claimed (``tool_call_tag``, ``json_block``, ``bare_json``, ``tool_calls``)."""
    reason: str
    """What was wrong (``invalid JSON: ...``, ``no tool name``, ...)."""
    snippet: str
    """The start of the offending text (at most 200 characters)."""


@dataclass(frozen=True)
class ModelRequest:
    """Everything that determines a model's answer (and so the cache key)."""

    messages: tuple[dict[str, Any], ...]
    """OpenAI-format chat history (system, user, assistant with tool_calls, tool)."""
    tools: tuple[HasToolFields, ...] = ()
    """Tool specs this turn."""
    mode: CallingMode = "native"
    """``native``: tools in the request's tools field; ``prompted``: rendered into the system prompt."""
    prompt_format: str = "hermes"
    """Format used to render tools in ``prompted`` mode."""
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0
    repeat_penalty: float | None = None
    """llama.cpp's repeat penalty (local servers); None: not sent, the engine's default applies."""
    stop_on_repeated_call: int | None = None
    """End the answer when its text holds one complete call this many times (bench.models.repeats): streamed,
    cut there, and the call run once; None: off, the answer runs to its own end or ``max_tokens``."""


@dataclass(frozen=True)
class Usage:
    """Token counts of one model call, as the provider reports them."""

    prompt_tokens: int | None = None
    """As reported by the provider."""
    completion_tokens: int | None = None
    """As reported by the provider."""
    cached_prompt_tokens: int | None = None
    """Prompt tokens served from the provider's cache, where it reports them."""
    server_cache_n: int | None = None
    """llama-server only (its ``timings.cache_n``): prompt tokens the request took from its slot's KV cache;
    None where the server did not say."""
    server_prompt_n: int | None = None
    """llama-server only (its ``timings.prompt_n``): prompt tokens it computed for the request; None likewise."""


@dataclass(frozen=True)
class ModelTurn:
    """One model call's outcome."""

    text: str
    """Assistant text (with any tool-call markup the parser consumed still in it)."""
    tool_calls: tuple[ParsedCall, ...] = ()
    """Tool calls, native or parsed from text."""
    parse_failures: tuple[ParseFailure, ...] = ()
    """Text that claimed a tool call but could not be parsed."""
    parse_format: str | None = None
    """Which text format the lenient parser found calls in (None for native tool_calls or none)."""
    usage: Usage = field(default_factory=Usage)
    request_bytes: int = 0
    """UTF-8 length of the JSON request body sent."""
    request_bytes_source: str = "wire"
    """``wire`` (measured on the HTTP request) or ``estimated`` (compact JSON of the body LiteLLM built)."""
    latency_s: float = 0.0
    """Wall time of the call (the original call's, for a cache hit)."""
    cost_usd: float = 0.0
    """From LiteLLM's local price map; 0 for local models."""
    finish_reason: str | None = None
    cache_hit: bool = False
    """Served from surfbench's on-disk response cache."""
    request_hash: str = ""
    """Hash of the request (the cache key)."""
    slot: int | None = None
    """llama-server only: the slot the request ran on (the ``id_slot`` its response names, else the slot the
    request was pinned to, which the server keeps: it defers a pinned request rather than move it); None where
    neither says (one slot, or another engine)."""


class ModelClient(Protocol):
    """Anything that answers a request with a turn: the one interface the episode loop calls a model by.

    :class:`surfbench.bench.models.client.LiteLLMClient` (local and hosted models) and the scripted clients of
    :mod:`surfbench.bench.models.scripted` implement it. Its optional parts are runtime-checkable protocols
    (:class:`Gated` here, :class:`surfbench.bench.models.server_slots.Slotted` beside the slot pool): the run
    stage asks ``isinstance(client, Protocol)``, never ``getattr`` with a default.
    """

    def complete(self, request: ModelRequest) -> ModelTurn:
        """One model call: the turn the model answers ``request`` with."""
        ...


@runtime_checkable
class Gated(Protocol):
    """A client whose calls to its endpoint pass an admission gate (bench.base.concurrency.EndpointGate).

    Implemented by :class:`surfbench.bench.models.client.LiteLLMClient` (local and hosted models), whose gate
    admits one call at a time until widened, halves its limit on bursts of 429s and keeps the rpm / tpm budgets.
    Before a cell's episodes run, the run stage widens the gate to the cell's concurrency (bench.run.runner.run_cell),
    so the endpoint admits as many calls as episodes run; a client without one (the scripted clients) is called as
    it is.
    """

    @property
    def gate(self) -> EndpointGate: ...
