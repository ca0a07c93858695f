"""A request as the cache model sees it: its segments in order, each with a digest and a token count.

A step records its request's segments (``StepRecord.segments``, records v4): the system text, the tool block,
then each message after the system message, by role. Two requests share a prefix as far as their segments are
equal, so the cache model (:mod:`surfbench.bench.promptcache.prompt_cache_model`) replays a run's reuse from these
alone.
Token counts are ``o200k_base`` estimates of the text the loop built (the system text; each tool's wire text; a
message's compact JSON); the cache model scales them to the prompt tokens the provider reported.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from surfbench.bench.catalog.wire import compact_json, count_tokens

SYSTEM, TOOLS = "system", "tools"
"""The parts of a request before its messages (a message's part is its role)."""
DIGEST_CHARS = 16


def digest(text: str) -> str:
    """The digest of one segment's text (sha256, 16 hex digits)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


@functools.lru_cache(maxsize=8192)
def text_tokens(text: str) -> int:
    """``o200k_base`` tokens of a segment's text, counted once per distinct text (steps repeat their history)."""
    return count_tokens(text, "o200k_base")


def message_segment(message: Mapping[str, Any]) -> list[Any]:
    """One message as a segment: [role, digest, tokens] of its compact JSON."""
    text = compact_json(dict(message))
    return [str(message.get("role") or "message"), digest(text), text_tokens(text)]


def request_segments(
    system: str, tool_texts: Sequence[str], messages: Sequence[Mapping[str, object]], tool_tokens: int | None = None
) -> list[list[str | int]]:
    """The segments of one request: [part, digest, tokens] each.

    The system text, the tool block (when there are tools), then each message after the leading system message.

    ``tool_texts``: each tool's wire text (bench.catalog.wire.tool_wire_text); ``tool_tokens``: their tokens if
    already counted.
    """
    out: list[list[str | int]] = [[SYSTEM, digest(system), text_tokens(system)]]
    if tool_texts:
        block = "".join(tool_texts)
        out.append([TOOLS, digest(block), text_tokens(block) if tool_tokens is None else tool_tokens])
    rest = messages[1:] if messages and messages[0].get("role") == "system" else messages
    out += [message_segment(m) for m in rest]
    return out
