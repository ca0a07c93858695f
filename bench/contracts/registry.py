"""Surface kinds by name, through the one plugin registry (bench.contracts.plugins); the core's only way to a surface.

Each kind is an entry point in the group ``surfbench.surfaces`` (``full = "surfbench.surfaces.full:FullSurface"``
in this project's pyproject.toml), so another installed package adds a kind with an entry point of its own
and touches nothing here. A ``"package.module:Class"`` string names a surface kept anywhere importable, and
:func:`register` adds a class at run time (tests, notebooks). The core never imports ``surfbench.surfaces``.
Suites, checks and model providers are found the same way (``plugins.lookup(kind, name)``).
"""

from __future__ import annotations

from typing import Any

from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.contracts import plugins
from surfbench.bench.contracts.surface import Surface

GROUP = "surfbench.surfaces"
KIND = "surfaces"
UnknownSurface = plugins.UnknownPlugin
"""No surface of that kind (a config error: the CLI prints it as one line); the message lists close names."""


def register(cls: type[Surface]) -> type[Surface]:
    """Class decorator: make ``cls`` available under ``cls.kind`` in this process."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} needs a 'kind'")
    plugins.register(KIND, cls.kind, cls)
    return cls


def available() -> list[str]:
    """Every kind known by name: installed entry points and classes registered in this process."""
    return plugins.names(KIND)


def surface_class(kind: str) -> type[Surface]:
    """The class of a surface kind: a registered or entry-point name, or ``"module:Class"``."""
    cls: type[Surface] = plugins.lookup(KIND, kind)
    return cls


def build_surface(
    catalog: Catalog, kind: str, params: dict[str, Any] | None = None, name: str | None = None
) -> Surface:
    """Instantiate a surface of ``kind`` over ``catalog``; unknown parameters are an error."""
    cls = surface_class(kind)
    params = dict(params or {})
    instructions = str(params.pop("instructions", "") or "")
    return cls(catalog=catalog, name=name or kind, params=dict(params), instructions=instructions)
