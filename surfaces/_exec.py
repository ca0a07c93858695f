"""Shared pieces of the execution-tool surfaces (unified, split, four, bash).

These surfaces are not catalog transforms: they are hand-written tools over the workspace suite's
canonical operations (``run_steps``, ``run_pipe``, ``read_file``, ``write_file``, ``edit_file``).
Their item schemas are cut from the catalog's own ``run_steps`` schema, never written twice.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from surfbench.bench.base.validation import describe_issues, validate_args
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.contracts.surface import SCHEMA_INVALID, Dispatch, Surface, ToolSpec, coerce_args

RUN_STEPS, RUN_PIPE = "run_steps", "run_pipe"
FILE_OPS = ("read_file", "write_file", "edit_file")
STEPS_AND_PIPE = "steps_and_pipe"
INLINE_CODE_REJECTED = "inline_code_rejected"


def require_ops(surface: Surface, names: Iterable[str]) -> dict[str, Operation]:
    """The operations this surface routes to; a clear error on a catalog that lacks them."""
    names = sorted(names)
    missing = [n for n in names if n not in surface.catalog]
    if missing:
        raise ValueError(
            f"surface {surface.kind!r} runs over the workspace suite's operations; catalog "
            f"{surface.catalog.name!r} lacks {', '.join(missing)} (use suite=workspace)"
        )
    return {n: surface.catalog[n] for n in names}


def applies(catalog: Catalog, names: Iterable[str]) -> bool:
    return all(n in catalog for n in names)


def step_schema(
    catalog: Catalog, keep: Iterable[str] | None = None, required: list[str] | None = None
) -> dict[str, Any]:
    """The schema of one command, from run_steps' own ``steps.items``, optionally cut to some fields."""
    items = copy.deepcopy(catalog[RUN_STEPS].parameters["properties"]["steps"]["items"])
    if keep is not None:
        items["properties"] = {k: v for k, v in items["properties"].items() if k in set(keep)}
    if required:
        items["required"] = required
    return items


def object_tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    """A tool whose arguments are one closed object."""
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    return ToolSpec(name=name, description=description, parameters=parameters)


def reject(tool: ToolSpec, args: Any, text: str, error_type: str) -> Dispatch:
    """A call refused at dispatch with a teaching error (nothing reaches the backend)."""
    return Dispatch(
        "rejected", tool.name, args=args if isinstance(args, dict) else None, text=text, error_type=error_type
    )


def own_schema_error(tool: ToolSpec, args: Any) -> Dispatch | None:
    """Reject arguments that do not fit the surface tool's own schema, with a teaching error."""
    issues = validate_args(args, tool.parameters)
    if not issues:
        return None
    text = f"Invalid arguments for '{tool.name}':\n{describe_issues(issues)}\nSee the parameters of tool '{tool.name}'."
    return Dispatch(
        "rejected", tool.name, args=args if isinstance(args, dict) else None, text=text,
        error_type=SCHEMA_INVALID, issues=tuple(issues),
    )  # fmt: skip


def route_command(surface: Surface, tool: ToolSpec, op_name: str, op_args: dict[str, Any]) -> Dispatch:
    """Validate the routed arguments against the operation's own schema; errors point at the surface tool."""
    op = surface.catalog[op_name]
    return surface.route(tool.name, op, op_args, f"See the parameters of tool '{tool.name}'.")


def bash_tool(name: str = "bash") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=(
            "Run a bash command in the workspace root and return its exit code and output. The named "
            "scripts in tools/ are on PATH. Commands run in a sandbox with a time limit."
        ),
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The bash command to run."}},
            "required": ["command"],
            "additionalProperties": False,
        },
    )


def bash_handler(surface: Surface, tool: ToolSpec) -> Any:
    def handle(session: Any, call: Any) -> Dispatch:
        args = coerce_args(call.arguments)
        problem = own_schema_error(tool, args)
        if problem:
            return problem
        return route_command(surface, tool, RUN_STEPS, {"steps": [{"code": args["command"]}]})

    return handle
