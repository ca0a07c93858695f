"""A model turn as a response-cache entry holds it, and back (bench/models/client.py's cache reads and writes)."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import TypedDict

from surfbench.bench.models.types import ModelTurn, ParsedCall, ParseFailure, Usage


def turn_to_json(turn: ModelTurn) -> dict[str, object]:
    data = asdict(turn)
    data.pop("cache_hit", None)
    return data


_USAGE_FIELDS = frozenset(f.name for f in fields(Usage))
"""What a cache entry's usage may hold (an entry from a later version may hold more: left out, never an error)."""


class _CallJson(TypedDict):
    """A :class:`ParsedCall` as a cache entry holds it (``asdict``)."""

    name: str
    arguments: object
    id: str
    source: str
    arguments_error: str | None


class _FailureJson(TypedDict):
    """A :class:`ParseFailure` as a cache entry holds it."""

    source: str
    reason: str
    snippet: str


class CachedTurn(TypedDict, total=False):
    """A cache entry: a :class:`ModelTurn` as :func:`turn_to_json` wrote it (``cache_hit`` left out)."""

    text: str
    tool_calls: list[_CallJson]
    parse_failures: list[_FailureJson]
    parse_format: str | None
    usage: dict[str, int | None]
    request_bytes: int
    request_bytes_source: str
    latency_s: float
    cost_usd: float
    finish_reason: str | None
    request_hash: str
    slot: int | None


def turn_from_json(data: CachedTurn, cache_hit: bool, key: str) -> ModelTurn:
    return ModelTurn(
        text=data.get("text", ""),
        tool_calls=tuple(ParsedCall(**c) for c in data.get("tool_calls", [])),
        parse_failures=tuple(ParseFailure(**f) for f in data.get("parse_failures", [])),
        parse_format=data.get("parse_format"),
        usage=Usage(**{k: v for k, v in data.get("usage", {}).items() if k in _USAGE_FIELDS}),
        request_bytes=data.get("request_bytes", 0),
        request_bytes_source=data.get("request_bytes_source", "wire"),
        latency_s=data.get("latency_s", 0.0),
        cost_usd=data.get("cost_usd", 0.0),
        finish_reason=data.get("finish_reason"),
        cache_hit=cache_hit,
        request_hash=key,
        slot=data.get("slot"),
    )
