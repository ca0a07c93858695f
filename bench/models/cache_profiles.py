"""Prompt-cache profiles: how each provider would reuse a request's prefix, as small declared numbers.

The cache model (:mod:`surfbench.bench.promptcache.prompt_cache_model`) replays the token sequences a run sent under
each profile. A profile is a handful of documented numbers, each overridable per model config
(``cache_profiles: {anthropic: {min_tokens: 2048}}`` in ``configs/model/*.yaml``); docs/metrics.md cites the
sources. The four built-in ones:

- ``openai``: automatic prefix caching. Prompts of 1,024 tokens or more; hits in steps of 128 tokens; the longest
  cached prefix of any earlier request is served; an entry unused for 5 minutes is gone (OpenAI: "5 to 10 minutes
  of inactivity"; we take the short end). Writes are free. Priced as ``gpt-4o-mini``.
- ``anthropic``: explicit breakpoints, where surfbench places them: after the tool block and after the system
  text (Anthropic's order is tools, system, messages). A breakpoint's prefix is cached if it has 1,024 tokens or
  more (Sonnet 4.5); an entry lives 5 minutes from its last use; a write costs 1.25x the input price, a read 0.1x.
  Priced as ``claude-sonnet-4-5``.
- ``gemini``: implicit caching (Gemini 2.5 and newer): prompts of 2,048 tokens or more (Gemini 2.5 Flash, as
  the caching page's revision of 2026-10 lists it; earlier revisions said 1,024), any shared prefix, no write
  charge. Granularity and lifetime are not documented: token granularity and 5 minutes are assumptions. Priced as
  ``gemini/gemini-2.5-flash`` (a cached token at 10% of the input price in LiteLLM's map).
- ``local``: a llama.cpp server with one slot (``--parallel 1``, no ``--cache-reuse``, no RAM prompt cache):
  the reused prefix is the longest common prefix with the previous request on the slot, less one token when
  it is the whole prompt (the server evaluates at least one token). Nothing is billed: a reused token costs 0,
  and the effective input tokens are the tokens the server computes.

Prices come from LiteLLM's bundled map (:mod:`surfbench.bench.models.cost`, offline); ``read`` and ``write`` are the
multipliers used where the map has no cache price for the model.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from surfbench.bench.base.config import ConfigError

Style = Literal["prefix", "breakpoints", "slot"]
BREAKPOINTS = ("tools", "system", "last")
"""Where a breakpoint can sit: after the tool block, after the system text, after the whole prompt."""
ORDERS = ("tools_first", "system_first")


@dataclass(frozen=True)
class CacheProfile:
    """One provider's prompt-cache rules, as declared numbers (docs/metrics.md cites each)."""

    name: str
    style: Style
    """``prefix``: the longest cached prefix of any earlier request; ``breakpoints``: only prefixes that end at a
    breakpoint; ``slot``: the longest common prefix with the previous request on one slot."""
    min_tokens: int = 0
    """A prompt (``prefix``) or a breakpoint's prefix (``breakpoints``) shorter than this is never cached."""
    block: int = 1
    """A cached length is a whole number of blocks of this many tokens."""
    ttl_s: float | None = None
    """Seconds an entry lives after its last use; None: until replaced (``slot``)."""
    breakpoints: tuple[str, ...] = ()
    """For ``breakpoints``: after which parts of the request (:data:`BREAKPOINTS`) a breakpoint sits."""
    order: str = "tools_first"
    """Whether the provider renders the tool block before the system text (``tools_first``) or after it
    (native mode only: a prompted request has its tools in the system text, after the prompt)."""
    read: float = 1.0
    """Price of a token served from the cache over the input price, where the price map has none."""
    write: float = 1.0
    """Price of a token written to the cache over the input price, where the price map has none."""
    price_model: str | None = None
    """The LiteLLM model whose prices (LiteLLM's bundled map) cost the run; None: tokens only, no cost."""
    source: str = ""
    """Where the numbers are documented."""


