"""Lenient tool-call parsing from model text. Never executes anything: JSON only.

Small models often write the call as text instead of using the tools field: a ```json block,
``<tool_call>`` tags (Qwen/Hermes), or a bare JSON object. The parser finds calls in that order of
precedence and records which format it found; text that claims a call (a tag or a json fence) but
cannot be parsed is a :class:`ParseFailure`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, Unpack, cast

from surfbench.bench.base.secrets import redact, redact_value
from surfbench.bench.catalog.wire import valid_utf8
from surfbench.bench.models.types import ModelTurn, ParsedCall, ParseFailure, Usage

MAX_TEXT = 200_000  # characters scanned; a runaway generation is cut, not parsed forever
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(json|tool_call|tool_code|JSON)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name", "function_name")
_CALL_START = re.compile(r'\{\s*"(?:name|tool|tool_name|function_name|function)"\s*:')
_ARG_KEYS = ("arguments", "parameters", "args", "input", "params")


T = TypeVar("T")
NativeCall = tuple[object, object, object]
"""A native tool call as a response gives it: ``(name, arguments, id)``, each as the provider sent it."""


class TurnFields(TypedDict, total=False):
    """The fields of a :class:`ModelTurn` besides what its text and calls give (:func:`turn_from_output`)."""

    usage: Usage
    request_bytes: int
    request_bytes_source: str
    latency_s: float
    cost_usd: float
    finish_reason: str | None
    cache_hit: bool
    request_hash: str
    slot: int | None


@dataclass(frozen=True)
class TextParse:
    calls: tuple[ParsedCall, ...]
    failures: tuple[ParseFailure, ...]
    format: str | None


def _snippet(text: str) -> str:
    return text[:200]


def _loads(text: str) -> object:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nesting too deep") from None
    except json.JSONDecodeError:
        repaired = _close_brackets(text)
        if repaired is None:
            raise
        return json.loads(repaired)


def _close_brackets(text: str) -> str | None:
    """Small models often drop the last brace(s) of a call; add the missing closers, nothing else."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text.strip():
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and (not stack or stack.pop() != ch):
            return None
    if in_string or not stack or len(stack) > 3:
        return None
    return text.strip() + "".join(reversed(stack))


def normalise_call(obj: object, source: str, index: int) -> ParsedCall | ParseFailure:
    """Turn one JSON value into a call: ``{"name", "arguments"}`` and its common variants."""
    if not isinstance(obj, dict):
        return ParseFailure(source, f"expected an object, got {type(obj).__name__}", _snippet(json.dumps(obj)[:200]))
    call: dict[str, object] = obj["function"] if isinstance(obj.get("function"), dict) else obj
    name = next((v for k in _NAME_KEYS if isinstance(v := call.get(k), str)), None)
    if not name or not name.strip():
        return ParseFailure(source, "no tool name", _snippet(json.dumps(call, ensure_ascii=False)))
    args: Any = next((call[k] for k in _ARG_KEYS if k in call), {})
    error = None
    if isinstance(args, str):
        try:
            args = _loads(args) if args.strip() else {}
        except ValueError as exc:
            error = f"arguments are not valid JSON: {exc}"
    return ParsedCall(name=name.strip(), arguments=args, id=f"call_{index}", source=source, arguments_error=error)


def parse_native_calls(items: Iterable[NativeCall]) -> tuple[list[ParsedCall], list[ParseFailure]]:
    """Calls from a response's ``tool_calls`` field, given as ``(name, arguments, id)`` triples.

    Providers send arguments as a JSON string (sometimes already an object); nothing a model writes
    there can raise: a missing or non-string name is a :class:`ParseFailure`, arguments that are not
    valid JSON (or nest too deep) are kept raw with ``arguments_error`` set.
    """
    calls: list[ParsedCall] = []
    failures: list[ParseFailure] = []
    for i, (name, raw, call_id) in enumerate(items):
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raw = "{}"
        if not isinstance(name, str) or not name.strip():
            failures.append(ParseFailure("tool_calls", "no tool name", _snippet(str(raw))))
            continue
        error = None
        args: Any = raw
        if isinstance(raw, str):
            try:
                args = _loads(raw[:MAX_TEXT])
            except (ValueError, RecursionError) as exc:
                args, error = raw[:MAX_TEXT], f"arguments are not valid JSON: {exc}"
        calls.append(
            ParsedCall(name.strip(), args, id=str(call_id or f"call_{i}"), source="tool_calls", arguments_error=error)
        )
    return calls, failures


