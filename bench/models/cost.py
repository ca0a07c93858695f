"""Token usage and cost of one model call, from each provider's usage block and LiteLLM's bundled price map.

Providers report prompt-cache hits differently; LiteLLM passes them through in its ``usage`` object:

- OpenAI (and OpenAI-compatible servers): ``usage.prompt_tokens_details.cached_tokens`` (reads; writes
  are free and not reported).
- Anthropic: ``cache_read_input_tokens`` and ``cache_creation_input_tokens``; LiteLLM's ``prompt_tokens``
  already includes both (Anthropic's own ``input_tokens`` counts neither).
- Gemini: ``cachedContentTokenCount``, which LiteLLM maps to ``prompt_tokens_details.cached_tokens``.

Cost is priced here, not by ``litellm.completion_cost``, so that the arithmetic is explicit and testable:
uncached prompt tokens at the input price, cache reads at ``cache_read_input_token_cost``, cache
writes at ``cache_creation_input_token_cost`` (both default to the input price when the map has none),
completion tokens at the output price. Prices come from the map LiteLLM ships with
(``LITELLM_LOCAL_MODEL_COST_MAP=True``: nothing is fetched). A model the map does not know costs 0.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CallUsage:
    """The token counts of one call that cost depends on."""

    prompt_tokens: int | None
    """Every prompt token, cached or not, as the provider (via LiteLLM) reports them."""
    completion_tokens: int | None
    """Generated tokens."""
    cache_read_tokens: int | None
    """Prompt tokens served from the provider's prompt cache; None where the provider says nothing."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache (Anthropic's ``cache_creation_input_tokens``)."""


@dataclass(frozen=True)
class Prices:
    """USD per token for one model."""

    input: float
    output: float
    cache_read: float
    cache_write: float


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _get(obj: object, name: str) -> object:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def call_usage(usage: object) -> CallUsage:
    """The usage of a LiteLLM response (object or dict), cache reads and writes found per provider."""
    details = _get(usage, "prompt_tokens_details")
    read = _int(_get(details, "cached_tokens"))
    anthropic_read = _int(_get(usage, "cache_read_input_tokens"))
    if anthropic_read is not None and (read is None or anthropic_read > read):
        read = anthropic_read
    gemini = _int(_get(usage, "cached_content_token_count")) or _int(_get(usage, "cachedContentTokenCount"))
    if gemini is not None and (read is None or gemini > read):
        read = gemini
    write = _int(_get(usage, "cache_creation_input_tokens")) or 0
    return CallUsage(_int(_get(usage, "prompt_tokens")), _int(_get(usage, "completion_tokens")), read, write)


def prices(model: str) -> Prices | None:
    """The model's prices from LiteLLM's local price map; None when the map does not know the model."""
    from surfbench.bench.models.litellm_setup import litellm_module

    litellm = litellm_module()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # LiteLLM raises a bare Exception for an unmapped model
        return None
    base = info.get("input_cost_per_token")
    out = info.get("output_cost_per_token")
    if base is None or out is None:
        return None
    read = info.get("cache_read_input_token_cost")
    write = info.get("cache_creation_input_token_cost")
    return Prices(
        float(base), float(out), float(base if read is None else read), float(base if write is None else write)
    )


def call_cost(usage: CallUsage, price: Prices | None) -> float:
    """USD for one call: uncached prompt, cache reads, cache writes and completion, each at its price."""
    if price is None:
        return 0.0
    prompt = usage.prompt_tokens or 0
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens
    uncached = max(prompt - read - write, 0)
    total = (
        uncached * price.input
        + read * price.cache_read
        + write * price.cache_write
        + (usage.completion_tokens or 0) * price.output
    )
    return round(total, 10)
