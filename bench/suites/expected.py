"""Expected calls: one canonical call a task expects, or a choice among alternatives (``one_of``).

A server that offers the same action two ways (a granular ``create_issue`` and a consolidated
``issue_write {method: create}``) is served correctly by either; a task names both::

    expected:
      - one_of:
          - {op: create_issue, args: {title: Bug}}
          - {op: issue_write, args: {method: create, title: Bug}}

An alternative may be a sequence of calls (:class:`CallSequence`): "one call of the tool that reads
several files, or two calls of the one that reads a file". A list is in order; ``{calls: [...],
any_order: true}`` in any order::

    expected:
      - one_of:
          - {op: read_multiple_files, args: {paths: [a.md, b.md]}}
          - [{op: read_file, args: {path: a.md}}, {op: read_file, args: {path: b.md}}]
          - {any_order: true, calls: [{op: read_file, args: {path: a.md}}, {op: read_file, args: {path: b.md}}]}

Selection, first-try accuracy and the calls check accept any alternative (bench.score.first_try,
bench.suites.call_matching); the scripted oracle replays the first alternative the surface can reach.
A :class:`OneOfCall` is an :class:`ExpectedCall` whose ``op``, ``args`` and ``oracle_args`` are its
first alternative's (a sequence's: its first call's), so code that lists expected calls needs no change;
code that replays them walks ``alternatives`` and each one's ``steps``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.validation import closest
from surfbench.bench.suites.fields import _fail, _got, boolean, mapping, no_unknown, text
from surfbench.bench.suites.matcher_format import check_object_matcher

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog

ALTERNATIVE_KEYS = frozenset({"op", "args", "oracle_args"})
"""The keys of one alternative of a ``one_of`` (its ``turn`` belongs to the expected call)."""
ONE_OF_KEYS = frozenset({"one_of", "turn"})
"""The keys of an expected call written as a choice among alternatives."""
SEQUENCE_KEYS = frozenset({"calls", "any_order"})
"""The keys of a sequence alternative written as a mapping (a plain list is a sequence in order)."""


@dataclass(frozen=True)
class ExpectedCall:
    """One canonical call of a task."""

    op: str
    """Canonical operation expected."""
    args: dict[str, Any] = field(default_factory=dict)
    """Argument matchers (BFCL style)."""
    oracle_args: dict[str, Any] | None = None
    """Concrete arguments for the oracle replay, where the matchers do not pin one value."""
    turn: int | None = None
    """The user turn (0-based) the call answers, for multi-turn tasks; None: any."""

    @property
    def alternatives(self) -> tuple[ExpectedCall, ...]:
        """The calls any of which satisfies this one: itself."""
        return (self,)

    @property
    def steps(self) -> tuple[ExpectedCall, ...]:
        """The single calls this alternative is made of, in order: itself (a sequence: its calls)."""
        return (self,)

    @property
    def in_any_order(self) -> bool:
        """Whether the steps may come in any order (only a sequence written with ``any_order: true``)."""
        return False

    @property
    def ops(self) -> tuple[str, ...]:
        """The operations that may serve this call (every step of every alternative), each once, in order."""
        return tuple(dict.fromkeys(s.op for a in self.alternatives for s in a.steps))

    @property
    def first_ops(self) -> tuple[str, ...]:
        """The operations a model may call first to start this call (tool selection's expected first)."""
        out: dict[str, None] = {}
        for alt in self.alternatives:
            out.update(dict.fromkeys(s.op for s in (alt.steps if alt.in_any_order else alt.steps[:1])))
        return tuple(out)

    @property
    def shown(self) -> str:
        """How messages name one alternative: its operation (a sequence: ``read_file then read_file``)."""
        return self.op

    @property
    def label(self) -> str:
        """How messages name the call: its operation, or ``create_issue or issue_write``."""
        return " or ".join(dict.fromkeys(a.shown for a in self.alternatives))

    def matching(self, op: str | None) -> tuple[ExpectedCall, ...]:
        """The single calls (steps of any alternative) a call of ``op`` is judged against (empty: none)."""
        return tuple(s for a in self.alternatives for s in a.steps if s.op == op)


@dataclass(frozen=True)
class OneOfCall(ExpectedCall):
    """An expected call that any of its alternatives satisfies; ``op``/``args``/``oracle_args``: the first's.

    A subclass, not a field of ExpectedCall: a task's content hash covers its records' fields, so every
    task written without ``one_of`` keeps the hash (and the recorded episodes) it had.
    """

    one_of: tuple[ExpectedCall, ...] = ()
    """The alternatives, in order (each a call with ``op``, ``args``, ``oracle_args``, or a
    :class:`CallSequence`); the oracle replays the first one the surface can reach."""

    @classmethod
    def of(cls, alternatives: tuple[ExpectedCall, ...], turn: int | None = None) -> OneOfCall:
        """The choice among ``alternatives`` (two or more), answering user turn ``turn``."""
        if len(alternatives) < 2:
            raise ValueError("one_of needs two or more alternatives")
        first = alternatives[0]
        return cls(first.op, dict(first.args), first.oracle_args, turn, one_of=tuple(alternatives))

    @property
    def alternatives(self) -> tuple[ExpectedCall, ...]:
        """The calls any of which satisfies this one, in order."""
        return self.one_of


@dataclass(frozen=True)
class CallSequence(ExpectedCall):
    """One alternative of a ``one_of`` made of two or more calls; ``op``/``args``/``oracle_args``: the first's.

    In order unless ``any_order``. It is satisfied when every one of its calls is: each by its own
    successful call (the calls check), each call's first try right (first-try accuracy).
    """

    calls: tuple[ExpectedCall, ...] = ()
    """The calls, in the order written (each with ``op``, ``args``, ``oracle_args``)."""
    any_order: bool = False
    """The calls may come in any order (else in the order written)."""
    written: str = field(default="", compare=False, repr=False)
    """How the file wrote the calls (``""``: a list, ``".calls"``: a mapping), for paths in messages."""

    @classmethod
    def of(cls, calls: tuple[ExpectedCall, ...], any_order: bool = False, written: str = "") -> CallSequence:
        """The sequence of ``calls`` (two or more)."""
        if len(calls) < 2:
            raise ValueError("a sequence alternative needs two or more calls")
        first = calls[0]
        return cls(first.op, dict(first.args), first.oracle_args, None, tuple(calls), any_order, written)

    @property
    def steps(self) -> tuple[ExpectedCall, ...]:
        return self.calls

    @property
    def in_any_order(self) -> bool:
        return self.any_order

    @property
    def shown(self) -> str:
        ops = [c.op for c in self.calls]
        return f"({' and '.join(ops)}, any order)" if self.any_order else " then ".join(ops)


def undeclared(schema: Mapping[str, object], names: Sequence[str]) -> list[str]:
    """Argument names an operation's schema does not declare and does not let through.

    A schema without ``properties``, or whose ``additionalProperties`` allows more, declares no closed
    set; otherwise the call validator refuses any other name (bench.base.validation), so an expected
    argument outside it can never be given, and one marked may-be-omitted (``""``) is dead: a typo.
    """
    props = schema.get("properties")
    extra = schema.get("additionalProperties")
    if not isinstance(props, Mapping) or extra is True or isinstance(extra, Mapping):
        return []
    return [n for n in names if n != "$extra" and n not in props]


def call_from(data: Mapping[str, object], keys: frozenset[str], at: str, turn: int | None = None) -> ExpectedCall:
    """One expected call (or alternative) of a task file: ``op``, ``args`` matchers, ``oracle_args``."""
    no_unknown(data, keys, at)
    op = text(data, "op", at, required=True)
    args = mapping(data, "args", at)
    check_object_matcher(args, f"{at}.args")
    oracle = data.get("oracle_args")
    if oracle is not None and not isinstance(oracle, Mapping):
        _fail(at, f"field 'oracle_args' must be a mapping of concrete arguments, got {_got(oracle)}")
    return ExpectedCall(str(op), args, None if oracle is None else dict(oracle), turn)


def one_of_from(data: Mapping[str, object], at: str, turn: int | None) -> OneOfCall:
    """An expected call written ``{one_of: [{op, args, oracle_args}, ...], turn}``, every field checked."""
    if "op" in data or "args" in data or "oracle_args" in data:
        _fail(at, "has both 'one_of' and op/args: put each alternative's op and args inside one_of")
    no_unknown(data, ONE_OF_KEYS, at)
    raw = data["one_of"]
    if not isinstance(raw, list) or len(raw) < 2:
        _fail(
            at, f"one_of must be a list of two or more alternatives ({{op: ..., args: {{...}}}} each), got {_got(raw)}"
        )
    alternatives: list[ExpectedCall] = []
    for j, alt in enumerate(raw):
        where = f"{at}.one_of[{j}]"
        if isinstance(alt, list) or (isinstance(alt, Mapping) and "calls" in alt):
            alternatives.append(sequence_from(alt, where))
            continue
        if not isinstance(alt, Mapping) or "op" not in alt:
            _fail(where, f"an alternative needs an 'op' (a mapping {{op: ..., args: {{...}}}}), got {_got(alt)}")
        if "turn" in alt:
            _fail(where, "'turn' belongs to the expected call, next to one_of, not to one alternative")
        alternatives.append(call_from(alt, ALTERNATIVE_KEYS, where))
    return OneOfCall.of(tuple(alternatives), turn)


def sequence_from(raw: object, at: str) -> CallSequence:
    """A sequence alternative: a list of calls (in order) or ``{calls: [...], any_order: true|false}``."""
    written, any_order = "", False
    if isinstance(raw, Mapping):
        if "op" in raw or "args" in raw:
            _fail(at, "has both 'calls' and op/args: a sequence's op and args go inside each of its calls")
        no_unknown(raw, SEQUENCE_KEYS, at)
        written, any_order, raw = ".calls", bool(boolean(raw, "any_order", at)), raw["calls"]
    if not isinstance(raw, list) or len(raw) < 2:
        _fail(
            at + written,
            f"a sequence alternative needs a list of two or more calls ({{op: ..., args: {{...}}}} each), got "
            f"{_got(raw)}",
        )
    calls = []
    for k, call in enumerate(raw):
        where = f"{at}{written}[{k}]"
        if isinstance(call, Mapping) and "one_of" in call:
            _fail(where, "a sequence cannot hold a one_of: write each combination as an alternative of its own")
        if not isinstance(call, Mapping) or "op" not in call:
            _fail(where, f"a call of a sequence needs an 'op' (a mapping {{op: ..., args: {{...}}}}), got {_got(call)}")
        if "turn" in call:
            _fail(where, "'turn' belongs to the expected call, next to one_of, not to one call of an alternative")
        calls.append(call_from(call, ALTERNATIVE_KEYS, where))
    return CallSequence.of(tuple(calls), any_order, written)


def check_call(index: int, call: ExpectedCall, catalog: Catalog, where: str, *, args: bool) -> None:
    """An expected call's operations (each alternative's) are in the catalog and its arguments in their schemas.

    Args:
        index: The call's position in the task's ``expected`` list.
        call: The expected call.
        catalog: The task's catalog.
        where: ``file: task 'id'`` for the message.
        args: Also check argument names (off for a loader's tasks, see check_against_catalog).
    """
    choice = isinstance(call, OneOfCall)
    steps = [
        (f"{where}: expected[{index}]" + (f".one_of[{j}]" if choice else "") + _step_path(alt, k), step)
        for j, alt in enumerate(call.alternatives)
        for k, step in enumerate(alt.steps)
    ]
    for at, alt in steps:
        if alt.op not in catalog:
            near = closest(alt.op, catalog.names)
            tip = f" (did you mean {', '.join(near)}?)" if near else ""
            if choice:
                _fail(at, f"op {alt.op!r} not in the catalog{tip}")
            _fail(where, f"expected op {alt.op!r} not in the catalog{tip}")
        if not args:
            continue
        schema = catalog[alt.op].parameters
        for label, given in (("args", alt.args), ("oracle_args", alt.oracle_args or {})):
            unknown = undeclared(schema, list(given))
            if unknown:
                near = closest(unknown[0], list(schema.get("properties", {})))
                tip = f" (did you mean {near[0]!r}?)" if near else ""
                _fail(f"{at}.{label}", f"{alt.op} has no argument {unknown[0]!r}{tip}")


def _step_path(alt: ExpectedCall, k: int) -> str:
    """The path of the ``k``-th call inside an alternative (``""`` for a single call, ``[1]`` or ``.calls[1]``)."""
    return f"{alt.written}[{k}]" if isinstance(alt, CallSequence) else ""
