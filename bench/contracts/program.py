"""One tool call that makes many canonical calls: a program (code mode) run by a surface.

A surface whose tool runs a program answers ``dispatch`` with a :class:`ProgramDispatch`: a meta answer
that carries ``run``. The episode loop calls ``run(execute)``; the program routes each of its calls
through the surface's own dispatch (boundary check, validation against the operation's schema) and
hands the resulting :class:`~surfbench.bench.contracts.surface.Dispatch` to ``execute``. The loop executes it
on its backend exactly as it would a direct call, records it as a canonical call of the same step, and
returns what became of it (:class:`Executed`). The program's own result (:class:`ProgramResult`) is
what goes back to the model as the tool's result. The core never imports a surface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from surfbench.bench.contracts.surface import Dispatch


@dataclass(frozen=True)
class Executed:
    """What became of one call a program made."""

    ok: bool
    """The call reached the backend (or was answered by the surface) and succeeded."""
    value: Any = None
    """The operation's result as the backend returned it, or a meta answer's text (when ``ok``)."""
    error: str = ""
    """The teaching error (rejected call) or the backend's error text (when not ``ok``)."""
    error_type: str | None = None
    """``not_exposed``, ``schema_invalid``, ``backend_error``, ... (when not ``ok``)."""


PROGRAM_META = "code"
"""``Dispatch.meta`` / ``CallRecord.meta`` of a tool call that ran a program (code mode's ``run_code``)."""

Execute = Callable[[str, Any, Dispatch], Executed]
"""``execute(function, arguments as sent, dispatch)``: run and record one call the program made."""


@dataclass(frozen=True)
class ProgramResult:
    """What a program run gives back to the model."""

    text: str
    """The tool result: printed output, the program's value or its error (already cut by the surface)."""
    error_type: str | None = None
    """Why the program itself failed (a type the surface declares), or None."""
    memory_peak_bytes: int | None = None
    """The most memory the program's processes held together, where a cgroup measured it."""
    disk_peak_bytes: int | None = None
    """The most its writable working directory held (None without one)."""


@dataclass(frozen=True)
class ProgramDispatch(Dispatch):
    """A meta answer whose content is a program run: the loop calls ``run`` with its executor."""

    run: Callable[[Execute], ProgramResult] | None = None
    """Runs the program; each canonical call goes through ``execute``."""
