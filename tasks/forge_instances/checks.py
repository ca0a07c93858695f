"""The suite's own check: every call that reached a forge reached the one the task names (bench/suites/instances.py).

A task names its forge in ``meta: {instance: oss}``; a task that names none wants the default (``work``, the
``instance`` schema's default), which is also where a call without ``instance`` goes.
"""

from __future__ import annotations

from typing import Any

from surfbench.bench.suites.checks import CheckResult
from surfbench.bench.suites.instances import instance_check


def right_instance(task: Any, trace: Any, context: Any) -> CheckResult:
    """Fails (``wrong_instance``) when a call went to the other forge; one line per such call."""
    return instance_check(task, trace, context)
