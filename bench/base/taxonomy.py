"""The one error taxonomy: every failed check and every rejected or failed call carries one of these.

The core types are the :class:`ErrorType` enum. A suite adds its own failure modes in ``suite.yaml``
(``error_types: {name: description}``) and a surface module its own rejections (``error_types`` on
the class); anything else that shows up in an episode is a harness bug, raised as
:class:`UndeclaredErrorType` so that no report ever groups by a type nobody defined. docs/metrics.md's
list is checked against this enum by a test.

Code uses the members, never their spelling (a test scans for an error type compared with a string
literal); a suite or surface uses the constants it declares. ``ErrorType`` is a ``StrEnum``: a member
equals, hashes, formats and serialises as its value, so stored rows hold the same plain strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class ErrorType(StrEnum):
    """Core error types (BFCL's lesson: reports group by these keys, so they are one fixed list)."""

    WRONG_OPERATION = "wrong_operation"
    MISSING_CALL = "missing_call"
    UNEXPECTED_CALL = "unexpected_call"
    MISSING_ARGUMENT = "missing_argument"
    WRONG_VALUE = "wrong_value"
    EXTRA_ARGUMENT = "extra_argument"
    TYPE_ERROR = "type_error"
    SCHEMA_INVALID = "schema_invalid"
    NOT_EXPOSED = "not_exposed"
    NOT_LOADED = "not_loaded"
    UNKNOWN_OPERATION = "unknown_operation"
    BAD_META_CALL = "bad_meta_call"
    PARSE_FAILURE = "parse_failure"
    BACKEND_ERROR = "backend_error"
    TOOL_TIMEOUT = "tool_timeout"
    STATE_MISMATCH = "state_mismatch"
    ANSWER_MISMATCH = "answer_mismatch"
    NO_ANSWER = "no_answer"
    STUCK_REPEAT = "stuck_repeat"
    HARNESS_ERROR = "harness_error"
    CONTEXT_OVERFLOW = "context_overflow"
    POLICY_DENIED = "policy_denied"
    POLICY_REFUSED = "policy_refused"


DESCRIPTIONS: dict[ErrorType, str] = {
    ErrorType.WRONG_OPERATION: "the first canonical call named another operation than the one expected",
    ErrorType.MISSING_CALL: "an expected call never happened",
    ErrorType.UNEXPECTED_CALL: "a call the task did not ask for (a write on a should-refuse task; extra calls)",
    ErrorType.MISSING_ARGUMENT: "a required or expected argument was omitted",
    ErrorType.WRONG_VALUE: "an argument had a value outside the acceptable ones",
    ErrorType.EXTRA_ARGUMENT: "an argument the expected call does not have",
    ErrorType.TYPE_ERROR: "an argument of the wrong JSON type",
    ErrorType.SCHEMA_INVALID: "rejected by the operation's JSON Schema (enum, constraint, unknown argument)",
    ErrorType.NOT_EXPOSED: "a call to a tool the surface did not show (boundary violation)",
    ErrorType.NOT_LOADED: "an operation called before it was loaded or found (protocol violation)",
    ErrorType.UNKNOWN_OPERATION: "a dispatcher call naming no operation of the catalog",
    ErrorType.BAD_META_CALL: "a malformed help / load / search call",
    ErrorType.PARSE_FAILURE: "output that claimed a tool call but could not be parsed",
    ErrorType.BACKEND_ERROR: "the operation ran and failed in the backend (not found, conflict, ...)",
    ErrorType.TOOL_TIMEOUT: "the operation got no answer within its timeout (a live MCP server's call_timeout_s)",
    ErrorType.STATE_MISMATCH: "a state check failed",
    ErrorType.ANSWER_MISMATCH: "an answer check failed",
    ErrorType.NO_ANSWER: "the episode ended without a final text answer (max_steps reached)",
    ErrorType.STUCK_REPEAT: "stopped early: the same failing step sent stop_on_repeat times in a row",
    ErrorType.HARNESS_ERROR: "the harness itself failed (recorded with a traceback)",
    ErrorType.CONTEXT_OVERFLOW: "the conversation no longer fit the model's context window",
    ErrorType.POLICY_DENIED: "a call to an operation the operation policy denies (never run; bench/suites/policy.py)",
    ErrorType.POLICY_REFUSED: "a call to an operation the policy asks about, refused by the simulated user (never run)",
}

CORE: frozenset[str] = frozenset(e.value for e in ErrorType)


class UndeclaredErrorType(RuntimeError):
    """An episode carries an error type that neither the core, its suite nor its surface declares."""


def check_declared(types: Iterable[str], declared: frozenset[str], where: str) -> None:
    """Raise :class:`UndeclaredErrorType` for the first type of ``types`` not in core or ``declared``."""
    for name in types:
        if name not in CORE and name not in declared:
            raise UndeclaredErrorType(
                f"{where}: error type {name!r} is not declared; core types are {', '.join(sorted(CORE))}; a suite "
                "declares its own under error_types in suite.yaml, a surface in its class's error_types"
            )
