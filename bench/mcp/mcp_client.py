"""A synchronous MCP client over the official SDK: start a server, list its tools as sent, call them.

The harness is synchronous; the SDK is async. Each client runs one event loop in its own thread,
which holds the SDK's ClientSession for the client's life (the session's task group must open and
close in one task). Every failure to start is one :class:`McpError` line naming the server: a command
that does not exist, output that is not JSON-RPC, no answer to ``initialize``, a refused connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import threading
from collections.abc import Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import get_default_environment

from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.mcp.guard import NOT_FOUND
from surfbench.bench.mcp.mcp_spec import McpError, McpServerDied, ServerSpec
from surfbench.bench.mcp.transport import WireLog, raw_stdio

T = TypeVar("T")
CLIENT_INFO = types.Implementation(name="surfbench", version="1")


class McpTimeout(Exception):
    """A ``tools/call`` got no answer within its timeout (a tool error of type ``tool_timeout``)."""


@dataclass(frozen=True)
class ToolList:
    """The server's ``tools/list`` answer."""

    raw: bytes
    """The JSON-RPC response exactly as the server sent it (one page; pages joined by newlines)."""
    tools: list[dict[str, Any]]
    """The tool objects, parsed from ``raw`` (never re-serialised by the SDK)."""
    pages: int
    """How many ``tools/list`` requests it took."""


@dataclass(frozen=True)
class ToolResult:
    """One ``tools/call`` answer, ready for the model."""

    value: Any
    """What goes back to the model: the text parts joined, else the structured content, else the content."""
    is_error: bool
    """The server said the call failed (``isError``)."""


def result_value(result: types.CallToolResult) -> Any:
    """The model's view of a result: text parts joined; else structured content; else the content as JSON."""
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return result.structured_content
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content]


