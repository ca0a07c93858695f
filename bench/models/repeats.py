"""The same complete call written again inside one answer: where a stop inside the step cuts, and the dedupe.

A small model that starts repeating a call inside one answer rarely stops before ``max_tokens``: in the
llama-server forge reference, 273 of the 348 steps that ran to ``max_tokens`` held the same complete call twice
or more (issue 51). ``stop_on_repeated_call: K`` (a model config setting) ends such a generation as soon as the
text holds one call K times (:func:`cut_at`), on a streamed answer (bench.models.client) and in
``surfbench whatif`` on a recorded one, with the same rule.

A *complete call* is a line that is, by itself, a JSON object with a ``name`` (a ``<tool_call>`` tag on the
same line and a trailing comma are allowed): the form the embedded models write in prompted mode, one call per
line. Two calls are the same when their JSON is equal (keys in any order). A call spread over several lines
(a pretty-printed ```json block) is never counted: the rule can miss a repeat, never cut a call in half.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from surfbench.bench.models.types import ParsedCall

_TAG_OPEN = "<tool_call>"
_TAG_CLOSE = "</tool_call>"


def call_key(line: str) -> str | None:
    """The canonical JSON of the call ``line`` holds by itself, or None when it holds no complete call."""
    text = line.strip()
    if text.startswith(_TAG_OPEN):
        text = text[len(_TAG_OPEN) :].strip()
    if text.endswith(_TAG_CLOSE):
        text = text[: -len(_TAG_CLOSE)].strip()
    if text.endswith(","):  # one item of a list written a line at a time
        text = text[:-1].rstrip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "name" not in value:
        return None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def cut_at(text: str, k: int) -> int | None:
    """Characters of ``text`` kept by a stop at the k-th occurrence of one complete call.

    The cut is at the end of the line that completes it, its newline included; None when no call occurs k times.
    """
    seen: dict[str, int] = {}
    pos = 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        if not line.endswith(("\n", "\r")):
            break  # the line is still being written (a stream) or the text's cut end: not complete
        key = call_key(line)
        if key is None:
            continue
        seen[key] = seen.get(key, 0) + 1
        if seen[key] >= k:
            return pos
    return None


def _arguments_key(arguments: object) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(arguments)


def dedupe_calls(calls: Iterable[ParsedCall]) -> tuple[ParsedCall, ...]:
    """``calls`` without the later copies of a call already in them (same name and arguments), in order."""
    out: list[ParsedCall] = []
    seen: set[tuple[str, str]] = set()
    for call in calls:
        key = (call.name, _arguments_key(call.arguments))
        if key not in seen:
            seen.add(key)
            out.append(call)
    return tuple(out)
