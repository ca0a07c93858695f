"""A live MCP server as a backend (``backend: mcp``): the validated canonical call goes to the real server.

Per episode: a fresh working copy of the suite's fixture (the server's ``setup`` hook run on it) and
a fresh server on it, so no episode sees another's writes. The server's answer goes back to the model
as it is (text, else structured content); ``isError`` becomes a tool error carrying the server's
message; a call past ``call_timeout_s`` is a ``tool_timeout`` tool error; a server that ends
mid-episode is a harness error (``McpServerDied``), which the runner retries per ``episode_retries``
on a fresh server. ``state()`` is what the suite's state function reads from the working copy
(``state: file.py:function``, called with its path; with ``live_data``, that folder's), else the calls made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.backend import ServerError, ToolError
from surfbench.bench.mcp.mcp_catalog import Workdir
from surfbench.bench.mcp.mcp_client import McpClient, McpTimeout
from surfbench.bench.mcp.mcp_pool import Lease, ServerPool
from surfbench.bench.mcp.mcp_spec import McpServerDied, ServerSpec
from surfbench.bench.mcp.watch import DataWatch


class McpBackend:
    """Executes canonical calls on a live MCP server; one server (and working copy) per episode."""

    def __init__(
        self,
        server: ServerSpec | None = None,
        state: Callable[[Path | None], dict[str, Any]] | None = None,
        call_timeout_s: float | None = None,
        pool: ServerPool | None = None,
        watch: DataWatch | None = None,
    ) -> None:
        if server is None:
            raise ValueError("backend: mcp needs a live server: catalog: {mcp: {command: ..., args: [...]}}")
        self.server = server
        self.state_fn = state
        self.call_timeout_s = call_timeout_s or server.call_timeout_s
        self.last_error_type: str | None = None
        """The episode loop reads this after each call: ``tool_timeout`` for a call that timed out."""
        self.calls: list[dict[str, Any]] = []
        self._client: McpClient | None = None
        self._workdir: Workdir | None = None
        self._pool = pool if server.reset_tool else None
        self._watch = watch
        """The user's data (bench.mcp.watch): checked when the episode's server stops."""

    @property
    def workdir(self) -> Path | None:
        """This episode's working copy (None when the server has no fixture)."""
        return self._workdir.path if self._workdir else None

    def reset(self, scenario: str | None = None) -> None:
        """A fresh working copy and a fresh server for the scenario (McpError when it cannot start)."""
        self.close()
        self.calls = []
        lease = self._pool.take() if self._pool is not None else None
        if lease is not None:  # a declared reset: the same server, told the next scenario
            self._client, self._workdir = lease.client, lease.workdir
            reset = self._client.call_tool(str(self.server.reset_tool), {"scenario": scenario or "default"})
            if reset.is_error:
                self.close()
                raise McpServerDied(self.server.label, f"reset_tool {self.server.reset_tool!r} failed: {reset.value}")
            return
        self._workdir = Workdir(self.server.fixture, self.server.setup)
        self._client = McpClient(self.server, self._workdir.path, scenario)
        try:
            self._client.start()
        except BaseException:
            self.close()
            raise

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        """Call the tool ``op``; the server's answer, or ToolError with its message."""
        self.last_error_type = None
        if self._client is None:
            raise McpServerDied(self.server.label, "the backend was not reset (no server)")
        record: dict[str, Any] = {"op": op, "args": dict(args)}
        self.calls.append(record)
        try:
            result = self._client.call_tool(op, args, self.call_timeout_s)
        except McpServerDied as exc:  # a ServerError: the runner retries the episode on a fresh server
            self._client.close()
            self._client = None
            raise ServerError(str(exc)) from None
        except McpTimeout as exc:
            self.last_error_type = ErrorType.TOOL_TIMEOUT.value
            record["ok"] = False
            raise ToolError(str(exc)) from None
        record["ok"] = not result.is_error
        if result.is_error:
            raise ToolError(str(result.value))
        return result.value

    def state(self) -> dict[str, Any]:
        """The suite's state function over the working copy, else the calls made (with their outcome)."""
        if self.state_fn is not None:  # on live data (init --live-data): the folder itself
            return self.state_fn(Path(self.server.live_data) if self.server.live_data else self.workdir)
        return {"calls": [dict(c) for c in self.calls]}

    def close(self) -> None:
        """Stop the server and remove the working copy."""
        if self._pool is not None and self._client is not None and self._workdir is not None:
            self._pool.give(Lease(self._client, self._workdir))
            self._client, self._workdir = None, None
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._workdir is not None:
            self._workdir.close()
            self._workdir = None
        if self._watch is not None:  # the server is stopped: nothing it did can still change a file
            self._watch.verify(self.server.label)
