"""Model configs (``configs/model/*.yaml``) and the pool that turns them into running clients.

``provider: local`` is an embedded GGUF on surfbench's own llama.cpp server (started on first use,
reused for the whole run, stopped at the end); ``provider: litellm`` is any LiteLLM model string;
``provider: scripted`` the oracle of tests. Each is a registered factory (bench.models.providers, found
through bench.contracts.plugins like any other provider an installed package adds).
"""

from __future__ import annotations

from collections.abc import Mapping

from surfbench.bench.base.config import ConfigError, read_group_config, shown
from surfbench.bench.base.secrets import register_url_passwords
from surfbench.bench.models.cache import ResponseCache
from surfbench.bench.models.client import ModelError
from surfbench.bench.models.config_schema import Where, checked
from surfbench.bench.models.local import ModelUnavailable
from surfbench.bench.models.providers import provider, refuse_unread
from surfbench.bench.models.server import LocalServer, ServerError
from surfbench.bench.models.spec import MODEL_KEYS, TOKENIZERS, ModelConfig
from surfbench.bench.models.types import ModelClient

__all__ = [
    "ModelClient",
    "ModelConfig",
    "ModelError",
    "ModelPool",
    "ModelUnavailable",
    "ServerError",
    "model_config",
]


def model_config(name: str, data: Mapping[str, object] | None = None) -> ModelConfig:
    """The model config ``name``: from ``configs/model/<name>.yaml``, or ``data`` as Hydra composed it.

    Every field is checked against its type and range (bench.models.config_schema) before the config exists;
    a value that differs from the file's is named as the override it came from (``model.max_tokens=abc``).
    A field the provider does not read (another provider's, bench.models.provider_settings) is refused unless
    it keeps its default.
    """
    shipped: dict[str, object] | None = None
    if data is None:
        data = shipped = read_group_config("model", name)
    where = f"configs/model/{name}.yaml"
    data = {k: v for k, v in data.items() if k != "name"}
    # a password in the file's api_base is as secret as one given as an override (which session.py registers)
    register_url_passwords(str(data.get("api_base") or ""), "model.api_base")
    unknown = set(data) - MODEL_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: {sorted(MODEL_KEYS)}")
    if shipped is None:
        shipped = _file_data(name)

    def origin(key: str, value: object) -> str:
        if shipped is not None and (key not in shipped or shipped[key] != value):
            return f"model.{key}={shown(value)} (model {name})"
        return f"{where}: {key}={value!r}"

    cfg = ModelConfig(**{"name": name, **checked(ModelConfig, data, origin)})
    provider(cfg.provider).check(cfg, where)  # the fields this provider needs
    if cfg.tokenizer == "gguf" and cfg.provider != "local":
        raise ConfigError(
            f"{origin('tokenizer', 'gguf')}: a model's own vocabulary is known for local models only; "
            f"use one of {', '.join(t for t in TOKENIZERS if t != 'gguf')}"
        )
    if cfg.repeat_penalty is not None and cfg.provider != "local":
        raise ConfigError(
            f"{origin('repeat_penalty', cfg.repeat_penalty)}: llama.cpp's sampling field, for local models only "
            "(hosted APIs refuse it; they have presence_penalty and frequency_penalty instead)"
        )
    openai_compatible = cfg.provider == "litellm" and bool(cfg.api_base) and str(cfg.model or "").startswith("openai/")
    if cfg.stop_on_repeated_call is not None and not (cfg.provider == "local" or openai_compatible):
        raise ConfigError(
            f"{origin('stop_on_repeated_call', cfg.stop_on_repeated_call)}: the answer is streamed from an "
            "OpenAI-compatible endpoint and cut there: local models, or `model: openai/NAME` with an api_base"
        )
    # the shipped stop is a default for prompted mode on llama-server: off where it cannot work (stop_in_step); one
    # asked for there (an override, or a file that also sets that mode or engine) is refused
    refused = cfg.stop_refused(cfg.mode, shipped)
    if refused:
        hint = " (mode: prompted)" if cfg.mode != "prompted" else ""
        raise ConfigError(f"{origin('stop_on_repeated_call', cfg.stop_on_repeated_call)}: {refused}{hint}")
    if cfg.flash_attn != "off" and (cfg.provider != "local" or cfg.server != "llama-server"):
        raise ConfigError(
            f"{origin('flash_attn', cfg.flash_attn)}: llama-server's `--flash-attn`, for local models on "
            "`server: llama-server` only"
        )
    if cfg.n_parallel > 1 and (cfg.provider != "local" or cfg.n_parallel > cfg.threads):
        raise ConfigError(
            f"{origin('n_parallel', cfg.n_parallel)}: local models only, at most threads={cfg.threads} "
            "(each server needs a thread of its own)"
        )
    # any other field the provider does not read, set away from its default (bench.models.provider_settings)
    refuse_unread(cfg, origin)
    _check_window(cfg, origin)
    if cfg.cache_profiles:  # the cache model's numbers (bench.models.cache_profiles), checked before any run
        from surfbench.bench.models.cache_profiles import check_overrides

        check_overrides(cfg.cache_profiles, origin("cache_profiles", cfg.cache_profiles))
    return cfg


def _file_data(name: str) -> dict[str, object] | None:
    """The model config file ``name`` as written, or None (a config passed as data only)."""
    try:
        return read_group_config("model", name)
    except ConfigError:
        return None


def _check_window(cfg: ModelConfig, origin: Where) -> None:
    """The ``limits`` block is well formed, and ``max_tokens`` leaves room for a prompt in the context window."""
    from surfbench.bench.catalog.provider_limits import model_limits

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
        self._cache = cache
        self.servers: dict[str, LocalServer] = {}
        self.clients: dict[str, ModelClient] = {}

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache its clients share, set when the pool is made (None: none)."""
        return self._cache

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
        from surfbench.bench.models.server import stop_servers

        # all signalled first, then one wait; a ServerGroup (n_parallel > 1) stands in this dict for its members
        stop_servers(m for s in self.servers.values() for m in getattr(s, "members", (s,)))
        self.servers.clear()
        self.clients.clear()

    def __enter__(self) -> ModelPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