class McpClient:
    """One live server: ``start()``, ``list_tools()``, ``call_tool()``, ``close()`` (or use ``with``)."""

    def __init__(self, spec: ServerSpec, workdir: Path | None = None, scenario: str | None = None) -> None:
        self.spec = spec
        self.workdir = workdir
        self.scenario = scenario
        self.log = WireLog()
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._main: concurrent.futures.Future[None] | None = None

    @property
    def label(self) -> str:
        """The server's command line or URL, for messages."""
        return self.spec.label

    def __enter__(self) -> McpClient:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _argv(self) -> tuple[list[str], dict[str, str], str | None]:
        argv, extra, cwd = self.spec.filled(self.workdir, self.scenario)
        env = (
            get_default_environment()
            | {k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "VIRTUAL_ENV", "LANG", "LC_"))}
            | extra
        )
        program = argv[0]
        found = shutil.which(program, path=env.get("PATH")) if os.sep not in program else program
        if found is None or not Path(found).exists():
            raise McpError(self.label, f"command {program!r} not found (not on PATH, not a file); check mcp.command")
        if cwd is not None and not Path(cwd).is_dir():
            raise McpError(self.label, f"working directory {cwd!r} does not exist")
        return argv, env, cwd

    def start(self) -> None:
        """Start (or connect to) the server and complete ``initialize``; McpError when it cannot."""
        stdio = None if self.spec.url else self._argv()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp {self.label}", daemon=True)
        self._thread.start()
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._serve(stdio, started), self._loop)
        try:
            started.result(timeout=self.spec.startup_timeout_s + 10)
        except McpError:
            self.close()
            raise
        except BaseException as exc:
            self.close()
            raise self._start_error(exc) from None

    async def _serve(
        self, stdio: tuple[list[str], dict[str, str], str | None] | None, started: concurrent.futures.Future[None]
    ) -> None:
        self._stop = asyncio.Event()
        try:
            async with AsyncExitStack() as stack:
                if stdio is None:
                    from surfbench.bench.mcp.http import http_streams

                    streams = await stack.enter_async_context(http_streams(self.spec, self.log))
                else:
                    streams = await stack.enter_async_context(raw_stdio(*stdio, self.log))
                session = ClientSession(streams[0], streams[1], client_info=CLIENT_INFO)
                await stack.enter_async_context(session)
                with anyio.fail_after(self.spec.startup_timeout_s):
                    await session.initialize()
                self._session = session
                started.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def _start_error(self, exc: BaseException) -> McpError:
        """One line saying why the server could not be used."""
        log = self.log
        tail = " ".join(log.stderr.split())[-300:]
        said = f"; its stderr ends: {tail}" if tail else ""
        if isinstance(_root(exc), TimeoutError) and log.returncode in (None, 0):
            return McpError(
                self.label,
                f"no answer to initialize within {self.spec.startup_timeout_s:g} s (startup_timeout_s){said}",
            )
        if log.too_large is not None:
            return McpError(self.label, f"{log.too_large}{said}")
        if log.garbage is not None:
            return McpError(
                self.label,
                f"wrote a line on stdout that is not JSON-RPC: {log.garbage[:120]!r} (an MCP stdio server must "
                f"write only JSON-RPC messages there; logs go to stderr){said}",
            )
        if log.returncode == NOT_FOUND:
            return McpError(self.label, f"command not found{said}")
        if log.returncode is not None:
            return McpError(self.label, f"exited with status {log.returncode} before answering initialize{said}")
        text = " ".join(str(_root(exc)).split()) or type(_root(exc)).__name__
        if self.spec.url and log.not_mcp:
            return McpError(self.label, f"the endpoint answered HTTP {log.not_mcp}")
        if self.spec.url and log.http_error:
            code = log.http_error[:3]
            hint = " (check the headers: mcp.headers / --mcp-header)" if code in ("401", "403") else ""
            if code in ("404", "405"):  # a wrong path: a web page's, not the MCP endpoint's
                hint = ", not MCP: is this the server's MCP endpoint (often /mcp)?"
            return McpError(self.label, f"the endpoint answered HTTP {log.http_error}{hint}")
        if self.spec.url:
            cause = _root(exc)
            return McpError(
                self.label, f"cannot connect: {type(cause).__name__}: {' '.join(str(cause).split()) or 'refused'}"
            )
        return McpError(self.label, f"initialize failed: {text}{said}")

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        if self._session is None:
            coro.close()
            raise McpServerDied(self.label, "not started")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout=timeout + 5)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError from None

    @property
    def alive(self) -> bool:
        """The connection is up (for stdio: the server process has not ended)."""
        log = self.log
        return (
            self._session is not None
            and not log.closed
            and log.returncode is None
            and log.garbage is None
            and log.too_large is None
        )

    def list_tools(self) -> ToolList:
        """Every page of ``tools/list``, with the raw bytes the server sent."""
        session = self._session
        assert session is not None
        pages: list[bytes] = []
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            self.log.take("tools/list")
            try:
                self._run(
                    _bounded(
                        session.send_request(types.ListToolsRequest(params=params), types.ListToolsResult),
                        self.spec.call_timeout_s,
                    ),
                    self.spec.call_timeout_s,
                )
            except TimeoutError:
                if self.log.too_large:  # the answer was cut off: the session ended without one
                    raise McpError(self.label, f"tools/list: {self.log.too_large}") from None
                raise McpError(self.label, f"no answer to tools/list within {self.spec.call_timeout_s:g} s") from None
            except Exception as exc:  # the SDK's own checks: the raw answer below says more, when there is one
                if self.log.too_large:
                    raise McpError(self.label, f"tools/list: {self.log.too_large}") from None
                if not self.log.raw.get("tools/list"):
                    raise McpError(self.label, f"tools/list failed: {' '.join(str(exc).split())[:300]}") from None
            raw = b"".join(self.log.take("tools/list"))
            if not raw:
                raise McpError(self.label, "tools/list: no answer recorded")
            page = _page(raw, self.label)
            pages.append(raw)
            tools.extend(page.get("tools", []))
            cursor = page.get("nextCursor")
            if not cursor or len(pages) >= 100:
                break
        return ToolList(raw=b"\n".join(pages), tools=tools, pages=len(pages))

    def call_tool(self, name: str, args: Mapping[str, Any], timeout_s: float | None = None) -> ToolResult:
        """Call one tool; McpTimeout past the timeout, McpServerDied when the server is gone."""
        session = self._session
        if session is None or not self.alive:
            raise McpServerDied(self.label, "the server is gone")
        timeout = timeout_s or self.spec.call_timeout_s
        try:
            result = self._run(_bounded(session.call_tool(name, dict(args)), timeout), timeout)
        except TimeoutError:
            if self.log.too_large:
                raise McpServerDied(self.label, f"{name}: {self.log.too_large}") from None
            raise McpTimeout(f"{name}: no answer from the MCP server within {timeout:g} s") from None
        except Exception as exc:
            if self.log.too_large:
                raise McpServerDied(self.label, f"{name}: {self.log.too_large}") from None
            if not self.alive:
                raise McpServerDied(self.label, f"the server ended during {name}") from None
            return ToolResult(f"{type(exc).__name__}: {' '.join(str(exc).split())}", True)
        finally:
            self.log.take("tools/call")
        if not isinstance(result, types.CallToolResult):
            return ToolResult(compact_json(result.model_dump(mode="json", by_alias=True)), False)
        return ToolResult(result_value(result), bool(result.is_error))

    def close(self) -> None:
        """End the session and stop the server (its whole process group); safe to call twice."""
        loop = self._loop
        if self._stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._stop.set)
        if self._main is not None:
            with contextlib.suppress(BaseException):  # a server that failed to start ends here too
                self._main.result(timeout=10)
            self._main = None
        if self.log.pid is not None and self.log.returncode is None:
            from surfbench.bench.mcp.transport import kill_group

            kill_group(self.log.pid)
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
            loop.close()
        self._session = None


async def _bounded(coro: Coroutine[Any, Any, T], timeout: float) -> T:
    return await asyncio.wait_for(coro, timeout)


def _root(exc: BaseException) -> BaseException:
    """The innermost exception of a group or a chain (what actually refused)."""
    while True:
        if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return exc


def _page(raw: bytes, label: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise McpError(label, f"tools/list answer is not JSON: {exc}") from None
    if isinstance(doc, dict) and "error" in doc:
        raise McpError(label, f"tools/list answered with an error: {compact_json(doc['error'])[:300]}")
    result = doc.get("result") if isinstance(doc, dict) else None
    if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
        raise McpError(label, "tools/list answer has no result.tools list")
    return result
