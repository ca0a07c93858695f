"""Model providers: what a model config's ``provider:`` names, one registered factory each.

A provider checks the fields it needs when the config is read (:attr:`Provider.check`), declares the fields
it reads besides the common ones (:attr:`Provider.settings`, a dataclass of bench.models.provider_settings, which is
also its typed view of a config: a field another provider reads is refused, :func:`refuse_unread`) and turns the
config into a client on first use (:attr:`Provider.client`). The built-in ones, ``local`` (an embedded
GGUF on surfbench's own llama.cpp server), ``litellm`` (any LiteLLM model string) and ``scripted`` (the
oracle that replays a suite's reference calls: tests and ``surfbench check``), are found through the
plugin registry like any other (:mod:`surfbench.bench.contracts.plugins`, kind ``providers``); another package adds
one with an entry point in the group ``surfbench.providers`` naming a :class:`Provider`, or a factory
``fn(cfg, pool) -> ModelClient``; ``plugins.register("providers", name, provider)`` adds one in-process.
"""

from __future__ import annotations

import dataclasses
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
from surfbench.bench.models.provider_settings import (
    COMMON_FIELDS,
    LiteLLMSettings,
    LocalSettings,
    ScriptedSettings,
    owned,
    view,
)
from surfbench.bench.models.server import LocalServer, ServerGroup
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
    settings: type[Any] | None = None
    """The dataclass of the ModelConfig fields it reads besides the common ones (bench.models.provider_settings),
    by the same names: its declaration, and its typed view of a config (``view(settings, cfg)``). None: it
    declares nothing (a plugin's provider, a bare factory), and a config of it may set any field."""

    @property
    def owns(self) -> frozenset[str] | None:
        """The fields it reads besides the common ones; None when it declares none (every field accepted)."""
        return owned(self.settings)


def provider(name: str) -> Provider:
    """The provider registered as ``name`` (a bare factory is wrapped); UnknownPlugin with the close names."""
    found: Any = plugins.lookup("providers", name)
    return found if isinstance(found, Provider) else Provider(name, found)


def refuse_unread(cfg: ModelConfig, origin: Callable[[str, object], str]) -> None:
    """A ConfigError for the first field the config's provider does not read, set away from its default.

    ``model.threads=4 (model m): read by provider local only; provider litellm ignores it: drop it``. The
    readers named are the built-in providers (:data:`BUILT_IN`) that declare the field; a provider that
    declares nothing (``settings`` None) is refused nothing.
    """
    reads = provider(cfg.provider).owns
    if reads is None:
        return
    for f in dataclasses.fields(ModelConfig):
        if f.name in COMMON_FIELDS or f.name in reads or f.default is dataclasses.MISSING:
            continue  # a field without a plain default (limits, cache_profiles, extra) is a common one
        value = getattr(cfg, f.name)
        if value == f.default:
            continue
        readers = [p.name for p in BUILT_IN if f.name in (p.owns or ())]
        by = f"provider {readers[0]} only" if len(readers) == 1 else f"providers {', '.join(readers)}"
        raise ConfigError(f"{origin(f.name, value)}: read by {by}; provider {cfg.provider} ignores it: drop it")


def _check_local(cfg: ModelConfig, where: str) -> None:
    if not cfg.embedded:
        raise ConfigError(f"{where}: provider 'local' needs 'embedded' (one of `surfbench models`)")
    try:
        embedded(cfg.embedded)
    except ModelUnavailable as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _local(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """A client of surfbench's own llama.cpp server (started on the first request, revived if it dies)."""
    own = view(LocalSettings, cfg)
    assert own.embedded is not None
    weights = embedded(own.embedded)
    identity = f"{weights.sha256}|ctx={own.n_ctx}|fmt={own.chat_format}" + own.engine_identity
    store = _prefix_store(own, identity)
    settings = own.server_settings(require(own.embedded), cfg.name, store.folder if store is not None else None)
    if own.n_parallel > 1:
        return _group_client(cfg.name, own, pool, ServerGroup(settings, own.n_parallel))
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
        slots=own.client_slots,  # episodes keep a slot each (bench.models.server_slots)
        prefix_store=store,
    )


def _prefix_store(own: LocalSettings, identity: str) -> PrefixStore | None:
    """Where ``keep_prefix`` keeps this model's saved slots (one server, one slot, llama-server); else None."""
    if not own.keep_prefix or own.server != "llama-server" or own.slots > 1 or own.n_parallel > 1:
        return None
    folder = cache_root() / "slots" / hashlib.sha256(identity.encode("utf-8")).hexdigest()[:16]
    return PrefixStore(folder, identity)


def _group_client(name: str, own: LocalSettings, pool: PoolView, group: ServerGroup) -> ModelClient:
    """The client of a local model with ``n_parallel`` servers (each call to a free one)."""
    assert own.embedded is not None
    pool.servers[name] = group  # type: ignore[assignment]  # same start/stop/api_base/pid surface

    def revive() -> list[str] | None:
        bases = group.revive()
        if bases is not None:
            print(f"surfbench: a {name} server had died; restarted", file=sys.stderr, flush=True)
        return bases

    return LiteLLMClient(
        f"openai/{name}", api_key="sk-local", cache=pool.cache, is_local=True,
        start=lambda: group.start().api_bases, revive=revive,
        identity=f"{embedded(own.embedded).sha256}|ctx={own.n_ctx}|fmt={own.chat_format}|slots={own.n_parallel}",
    )  # fmt: skip


def _check_litellm(cfg: ModelConfig, where: str) -> None:
    if not cfg.model:
        raise ConfigError(f"{where}: provider 'litellm' needs 'model' (a LiteLLM model string)")


def _litellm(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """A LiteLLM client of a hosted model or a server of your own (``api_base``), within its rpm/tpm budget."""
    own = view(LiteLLMSettings, cfg)
    key = os.environ.get(own.api_key_env) if own.api_key_env else None
    if own.api_key_env and not key:
        raise ModelError(f"model {cfg.name!r} needs the environment variable {own.api_key_env} (its API key)")
    register_secret(key, own.api_key_env or "api key")
    register_url_passwords(own.api_base or "", "model.api_base")  # however the config arrived (file, override, Python)
    if key is None and own.api_base:  # a server of your own (vLLM, llama.cpp) needs no key; openai's
        key = "sk-no-key"  # client insists on one. A server that does want one answers 401: clear error.
    assert own.model is not None
    from surfbench.bench.base.concurrency import EndpointGate

    return LiteLLMClient(
        own.model, api_base=own.api_base, api_key=key, cache=pool.cache,
        gate=EndpointGate(1, own.rpm, own.tpm), cache_control=own.cache_control,
    )  # fmt: skip


def _scripted(cfg: ModelConfig, pool: PoolView) -> ModelClient:
    """The oracle: replays the reference calls of ``script_suite`` (never a measurement)."""
    from surfbench.bench.models.scripted import OracleClient

    own = view(ScriptedSettings, cfg)
    return OracleClient(own.script_suite or "forge", own.script_delay_s)


LOCAL = Provider("local", _local, _check_local, LocalSettings)
LITELLM = Provider("litellm", _litellm, _check_litellm, LiteLLMSettings)
SCRIPTED = Provider("scripted", _scripted, settings=ScriptedSettings)
BUILT_IN = (LOCAL, LITELLM, SCRIPTED)
"""The providers this package ships (bench.contracts.plugins names them): each field of a config is common or theirs."""
