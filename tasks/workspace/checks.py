"""The ollie-core seed's failure modes, as error types judged per episode.

- ``steps_and_pipe``: both steps and pipe in one call (the unified surface rejects it at dispatch, so
  it reaches the scorer from the call record, not from here);
- ``pipe_for_steps``: in a task whose right shape is independent commands (``meta.mode: steps``), a
  call ran a pipeline of two or more stages;
- ``steps_for_pipe``: in a task whose right shape is a pipeline (``meta.mode: pipe``), a call sent two
  or more independent steps (stages that should have fed each other ran apart). A shell pipe inside
  one command (``a | b``) is a pipeline and is not counted;
- ``inline_reimplementation``: the task's job has a named tool (``meta.tool``), the episode ran inline
  code that did something other than look around (``ls``, ``cat``, ``head`` ...), and it never
  invoked that tool, neither by reference nor by name inside code;
- ``disk_quota_exceeded`` / ``memory_exceeded``: a command ran into the episode's disk quota or its
  memory cap. Read from the note the sandbox puts after ``[exit N]`` on the first line of that
  command's result, before its own output (the backend's command log has it too).

Each mode counts at most once per episode.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from typing import Any

LOOKING = {"ls", "cat", "head", "tail", "pwd", "find", "tree", "file", "echo", "stat", "less", "more"}
# a command's first line as the sandbox writes it: the result's first line (one command, a failed stage, a
# file operation's error), or a "--- steps[i]" header in a list of commands
_HEAD = r"\[(?:exit -?\d+|killed: [^\]\n]*)\] "
_NOTE = r"\[(disk quota|memory limit): "
LIMIT_NOTE = re.compile(
    rf"\A(?:stage \d+ failed: {_HEAD}|Error: |{_HEAD}){_NOTE}|^--- \S+ {_HEAD}{_NOTE}", re.MULTILINE
)
LIMITS = {"disk quota": "disk_quota_exceeded", "memory limit": "memory_exceeded"}


def _commands(items: Any) -> Iterator[dict[str, Any]]:
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            if isinstance(item.get("parallel"), list):
                yield from _commands(item["parallel"])
            else:
                yield item


def _first_words(code: str) -> list[str]:
    """The command word of each simple command in ``code`` (split on ; && || | and newlines)."""
    words = []
    for part in re.split(r"&&|\|\||[;|\n]", code):
        try:
            tokens = shlex.split(part)
        except ValueError:
            tokens = part.split()
        tokens = [t for t in tokens if "=" not in t.split("/")[0]]  # skip VAR=value prefixes
        if tokens:
            words.append(tokens[0].rsplit("/", 1)[-1])
    return words


def failure_modes(task: Any, calls: Sequence[Any]) -> list[str]:
    meta = getattr(task, "meta", {}) or {}
    mode, tool = meta.get("mode"), meta.get("tool")
    found: list[str] = []
    codes: list[str] = []
    tools_used: set[str] = set()
    for call in calls:
        for first, listed in LIMIT_NOTE.findall(call.result or "") if call.kind == "operation" else ():
            if LIMITS[first or listed] not in found:
                found.append(LIMITS[first or listed])
        args = call.arguments if isinstance(call.arguments, dict) else {}
        if call.operation == "run_pipe":
            stages = args.get("stages")
            if mode == "steps" and isinstance(stages, list) and len(stages) >= 2 and "pipe_for_steps" not in found:
                found.append("pipe_for_steps")
            commands = list(_commands(stages))
        elif call.operation == "run_steps":
            steps = args.get("steps")
            if mode == "pipe" and isinstance(steps, list) and len(steps) >= 2 and "steps_for_pipe" not in found:
                found.append("steps_for_pipe")
            commands = list(_commands(steps))
        else:
            continue
        if call.kind != "operation":
            continue  # a rejected call ran nothing
        for command in commands:
            if isinstance(command.get("tool"), str):
                tools_used.add(command["tool"])
            if isinstance(command.get("code"), str):
                codes.append(command["code"])
    if tool:
        invoked = tool in tools_used or any(re.search(rf"(^|[\s/;|&(]){re.escape(tool)}\b", c) for c in codes)
        working = [c for c in codes if any(w not in LOOKING for w in _first_words(c))]
        if working and not invoked:
            found.append("inline_reimplementation")
    return found
