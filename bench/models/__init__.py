"""Model configs (``configs/model/*.yaml``) and the pool that turns them into running clients.

``provider: local`` is an embedded GGUF on surfbench's own llama.cpp server (started on first use,
reused for the whole run, stopped at the end); ``provider: litellm`` is any LiteLLM model string;
``provider: scripted`` the oracle of tests. Each is a registered factory (bench.models.providers, found
through bench.plugins like any other provider an installed package adds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.concurrency import MAX_CONCURRENCY
from surfbench.bench.config import ConfigError, read_group_config
from surfbench.bench.models.cache import ResponseCache
from surfbench.bench.models.client import ModelError
from surfbench.bench.models.local import ModelUnavailable
from surfbench.bench.models.prompting import FORMATS
from surfbench.bench.models.providers import provider
from surfbench.bench.models.schema import checked, one_of, ranged, registered
from surfbench.bench.models.server import LocalServer, ServerError
from surfbench.bench.models.types import CallingMode, ModelClient

__all__ = [
    "ModelClient",
    "ModelConfig",
    "ModelError",
    "ModelPool",
    "ModelUnavailable",
    "ServerError",
    "model_config",
]


MODEL_KEYS = {
    "name", "provider", "embedded", "model", "api_base", "api_key_env", "params_b", "n_ctx", "threads",
    "chat_format", "mode", "prompt_format", "tokenizer", "temperature", "max_tokens", "seed", "description",
    "script_suite", "script_delay_s", "concurrency", "rpm", "tpm", "cache_control", "limits", "n_parallel",
}  # fmt: skip


TOKENIZERS = ("gguf", "o200k_base", "cl100k_base")
"""``gguf``: a local model's own vocabulary; the others: the tiktoken encodings LiteLLM's wheel ships (bench.wire)."""
MAX_TOKENS_MAX = 262_144
"""Answer tokens per call at most: twice the largest output limit hosted APIs offer today (128K)."""
N_CTX_MAX = 16_777_216
"""Context tokens at most: past the largest context window any model offers (10M)."""
SEED_MAX = 2**31 - 1
"""Seeds fit every provider's 32-bit field and never reach llama.cpp's "random seed" value (2**32 - 1)."""


@dataclass(frozen=True)
class ModelConfig:
    """One entry of ``configs/model/``; each field's type and range is checked by bench.models.schema."""

    name: str
    provider: str = registered("local", "providers")
    """A registered provider (bench.plugins): ``local`` (embedded GGUF on the llama.cpp server), ``litellm``
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
    n_parallel: int = ranged(1, 1, None)
    """For ``local``: llama.cpp server processes (slots), ``threads // n_parallel`` threads each; calls go
    to a free one. Helps only with cores to spare (docs/models.md); pair it with ``concurrency``."""
    limits: dict[str, Any] = field(default_factory=dict)
    """The provider's limits: ``max_tools``, ``name_pattern``, ``context_window`` (bench.limits)."""
    extra: dict[str, Any] = field(default_factory=dict)


def model_config(name: str, data: dict[str, Any] | None = None) -> ModelConfig:
    """The model config ``name``: from ``configs/model/<name>.yaml``, or ``data`` as Hydra composed it.

    Every field is checked against its type and range (bench.models.schema) before the config exists;
    a value that differs from the file's is named as the override it came from (``model.max_tokens=abc``).
    """
    shipped: dict[str, Any] | None = None
    if data is None:
        data = shipped = read_group_config("model", name)
    where = f"configs/model/{name}.yaml"
    data = {k: v for k, v in data.items() if k != "name"}
    unknown = set(data) - MODEL_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(MODEL_KEYS)}")
    if shipped is None:
        shipped = _file_data(name)

    def origin(key: str, value: Any) -> str:
        if shipped is not None and (key not in shipped or shipped[key] != value):
            from surfbench.bench.overrides import shown

            return f"model.{key}={shown(value)} (model {name})"
        return f"{where}: {key}={value!r}"

    cfg = ModelConfig(**{"name": name, **checked(ModelConfig, data, origin)})
    provider(cfg.provider).check(cfg, where)  # the fields this provider needs
    if cfg.tokenizer == "gguf" and cfg.provider != "local":
        raise ConfigError(
            f"{origin('tokenizer', 'gguf')}: a model's own vocabulary is known for local models only; "
            f"use one of {', '.join(t for t in TOKENIZERS if t != 'gguf')}"
        )
    if cfg.n_parallel > 1 and (cfg.provider != "local" or cfg.n_parallel > cfg.threads):
        raise ConfigError(
            f"{where}: n_parallel={cfg.n_parallel}: local models only, at most threads={cfg.threads} "
            "(each server needs a thread of its own)"
        )
    _check_window(cfg, origin)
    return cfg


def _file_data(name: str) -> dict[str, Any] | None:
    """The model config file ``name`` as written, or None (a config passed as data only)."""
    try:
        return read_group_config("model", name)
    except ConfigError:
        return None


def _check_window(cfg: ModelConfig, origin: Any) -> None:
    """The ``limits`` block is well formed, and ``max_tokens`` leaves room for a prompt in the context window."""
    from surfbench.bench.limits import model_limits

    try:
        window = model_limits(cfg).context_window
    except ValueError as exc:  # limits_from names the config and the key
        raise ConfigError(str(exc)) from None
    if window is not None and cfg.max_tokens >= window:
        own = cfg.provider == "local" and not cfg.limits.get("context_window")
        source = "n_ctx" if own else "limits.context_window"
        raise ConfigError(
            f"{origin('max_tokens', cfg.max_tokens)}: must be below the context window ({source}={window}): "
            "the answer is reserved beside the prompt, so no request could fit"
        )


class ModelPool:
    """Clients for a run; local servers start on first use and stop with the pool."""

    def __init__(self, cache: ResponseCache | None) -> None:
        self.cache = cache
        self.servers: dict[str, LocalServer] = {}
        self.clients: dict[str, ModelClient] = {}

    def client(self, cfg: ModelConfig) -> ModelClient:
        """The client for ``cfg``, made on first use (a local model's server starts on its first request)."""
        if cfg.name in self.clients:
            return self.clients[cfg.name]
        client = provider(cfg.provider).client(cfg, self)  # scripted, local, litellm or a plugin's, alike
        self.clients[cfg.name] = client
        return client

    def server(self, name: str) -> LocalServer | None:
        """The local server of model config ``name``, if the pool started one."""
        return self.servers.get(name)

    def close(self) -> None:
        """Stop every local server and forget the clients."""
        for server in self.servers.values():
            server.stop()
        self.servers.clear()
        self.clients.clear()

    def __enter__(self) -> ModelPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
