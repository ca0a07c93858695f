"""A scripted model client for tests: replays fixed turns, never produces reported results."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.models.parsing import turn_from_output
from surfbench.bench.models.types import ModelRequest, ModelTurn, ParsedCall, Usage

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog
    from surfbench.bench.catalog.wire import HasToolFields
    from surfbench.bench.suites.expected import ExpectedCall

Script = Sequence[ModelTurn | str | list[tuple[str, object]] | Callable[[ModelRequest], ModelTurn]]


def call_turn(*calls: tuple[str, object], text: str = "") -> ModelTurn:
    """A turn with native tool calls: ``call_turn(("issue_get", {"number": 1}))``."""
    return ModelTurn(
        text=text, tool_calls=tuple(ParsedCall(name, args, id=f"call_{i}") for i, (name, args) in enumerate(calls))
    )


def text_turn(text: str) -> ModelTurn:
    """A text answer; tool calls written in the text are parsed as the real client would."""
    return turn_from_output(text)


class ScriptedClient:
    """Returns the scripted turns in order; past the end it answers "done" in text."""

    name = "scripted"

    def __init__(self, script: Script) -> None:
        self.script = list(script)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelTurn:
        self.requests.append(request)
        step = self.script[len(self.requests) - 1] if len(self.requests) <= len(self.script) else "done"
        if callable(step):
            turn = step(request)
        elif isinstance(step, str):
            turn = text_turn(step)
        elif isinstance(step, list):
            turn = call_turn(*step)
        else:
            turn = step
        return with_usage(turn, request)


def with_usage(turn: ModelTurn, request: ModelRequest) -> ModelTurn:
    """Scripted turns get request bytes and a rough token count (4 bytes a token) from the request."""
    body = compact_json(
        {
            "messages": list(request.messages),
            "tools": [
                {"name": t.name, "description": t.description, "parameters": t.parameters} for t in request.tools
            ],
        }
    )
    usage = turn.usage if turn.usage.prompt_tokens is not None else Usage(len(body) // 4, 8, None)
    return replace(turn, request_bytes=turn.request_bytes or len(body.encode()), usage=usage)


class OracleClient:
    """For tests of sweeps, reports and gates: replays each task's reference calls.

    It finds the task by the first user message and calls each expected operation (as a typed tool when
    one is shown, else through the dispatcher tool), then answers with the task's answer words. Of a
    ``one_of`` it replays the first alternative the surface can reach: every call of it is a tool shown,
    or there is a dispatcher; on ``preselect``, the first whose operations are among those shown; on
    ``search``, it first searches with the user's message, and the hits are what is shown. When no
    alternative is reachable it gives up ("I cannot do that with these tools."), so a plumbing run of
    the oracle on a retrieval surface fails exactly the expected calls that retrieval missed.
    Results it produces are labelled scripted in run.json and in reports: never a measurement.
    """

    name = "scripted-oracle"

    def __init__(self, suite: str, delay_s: float = 0.0) -> None:
        from surfbench.bench.suites.suite import load_suite

        self.suite = load_suite(suite)
        self.delay_s = delay_s
        self.by_turn: dict[str, list[Any]] = {}
        for t in self.suite.tasks:
            self.by_turn.setdefault(t.turns[0], []).append(t)

    def complete(self, request: ModelRequest) -> ModelTurn:
        import time

        from surfbench.bench.suites.matchers import example_args

        if self.delay_s:
            time.sleep(self.delay_s)
        first_user = next((m["content"] for m in request.messages if m["role"] == "user"), "")
        names = {t.name for t in request.tools}
        dispatcher = next((t.name for t in request.tools if t.name + "_help" in names), None)
        same_text = self.by_turn.get(first_user, [])  # BFCL repeats questions with other functions
        exact = [t for t in same_text if t.catalog is not None and set(t.catalog.names) == names]
        task = next(iter(exact), None) or next(
            (t for t in same_text if all(any(_shown(a, names) for a in e.alternatives) for e in t.expected)), None
        )
        task = task or (same_text[0] if same_text else None)
        if task is None:
            return text_turn("Done.")
        catalog = self.suite.catalog_for(task)
        search = next((t.name for t in request.tools if _is_search(t, catalog)), None)
        made, searched = _made(request.messages, dispatcher, search)
        plan, blocked = _plan(task.expected, names, dispatcher is not None, made)
        done = len(made)
        user_turn = sum(1 for m in request.messages if m["role"] == "user") - 1
        turn = plan[done][1] if done < len(plan) else (blocked.turn if blocked is not None else None)
        if (done >= len(plan) and blocked is None) or (turn or 0) > user_turn:  # all done, or later turns' calls
            words = " ".join(map(str, (task.answer.get("contains", []) + task.answer.get("any_of", [])[:1])))
            return text_turn(words or "Done.")
        if done >= len(plan):  # no alternative of the next expected call is shown
            if search is not None and not searched:
                last_user = [m["content"] for m in request.messages if m["role"] == "user"][-1]
                return with_usage(call_turn((search, {"query": last_user})), request)
            return with_usage(text_turn("I cannot do that with these tools."), request)

        def reference(e: ExpectedCall) -> dict[str, object]:
            """The expected call's arguments; optional ones ("" accepted, not required) are left out."""
            if e.oracle_args is not None:
                return dict(e.oracle_args)
            op = catalog.get(e.op)
            required = set(op.required) if op else set()
            args = example_args(e.args)
            return {
                k: v
                for k, v in args.items()
                if k in required or not (isinstance(e.args.get(k), list) and "" in e.args[k])
            }

        exp = plan[done][0]
        args = reference(exp)
        if task.exact_calls and blocked is None and all(s.op in names for s, _ in plan):  # BFCL: all in one answer
            return with_usage(call_turn(*[(s.op, reference(s)) for s, _ in plan]), request)
        if exp.op in names:
            return with_usage(call_turn((exp.op, args)), request)
        if dispatcher:  # a pass-through parameter its tool takes (an instance) goes beside 'operation'
            tool = next(t for t in request.tools if t.name == dispatcher)
            lifted = set(cast(Mapping[str, object], tool.parameters.get("properties", {}))) - {"operation", "args"}
            top = {k: args.pop(k) for k in list(args) if k in lifted}
            return with_usage(call_turn((dispatcher, {"operation": exp.op, "args": args, **top})), request)
        return with_usage(text_turn("I cannot do that with these tools."), request)


