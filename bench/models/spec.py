"""What a model config (``configs/model/*.yaml``) holds: :class:`ModelConfig`, each field typed and ranged.

Its own module, below the providers (:mod:`surfbench.bench.models.providers`, which take a config) and
the pool (:mod:`surfbench.bench.models`, which asks a provider for a client): neither imports the other
to know what a config is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from surfbench.bench.base.concurrency import MAX_CONCURRENCY
from surfbench.bench.models.config_schema import one_of, ranged, registered
from surfbench.bench.models.prompting import FORMATS
from surfbench.bench.models.types import CallingMode, ModelRequest

OMP_SPINCOUNT = 1000
"""Default ``GOMP_SPINCOUNT`` of a local server: spin about as long as libgomp does when oversubscribed."""
FLASH_ATTN = ("off", "on", "auto")
"""Values of llama-server's ``--flash-attn`` (``flash_attn``)."""
TOKENIZERS = ("gguf", "o200k_base", "cl100k_base")
"""``gguf``: a local model's own vocabulary; the others: the tiktoken encodings LiteLLM's wheel ships."""
MAX_TOKENS_MAX = 262_144
"""Answer tokens per call at most: twice the largest output limit hosted APIs offer today (128K)."""
N_CTX_MAX = 16_777_216
"""Context tokens at most: past the largest context window any model offers (10M)."""
SEED_MAX = 2**31 - 1
"""Seeds fit every provider's 32-bit field and never reach llama.cpp's "random seed" value (2**32 - 1)."""


