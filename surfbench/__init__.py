"""surfbench: measure tool surfaces for LLM agents.

One namespace over the project's folders: ``surfbench.bench`` (the harness core, ``bench/``),
``surfbench.surfaces`` (one module per surface kind, ``surfaces/``), ``surfbench.tasks`` (one folder per
suite, ``tasks/``) and ``surfbench.configs`` (Hydra configs, package data, ``configs/``). The mapping is
pyproject.toml's ``[tool.setuptools.package-dir]``: the editable install serves the checkout's folders
under these names (an import hook), a wheel or an sdist holds copies.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from surfbench.bench.cli.api import RunFailed as RunFailed
    from surfbench.bench.cli.api import RunResult, RunSpec
    from surfbench.bench.store.reader import Runs

__version__ = "0.2.0"


def load(*runs: str | os.PathLike[str], keep_newest: bool = False) -> Runs:
    """Read run folders for analysis: ``surfbench.load("results/my-run").episodes`` (see :mod:`bench.store.reader`).

    Typed cells (``.cells``) and the ``.episodes``, ``.steps`` and ``.calls`` frames of each cell's current identity;
    ``.ignored`` counts the rows of older identities left out.
    """
    from surfbench.bench.store.reader import load as read

    return read(*runs, keep_newest=keep_newest)


def run(spec: RunSpec) -> RunResult:
    """Run a spec's cells in this process, as ``surfbench run`` would (see :mod:`surfbench.bench.cli.api`).

    ``surfbench.run(surfbench.RunSpec(suite="notes_mcp", surfaces=["full", "dispatcher"], models=[...]))``;
    the result's ``.cells`` (id, folder, episodes, summary) and ``.runs`` (the folder read by :func:`load`).
    """
    from surfbench.bench.cli.api import run as run_spec

    return run_spec(spec)


_API = ("RunSpec", "RunResult", "RunFailed")


def __getattr__(name: str) -> Any:
    """``RunSpec``, ``RunResult``, ``RunFailed``, imported on first use: a light ``import surfbench``."""
    if name in _API:
        from surfbench.bench.cli import api

        return getattr(api, name)
    raise AttributeError(f"module 'surfbench' has no attribute {name!r}")
