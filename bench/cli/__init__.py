"""The front ends: the command line, the Python API and Hydra.

The front ends: the command line (``cli``), the Python API under it (``api``: ``surfbench.run``), Hydra's
composition and sweeps (``compose``, ``sweep``, ``session``), catalog-scale runs (``scale_cli``), the ``mcp``
options and commands (``mcp``) and temporary folders (``tempdirs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.cli.api import RunFailed as RunFailed
    from surfbench.bench.cli.api import RunResult as RunResult
    from surfbench.bench.cli.api import RunSpec as RunSpec
    from surfbench.bench.cli.api import run as run
    from surfbench.bench.cli.cli import main as main

EXPORTS = {
    "RunFailed": "api",
    "RunResult": "api",
    "RunSpec": "api",
    "main": "cli",
    "run": "api",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
