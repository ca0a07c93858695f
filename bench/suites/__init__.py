"""The suites stage: the suite format, loading, expected calls and checks.

Suites: the format (``suite_model``) and its field and matcher checks (``format_checks``,
``matcher_format``, ``fields``), finding and loading suites (``suite``), expected calls and matchers
(``expected``, ``matchers``), the pass/fail checks of scoring (``checks``), suite hooks (``hooks``), and
catalog growth for a suite (``grow``). Live MCP suites are in ``bench/mcp/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.suites.expected import ExpectedCall as ExpectedCall
    from surfbench.bench.suites.expected import OneOfCall as OneOfCall
    from surfbench.bench.suites.suite import (
        load_suite as load_suite,
    )
    from surfbench.bench.suites.suite import (
        load_tasks as load_tasks,
    )
    from surfbench.bench.suites.suite import (
        suite_names as suite_names,
    )
    from surfbench.bench.suites.suite_model import (
        AnswerCheck as AnswerCheck,
    )
    from surfbench.bench.suites.suite_model import (
        StateCheck as StateCheck,
    )
    from surfbench.bench.suites.suite_model import (
        Suite as Suite,
    )
    from surfbench.bench.suites.suite_model import (
        Task as Task,
    )

EXPORTS = {
    "AnswerCheck": "suite_model",
    "ExpectedCall": "expected",
    "OneOfCall": "expected",
    "StateCheck": "suite_model",
    "Suite": "suite_model",
    "Task": "suite_model",
    "load_suite": "suite",
    "load_tasks": "suite",
    "suite_names": "suite",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
