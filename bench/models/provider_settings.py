"""Which model config fields each provider reads: the common ones, and each built-in provider's own settings.

:class:`~surfbench.bench.models.spec.ModelConfig` is one flat record of every provider's fields (the YAML format
stays flat). The fields the harness reads whatever the provider (:data:`COMMON_FIELDS`: the request's sampling
settings, the calling mode, the cell's size axis, ...) are declared here once; every other field belongs to the
providers that read it, each declaring them as the fields of its settings dataclass (:class:`LocalSettings`,
:class:`LiteLLMSettings`, :class:`ScriptedSettings`, named by ``Provider.settings`` in
:mod:`surfbench.bench.models.providers`). That dataclass is also the provider's typed view of a config
(:func:`view`): its client is made from the view, not from every field of the config. A field two providers read
(``stop_on_repeated_call``) is in both. ``model_config`` refuses a field set away from its default in a config
whose provider does not read it (``providers.refuse_unread``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from surfbench.bench.models.server import ServerSettings
from surfbench.bench.models.spec import ModelConfig

COMMON_FIELDS = frozenset({
    "name", "provider", "mode", "prompt_format", "tokenizer", "temperature", "max_tokens", "seed", "description",
    "concurrency", "params_b", "limits", "cache_profiles", "extra",
})  # fmt: skip
"""Read for every provider: the request each call sends (mode, prompt format, temperature, max_tokens, seed), how its
tokens are counted, the cell's episodes in flight and size axis, the provider limits checked before a request, the
cache model's numbers, and ``extra`` (Python only, no YAML key: a plugin's own settings)."""

S = TypeVar("S")


def view(settings: type[S], cfg: ModelConfig) -> S:
    """``settings`` (a provider's settings dataclass) filled from the config's fields of the same names."""
    return settings(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(settings)})  # type: ignore[arg-type]


def owned(settings: type[Any] | None) -> frozenset[str] | None:
    """The fields a settings dataclass declares; None for None (a provider that declares nothing)."""
    return None if settings is None else frozenset(f.name for f in dataclasses.fields(settings))


@dataclass(frozen=True)
class LocalSettings:
    """What ``provider: local`` reads (ModelConfig documents each field): the weights, the engine and its server.

    ``repeat_penalty`` and ``stop_on_repeated_call`` reach the client in each request (``ModelConfig.request``);
    they are here because this provider reads them (the stop: with ``litellm``).
    """

    embedded: str | None
    n_ctx: int
    threads: int
    chat_format: str | None
    server: str
    slots: int
    n_parallel: int
    flash_attn: str
    omp_spincount: int | None
    keep_prefix: bool
    repeat_penalty: float | None
    stop_on_repeated_call: int | None

    def server_settings(self, model_path: Path, alias: str, slot_save_path: Path | None) -> ServerSettings:
        """The settings of the local server (one process; a ServerGroup splits its threads)."""
        return ServerSettings(
            model_path, alias, self.n_ctx, self.threads, self.chat_format, engine=self.server, slots=self.slots,
            omp_spincount=self.omp_spincount, flash_attn=self.flash_attn, slot_save_path=slot_save_path,
        )  # fmt: skip

    @property
    def client_slots(self) -> int:
        """Episodes that keep a llama-server slot each (bench.models.server_slots); 1 on llama-cpp-python."""
        return self.slots if self.server == "llama-server" else 1

    @property
    def engine_identity(self) -> str:
        """The engine's part of the client's identity: empty for llama-cpp-python (older runs keep their keys)."""
        if self.server == "llama-cpp-python":
            return ""
        slots = f"|slots={self.slots}" if self.slots > 1 else ""
        return f"|server={self.server}{slots}" + (f"|fa={self.flash_attn}" if self.flash_attn != "off" else "")


@dataclass(frozen=True)
class LiteLLMSettings:
    """What ``provider: litellm`` reads: the model string, the endpoint, its key and budgets, the cache breakpoint.

    ``stop_on_repeated_call`` reaches the client in each request; an OpenAI-compatible ``api_base`` only.
    """

    model: str | None
    api_base: str | None
    api_key_env: str | None
    rpm: int | None
    tpm: int | None
    cache_control: str | None
    stop_on_repeated_call: int | None


@dataclass(frozen=True)
class ScriptedSettings:
    """What ``provider: scripted`` (the oracle) reads: the suite it replays and a delay per call."""

    script_suite: str | None
    script_delay_s: float
