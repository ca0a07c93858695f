"""Backends execute canonical operations on state; a fresh instance per episode.

A backend written in Python subclasses :class:`OperationBackend` and marks its operations with
``@operation(...)``: the method's signature and Google docstring *are* the operation's schema (the
python-callables importer reads them), and ``call`` dispatches only to those methods (an allowlist,
never ``getattr`` on a model-chosen string). Domain failures raise :class:`ToolError`, whose text
goes back to the model; any other exception is a harness error.

Beyond :class:`Backend`, a backend may have optional parts, each a runtime-checkable protocol here
(:class:`Closable`, :class:`ReportsErrorType`): the run stage asks ``isinstance(backend, Protocol)``, never
``getattr`` with a default, so what a backend can offer is declared in one place.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

# the @operation marks: the catalog side of a Python backend (bench.catalog.catalog), re-exported for backends
from surfbench.bench.catalog.catalog import OP_ATTR as OP_ATTR
from surfbench.bench.catalog.catalog import operation as operation
from surfbench.bench.catalog.catalog import operation_methods as operation_methods


class ServerError(RuntimeError):
    """A process serving the episode did not come up or died: the local model server, or a live MCP server.

    Not the model's or the backend's doing: the runner runs the episode again from the start on a fresh
    process (bench.run.play). Defined with the contracts so that backends (bench.mcp) and model servers
    (bench.models.server) raise the one type without importing each other.
    """


class ToolError(Exception):
    """An operation failed in the domain (not found, conflict, forbidden): the model is told why."""


class Backend(Protocol):
    def reset(self, scenario: str | None = None) -> None: ...

    def call(self, op: str, args: Mapping[str, Any]) -> Any: ...

    def state(self) -> dict[str, Any]: ...


@runtime_checkable
class Closable(Protocol):
    """A backend that holds something until it is closed: processes, a sandbox folder, a live server.

    Implemented by the workspace suite's sandboxed backend (tasks/workspace) and the MCP backend
    (bench.mcp.mcp_backend). The run stage closes each episode's backend once the episode has ended, whatever
    its outcome, before a retry gets a fresh one (bench.run.play.play_episode); a backend without ``close``
    is left to the garbage collector.
    """

    def close(self) -> None: ...


@runtime_checkable
class ReportsErrorType(Protocol):
    """A backend that names the limit its last call ran into, more specific than a tool error.

    Implemented by the workspace suite's sandboxed backend (``disk_quota_exceeded``, ``memory_exceeded``) and
    the MCP backend (``tool_timeout``); ``last_error_type`` is None when the last call ran into none. After
    each operation call the episode loop (bench.run.episode) records it, when set, as the call's error type
    in place of ``backend_error`` (or of none); a backend without it leaves the call's error type as it is.
    """

    @property
    def last_error_type(self) -> str | None: ...


class OperationBackend:
    """Base for Python backends: allowlisted dispatch to ``@operation`` methods."""

    def __init__(self) -> None:
        self._ops = {fn.__name__: fn for fn in operation_methods(type(self))}

    def reset(self, scenario: str | None = None) -> None:
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        raise NotImplementedError

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        fn = self._ops.get(op)
        if fn is None:
            raise ToolError(f"no operation {op!r}")
        return fn(self, **dict(args))


class CannedBackend:
    """For suites without a backend: answers with the task's canned result per operation."""

    def __init__(self, canned: Mapping[str, Any] | None = None) -> None:
        self.canned = dict(canned or {})
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def reset(self, scenario: str | None = None) -> None:
        self.calls = []

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        self.calls.append((op, dict(args)))
        if op in self.canned:
            result = self.canned[op]
            if isinstance(result, Mapping) and "error" in result and len(result) == 1:
                raise ToolError(str(result["error"]))
            return copy.deepcopy(result)
        return {"ok": True}

    def state(self) -> dict[str, Any]:
        return {"calls": [{"op": op, "args": args} for op, args in self.calls]}
