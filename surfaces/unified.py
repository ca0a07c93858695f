"""``unified``: one ``execute_code`` tool, the ollie-core seed's original schema.

Steps, pipe, parallel fan-out, named-tool references and a sandbox selector. Workspace suite only.

A call with both ``steps`` and ``pipe`` is rejected at dispatch (``steps_and_pipe``, one of the
seed's failure modes); ``steps`` routes to ``run_steps``, ``pipe`` to ``run_pipe``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.contracts.surface import (
    SCHEMA_INVALID,
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    coerce_args,
)
from surfbench.surfaces import register
from surfbench.surfaces._exec import (
    RUN_PIPE,
    RUN_STEPS,
    STEPS_AND_PIPE,
    own_schema_error,
    reject,
    require_ops,
    route_command,
    step_schema,
)

DESCRIPTION = (
    "Execute code in the workspace. Pass 'steps' for independent commands (each gets its own output; "
    "read-only steps may run in parallel) or 'pipe' for a pipeline (the stdout of each stage is the "
    'stdin of the next). A command is {"code": "<bash>"}, or {"tool": "<name>", "args": [...]} to '
    "run a named script from tools/, or {\"parallel\": [<command>, ...]} to fan out. 'sandbox' selects "
    "'workspace' (read and write, the default) or 'readonly'."
)


@register
class UnifiedSurface(Surface):
    kind = "unified"
    error_types: ClassVar[dict[str, str]] = {STEPS_AND_PIPE: "both steps and pipe in one call (the seed's rule)"}
    requires = frozenset({RUN_STEPS, RUN_PIPE})

    def setup(self) -> None:
        self._ops = require_ops(self, self.requires)
        command = step_schema(self.catalog)
        self._tool = ToolSpec(
            name="execute_code",
            description=DESCRIPTION,
            parameters={
                "type": "object",
                "properties": {
                    "steps": {"type": "array", "items": command, "description": "Independent commands."},
                    "pipe": {"type": "array", "items": command, "description": "Pipeline stages, in order."},
                    "stdin": {"type": "string", "description": "Input for the first pipe stage."},
                    "sandbox": {"type": "string", "enum": ["workspace", "readonly"]},
                },
                "additionalProperties": False,
            },
        )

    def static_tools(self) -> list[ToolSpec]:
        return [self._tool]

    def reachable(self) -> Sequence[Operation]:
        return list(self._ops.values())

    def named_operations(self) -> Sequence[str]:
        return list(self._ops)  # what its command tools route to

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {self._tool.name: self._execute}

    def _execute(self, session: Session, call: ToolCall) -> Dispatch:
        args: Any = coerce_args(call.arguments)
        if isinstance(args, dict) and args.get("steps") and args.get("pipe"):
            text = (
                "Give either 'steps' (independent commands) or 'pipe' (a pipeline whose stages feed each "
                "other), not both in one call."
            )
            return reject(self._tool, args, text, STEPS_AND_PIPE)
        problem = own_schema_error(self._tool, args)
        if problem:
            return problem
        readonly = args.get("sandbox") == "readonly"
        if args.get("steps"):
            return route_command(self, self._tool, RUN_STEPS, {"steps": args["steps"], "readonly": readonly})
        if args.get("pipe"):
            op_args = {"stages": args["pipe"], "stdin": args.get("stdin", ""), "readonly": readonly}
            return route_command(self, self._tool, RUN_PIPE, op_args)
        text = "Nothing to run: pass 'steps' (a list of commands) or 'pipe' (a list of stages)."
        return reject(self._tool, args, text, SCHEMA_INVALID)
