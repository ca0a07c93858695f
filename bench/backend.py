"""Backends execute canonical operations on state; a fresh instance per episode.

A backend written in Python subclasses :class:`OperationBackend` and marks its operations with
``@operation(...)``: the method's signature and Google docstring *are* the operation's schema (the
python-callables importer reads them), and ``call`` dispatches only to those methods (an allowlist,
never ``getattr`` on a model-chosen string). Domain failures raise :class:`ToolError`, whose text
goes back to the model; any other exception is a harness error.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
OP_ATTR = "__surfbench_op__"


class ToolError(Exception):
    """An operation failed in the domain (not found, conflict, forbidden): the model is told why."""


def operation(
    category: str = "general", weight: float = 0.0, read_only: bool = False, destructive: bool = False
) -> Callable[[F], F]:
    """Mark a backend method as a catalog operation, with its category, traffic weight and flags."""

    def mark(fn: F) -> F:
        setattr(
            fn, OP_ATTR, {"category": category, "weight": weight, "read_only": read_only, "destructive": destructive}
        )
        return fn

    return mark


def operation_methods(cls: type) -> list[Callable[..., Any]]:
    """The class's ``@operation`` methods in definition order (base classes first)."""
    seen: dict[str, Callable[..., Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if inspect.isfunction(value) and hasattr(value, OP_ATTR):
                seen[name] = value
    return list(seen.values())


class Backend(Protocol):
    def reset(self, scenario: str | None = None) -> None: ...

    def call(self, op: str, args: Mapping[str, Any]) -> Any: ...

    def state(self) -> dict[str, Any]: ...


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
