"""Surfaces, one module per kind; each is an entry point in the group ``surfbench.surfaces``.

Adding a surface is one module here (or in any package) plus an entry point and a config file in
``configs/surface/``; no harness code changes. Modules whose name starts with ``_`` and ``listing`` are
shared helpers. The contract (``Surface``, ``Session``, ``ToolCall``, ``Dispatch``, ``ToolSpec``) lives in
the core (:mod:`surfbench.bench.contracts.surface`); this package depends on the core, never the reverse.
"""

from __future__ import annotations

from surfbench.bench.contracts.registry import UnknownSurface, available, build_surface, register, surface_class
from surfbench.bench.contracts.surface import Dispatch, Session, Surface, ToolCall, ToolSpec

__all__ = [
    "Dispatch",
    "Session",
    "Surface",
    "ToolCall",
    "ToolSpec",
    "UnknownSurface",
    "available",
    "build_surface",
    "register",
    "surface_class",
]
