"""Expected calls: one canonical call a task expects, or a choice among alternatives (``one_of``).

A server that offers the same action two ways (a granular ``create_issue`` and a consolidated
``issue_write {method: create}``) is served correctly by either; a task names both::

    expected:
      - one_of:
          - {op: create_issue, args: {title: Bug}}
          - {op: issue_write, args: {method: create, title: Bug}}

Selection, first-try accuracy and the calls check accept any alternative; the scripted oracle replays
the first. A :class:`OneOfCall` is an :class:`ExpectedCall` whose ``op``, ``args`` and ``oracle_args``
are its first alternative's, so code that replays or lists expected calls needs no change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.validation import closest
from surfbench.bench.suites.fields import _fail, _got, mapping, no_unknown, text
from surfbench.bench.suites.matcher_format import check_object_matcher

if TYPE_CHECKING:
    from surfbench.bench.catalog.catalog import Catalog

ALTERNATIVE_KEYS = frozenset({"op", "args", "oracle_args"})
"""The keys of one alternative of a ``one_of`` (its ``turn`` belongs to the expected call)."""
ONE_OF_KEYS = frozenset({"one_of", "turn"})
"""The keys of an expected call written as a choice among alternatives."""


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
    def ops(self) -> tuple[str, ...]:
        """The operations that may serve this call, each once, in order."""
        return tuple(dict.fromkeys(a.op for a in self.alternatives))

    @property
    def label(self) -> str:
        """How messages name the call: its operation, or ``create_issue or issue_write``."""
        return " or ".join(self.ops)

    def matching(self, op: str | None) -> tuple[ExpectedCall, ...]:
        """The alternatives a call of ``op`` is judged against (empty: ``op`` serves none)."""
        return tuple(a for a in self.alternatives if a.op == op)


@dataclass(frozen=True)
class OneOfCall(ExpectedCall):
    """An expected call that any of its alternatives satisfies; ``op``/``args``/``oracle_args``: the first's.

    A subclass, not a field of ExpectedCall: a task's content hash covers its records' fields, so every
    task written without ``one_of`` keeps the hash (and the recorded episodes) it had.
    """

    one_of: tuple[ExpectedCall, ...] = ()
    """The alternatives, in order (each with ``op``, ``args``, ``oracle_args``); the oracle replays the first."""

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


def undeclared(schema: Mapping[str, Any], names: Sequence[str]) -> list[str]:
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


def call_from(data: Mapping[str, Any], keys: frozenset[str], at: str, turn: int | None = None) -> ExpectedCall:
    """One expected call (or alternative) of a task file: ``op``, ``args`` matchers, ``oracle_args``."""
    no_unknown(data, keys, at)
    op = text(data, "op", at, required=True)
    args = mapping(data, "args", at)
    check_object_matcher(args, f"{at}.args")
    oracle = data.get("oracle_args")
    if oracle is not None and not isinstance(oracle, Mapping):
        _fail(at, f"field 'oracle_args' must be a mapping of concrete arguments, got {_got(oracle)}")
    return ExpectedCall(str(op), args, None if oracle is None else dict(oracle), turn)


def one_of_from(data: Mapping[str, Any], at: str, turn: int | None) -> OneOfCall:
    """An expected call written ``{one_of: [{op, args, oracle_args}, ...], turn}``, every field checked."""
    if "op" in data or "args" in data or "oracle_args" in data:
        _fail(at, "has both 'one_of' and op/args: put each alternative's op and args inside one_of")
    no_unknown(data, ONE_OF_KEYS, at)
    raw = data["one_of"]
    if not isinstance(raw, list) or len(raw) < 2:
        _fail(
            at, f"one_of must be a list of two or more alternatives ({{op: ..., args: {{...}}}} each), got {_got(raw)}"
        )
    alternatives = []
    for j, alt in enumerate(raw):
        where = f"{at}.one_of[{j}]"
        if not isinstance(alt, Mapping) or "op" not in alt:
            _fail(where, f"an alternative needs an 'op' (a mapping {{op: ..., args: {{...}}}}), got {_got(alt)}")
        if "turn" in alt:
            _fail(where, "'turn' belongs to the expected call, next to one_of, not to one alternative")
        alternatives.append(call_from(alt, ALTERNATIVE_KEYS, where))
    return OneOfCall.of(tuple(alternatives), turn)


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
    for j, alt in enumerate(call.alternatives):
        at = f"{where}: expected[{index}]" + (f".one_of[{j}]" if choice else "")
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
