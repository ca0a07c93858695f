"""Model providers: what a model config's ``provider:`` names, one registered factory each.

A provider checks the fields it needs when the config is read (:attr:`Provider.check`) and turns the
config into a client on first use (:attr:`Provider.client`). The built-in ones, ``local`` (an embedded
GGUF on surfbench's own llama.cpp server), ``litellm`` (any LiteLLM model string) and ``scripted`` (the
oracle that replays a suite's reference calls: tests and ``surfbench check``), are found through the
plugin registry like any other (:mod:`surfbench.bench.contracts.plugins`, kind ``providers``); another package adds
one with an entry point in the group ``surfbench.providers`` naming a :class:`Provider`, or a factory
``fn(cfg, pool) -> ModelClient``; ``plugins.register("providers", name, provider)`` adds one in-process.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.paths import cache_root
from surfbench.bench.base.secrets import register as register_secret
from surfbench.bench.base.secrets import register_url_passwords
from surfbench.bench.contracts import plugins
from surfbench.bench.models.client import LiteLLMClient, ModelError
from surfbench.bench.models.local import ModelUnavailable, embedded, require
from surfbench.bench.models.prefix_store import PrefixStore
from surfbench.bench.models.server import LocalServer, ServerGroup, ServerSettings
from surfbench.bench.models.spec import ModelConfig
from surfbench.bench.models.types import ModelClient

if TYPE_CHECKING:
    from surfbench.bench.models.cache import ResponseCache


class PoolView(Protocol):
    """What a factory uses of the pool asking it (:class:`surfbench.bench.models.ModelPool`)."""

    servers: dict[str, LocalServer]

    @property
    def cache(self) -> ResponseCache | None:
        """The response cache the pool was made with (None: none)."""


Factory = Callable[["ModelConfig", "PoolView"], ModelClient]


def _nothing_to_check(cfg: ModelConfig, where: str) -> None:
    return None


@dataclass(frozen=True)
class Provider:
    """A model provider: ``check(cfg, where)`` when the config is read, ``client(cfg, pool)`` on first use."""

    name: str
    client: Factory
    check: Callable[[ModelConfig, str], None] = _nothing_to_check
    """Raises a one-line ConfigError naming ``where`` (the config file) for a field the provider needs."""


def provider(name: str) -> Provider:
    """The provider registered as ``name`` (a bare factory is wrapped); UnknownPlugin with the close names."""
    found: Any = plugins.lookup("providers", name)
    return found if isinstance(found, Provider) else Provider(name, found)


def _check_local(cfg: ModelConfig, where: str) -> None:
    if not cfg.embedded:
        raise ConfigError(f"{where}: provider 'local' needs 'embedded' (one of `surfbench models`)")
    try:
        embedded(cfg.embedded)
    except ModelUnavailable as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _local(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """A client of surfbench's own llama.cpp server (started on the first request, revived if it dies)."""
    assert cfg.embedded is not None
    weights = embedded(cfg.embedded)
    identity = f"{weights.sha256}|ctx={cfg.n_ctx}|fmt={cfg.chat_format}" + _engine_identity(cfg)
    store = _prefix_store(cfg, identity)
    settings = ServerSettings(
        require(cfg.embedded), cfg.name, cfg.n_ctx, cfg.threads, cfg.chat_format, engine=cfg.server, slots=cfg.slots,
        omp_spincount=cfg.omp_spincount, flash_attn=cfg.flash_attn,
        slot_save_path=store.folder if store is not None else None,
    )  # fmt: skip
    if cfg.n_parallel > 1:
        return _group_client(cfg, pool, ServerGroup(settings, cfg.n_parallel))
    server = LocalServer(settings)
    pool.servers[cfg.name] = server

    def start() -> str:
        server.start()
        return server.api_base

    def revive() -> str | None:
        """Restart the server if its process is gone; None if it is alive (a real failure)."""
        if server.alive():
            return None
        how = server.death()
        server.restart()
        print(
            f"surfbench: the {cfg.name} server had died ({how}); restarted at {server.api_base}",
            file=sys.stderr,
            flush=True,
        )
        return server.api_base

    return LiteLLMClient(
        f"openai/{cfg.name}",
        api_key="sk-local",
        cache=pool.cache,
        is_local=True,
        start=start,
        revive=revive,
        identity=identity,
        slots=cfg.slots if cfg.server == "llama-server" else 1,  # episodes keep a slot each (bench.models.server_slots)
        prefix_store=store,
    )


