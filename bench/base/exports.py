"""Lazy public names for a stage package: ``from surfbench.bench.store import load`` imports only ``reader``.

Each stage package's ``__init__`` names its public names and the module that defines each; the module is
imported on first use (PEP 562), so importing one module of a stage (the sandbox's entry, a suite's hook)
does not import the whole stage. Type checkers read the same names from the package's ``TYPE_CHECKING``
imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each of ``names`` (name -> module of the package) on first use."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