def _shown(alternative: ExpectedCall, names: set[str]) -> bool:
    """Every call of the alternative is a tool shown."""
    return all(s.op in names for s in alternative.steps)


def _is_search(tool: HasToolFields, catalog: Catalog) -> bool:
    """A meta tool that searches the catalog: not an operation, and its only argument is ``query``."""
    props = tool.parameters.get("properties") if isinstance(tool.parameters, dict) else None
    return tool.name not in catalog and isinstance(props, dict) and set(props) == {"query"}


def _made(
    messages: Sequence[Mapping[str, object]], dispatcher: str | None, search: str | None
) -> tuple[list[str], bool]:
    """The operations the conversation's calls named, and whether a search came after the last of them.

    In order; a dispatcher call counts as the operation it routes to; searches are left out.
    """
    import json

    made: list[str] = []
    searched = False
    for m in messages:
        for call in cast(list[Mapping[str, object]], m.get("tool_calls") or []) if m["role"] == "assistant" else []:
            name = cast(Mapping[str, object], call.get("function", {})).get("name")
            if name == search:
                searched = True
                continue
            if name == dispatcher:
                try:
                    function = cast(Mapping[str, object], call["function"])
                    routed = json.loads(cast(str, function.get("arguments") or "{}"))
                except ValueError:
                    routed = {}
                name = routed.get("operation", name) if isinstance(routed, dict) else name
            made.append(str(name))
            searched = False
    return made, searched


def _plan(
    expected: Sequence[ExpectedCall], names: set[str], dispatch: bool, made: Sequence[str]
) -> tuple[list[tuple[ExpectedCall, int | None]], ExpectedCall | None]:
    """The calls to replay, each with its user turn, and the expected call none of whose alternatives is reachable.

    An expected call already started keeps the alternative its calls so far belong to; the next one takes the
    first alternative the surface can reach (every call a tool shown, or through the dispatcher).
    """
    plan: list[tuple[ExpectedCall, int | None]] = []
    for exp in expected:
        so_far = list(made[len(plan) :])
        started = [
            a for a in exp.alternatives if so_far and [s.op for s in a.steps][: len(so_far)] == so_far[: len(a.steps)]
        ]
        reachable = [a for a in exp.alternatives if dispatch or _shown(a, names)]
        chosen = next(iter([a for a in started if a in reachable] or reachable), None)
        if chosen is None:
            return plan, exp
        plan += [(s, exp.turn) for s in chosen.steps]
    return plan, None
