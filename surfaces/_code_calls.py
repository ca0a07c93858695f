"""One ``run_code`` call: the program in its sandbox, and the harness side of its SDK calls.

Every request line from the program is untrusted. A well-formed one is ``{"id": n, "fn": name, "args":
[...], "kwargs": {...}}`` (or the final ``{"done": true, ...}``); anything else is answered with an error
and executes nothing. ``fn`` is routed like a direct call: ``describe`` / ``search_api`` (where the
variant has them) are meta answers; a name the SDK does not define is ``not_exposed``; in the search
variant, a function no ``search_api`` call of this episode has returned is ``not_loaded``, as an
operation no search returned is on the ``search`` surface (found, it is callable at once, in the same
program); otherwise the operation's own schema validates the keywords (``Surface.route``) and the loop's
executor runs it. Every reply is redacted (:func:`surfbench.bench.base.secrets.redact`): no registered
secret a backend turns up reaches the program, which could otherwise print it in a form redaction
misses. A program that ran into its sandbox's disk quota or memory cap gets that limit's error type.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from surfbench.bench.base.secrets import redact
from surfbench.bench.base.validation import closest, short
from surfbench.bench.contracts.program import Execute, ProgramResult
from surfbench.bench.contracts.surface import BAD_META_CALL, NOT_EXPOSED, NOT_LOADED, SCHEMA_INVALID, Dispatch, ranked
from surfbench.bench.sandbox.box import ENOSPC, NOMEM, Sandbox
from surfbench.bench.sandbox.channel import ChannelStats, run_with_channel
from surfbench.bench.sandbox.limits import DISK_QUOTA_EXCEEDED, MEMORY_EXCEEDED, Result, limit_note
from surfbench.surfaces._sdk import stub

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog, Operation
    from surfbench.bench.sandbox.limits import Limits
    from surfbench.surfaces._sdk import SdkNames


class SurfaceView(Protocol):
    """What a program uses of its surface (surfaces/code.py's ``CodeSurface``).

    Named here so that the surface module imports this one and never the other way round.
    """

    catalog: Catalog
    names: SdkNames
    sdk: str
    meta_functions: list[str]
    max_calls: int
    timeout_s: float

    @property
    def scratch_mb(self) -> int: ...

    @property
    def limits(self) -> Limits: ...

    def typed_schema_hint(self, op: Operation) -> str: ...

    def route(self, tool: str, op: Operation, args: Any, schema_hint: str) -> Dispatch: ...

    def search(self, query: str) -> list[Operation]: ...


class SessionView(Protocol):
    """What a program uses of its session: the functions ``search_api`` returned in the episode so far."""

    found: set[str]


CODE_SYNTAX_ERROR, CODE_EXCEPTION, CODE_TIMEOUT, NO_SDK_CALL = (
    "code_syntax_error", "code_exception", "code_timeout", "no_sdk_call",
)  # fmt: skip
CODE_ERRORS = {
    CODE_SYNTAX_ERROR: "code mode: the program did not parse (nothing ran)",
    CODE_EXCEPTION: "code mode: the program raised, or ended without finishing (a limit, a crash)",
    CODE_TIMEOUT: "code mode: the program did not finish in time and was killed with everything it started",
    NO_SDK_CALL: "code mode: the program ran without calling any SDK function (an answer written, not looked up)",
    DISK_QUOTA_EXCEEDED: "code mode: the program ran into its disk quota (scratch_mb: working directory and /tmp)",
    MEMORY_EXCEEDED: "code mode: the program's processes ran into their memory cap (memory_mb)",
}
OUTPUT_CHARS = 16 * 1024
RUNTIME = (Path(__file__).parent / "_code_runtime.py").read_text(encoding="utf-8")
MALFORMED = "malformed SDK request"


def python_command(requests: int, replies: int) -> list[str]:
    """The program's interpreter: isolated, no site, unbuffered (printed output survives a kill)."""
    return ["python3", "-I", "-S", "-u", "-c", RUNTIME, str(requests), str(replies)]


class Program:
    """One program run; ``run(execute)`` is what the episode loop calls (:mod:`surfbench.bench.contracts.program`)."""

    def __init__(self, surface: SurfaceView, code: str, session: SessionView | None = None) -> None:
        self.surface = surface
        self.code = code
        self.found: set[str] = session.found if session is not None else set()
        """Operations a search_api call of the episode returned (the search variant calls only these)."""
        self.calls = 0
        self.malformed = 0
        self.done: dict[str, Any] | None = None
        self.execute: Execute | None = None
        self.stats: ChannelStats | None = None
        self.setup_s = 0.0
        """Seconds to make the program's sandbox (its scratch disk) before the program starts."""
        self.peaks: tuple[int | None, int | None] = (None, None)
        """(memory, disk) peaks its sandbox measured."""

    def run(self, execute: Execute) -> ProgramResult:
        """Run the program in a fresh sandbox, answering its SDK calls through ``execute``."""
        self.execute = execute
        surface = self.surface
        payload = {"functions": list(surface.names.operation), "meta": surface.meta_functions, "code": self.code}
        began = time.perf_counter()
        sandbox = Sandbox(surface.limits)
        self.setup_s = time.perf_counter() - began
        try:
            readonly = not surface.scratch_mb
            result, self.stats = run_with_channel(sandbox, python_command, self.handle, json.dumps(payload), readonly)
            self.peaks = (sandbox.peak_memory_bytes, sandbox.peak_disk_bytes)
        finally:
            sandbox.close()
        return self.result(self._limit(result))

    def _limit(self, run: Result) -> Result:
        """The limit the program ran into, also where only its own error says so (it comes over the pipe)."""
        said = self.done.get("error") if self.done else None
        if run.error_type or not isinstance(said, str) or not said.strip():
            return run
        last, lim = said.strip().splitlines()[-1], self.surface.limits  # the exception's line, not program text
        limits = ((MEMORY_EXCEEDED, NOMEM, lim.memory_cap_bytes), (DISK_QUOTA_EXCEEDED, ENOSPC, lim.disk_quota_bytes))
        for kind, words, on in limits:
            if on and any(word in last for word in words):
                return replace(run, error_type=kind, note=limit_note(lim, kind))
        return run

    # -- the pipe ------------------------------------------------------------------------------------
    def handle(self, line: bytes) -> bytes | None:
        """Answer one request line; a malformed one gets an error and executes nothing."""
        try:
            frame = json.loads(line)
        except (ValueError, RecursionError):
            return self._malformed("not one JSON object per line")
        if not isinstance(frame, dict):
            return self._malformed("not a JSON object")
        if frame.get("done") is True and set(frame) <= {"done", "value", "error", "error_type"}:
            self.done = frame
            return None
        fn, args, kwargs = frame.get("fn"), frame.get("args", []), frame.get("kwargs", {})
        shape = set(frame) <= {"id", "fn", "args", "kwargs"} and isinstance(args, list) and isinstance(kwargs, dict)
        if not (shape and isinstance(fn, str) and fn.isidentifier()):
            return self._malformed("expected {id, fn, args, kwargs}")
        if self.calls >= self.surface.max_calls:
            return _reply(False, f"too many SDK calls: at most {self.surface.max_calls} per program")
        self.calls += 1
        assert self.execute is not None
        sent = {**kwargs, "*args": args} if args else kwargs
        executed = self.execute(fn, sent, self.route(fn, args, kwargs))
        return _reply(executed.ok, executed.value if executed.ok else executed.error)

    def _malformed(self, why: str) -> bytes:
        self.malformed += 1
        return _reply(False, f"{MALFORMED}: {why}")

    def route(self, fn: str, args: list[Any], kwargs: dict[str, Any]) -> Dispatch:
        """Where one SDK call goes: a meta answer, a rejection, or an operation (validated)."""
        surface, names = self.surface, self.surface.names
        if fn in surface.meta_functions:
            return self._meta(fn, [*args, *kwargs.values()])
        op_name = names.operation.get(fn)
        if op_name is None:
            near = closest(fn, list(names.operation))
            tip = f" Did you mean {', '.join(near)}?" if near else ""
            text = f"Function '{fn}' is not in the SDK.{tip}"
            operation = fn if fn in surface.catalog else None
            return Dispatch("rejected", fn, operation=operation, args=kwargs, text=text, error_type=NOT_EXPOSED)
        op = surface.catalog[op_name]
        if surface.sdk == "search" and op_name not in self.found:
            text = (
                f"Function '{fn}' has not been found yet: call search_api(query) with what you want to do first; "
                "the functions it returns can be called right after it, in the same program."
            )
            given = names.arguments(op.name, kwargs)
            return Dispatch("rejected", fn, operation=op.name, args=given, text=text, error_type=NOT_LOADED)
        if args:
            shown = ", ".join(f"{names.keyword(op.name, a)}=..." for a in op.required)
            text = f"{fn}() takes keyword arguments only: {fn}({shown}). {surface.typed_schema_hint(op)}"
            given = names.arguments(op.name, kwargs)
            return Dispatch("rejected", fn, operation=op.name, args=given, text=text, error_type=SCHEMA_INVALID)
        return surface.route(fn, op, names.arguments(op.name, kwargs), surface.typed_schema_hint(op))

    def _meta(self, fn: str, values: list[Any]) -> Dispatch:
        surface = self.surface
        word = values[0] if len(values) == 1 and isinstance(values[0], str) and values[0].strip() else None
        if fn == "describe":
            op_name = surface.names.operation.get(word or "")
            if op_name is None:
                near = closest(str(word), list(surface.names.operation))
                text = f"describe(name) takes one SDK function name; got {short(values)}. Close: {', '.join(near)}."
                return Dispatch("meta", fn, text=text, meta="help", error_type=BAD_META_CALL)
            text = stub(surface.names, surface.catalog[op_name])
            return Dispatch("meta", fn, text=text, meta="help", hits=ranked([op_name]))
        if word is None:
            text = f"search_api(query) takes one text: what you want to do; got {short(values)}."
            return Dispatch("meta", fn, text=text, meta="search", error_type=BAD_META_CALL)
        found = surface.search(word)
        self.found.update(op.name for op in found)
        stubs = [stub(surface.names, op) for op in found]
        text = "\n\n".join(stubs) or "No function matches that query."
        return Dispatch("meta", fn, text=text, meta="search", hits=ranked(op.name for op in found))

    # -- what the model sees -------------------------------------------------------------------------
    def result(self, run: Result) -> ProgramResult:
        """Printed output, then the value or the error; the error type of the program itself."""
        done = self.done or {}
        error_type: str | None = done.get("error_type") if done.get("error_type") in CODE_ERRORS else None
        parts = [run.stdout.rstrip("\n")] if run.stdout.strip() else []
        if run.timed_out:
            error_type = CODE_TIMEOUT
            parts.append(f"[killed: the program did not finish in {self.surface.timeout_s:g} s]")
        elif not self.done:
            error_type = CODE_EXCEPTION
            parts.append(f"[the program ended without finishing: exit {run.exit_code}]")
        if run.note:  # the limit it ran into is why it failed (or why a program that went on is not clean)
            error_type = (run.error_type or CODE_EXCEPTION) if error_type in (None, CODE_EXCEPTION) else error_type
            parts.append(f"[{run.note}]")
        if isinstance(done.get("error"), str):
            parts.append(done["error"].rstrip("\n"))
        elif done.get("value") is not None:
            parts.append(f"[value] {done['value']}")
        if run.stderr.strip() and not isinstance(done.get("error"), str):
            parts.append("[stderr] " + run.stderr.rstrip("\n"))
        if self.malformed:
            parts.append(f"[{self.malformed} malformed SDK request(s) ignored]")
        if error_type is None and self.calls == 0:
            error_type = NO_SDK_CALL
            parts.append("[no SDK function was called]")
        text = "\n".join(parts) or "[no output]"
        if len(text) > OUTPUT_CHARS or run.truncated:
            text = text[:OUTPUT_CHARS] + f"\n[output cut at {OUTPUT_CHARS // 1024} KB]"
        return ProgramResult(text, error_type, *self.peaks)


def _reply(ok: bool, value: object) -> bytes:
    """One reply line, redacted: a secret in a value is redacted where JSON holds it (strings, escaped)."""
    body = {"ok": True, "value": value} if ok else {"ok": False, "error": str(value)}
    try:
        line = json.dumps(body, default=str, ensure_ascii=False)
    except (ValueError, RecursionError):  # a value JSON cannot hold (a cycle): its text
        line = json.dumps({"ok": ok, "value" if ok else "error": str(value)})
    return redact(line).encode("utf-8", "replace")