def _prefix_store(cfg: ModelConfig, identity: str) -> PrefixStore | None:
    """Where ``keep_prefix`` keeps this model's saved slots (one server, one slot, llama-server); else None."""
    if not cfg.keep_prefix or cfg.server != "llama-server" or cfg.slots > 1 or cfg.n_parallel > 1:
        return None
    folder = cache_root() / "slots" / hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return PrefixStore(folder, identity)


def _engine_identity(cfg: ModelConfig) -> str:
    """The engine's part of a local model's identity: empty for llama-cpp-python (older runs keep their keys)."""
    if cfg.server == "llama-cpp-python":
        return ""
    slots = f"|slots={cfg.slots}" if cfg.slots > 1 else ""
    return f"|server={cfg.server}{slots}" + (f"|fa={cfg.flash_attn}" if cfg.flash_attn != "off" else "")


def _group_client(cfg: ModelConfig, pool: PoolView, group: ServerGroup) -> ModelClient:
    """The client of a local model with ``n_parallel`` servers (each call to a free one)."""
    assert cfg.embedded is not None
    pool.servers[cfg.name] = group  # type: ignore[assignment]  # same start/stop/api_base/pid surface

    def revive() -> list[str] | None:
        bases = group.revive()
        if bases is not None:
            print(f"surfbench: a {cfg.name} server had died; restarted", file=sys.stderr, flush=True)
        return bases

    return LiteLLMClient(
        f"openai/{cfg.name}", api_key="sk-local", cache=pool.cache, is_local=True,
        start=lambda: group.start().api_bases, revive=revive,
        identity=f"{embedded(cfg.embedded).sha256}|ctx={cfg.n_ctx}|fmt={cfg.chat_format}|slots={cfg.n_parallel}",
    )  # fmt: skip


def _check_litellm(cfg: ModelConfig, where: str) -> None:
    if not cfg.model:
        raise ConfigError(f"{where}: provider 'litellm' needs 'model' (a LiteLLM model string)")


def _litellm(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """A LiteLLM client of a hosted model or a server of your own (``api_base``), within its rpm/tpm budget."""
    key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
    if cfg.api_key_env and not key:
        raise ModelError(f"model {cfg.name!r} needs the environment variable {cfg.api_key_env} (its API key)")
    register_secret(key, cfg.api_key_env or "api key")
    register_url_passwords(cfg.api_base or "", "model.api_base")  # however the config arrived (file, override, Python)
    if key is None and cfg.api_base:  # a server of your own (vLLM, llama.cpp) needs no key; openai's
        key = "sk-no-key"  # client insists on one. A server that does want one answers 401: clear error.
    assert cfg.model is not None
    from surfbench.bench.base.concurrency import EndpointGate

    return LiteLLMClient(
        cfg.model, api_base=cfg.api_base, api_key=key, cache=pool.cache,
        gate=EndpointGate(1, cfg.rpm, cfg.tpm), cache_control=cfg.cache_control,
    )  # fmt: skip


def _scripted(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """The oracle: replays the reference calls of ``script_suite`` (never a measurement)."""
    from surfbench.bench.models.scripted import OracleClient

    return OracleClient(cfg.script_suite or "forge", cfg.script_delay_s)


LOCAL = Provider("local", _local, _check_local)
LITELLM = Provider("litellm", _litellm, _check_litellm)
SCRIPTED = Provider("scripted", _scripted)
