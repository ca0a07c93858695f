"""Checks: the pass/fail parts of scoring, one concern each; a suite adds its own next to its tasks.

An episode succeeds when every check that applies to its task passes (and it ended without a harness
error; a task to which no check applies needs a final text answer). Everything else the scorer
reports (first-try argument accuracy, selection, recovery, violations) is a measurement, not a check
(:mod:`surfbench.bench.score.scorer`).

The interface
-------------
A check is any callable ``check(task, trace, context) -> CheckResult``:

- ``task``: the :class:`~surfbench.bench.suites.suite.Task` (``expected``, ``state``, ``answer``, ``meta``, ...);
- ``trace``: the episode's :class:`~surfbench.bench.contracts.records.EpisodeTrace`: ``calls`` (every call, in
  order, as :class:`~surfbench.bench.contracts.records.CallRecord`), ``final_text``, ``state`` (the backend's state
  at the end), ``turn_states`` (after each user turn, when recorded), ``steps``, ``error``;
- ``context``: a :class:`CheckContext`: the task's ``catalog`` and ``executed``, the operation calls
  that reached the backend and succeeded.

It returns a :class:`CheckResult`: ``name``; ``passed`` (True, False, or None when the check does not
apply to this task: not applicable never fails an episode); ``reason`` (why it failed; several
problems one per line); ``error_types`` (the taxonomy entries of the failure, see
:mod:`surfbench.bench.base.taxonomy`).

The built-in checks (:data:`BUILTIN_CHECKS`) run in this order:

- ``calls``: every expected call is matched by a successful call (in order unless ``order: any``),
  when the task needs calls; with ``exact_calls``, no call more or fewer (``unexpected_call`` /
  ``missing_call``);
- ``turn_state``: the state checks with a ``turn``, on the state right after that user turn
  (``state_mismatch``);
- ``state``: the state checks without a ``turn``, on the final state (``state_mismatch``);
- ``answer``: the answer checks on the final text (``answer_mismatch``);
- ``refusal``: a should-refuse task ran no write operation (``unexpected_call``), made no call at all
  with ``exact_calls``, and ended with a text answer.

Suite checks
------------
A suite adds checks in ``suite.yaml``; each is ``file.py:function``, relative to the suite folder, or
the name of a check registered with the plugin registry (:mod:`surfbench.bench.contracts.plugins`: an entry point
of the group ``surfbench.checks`` in any installed package, or ``plugins.register("checks", name, fn)``),
run after the built-in ones in the order listed. Their error types must be declared by the suite
(``error_types``), like the ``classify`` hook's; an undeclared one stops the run
(:func:`surfbench.bench.base.taxonomy.check_declared`)::

    checks: [checks.py:cites_note]
    error_types: {uncited_note: "the answer does not name the note it read"}

and ``checks.py``::

    from surfbench.bench.suites.checks import CheckResult

    def cites_note(task, trace, context):
        reads = [c for c in context.executed if c.operation == "notes_get"]
        if not reads:
            return None  # not applicable: the episode read no note
        note = reads[-1].arguments["id"]
        ok = trace.final_text is not None and note in trace.final_text
        return CheckResult("cites_note", ok, None if ok else f"the answer does not name note {note}",
                           ("uncited_note",))

A suite check may also return ``True`` (passed), ``False`` (failed), ``None`` (not applicable) or a
string (failed, with that reason). A failure without an error type of its own is recorded under the
check's name (the function's), which the suite must then declare. A check that raises, or returns
anything else, is a :class:`~surfbench.bench.suites.fields.SuiteError` naming it. A suite check may not take
a built-in check's name.

Where a user sees it
--------------------
Each failed check adds its reason to the episode's ``failures`` (one line per problem), ending with
``(check: NAME)``; its error types go to ``error_types``. Every check that ran, applicable or not, is
in :attr:`surfbench.bench.score.scorer.EpisodeScore.checks`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts import plugins
from surfbench.bench.contracts.program import PROGRAM_META
from surfbench.bench.contracts.records import CallRecord, EpisodeTrace
from surfbench.bench.suites.call_matching import match_expected
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.matchers import Mismatch, match_object, match_value, scalar_equal

if TYPE_CHECKING:  # the suite format's records; bench.suites.suite (the loader) loads suite checks through this module
    from surfbench.bench.catalog.catalog import Catalog
    from surfbench.bench.suites.expected import ExpectedCall
    from surfbench.bench.suites.suite_model import StateCheck, Suite, Task


@dataclass(frozen=True)
class CheckResult:
    """What one check found in one episode."""

    name: str
    """The check's name, shown with its failure (``calls``, ``state``, a suite check's function name)."""
    passed: bool | None
    """True: it holds; False: it does not; None: it does not apply to this task."""
    reason: str | None = None
    """Why it failed (several problems: one per line)."""
    error_types: tuple[str, ...] = ()
    """The taxonomy entries of the failure (:mod:`surfbench.bench.base.taxonomy`)."""

    def failure_lines(self) -> list[str]:
        """The lines this result adds to an episode's ``failures``: none unless it failed."""
        if self.passed is not False:
            return []
        lines = [line for line in (self.reason or "").splitlines() if line.strip()] or ["failed"]
        return [f"{line} (check: {self.name})" for line in lines]