PROFILES: dict[str, CacheProfile] = {
    p.name: p
    for p in (
        CacheProfile(
            "openai", "prefix", min_tokens=1024, block=128, ttl_s=300.0, read=0.5, write=1.0,
            price_model="gpt-4o-mini", source="https://developers.openai.com/api/docs/guides/prompt-caching",
        ),
        CacheProfile(
            "anthropic", "breakpoints", min_tokens=1024, ttl_s=300.0, breakpoints=("tools", "system"),
            order="tools_first", read=0.1, write=1.25, price_model="claude-sonnet-4-5",
            source="https://docs.claude.com/en/docs/build-with-claude/prompt-caching",
        ),
        CacheProfile(
            "gemini", "prefix", min_tokens=2048, block=1, ttl_s=300.0, read=0.1, write=1.0,
            price_model="gemini/gemini-2.5-flash", source="https://ai.google.dev/gemini-api/docs/caching",
        ),
        CacheProfile(
            "local", "slot", order="system_first", read=0.0, write=1.0, price_model=None,
            source="llama.cpp tools/server: n_past = common prefix of the slot's tokens and the prompt",
        ),
    )
}  # fmt: skip
"""The built-in profiles by name (docs/metrics.md: the numbers and their sources)."""

_OVERRIDABLE = {f.name for f in dataclasses.fields(CacheProfile)} - {"name", "style", "source"}


def _problem(key: str, value: object) -> str | None:
    """What is wrong with one override value, or None."""
    number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if key in ("min_tokens", "block"):
        low = 1 if key == "block" else 0
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            return f"must be a whole number of tokens, {low} or more"
    elif key == "ttl_s":
        if value is not None and (not number or cast(float, value) <= 0):
            return "must be seconds above 0, or null (never expires)"
    elif key in ("read", "write"):
        if not number or cast(float, value) < 0:
            return "must be a price multiplier, 0 or more"
    elif key == "breakpoints":
        if not isinstance(value, list) or not value or any(v not in BREAKPOINTS for v in value):
            return f"must be a list of {', '.join(BREAKPOINTS)}"
    elif key == "order":
        if value not in ORDERS:
            return f"must be one of {', '.join(ORDERS)}"
    elif key == "price_model" and value is not None and not (isinstance(value, str) and value):
        return "must be a LiteLLM model name, or null (no cost)"
    return None


def check_overrides(overrides: object, where: str) -> None:
    """Raise a one-line ConfigError when ``overrides`` (a model config's ``cache_profiles``) is not valid.

    ``where`` names the config and field, as the model config's other checks do.
    """
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"{where}: must be a mapping of profile -> {{field: value}}")
    for name, fields in overrides.items():
        if name not in PROFILES:
            raise ConfigError(f"{where}: {name!r} must be a cache profile ({', '.join(PROFILES)})")
        if not isinstance(fields, Mapping):
            raise ConfigError(f"{where}: {name} must be a mapping of field -> value")
        for key, value in fields.items():
            if key not in _OVERRIDABLE:
                raise ConfigError(f"{where}: {name}.{key} must be one of the fields {', '.join(sorted(_OVERRIDABLE))}")
            problem = _problem(str(key), value)
            if problem:
                raise ConfigError(f"{where}: {name}.{key}={value!r} {problem}")


class ProfileOverrides(TypedDict, total=False):
    """A model config's overrides of one profile (``cache_profiles: {name: {...}}``), once checked."""

    min_tokens: int
    block: int
    ttl_s: float | None
    breakpoints: tuple[str, ...]
    order: str
    read: float
    write: float
    price_model: str | None


def profile(name: str, overrides: Mapping[str, object] | None = None) -> CacheProfile:
    """The built-in profile ``name`` with a model config's overrides for it (checked) applied."""
    if name not in PROFILES:
        raise ConfigError(f"cache profile {name!r}: must be one of {', '.join(PROFILES)}")
    mine = dict(cast(Mapping[str, object], (overrides or {}).get(name) or {}))
    if not mine:
        return PROFILES[name]
    check_overrides({name: mine}, f"cache_profiles.{name}")
    if "breakpoints" in mine:
        mine["breakpoints"] = tuple(cast(list[str], mine["breakpoints"]))  # checked: a list of breakpoints
    return dataclasses.replace(PROFILES[name], **cast(ProfileOverrides, mine))  # each value checked above


@dataclass(frozen=True)
class ProfilePrices:
    """USD per token a profile costs a run with, and the cache multipliers over the input price."""

    input: float
    output: float
    read: float
    write: float

    @property
    def read_ratio(self) -> float:
        return self.read / self.input if self.input else 0.0

    @property
    def write_ratio(self) -> float:
        return self.write / self.input if self.input else 0.0