def clean(value: T) -> T:
    """Model output made valid Unicode: lone surrogates (bytes no decoder could read) become U+FFFD.

    Applied where output enters the harness, so that history, tables, transcripts and the next request
    can always be encoded; dicts and lists are cleaned throughout.
    """
    if isinstance(value, str):
        return cast(T, valid_utf8(value))
    if isinstance(value, dict):
        return cast(T, {clean(k): clean(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return cast(T, type(value)(clean(v) for v in value))
    return value


def parse_turn(text: str, native: Iterable[NativeCall] = ()) -> TextParse:
    """Everything a response holds: native calls first; only without any, calls written in the text.

    ``text`` must already be :func:`clean`; native calls are cleaned here.
    """
    calls, failures = parse_native_calls(clean(tuple(native)))
    if calls:
        return TextParse(tuple(calls), tuple(failures), None)
    parsed = parse_text_calls(text)
    return TextParse(parsed.calls, tuple(failures) + parsed.failures, parsed.format)


def turn_from_output(text: str | None, native: Iterable[NativeCall] = (), **fields: Unpack[TurnFields]) -> ModelTurn:
    """A :class:`ModelTurn` from a response's text and ``tool_calls`` (as ``(name, arguments, id)``)."""
    text = redact(clean(text if isinstance(text, str) else ""))
    parsed = parse_turn(text, redact_value(tuple(native)))
    return ModelTurn(
        text=text, tool_calls=parsed.calls, parse_failures=parsed.failures, parse_format=parsed.format, **fields
    )


def _calls_from_value(value: object, source: str, start: int) -> Iterator[ParsedCall | ParseFailure]:
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        yield normalise_call(item, source, start + i)


def _collect(chunks: list[str], source: str) -> tuple[list[ParsedCall], list[ParseFailure]]:
    calls: list[ParsedCall] = []
    failures: list[ParseFailure] = []
    for chunk in chunks:
        if not chunk.strip():
            continue
        try:
            value = _loads(chunk)
        except ValueError as exc:
            failures.append(ParseFailure(source, f"invalid JSON: {exc}", _snippet(chunk)))
            continue
        for item in _calls_from_value(value, source, len(calls)):
            (calls if isinstance(item, ParsedCall) else failures).append(item)  # type: ignore[arg-type]
    return calls, failures


def _bare_objects(text: str) -> Iterator[object]:
    decoder = json.JSONDecoder()
    pos = text.find("{")
    while pos != -1:
        try:
            value, end = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        yield value
        pos = text.find("{", end)


def parse_text_calls(text: str) -> TextParse:
    """Find tool calls written as text: tags first, then json fences, then bare JSON objects."""
    text = (text or "")[:MAX_TEXT]
    if "<tool_call>" in text:
        calls, failures = _collect(_TAG.findall(text), "tool_call_tag")
        return TextParse(tuple(calls), tuple(failures), "tool_call_tag")
    fences = _FENCE.findall(text)
    if fences:
        bodies = [body for _, body in fences]
        calls, failures = _collect(bodies, "json_block")
        if calls or any(lang for lang, _ in fences):
            return TextParse(tuple(calls), tuple(failures), "json_block" if calls or failures else None)
    calls = []
    for value in _bare_objects(text):
        if isinstance(value, dict) and (any(k in value for k in _NAME_KEYS) or "function" in value):
            item = normalise_call(value, "bare_json", len(calls))
            if isinstance(item, ParsedCall):
                calls.append(item)
    if calls:
        return TextParse(tuple(calls), (), "bare_json")
    start = _CALL_START.search(text)  # where a call object begins, past any braces in the prose before it
    tail = text[start.start() :].strip() if start else ""
    if tail:
        try:
            value = _loads(tail)  # a truncated call: missing closing braces are repaired
        except ValueError as exc:
            return TextParse((), (ParseFailure("bare_json", f"invalid JSON: {exc}", _snippet(tail)),), "bare_json")
        item = normalise_call(value, "bare_json", 0)
        if isinstance(item, ParsedCall):
            return TextParse((item,), (), "bare_json")
        return TextParse((), (item,), "bare_json")
    return TextParse((), (), None)
