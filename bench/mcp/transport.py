"""A stdio transport for the SDK's ClientSession that keeps the server's lines exactly as it sent them.

The SDK's own ``stdio_client`` parses each line and drops the text; wire bytes must be counted on what
the server sent, so this transport records the raw line of every response by the method it answers
(``tools/list`` above all). The server starts through :mod:`guard`: its own process group, a
parent-death signal, and where the kernel allows it its own PID namespace, so that nothing it starts
(``setsid`` daemons and children that ignore SIGTERM included) outlives its episode or the harness,
with a /proc of its own (the harness's environment and command line out of its sight);
``SURFBENCH_MCP_PIDNS=0`` turns the namespace off (the guard's process sweep alone then). Stopping a
server: its stdin closes; one that has not left after ``EXIT_GRACE_S`` gets SIGTERM on its guard (which
kills everything below it) and, ``EXIT_GRACE_S`` later, SIGKILL on the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types as types
from anyio.abc import Process
from mcp.shared.message import SessionMessage

from surfbench.bench.base.bounded import limit_bytes, too_large

GUARD = Path(__file__).with_name("guard.py")
STDERR_TAIL = 2000
"""Characters of the server's stderr kept for error messages."""
EXIT_GRACE_S = 2.0
"""How long a server may take to exit after its stdin closes, before its guard is told to kill it."""
PIDNS_OFF = ("0", "off", "false", "no")
"""Values of ``SURFBENCH_MCP_PIDNS`` that start servers without a PID namespace."""


@dataclass
class WireLog:
    """What crossed the wire: raw response lines by method, stray output, the server's stderr tail."""

    pending: dict[str, str] = field(default_factory=dict)
    """Request id (as text) -> method, for requests not yet answered."""
    raw: dict[str, list[bytes]] = field(default_factory=dict)
    """Method -> the raw response lines, in order (one per page for a paginated ``tools/list``)."""
    garbage: bytes | None = None
    """The first line on stdout that was not a JSON-RPC message."""
    stderr: str = ""
    """The end of what the server wrote on stderr."""
    returncode: int | None = None
    """The server's exit status, once it has ended."""
    pid: int | None = None
    """The guard process (leader of the server's process group)."""
    http_error: str | None = None
    """The first HTTP error status the endpoint answered with (``401 Unauthorized``), for messages."""
    not_mcp: str | None = None
    """What the endpoint answered a POST with, when that cannot be MCP (``200 text/html ('<html>...')...``)."""
    closed: bool = False
    """The server's stdout has ended (it exited, or closed it): no answer can come any more."""
    too_large: str | None = None
    """Why reading stopped at a line over the size limit of an MCP answer (bench/base/bounded.py), for messages."""

    def take(self, method: str) -> list[bytes]:
        """The raw responses recorded for ``method`` since the last take."""
        return self.raw.pop(method, [])


def guarded_argv(argv: list[str]) -> list[str]:
    """The command line that starts ``argv`` under the guard (see guard.py)."""
    off = os.environ.get("SURFBENCH_MCP_PIDNS", "").strip().lower() in PIDNS_OFF
    return [sys.executable, "-S", str(GUARD), str(os.getpid()), *(["--no-pidns"] if off else []), "--", *argv]


def _request_id(message: types.JSONRPCMessage) -> str | None:
    rid = getattr(message, "id", None)
    return None if rid is None else str(rid)


@asynccontextmanager
async def raw_stdio(
    argv: list[str], env: dict[str, str], cwd: str | None, log: WireLog
) -> AsyncIterator[
    tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception], anyio.abc.ObjectSendStream[SessionMessage]]
]:
    """Start ``argv`` (guarded) and yield the SDK's (read, write) stream pair; stop it on exit."""
    limit = limit_bytes("MCP answer")  # before the server starts: a bad SURFBENCH_MAX_FILE_MB leaves nothing running
    process: Process = await anyio.open_process(
        guarded_argv(argv), env=env, cwd=cwd, start_new_session=True, stderr=subprocess.PIPE
    )
    log.pid = process.pid
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()  # grown in place: a long line costs its length, not its length squared
        async with read_send:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for chunk in process.stdout:
                    buffer += chunk
                    if b"\n" not in chunk and len(buffer) <= limit:
                        continue
                    *lines, tail = bytes(buffer).split(b"\n")
                    buffer = bytearray(tail)
                    if max([len(tail), *map(len, lines)]) > limit:  # /dev/zero piped to stdout
                        log.too_large = f"a line on stdout of {too_large('MCP answer', limit)}"
                        return  # closing the read stream ends the session: the client says why
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError:
                            log.garbage = line
                            return  # closing the read stream ends the session: the client names the line
                        rid = _request_id(message)
                        if rid is not None and not hasattr(message, "method") and rid in log.pending:
                            log.raw.setdefault(log.pending.pop(rid), []).append(line)
                        await read_send.send(SessionMessage(message))
            log.closed = True
            log.returncode = process.returncode

    async def writer() -> None:
        assert process.stdin is not None
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async with write_recv:
                async for item in write_recv:
                    message = item.message
                    method = getattr(message, "method", None)
                    rid = _request_id(message)
                    if method is not None and rid is not None:
                        log.pending[rid] = method
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")

    async def errors() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            async for chunk in process.stderr:
                log.stderr = (log.stderr + chunk.decode("utf-8", "replace"))[-STDERR_TAIL:]

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        tg.start_soon(errors)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)
                log.returncode = process.returncode
            tg.cancel_scope.cancel()


async def _stop(process: Process) -> None:
    """Close stdin and give the server EXIT_GRACE_S to leave; then have the guard kill it, else kill the group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(EXIT_GRACE_S):
        while process.returncode is None:
            await anyio.sleep(0.01)
    if process.returncode is None:
        _signal(process.pid, signal.SIGTERM)  # the guard SIGKILLs what is below it (setsid daemons too), then itself
        with anyio.move_on_after(EXIT_GRACE_S):
            await process.wait()
    if process.returncode is None:
        _signal(-process.pid, signal.SIGKILL)
        with anyio.move_on_after(EXIT_GRACE_S):
            await process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.aclose()
    # the asyncio transport must close while its loop runs (else a warning when it is collected later)
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if transport is not None:
        with suppress(Exception):
            transport.close()


def _signal(pid: int, signum: int) -> None:
    """Send ``signum`` to ``pid`` (a negative pid: its process group), if it is still there."""
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def _ended(pid: int) -> bool:
    """``pid`` has exited (gone, or a zombie its parent has not collected yet)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def kill_group(pid: int, grace_s: float = 1.0) -> None:
    """Stop the guard ``pid`` and all it started, SIGKILL to its group as the last resort.

    SIGTERM to the guard first (it SIGKILLs everything below it, then its group); if it has not ended within
    ``grace_s``, SIGKILL to its whole process group.
    """
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    _signal(-pid, signal.SIGKILL)
