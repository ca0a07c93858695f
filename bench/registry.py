"""Surface kinds by name, filled from package entry points; the core's only way to a surface.

Each kind is an entry point in the group ``surfbench.surfaces`` (``full = "surfbench.surfaces.full:FullSurface"``
in this project's pyproject.toml), so another installed package adds a kind with an entry point of its own
and touches nothing here. A ``"package.module:Class"`` string names a surface kept anywhere importable, and
:func:`register` adds a class at run time (tests, notebooks). The core never imports ``surfbench.surfaces``.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib import metadata
from typing import Any

from surfbench.bench.catalog import Catalog
from surfbench.bench.config import ConfigError
from surfbench.bench.surface import Surface
from surfbench.bench.validation import closest

GROUP = "surfbench.surfaces"
_REGISTERED: dict[str, type[Surface]] = {}


class UnknownSurface(ConfigError, KeyError):
    """No surface of that kind (a config error: the CLI prints it as one line); the message lists close names."""

    def __str__(self) -> str:
        return str(self.args[0])


def register(cls: type[Surface]) -> type[Surface]:
    """Class decorator: make ``cls`` available under ``cls.kind`` in this process."""
    if not cls.kind:
        raise ValueError(f"{cls.__name__} needs a 'kind'")
    _REGISTERED[cls.kind] = cls
    return cls


@cache
def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def available() -> list[str]:
    """Every kind known by name: installed entry points and classes registered in this process."""
    return sorted(set(_entry_points()) | set(_REGISTERED))


def _checked(cls: Any, where: str) -> type[Surface]:
    if not (isinstance(cls, type) and issubclass(cls, Surface)):
        raise UnknownSurface(f"{where} is not a Surface subclass (it is {cls!r})")
    return cls


def surface_class(kind: str) -> type[Surface]:
    """The class of a surface kind: a registered or entry-point name, or ``"module:Class"``."""
    if kind in _REGISTERED:
        return _REGISTERED[kind]
    if ":" in kind:
        module_name, _, attr = kind.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UnknownSurface(f"surface {kind!r}: cannot import {module_name!r} ({exc})") from exc
        if not hasattr(module, attr):
            raise UnknownSurface(f"surface {kind!r}: module {module_name!r} has no {attr!r}")
        return _checked(getattr(module, attr), repr(kind))
    point = _entry_points().get(kind)
    if point is not None:
        try:
            loaded = point.load()
        except Exception as exc:  # a broken plugin names itself, not a traceback from deep inside importlib
            raise UnknownSurface(
                f"surface {kind!r}: its entry point {point.value!r} failed to load: {type(exc).__name__}: {exc}"
            ) from exc
        return _checked(loaded, f"entry point {kind} = {point.value!r}")
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
    return cls(catalog=catalog, name=name or kind, params=dict(params), instructions=instructions)