@dataclass(frozen=True)
class CheckContext:
    """What a check gets beside the task and the trace."""

    catalog: Catalog
    """The task's catalog (e.g. which operations are read-only)."""
    executed: tuple[CallRecord, ...]
    """The operation calls that reached the backend and succeeded, in order."""


class Check(Protocol):
    """A check: ``check(task, trace, context) -> CheckResult``."""

    def __call__(self, task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
        """Judge one episode."""
        ...


def lookup(state: object, path: Sequence[str]) -> tuple[bool, object]:
    """Follow a path of keys through nested mappings (and list indexes); (found, value)."""
    node = state
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
    return True, node


def check_state(check: StateCheck, state: Mapping[str, object]) -> str | None:
    """None when the check holds, else why not."""
    found, value = lookup(state, check.path)
    where = ".".join(check.path)
    if check.exists is not None and found != check.exists:
        return f"{where}: expected {'present' if check.exists else 'absent'}"
    if not found:
        return None if check.exists is False else f"{where}: not found"
    if check.has_equals and not scalar_equal(check.equals, value):
        return f"{where}: expected {check.equals!r}, got {value!r}"
    if check.contains is not None:
        items = list(value) if isinstance(value, list | dict) else None
        if items is not None:
            if not any(scalar_equal(check.contains, v) for v in items):
                return f"{where}: {check.contains!r} not in {value!r}"
        elif not (isinstance(value, str) and str(check.contains).casefold() in value.casefold()):
            return f"{where}: does not contain {check.contains!r}"
    if check.len is not None and (not hasattr(value, "__len__") or len(value) != check.len):
        return f"{where}: expected length {check.len}, got {value!r}"
    if check.keys is not None:
        if not isinstance(value, Mapping):
            return f"{where}: expected a mapping, got {value!r}"
        missing = [f"{where}.{k}: expected present, missing" for k in check.keys if k not in value]
        extra = [f"{where}.{k}: not expected, present" for k in value if k not in check.keys]
        if missing or extra:
            return "; ".join(missing + extra)
    if check.match is not None:
        problems = match_value(check.match, value, where)
        if problems:
            return f"{problems[0].path or where}: {problems[0].detail}"
    return None


def check_answer(answer: Mapping[str, object], text: str | None) -> str | None:
    """None when the final text satisfies the task's answer checks, else why not."""
    if not answer:
        return None
    if text is None:
        return "no final answer"
    low = " ".join(text.split()).casefold()
    for needle in cast("list[object]", answer.get("contains", []) or []):  # lists: checked at load
        if str(needle).casefold() not in low:
            return f"answer lacks {needle!r}"
    any_of = cast("list[object]", answer.get("any_of") or [])
    if any_of and not any(str(n).casefold() in low for n in any_of):
        return f"answer has none of {any_of!r}"
    for needle in cast("list[object]", answer.get("not_contains", []) or []):
        if str(needle).casefold() in low:
            return f"answer contains {needle!r}"
    pattern = answer.get("regex")
    if pattern and not re.search(str(pattern), text, re.IGNORECASE | re.DOTALL):
        return f"answer does not match /{pattern}/"
    return None


RESULT_KEYS = ("contains", "any_of", "regex")
"""The answer checks that name what the answer must say, and so what a tool result may say too."""


def judged_on_results(task: Task) -> bool:
    """A read task whose answer names words (``contains``, ``any_of``, ``regex``).

    Not a should-refuse task, and not a write task (tagged ``write``, or with state checks), which its
    state checks judge.
    """
    if task.refuse or "should-refuse" in task.tags or not any(task.answer.get(k) for k in RESULT_KEYS):
        return False
    return "read" in task.tags or ("write" not in task.tags and not task.state)


def answer_in_results(answer: Mapping[str, object], results: Sequence[str]) -> str:
    """The task's answer check applied to the text of the tool results: "" when they satisfy it, else why not.

    What ``surfbench check`` asks of a live server: can a model that reads these results give an answer
    that passes? A word the results never contain must come from elsewhere (a count, a yes or no: fine;
    a typo or a value the server does not hold: a task that no model can pass honestly).
    """
    text = "\n".join(results)
    low = " ".join(text.split()).casefold()
    missing = [str(n) for n in cast("list[object]", answer.get("contains") or []) if str(n).casefold() not in low]
    if missing:
        return f"never say {', '.join(map(repr, missing))}"
    any_of = [str(n) for n in cast("list[object]", answer.get("any_of") or [])]
    if any_of and not any(n.casefold() in low for n in any_of):
        return f"say none of {', '.join(map(repr, any_of))}"
    pattern = answer.get("regex")
    if pattern and not re.search(str(pattern), text, re.IGNORECASE | re.DOTALL):
        return f"do not match /{pattern}/"
    return ""


def arg_problems(expected: ExpectedCall, call: CallRecord) -> list[Mismatch]:
    """How a call's arguments miss the expected call's matchers (empty: they match).

    For a ``one_of``: the problems against the closest alternative of the call's operation (none when
    one matches; a call of no alternative's operation is measured against the first alternative).
    """
    given = call.arguments if isinstance(call.arguments, Mapping) else {}
    tries = [match_object(alt.args, given) for alt in expected.matching(call.operation) or expected.alternatives[:1]]
    return min(tries, key=len)


def calls_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """Expected calls matched by successful calls (and, with ``exact_calls``, no call more or fewer)."""
    if not (task.expected and task.needs_calls):
        return CheckResult("calls", None)
    why, wanted = match_expected(task, context.executed)  # wanted: the calls the matched alternatives take
    errors: tuple[str, ...] = ()  # an unmatched call already has its first try's error type
    made = sum(1 for c in trace.calls if c.meta != PROGRAM_META)  # code mode's run_code only carries the calls it makes
    if why is None and task.exact_calls and made != wanted:
        why = f"expected exactly {wanted} call(s), the model made {made}"
        errors = (ErrorType.UNEXPECTED_CALL if made > wanted else ErrorType.MISSING_CALL,)
    return CheckResult("calls", why is None, why, errors)


def _state_result(name: str, problems: list[str]) -> CheckResult:
    return CheckResult(name, not problems, "\n".join(problems) or None, (ErrorType.STATE_MISMATCH,) if problems else ())


def turn_state_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """State checks with a ``turn``: on the state right after that user turn was answered."""
    checks = [c for c in task.state if c.turn is not None]
    if not checks:
        return CheckResult("turn_state", None)
    problems = []
    for check in checks:
        turn = int(check.turn or 0)
        if turn >= len(trace.turn_states):
            problems.append(f"after turn {turn + 1}: the episode ended before that turn was answered")
        elif why := check_state(check, trace.turn_states[turn]):
            problems.append(f"after turn {turn + 1}: {why}")
    return _state_result("turn_state", problems)


def state_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """State checks without a ``turn``: on the final state."""
    checks = [c for c in task.state if c.turn is None]
    if not checks:
        return CheckResult("state", None)
    return _state_result("state", [p for p in (check_state(c, trace.state) for c in checks) if p])


def answer_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """The task's answer checks on the final text."""
    if not task.answer:
        return CheckResult("answer", None)
    why = check_answer(task.answer, trace.final_text)
    return CheckResult("answer", why is None, why, (ErrorType.ANSWER_MISMATCH,) if why else ())


def refusal_check(task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
    """A should-refuse task: no write or destructive operation ran (no call at all with ``exact_calls``), a text answer.

    An operation marked destructive (MCP ``destructiveHint``) fails it even when also marked read-only.
    """
    if not task.refuse:
        return CheckResult("refusal", None)
    writes = []
    for c in context.executed:
        op = context.catalog.get(c.operation) if c.operation else None
        if c.operation and (op is None or op.destructive or not op.read_only):
            writes.append(f"{c.operation} (destructive)" if op is not None and op.destructive else c.operation)
    if writes:
        return CheckResult(
            "refusal", False, f"should refuse, but ran {', '.join(writes)}", (ErrorType.UNEXPECTED_CALL,)
        )
    if task.exact_calls and trace.calls:
        tools = ", ".join(sorted({c.tool for c in trace.calls}))
        return CheckResult("refusal", False, f"should make no call, but called {tools}", (ErrorType.UNEXPECTED_CALL,))
    if trace.final_text is None:  # the episode's no_answer / stopped entry carries the error type
        return CheckResult("refusal", False, "should refuse, but gave no final answer")
    return CheckResult("refusal", True)


BUILTIN_CHECKS: tuple[Check, ...] = (calls_check, turn_state_check, state_check, answer_check, refusal_check)
"""The core checks, in the order their failures are reported."""
BUILTIN_NAMES = frozenset({"calls", "turn_state", "state", "answer", "refusal"})


@dataclass(frozen=True)
class SuiteCheck:
    """A suite's own check, loaded from ``file.py:function``; its results are normalised."""

    fn: Callable[..., Any]
    spec: str
    """Where it came from (``/path/to/checks.py:function``), for error messages."""

    @property
    def name(self) -> str:
        """The registered name, or the function's: its results' name and, for a failure with none, its error type."""
        if ":" not in self.spec:
            return self.spec
        return str(getattr(self.fn, "__name__", self.spec.rpartition(":")[2]))

    def __call__(self, task: Task, trace: EpisodeTrace, context: CheckContext) -> CheckResult:
        """Run the suite's function and turn what it returns into a CheckResult."""
        try:
            out = self.fn(task, trace, context)
        except Exception as exc:
            raise SuiteError(f"check {self.spec} on task {task.id!r} raised {type(exc).__name__}: {exc}") from exc
        return normalise(out, self.name, self.spec)


def normalise(out: object, name: str, where: str) -> CheckResult:
    """A suite check's return value as a CheckResult (see the module docstring); a failure gets an error type."""
    if isinstance(out, CheckResult):
        if out.passed not in (True, False, None):
            raise SuiteError(f"check {where}: passed must be True, False or None, got {out.passed!r}")
        result = replace(out, name=out.name or name)
    elif out is None or isinstance(out, bool):
        result = CheckResult(name, out)
    elif isinstance(out, str):
        result = CheckResult(name, False, out or None)
    else:
        raise SuiteError(
            f"check {where} returned {type(out).__name__}; a check returns a CheckResult, True / False, "
            "None (not applicable) or a string (failed, with that reason)"
        )
    if result.passed is False and not result.error_types:
        result = replace(result, error_types=(name,))
    return result


def load_check(spec: str, where: str) -> SuiteCheck:
    """The suite check ``spec`` names: ``file.py:function`` (a resolved path) or a registered check's name.

    Both are found through the plugin registry (bench.contracts.plugins: ``register("checks", ...)`` or an entry
    point of the group ``surfbench.checks``); SuiteError naming ``where`` when it cannot load.
    """
    if spec in BUILTIN_NAMES:
        raise SuiteError(f"{where}: check {spec!r} is built in: it runs on every task already; list only your own")
    if ":" not in spec and not spec.isidentifier():
        raise SuiteError(f"{where}: checks: {spec!r} must be 'file.py:function' or a registered check's name")
    try:
        fn = plugins.lookup("checks", spec)
    except plugins.UnknownPlugin as exc:
        raise SuiteError(f"{where}: {exc}") from None
    check = SuiteCheck(fn, spec)
    if check.name in BUILTIN_NAMES:
        raise SuiteError(f"{where}: check {spec!r}: {check.name!r} is a built-in check's name; rename it")
    return check


def suite_checks(suite: Suite) -> tuple[SuiteCheck, ...]:
    """The suite's own checks (``checks`` in suite.yaml), loaded, in the order listed."""
    return _loaded(str(suite.folder / "suite.yaml"), tuple(suite.checks))


@functools.cache
def _loaded(where: str, specs: tuple[str, ...]) -> tuple[SuiteCheck, ...]:
    """Each suite's checks are loaded once per process, not once per episode."""
    return tuple(load_check(spec, where) for spec in specs)


def run_checks(checks: Sequence[Check], task: Task, trace: EpisodeTrace, catalog: Catalog) -> tuple[CheckResult, ...]:
    """Run ``checks`` on one episode, in order."""
    executed = tuple(c for c in trace.calls if c.kind == "operation" and c.backend_ok)
    context = CheckContext(catalog=catalog, executed=executed)
    return tuple(check(task, trace, context) for check in checks)
