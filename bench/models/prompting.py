"""``prompted`` calling mode: tools rendered into the system prompt, calls parsed from text.

The episode loop keeps its history in OpenAI's native shape (assistant ``tool_calls``, ``tool``
results). For prompted mode that history is rendered to plain chat text here, in a named format.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import cast

from surfbench.bench.catalog.wire import HasToolFields, compact_json

FORMATS = ("hermes", "json")


def _hermes_tools(tools: Sequence[HasToolFields]) -> str:
    specs = "\n".join(
        compact_json(
            {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        )
        for t in tools
    )
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{specs}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n'
        "When you have the answer, reply in plain text without any tool call."
    )


def _json_tools(tools: Sequence[HasToolFields]) -> str:
    specs = "\n".join(tool_line(t) for t in tools)
    return (
        "You can use these tools (name, description, JSON Schema of the arguments):\n"
        f"{specs}\n\n"
        "To call a tool, answer with only a JSON block:\n```json\n"
        '{"name": "TOOL_NAME", "arguments": {...}}\n```\n'
        "When you have the answer, reply in plain text."
    )


def tool_line(tool: HasToolFields) -> str:
    return compact_json({"name": tool.name, "description": tool.description, "parameters": tool.parameters})


def render_tools(tools: Sequence[HasToolFields], fmt: str) -> str:
    if fmt == "hermes":
        return _hermes_tools(tools)
    if fmt == "json":
        return _json_tools(tools)
    raise ValueError(f"unknown prompt format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _call_text(call: Mapping[str, object], fmt: str) -> str:
    fn = cast(Mapping[str, object], call.get("function", {}))
    args = fn.get("arguments", "{}")
    try:
        parsed = json.loads(args) if isinstance(args, str) else args
    except json.JSONDecodeError:
        parsed = args
    body = json.dumps({"name": fn.get("name"), "arguments": parsed}, ensure_ascii=False)
    return f"<tool_call>\n{body}\n</tool_call>" if fmt == "hermes" else f"```json\n{body}\n```"


def prompted_messages(
    messages: Sequence[Mapping[str, object]], tools: Sequence[HasToolFields], fmt: str
) -> list[dict[str, object]]:
    """Text-only chat: tools in the system prompt, calls and results as text turns."""
    tool_text = render_tools(tools, fmt) if tools else ""
    out: list[dict[str, object]] = []
    system_done = False
    for msg in messages:
        role = msg.get("role")
        if role == "system" and not system_done:
            content = str(msg.get("content") or "")
            out.append({"role": "system", "content": f"{content}\n\n{tool_text}".strip()})
            system_done = True
        elif role == "assistant" and msg.get("tool_calls"):
            parts = [str(msg.get("content") or "").strip()] + [
                _call_text(c, fmt) for c in cast(Iterable[Mapping[str, object]], msg["tool_calls"])
            ]
            out.append({"role": "assistant", "content": "\n".join(p for p in parts if p)})
        elif role == "tool":
            result = str(msg.get("content") or "")
            text = f"<tool_response>\n{result}\n</tool_response>" if fmt == "hermes" else f"Tool result:\n{result}"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool_results"):
                out[-1]["content"] = cast(str, out[-1]["content"]) + "\n" + text
            else:
                out.append({"role": "user", "content": text, "_tool_results": True})
        else:  # text only: every message keeps a string content (templates read message.content)
            out.append({"role": role, "content": str(msg.get("content") or "")})
    if not system_done and tool_text:
        out.insert(0, {"role": "system", "content": tool_text})
    return [{k: v for k, v in m.items() if not k.startswith("_")} for m in out]