@dataclass(frozen=True)
class ModelConfig:
    """One entry of ``configs/model/``; each field's type and range is checked by bench.models.config_schema.

    Flat, but each field is either read for every provider or owned by the providers that read it
    (bench.models.provider_settings): a new field is placed there, and a config setting a field its provider does
    not read is refused (``model_config``).
    """

    name: str
    provider: str = registered("local", "providers")
    """A registered provider (bench.contracts.plugins): ``local`` (embedded GGUF on the llama.cpp server), ``litellm``
    (any LiteLLM provider), ``scripted`` (tests), or one an installed package adds."""
    embedded: str | None = None
    """For ``local``: the embedded model (see ``surfbench models``)."""
    model: str | None = None
    """For ``litellm``: the LiteLLM model string, e.g. ``openai/gpt-4o-mini``."""
    api_base: str | None = None
    api_key_env: str | None = None
    """Environment variable holding the key (the value is never written anywhere)."""
    params_b: float | None = ranged(None, 0, 100_000, null="size unknown")
    """Parameter count in billions: the size axis of reports."""
    n_ctx: int = ranged(16384, 1, N_CTX_MAX)
    threads: int = ranged(2, 1, 1024)
    chat_format: str | None = None
    mode: CallingMode = "native"
    prompt_format: str = one_of("hermes", FORMATS)
    tokenizer: str = one_of("o200k_base", TOKENIZERS)
    """How to count this model's tokens: ``gguf`` (its own vocabulary) or a tiktoken encoding."""
    temperature: float = ranged(0.0, 0, 2)
    """0 to 2, the range OpenAI-compatible APIs accept."""
    max_tokens: int = ranged(512, 1, MAX_TOKENS_MAX)
    """Below the context window too (the answer must fit beside the prompt): checked in model_config."""
    seed: int | None = ranged(0, 0, SEED_MAX, null="no seed")
    omp_spincount: int | None = ranged(OMP_SPINCOUNT, 0, 10**9, null="the environment's, else GCC's 300,000")
    """For ``local``: how long a server thread spins at a barrier before it sleeps (``GOMP_SPINCOUNT``; both
    engines' builds link GCC's OpenMP). 1,000 keeps a busy machine usable: with GCC's default a single competing
    process slowed generation 60x (docs/models.md, threads and a busy machine)."""
    repeat_penalty: float | None = ranged(None, 0, 10, null="the engine's own default")
    """For ``local``: llama.cpp's repeat penalty, sent with every request; None sends nothing, so each engine
    uses its own default (llama-cpp-python's server 1.1, llama-server 1.0: docs/models.md)."""
    stop_on_repeated_call: int | None = ranged(None, 2, 1000, null="off")
    """End an answer as soon as its text holds one complete call this many times (bench.models.repeats): the
    answer is streamed from the endpoint and the connection closed there, and the repeated call runs once.
    Prompted mode on an endpoint with an ``api_base`` (local models, OpenAI-compatible servers); off in a cell run
    in native mode (``stop_in_step``); None: off. Part of the cell's identity and of the response cache's key when
    on (docs/metrics.md)."""
    keep_prefix: bool = False
    """For ``local`` on ``llama-server`` with one slot and one process: save the slot's KV cache after a request that
    computed a long prompt, and restore it when a later server starts, so that a resumed run or another session
    skips computing the same tool block again (bench.models.prefix_store; files under the cache folder's
    ``slots/``). The restored prefix is what the server would have computed: not part of the identity."""
    description: str = ""
    script_suite: str | None = None
    """For ``provider: scripted`` (tests only): the suite whose reference calls it replays."""
    script_delay_s: float = ranged(0.0, 0, 60)
    concurrency: int = ranged(1, 1, MAX_CONCURRENCY)
    """Episodes of a cell in flight at once against this endpoint unless the run sets ``concurrency=N``."""
    rpm: int | None = ranged(None, 1, 1_000_000, null="no budget")
    """Requests per minute this endpoint allows (calls wait for room); None: no budget."""
    tpm: int | None = ranged(None, 1, 10_000_000_000, null="no budget")
    """Tokens per minute (prompt estimate + max_tokens) this endpoint allows; None: no budget."""
    cache_control: str | None = one_of(None, ("tools",), null="no breakpoint")
    """``tools``: an Anthropic prompt-cache breakpoint after the tool block (native mode); None: none."""
    server: str = one_of("llama-server", ("llama-cpp-python", "llama-server"))
    """For ``local``: the engine, ``llama-server`` (the default: llama.cpp's own, slots, per-request cache
    counts) or ``llama-cpp-python`` (one request at a time, the engine of runs before 2026-12-03);
    docs/models.md."""
    flash_attn: str = one_of("off", FLASH_ATTN)
    """For ``local`` on ``llama-server``: ``--flash-attn``. Off by default: on 2 cores it prefilled a 10k-token
    prompt 1.4-1.6x faster but generated short-context answers faster in one round and slower in another
    (docs/models.md); it computes attention in another order, so a setting other than ``off`` is part of the
    cell's identity and of the response cache's key."""
    slots: int = ranged(1, 1, 64)
    """For ``local`` on ``llama-server``: sequences decoded together in one process (``--parallel``); pair it
    with ``concurrency`` (episodes in flight)."""
    n_parallel: int = ranged(1, 1, None)
    """For ``local``: llama.cpp server processes (slots), ``threads // n_parallel`` threads each; calls go
    to a free one. Helps only with cores to spare (docs/models.md); pair it with ``concurrency``."""
    limits: dict[str, Any] = field(default_factory=dict)
    """The provider's limits: ``max_tools``, ``name_pattern``, ``context_window`` (bench.catalog.provider_limits)."""
    cache_profiles: dict[str, Any] = field(default_factory=dict)
    """Overrides of the prompt-cache profiles' numbers for this model (bench.models.cache_profiles), e.g.
    ``{anthropic: {min_tokens: 2048}}``; read by the cache model of the report and the gate."""
    extra: dict[str, Any] = field(default_factory=dict)

    def stop_in_step(self, mode: str) -> int | None:
        """The stop inside a step for a cell in ``mode``: ``stop_on_repeated_call`` where it can work, else None.

        Off in native mode (a native call arrives as structured deltas, no text to read) and on a local model served
        by ``llama-cpp-python`` (its streamed answers carry no token counts), so a shipped config with the stop on
        runs ``mode=native`` or ``model.server=llama-cpp-python`` with it off and without it in the cell's identity.
        """
        if mode != "prompted" or (self.provider == "local" and self.server != "llama-server"):
            return None
        return self.stop_on_repeated_call

    def stop_refused(self, mode: str, shipped: Mapping[str, object] | None) -> str | None:
        """Why the stop this config asks for cannot work for a cell in ``mode``, or None (it works, or it is off).

        The stop a config file ships for prompted mode on llama-server is a default: where it cannot work
        (:meth:`stop_in_step`) it is off without a word. A stop asked for anywhere else (an override, a config
        passed as data, a file that also sets another mode or engine) is refused with the reason returned here;
        ``shipped``: the model's config file as shipped (None: there is none).
        """
        stop = self.stop_on_repeated_call
        if stop is None or self.stop_in_step(mode) is not None:
            return None
        file = shipped or {}
        if (
            file.get("stop_on_repeated_call") == stop
            and file.get("mode", "native") == "prompted"
            and file.get("server", "llama-server") == "llama-server"
        ):
            return None
        if mode != "prompted":
            return "the stop reads calls written as text: prompted mode only"
        return (
            f"a local model's stop needs server: llama-server ({self.server}'s streamed answers carry no token counts)"
        )

    def request(self, mode: str) -> ModelRequest:
        """What every call of a cell in ``mode`` asks of this model besides its messages and tools (none yet here).

        The calling mode, the prompt format, the sampling settings and the stop inside a step (:meth:`stop_in_step`).
        """
        return ModelRequest(
            messages=(),
            mode="prompted" if mode == "prompted" else "native",
            prompt_format=self.prompt_format,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
            repeat_penalty=self.repeat_penalty,
            stop_on_repeated_call=self.stop_in_step(mode),
        )


MODEL_KEYS = frozenset(f.name for f in fields(ModelConfig)) - {"extra"}
"""The keys a model config (file or override) may set: every field of :class:`ModelConfig` but ``extra``, which is
set from Python only (a plugin's own settings)."""
