"""Surfaces, one module per kind, registered by name.

A module registers its class with ``@register``; ``surface_class("dispatcher")`` imports
``surfaces.dispatcher`` on first use, so adding a surface is one new module plus one config file and
touches no harness code. A ``"package.module:Class"`` string works for surfaces kept outside this
package.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from bench.catalog import Catalog
from bench.validation import closest
from surfaces.base import Dispatch, Session, Surface, ToolCall, ToolSpec

__all__ = [
    "Dispatch",
    "Session",
    "Surface",
    "ToolCall",
    "ToolSpec",
    "build_surface",
    "register",
    "surface_class",
]

_REGISTRY: dict[str, type[Surface]] = {}
_NOT_SURFACES = {"base", "listing"}  # and every module whose name starts with "_" (shared helpers)


class UnknownSurface(KeyError):
    """No surface of that kind; the message lists the close names."""

    def __str__(self) -> str:
        return str(self.args[0])


def register(cls: type[Surface]) -> type[Surface]:
    """Class decorator: make ``cls`` available under ``cls.kind``."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} needs a 'kind'")
    _REGISTRY[cls.kind] = cls
    return cls


def available() -> list[str]:
    modules = (m.name for m in pkgutil.iter_modules(__path__))
    names = {n for n in modules if n not in _NOT_SURFACES and not n.startswith("_")}
    return sorted(names | set(_REGISTRY))


def surface_class(kind: str) -> type[Surface]:
    if kind in _REGISTRY:
        return _REGISTRY[kind]
    if ":" in kind:
        module_name, _, attr = kind.partition(":")
        cls = getattr(importlib.import_module(module_name), attr)
        if not (isinstance(cls, type) and issubclass(cls, Surface)):
            raise UnknownSurface(f"{kind!r} is not a Surface subclass")
        return cls
    if kind in available():
        importlib.import_module(f"surfaces.{kind}")
        if kind in _REGISTRY:
            return _REGISTRY[kind]
    near = closest(kind, available())
    tip = f"; did you mean {', '.join(near)}?" if near else ""
    raise UnknownSurface(f"unknown surface kind {kind!r}{tip} (known: {', '.join(available())})")


def build_surface(
    catalog: Catalog, kind: str, params: dict[str, Any] | None = None, name: str | None = None
) -> Surface:
    """Instantiate a surface of ``kind`` over ``catalog``; unknown parameters are an error."""
    cls = surface_class(kind)
    params = dict(params or {})
    instructions = str(params.pop("instructions", "") or "")
    surface = cls(catalog=catalog, name=name or kind, params=dict(params), instructions=instructions)
    return surface