def profile_prices(p: CacheProfile) -> ProfilePrices | None:
    """The profile's prices from LiteLLM's bundled map; None without a price model, or one the map lacks.

    A cache read or write price the map does not list is the input price times the profile's ``read`` /
    ``write`` multiplier.
    """
    if p.price_model is None:
        return None
    info = _model_info(p.price_model)
    if info is None:
        return None
    base, out = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if base is None or out is None:
        return None
    read, write = info.get("cache_read_input_token_cost"), info.get("cache_creation_input_token_cost")
    return ProfilePrices(
        float(base),
        float(out),
        float(base) * p.read if read is None else float(read),
        float(base) * p.write if write is None else float(write),
    )


class PriceEntry(TypedDict, total=False):
    """The fields of a price-map entry read here (USD per token; LiteLLM's map has more)."""

    input_cost_per_token: float | None
    output_cost_per_token: float | None
    cache_read_input_token_cost: float | None
    cache_creation_input_token_cost: float | None


@functools.lru_cache(maxsize=1)
def _bundled_map() -> dict[str, object]:
    """LiteLLM's bundled price map, read from its wheel without importing LiteLLM (seconds saved per report)."""
    spec = importlib.util.find_spec("litellm")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "model_prices_and_context_window_backup.json"
        if path.is_file():
            data = json.loads(path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
    return {}


def _model_info(model: str) -> PriceEntry | None:
    entry = _bundled_map().get(model)
    if isinstance(entry, dict) and entry.get("input_cost_per_token") is not None:
        return cast(PriceEntry, entry)
    from surfbench.bench.models.litellm_setup import litellm_module  # names the map spells otherwise

    try:
        info = cast(PriceEntry, dict(litellm_module().get_model_info(model)))
    except Exception:  # LiteLLM raises a bare Exception for an unmapped model
        return None
    return info


def multipliers(p: CacheProfile, prices: ProfilePrices | None) -> tuple[float, float]:
    """(read, write) over the input price: from the price map where it prices the model, else declared."""
    if prices is None or not prices.input:
        return p.read, p.write
    return prices.read_ratio, prices.write_ratio


def _count(block: Mapping[str, object], *path: str) -> int | None:
    value: Any = block
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return int(value) if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _inner(block: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = block.get(key)
    return value if isinstance(value, Mapping) else block


def usage_split(usage: Mapping[str, object]) -> tuple[int, int, int]:
    """``(served, written, computed)`` prompt tokens of one response's usage block, in the provider's own fields.

    - Anthropic (Messages API ``usage``): ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
      ``input_tokens`` (which counts neither).
    - OpenAI (Chat Completions ``usage``; Responses ``input_tokens``/``input_tokens_details``):
      ``prompt_tokens_details.cached_tokens`` of ``prompt_tokens``; writes are not reported (free).
    - Gemini (``usageMetadata``, or the object itself): ``cachedContentTokenCount`` of ``promptTokenCount``.
    - llama-server (the response, or its ``timings``): ``timings.cache_n`` and ``timings.prompt_n``.

    A block in none of these shapes is a ValueError naming the fields looked for.
    """
    block = _inner(usage, "usage")
    read, write = _count(block, "cache_read_input_tokens"), _count(block, "cache_creation_input_tokens")
    if read is not None or write is not None:
        return read or 0, write or 0, _count(block, "input_tokens") or 0
    for total, details in (("prompt_tokens", "prompt_tokens_details"), ("input_tokens", "input_tokens_details")):
        whole = _count(block, total)
        if whole is not None:
            served = _count(block, details, "cached_tokens") or 0
            return served, 0, whole - served
    meta = _inner(usage, "usageMetadata")
    prompt = _count(meta, "promptTokenCount")
    if prompt is not None:
        served = _count(meta, "cachedContentTokenCount") or 0
        return served, 0, prompt - served
    timings = _inner(usage, "timings")
    cache_n, prompt_n = _count(timings, "cache_n"), _count(timings, "prompt_n")
    if cache_n is not None and prompt_n is not None:
        return cache_n, 0, prompt_n
    raise ValueError(
        "usage block has none of cache_read_input_tokens, prompt_tokens (prompt_tokens_details.cached_tokens), "
        f"usageMetadata.promptTokenCount, timings.cache_n; its keys: {', '.join(sorted(map(str, usage)))[:200]}"
    )
