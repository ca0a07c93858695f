"""The forge as a real MCP server over stdio, for ``suite=forge_mcp`` (the forge's tasks through MCP).

It serves the forge backend's operations through the SDK's low-level ``Server``: ``tools/list`` gives
each operation's schema exactly as the forge catalog has it; ``tools/call`` runs the operation on a
forge store seeded from ``--scenario`` and answers with the same compact JSON text the in-process
path shows the model (a ToolError becomes ``isError`` with its message). After each call that may
write, the whole store goes to ``--state-file`` (atomically), where the suite's state function
reads it. Run: ``python -m surfbench.tasks.forge.mcp_server --scenario default --state-file s.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.message import SessionMessage

from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.importers.pycallable import import_callables
from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.contracts.backend import ToolError
from surfbench.tasks.forge.backend import ForgeBackend


def forge_catalog() -> Catalog:
    """The forge's operations, as the in-process suite's catalog has them."""
    ops = import_callables(f"{Path(__file__).with_name('backend.py')}:ForgeBackend")
    return Catalog(name="forge", operations=tuple(ops), source="forge")


def tool_of(op: Any) -> types.Tool:
    """An operation as an MCP tool: its schema untouched, its flags as annotations, category and weight in _meta."""
    return types.Tool(
        name=op.name,
        description=op.description,
        input_schema=op.parameters,
        annotations=types.ToolAnnotations(read_only_hint=op.read_only, destructive_hint=op.destructive),
        _meta={"category": op.category, "weight": op.weight},
    )


def write_state(backend: ForgeBackend, path: Path) -> None:
    """The whole store to ``path`` (write then rename: a reader never sees half a file)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(backend.db), encoding="utf-8")
    os.replace(tmp, path)


def build_server(scenario: str, state_file: Path | None, reset_tool: str | None = None) -> Server[Any]:
    """A server over one forge store seeded from ``scenario``; ``reset_tool``: also a tool that re-seeds it."""
    backend = ForgeBackend()
    backend.reset(scenario)
    catalog = forge_catalog()
    tools = [tool_of(op) for op in catalog]
    if reset_tool:
        schema = {"type": "object", "properties": {"scenario": {"type": "string"}}, "required": ["scenario"]}
        tools.append(types.Tool(name=reset_tool, description="Reset the forge to a scenario.", input_schema=schema))
    if state_file is not None:
        write_state(backend, state_file)

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        op = catalog.get(params.name)
        if reset_tool and params.name == reset_tool:
            try:
                backend.reset(str((params.arguments or {}).get("scenario") or "default"))
            except ValueError as exc:
                return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
            if state_file is not None:
                write_state(backend, state_file)
            return types.CallToolResult(content=[types.TextContent(text="reset")])
        try:
            if op is None:
                raise ToolError(f"no operation {params.name!r}")
            result = backend.call(params.name, params.arguments or {})
        except ToolError as exc:
            return types.CallToolResult(content=[types.TextContent(text=str(exc))], is_error=True)
        finally:
            if state_file is not None and op is not None and not op.read_only:
                write_state(backend, state_file)
        text = result if isinstance(result, str) else compact_json(result)
        return types.CallToolResult(content=[types.TextContent(text=text)])

    return Server("surfbench-forge", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


@asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[Any, Any]]:
    """stdin/stdout as the SDK's stream pair, read by the event loop itself.

    The SDK's ``stdio_server`` hops to a worker thread for every line read and written (about 10 ms a
    call on a loaded 2-core machine); a pipe the loop watches costs no thread at all.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)
    out = sys.stdout.fileno()

    async def pump_in() -> None:
        async with read_send:
            while line := await reader.readline():
                if line.strip():
                    try:
                        await read_send.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))
                    except ValueError as exc:
                        await read_send.send(exc)

    async def pump_out() -> None:
        async with write_recv:
            async for item in write_recv:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                while data:  # a blocking write of one line: the client reads as fast as it can
                    data = data[os.write(out, data) :]

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_in)
        tg.start_soon(pump_out)
        yield read_recv, write_send
        tg.cancel_scope.cancel()


async def serve(scenario: str, state_file: Path | None, reset_tool: str | None = None) -> None:
    """Serve over stdin/stdout until stdin closes."""
    server = build_server(scenario, state_file, reset_tool)
    async with pipe_streams() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str] | None = None) -> None:
    """Command line: ``--scenario NAME --state-file PATH [--reset-tool NAME]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="default")
    parser.add_argument("--state-file", default=None)
    parser.add_argument("--reset-tool", default=None, help="also serve a tool of this name that re-seeds the store")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.scenario, Path(args.state_file) if args.state_file else None, args.reset_tool))


if __name__ == "__main__":
    main()
