"""``split``: execute_code (inline steps), call_tool (named scripts) and pipe (stages).

The ollie-core seed's decision, one narrow contract per tool. Workspace suite only.

``call_tool`` rejects inline code at dispatch (``inline_code_rejected``), as the seed describes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.contracts.surface import Dispatch, MetaHandler, Session, Surface, ToolCall, ToolSpec, coerce_args
from surfbench.surfaces import register
from surfbench.surfaces._exec import (
    INLINE_CODE_REJECTED,
    RUN_PIPE,
    RUN_STEPS,
    object_tool,
    own_schema_error,
    reject,
    require_ops,
    route_command,
    step_schema,
)


@register
class SplitSurface(Surface):
    kind = "split"
    error_types: ClassVar[dict[str, str]] = {INLINE_CODE_REJECTED: "inline code sent to call_tool (the seed's rule)"}
    requires = frozenset({RUN_STEPS, RUN_PIPE})

    def setup(self) -> None:
        self._ops = require_ops(self, self.requires)
        code = step_schema(self.catalog, keep=["code", "stdin", "parallel"])
        named = step_schema(self.catalog, keep=["tool", "args", "stdin"], required=["tool"])
        stage = step_schema(self.catalog)
        self._exec = object_tool(
            "execute_code",
            "Run inline bash code in the workspace. Each step is independent and gets its own output; "
            'a step is {"code": "<bash>"} or {"parallel": [<step>, ...]} to fan out.',
            {"steps": {"type": "array", "items": code, "description": "Independent steps."}},
            ["steps"],
        )
        self._call = object_tool(
            "call_tool",
            'Run named scripts from the tools/ directory: each call is {"tool": "<name>", "args": [...], '
            '"stdin": "..."}. Inline code is not accepted here (use execute_code).',
            {"calls": {"type": "array", "items": named, "description": "Named tool calls."}},
            ["calls"],
        )
        self._pipe = object_tool(
            "pipe",
            "Run a pipeline: the stdout of each stage is the stdin of the next; returns the last stage's "
            'output. A stage is {"code": "<bash>"} or {"tool": "<name>", "args": [...]}.',
            {
                "stages": {"type": "array", "items": stage, "description": "Stages, in order."},
                "stdin": {"type": "string", "description": "Input for the first stage."},
            },
            ["stages"],
        )

    def static_tools(self) -> list[ToolSpec]:
        return [self._exec, self._call, self._pipe]

    def reachable(self) -> Sequence[Operation]:
        return list(self._ops.values())

    def named_operations(self) -> Sequence[str]:
        return list(self._ops)  # what its command tools route to

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {self._exec.name: self._execute, self._call.name: self._call_tool, self._pipe.name: self._run_pipe}

    def _execute(self, session: Session, call: ToolCall) -> Dispatch:
        args: Any = coerce_args(call.arguments)
        problem = own_schema_error(self._exec, args)
        if problem:
            return problem
        return route_command(self, self._exec, RUN_STEPS, {"steps": args["steps"]})

    def _call_tool(self, session: Session, call: ToolCall) -> Dispatch:
        args: Any = coerce_args(call.arguments)
        calls = args.get("calls") if isinstance(args, dict) else None
        if isinstance(calls, list) and any(isinstance(c, dict) and "code" in c for c in calls):
            text = (
                "call_tool runs named scripts from tools/ only; inline 'code' is rejected. Use execute_code "
                "for inline code, or pipe to feed one command's output to another."
            )
            return reject(self._call, args, text, INLINE_CODE_REJECTED)
        problem = own_schema_error(self._call, args)
        if problem:
            return problem
        return route_command(self, self._call, RUN_STEPS, {"steps": args["calls"]})

    def _run_pipe(self, session: Session, call: ToolCall) -> Dispatch:
        args: Any = coerce_args(call.arguments)
        problem = own_schema_error(self._pipe, args)
        if problem:
            return problem
        op_args = {"stages": args["stages"], "stdin": args.get("stdin", "")}
        return route_command(self, self._pipe, RUN_PIPE, op_args)
