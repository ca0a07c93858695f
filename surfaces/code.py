"""``code``: code mode. The catalog as a typed Python SDK, and one tool, ``run_code {code}``.

The model writes one program; it runs as its own Python process in the bubblewrap sandbox (no
network, limits on processes, memory, CPU and output, a timeout that kills everything). Each SDK call
comes back over a pipe (:mod:`surfbench.surfaces._code_calls`) and goes through the same dispatch as a
direct call: the boundary (only this SDK's functions), the operation's own schema, the episode's
backend; each is recorded as a canonical call of the step. A failed call raises ``SDKError`` in the
program with the teaching message a direct call gets. The printed output and the value of the last
expression (cut at 16 KB) are the tool's result.

Variants (``sdk``): ``full`` (every stub in the tool description), ``index`` (one line per function,
plus ``describe(name)`` for a full stub) and ``search`` (``search_api(query)`` returns the stubs of the
best matches, from the retrievers of :mod:`surfbench.bench.catalog.retrieval`). The search variant keeps the
``search`` surface's boundary: a program may call only the functions some ``search_api`` call of the
episode returned (earlier in the same program or in an earlier one); any other is ``not_loaded``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.catalog.retrieval import make_retriever
from surfbench.bench.contracts.program import PROGRAM_META, ProgramDispatch
from surfbench.bench.contracts.surface import (
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    category_limit,
    coerce_args,
)
from surfbench.bench.sandbox.limits import MB, Limits
from surfbench.bench.sandbox.memcap import memory_cap
from surfbench.surfaces import register
from surfbench.surfaces._code_calls import CODE_ERRORS, Program
from surfbench.surfaces._exec import own_schema_error
from surfbench.surfaces._sdk import SdkNames, index_line, render_module, stub

RUN_CODE = "run_code"
VARIANTS = ("full", "index", "search")
PREAMBLE = (
    "Run a Python 3 program in a sandbox (no network; scratch files go under /tmp). The SDK functions below "
    "are not tools: they are Python functions already defined in the program (no import). Send the program as "
    "this tool's code, calling them with keyword arguments, e.g. code: print(fn(name=value)); each returns the "
    "operation's result as a Python value and raises SDKError with the reason when the call fails. Do several "
    "calls in one program where you can. print() what you need: the printed output and the value of the last "
    "expression come back to you."
)


class CodeSession(Session):
    def __init__(self, surface: Surface, request: str = "") -> None:
        super().__init__(surface, request)
        self.found: set[str] = set()
        """Operations a search_api call returned in this episode (what a search-variant program may call)."""

    def operations_shown(self) -> list[str]:
        """Every SDK function (``full``, ``index``); with ``search``, what search_api returned so far (sorted)."""
        return [*super().operations_shown(), *sorted(self.found)]

    def reject_unshown(self, call: ToolCall) -> Dispatch:
        """A direct call to an SDK function (a small model's usual slip): still ``not_exposed``, with how to call it."""
        rejected = super().reject_unshown(call)
        surface = self.surface
        assert isinstance(surface, CodeSurface)
        function = call.name if call.name in surface.names.operation else surface.names.function.get(call.name)
        if function is None and call.name not in surface.meta_functions:  # describe / search_api as tools too
            return rejected
        function = function or call.name
        args, op_name = coerce_args(call.arguments), surface.names.operation.get(function, "")
        pairs = args.items() if isinstance(args, dict) else ()
        shown = ", ".join(f"{surface.names.keyword(op_name, str(k))}={v!r}" for k, v in pairs)
        example = f"print({function}({shown if len(shown) <= 200 else '...'}))"
        text = (
            f"'{call.name}' is a function of the Python SDK, not a tool: call it inside a program with "
            f"{RUN_CODE}, e.g. {RUN_CODE} with code: {example}"
        )
        return replace(rejected, text=text)


@register
class CodeSurface(Surface):
    kind = "code"
    session_class = CodeSession
    allowed_params = frozenset(
        {"sdk", "retriever", "top_n", "timeout_s", "max_calls", "memory_mb", "scratch_mb", "max_categories"}
    )
    error_types: ClassVar[dict[str, str]] = dict(CODE_ERRORS)

    def setup(self) -> None:
        self.sdk = str(self.params.get("sdk", "full"))
        if self.sdk not in VARIANTS:
            raise ValueError(f"surface {self.name!r}: sdk must be one of {', '.join(VARIANTS)}, got {self.sdk!r}")
        self.top_n = int(self.params.get("top_n", 5))
        self.max_calls = int(self.params.get("max_calls", 100))
        retriever = str(self.params.get("retriever", "bm25"))  # make_retriever names the known ones
        self.retriever = make_retriever(retriever, self.catalog.operations) if self.sdk == "search" else None
        self.memory_mb = int(self.params.get("memory_mb", 512))
        self.timeout_s = float(self.params.get("timeout_s", 10.0))
        self._scratch_mb = self.params.get("scratch_mb")
        self.names = SdkNames.of(self.catalog.operations)
        self.meta_functions = {"index": ["describe"], "search": ["search_api"]}.get(self.sdk, [])
        self.tool = ToolSpec(
            name=RUN_CODE,
            description=self._description(),
            parameters={
                "type": "object",
                "properties": {"code": {"type": "string", "description": "The Python program to run."}},
                "required": ["code"],
                "additionalProperties": False,
            },
        )

    @functools.cached_property
    def scratch_mb(self) -> int:
        """Size of the program's writable working directory; 0: read-only, and /tmp is the scratch space.

        A working directory costs a tmpfs held for the program (+30 to +100 ms per program). Default: 0 where
        a memory cgroup holds /tmp (found on first use, not when the surface is built), else 32.
        """
        if self._scratch_mb is not None:
            return int(self._scratch_mb)
        return 0 if memory_cap().mechanism != "rlimit" else 32

    @functools.cached_property
    def limits(self) -> Limits:
        """What one program may use."""
        memory = self.memory_mb * MB
        return Limits(
            timeout_s=self.timeout_s, output_cap=16 * 1024, max_procs=32, max_memory_bytes=memory, cpu_s=10,
            disk_quota_bytes=self.scratch_mb * MB, memory_cap_bytes=memory, max_file_bytes=16 * MB,
        )  # fmt: skip

    def _description(self) -> str:
        if self.sdk == "full":
            return f"{PREAMBLE}\n\n{render_module(self.catalog, self.names)}"
        if self.sdk == "index":
            lines = "\n".join(index_line(self.names, op) for op in self.catalog.operations)
            return (
                f"{PREAMBLE}\n\nThe SDK ({len(self.catalog)} functions, one line each; describe(name) returns a "
                f"function's full stub with its argument docs):\n{lines}"
            )
        cats = self.catalog.category_summary(category_limit(self.params))
        return (
            f"{PREAMBLE}\n\nThe SDK has {len(self.catalog)} functions ({cats}). search_api(query) returns the "
            f"stubs of the {self.top_n} functions that best match what you want to do; call them in the same "
            "program."
        )

    def static_tools(self) -> list[ToolSpec]:
        return [self.tool]

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {RUN_CODE: _run_code}

    def help_payload(self, op: Operation) -> str | None:
        return stub(self.names, op) if self.sdk != "full" else None

    def named_operations(self) -> Sequence[str]:
        return [] if self.sdk == "search" else list(self.catalog.names)  # every SDK function is callable

    @property
    def retrieves(self) -> bool:
        return self.sdk == "search"  # search_api returns stubs: the funnel's search variant

    def typed_schema_hint(self, op: Operation) -> str:
        function = self.names.function[op.name]
        if self.sdk == "index":
            return f"See its stub: describe({function!r})."
        if self.sdk == "search":
            return f"Its stub is what search_api returned for {function}."
        return f"See the stub of {function}() in the SDK."

    def notes(self) -> list[str]:
        where = {"full": "every stub in", "index": "one line per function in", "search": "search_api only in"}
        return [f"sdk: {self.sdk}; one tool, run_code, {where[self.sdk]} its description"]

    def search(self, query: str) -> list[Operation]:
        """The operations search_api returns for ``query``, best first."""
        assert self.retriever is not None
        hits = [h for h in self.retriever.rank(query)[: self.top_n] if h.score > 0]
        return self.catalog.subset(h.operation for h in hits)


def _run_code(session: Session, call: ToolCall) -> ProgramDispatch:
    surface = session.surface
    assert isinstance(surface, CodeSurface)
    args: Any = coerce_args(call.arguments)
    problem = own_schema_error(surface.tool, args)
    if problem is not None:  # no program to run: a plain rejection, as a meta answer carrying the teaching text
        return ProgramDispatch(
            "rejected", call.name, args=problem.args, text=problem.text, error_type=problem.error_type,
            issues=problem.issues,
        )  # fmt: skip
    program = Program(surface, args["code"], session if isinstance(session, CodeSession) else None)
    return ProgramDispatch("meta", call.name, args=args, meta=PROGRAM_META, run=program.run)
