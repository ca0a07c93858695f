"""Suite hooks: the functions and classes a ``suite.yaml`` names as ``file.py:attr``.

Classify, loader, backend and check hooks, and an MCP suite's setup, all load through the plugin
registry's one loader; a hook that cannot be loaded, or is not callable, is a SuiteError naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from surfbench.bench.contracts import plugins
from surfbench.bench.suites.fields import SuiteError


def load_hook(spec: str, where: Path | str, role: str) -> Any:
    """The function or class a suite.yaml names as ``file.py:attr`` (classify, loader, backend, checks).

    Loaded by the registry's one loader (:func:`bench.contracts.plugins.load_attr`), as a check or a surface spec is.
    """
    try:
        found = plugins.load_attr(spec, role)
    except plugins.UnknownPlugin as exc:
        raise SuiteError(f"{where}: {exc}") from None
    if not callable(found):
        raise SuiteError(f"{where}: {role} {spec!r} is not a function")
    return found
