"""One registry for what plugs into surfbench: surface kinds, suites, suite checks and model providers.

Before it, each kind was found its own way (entry points and a decorator for surfaces; an environment
variable, entry points and a glob for suites; file paths for checks; an if/elif for providers). Now every
kind (:data:`KINDS`) is found the same way, the first source that knows a name winning:

1. :func:`register` in this process (a test, a notebook, a surface class's ``@register``);
2. for suites only, the folders of ``SURFBENCH_SUITES`` (``:``-separated): a user's own suites, by folder;
3. entry points in the group ``surfbench.<kind>`` of any installed package (``surfbench.surfaces``,
   ``surfbench.suites``, ``surfbench.checks``, ``surfbench.providers``); this project declares its own
   surfaces and suites there too, so another package adds one with an entry point and touches nothing here;
4. the built-in map: the shipped ``tasks/`` folders, the core checks, the model providers (a checkout whose
   installed metadata is stale still finds what it ships).

:func:`lookup` returns what a name stands for (a surface class, a suite folder, a check function, a
provider) or raises :class:`UnknownPlugin`: one line with the close names. Outside suites, a name may also
be a spec, ``package.module:attr`` or ``file.py:attr`` (:func:`load_attr`, which loads the hooks a
suite.yaml names too). :func:`names` and :func:`listing` say what is known and where each came from
(``surfbench plugins``). The core never imports a surface or a suite: only entry points and folders name them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.validation import closest

if TYPE_CHECKING:
    import argparse

    from surfbench.bench.base.argtypes import ParserT

KINDS: dict[str, str] = {"surfaces": "surface kind", "suites": "suite", "checks": "check", "providers": "provider"}
"""Each kind of plugin and the word its messages use for one."""
SUITES_ENV = "SURFBENCH_SUITES"
SHIPPED_TASKS = Path(__file__).resolve().parents[2] / "tasks"
"""The suites this checkout (or installed package) ships, one folder each."""
BUILTIN: dict[str, dict[str, str]] = {
    "surfaces": {},  # this project's own are entry points in its pyproject.toml: the core names no surface
    "suites": {},  # the folders of SHIPPED_TASKS (see _builtin)
    "checks": {
        n: f"surfbench.bench.suites.checks:{n}_check" for n in ("calls", "turn_state", "state", "answer", "refusal")
    },
    "providers": {n: f"surfbench.bench.models.providers:{n.upper()}" for n in ("local", "litellm", "scripted")},
}
"""The built-in map: name -> ``module:attr``, loaded on first lookup."""
_REGISTERED: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
ENTRY_POINT = "entry point"


class UnknownPlugin(ConfigError, KeyError):
    """No plugin of that name, or one that fails to load (a config error: the CLI prints it as one line)."""

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).splitlines()))  # one line, always: the CLI prints it as one

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass(frozen=True)
class Plugin:
    """One name known to the registry, and where it comes from (for listings)."""

    kind: str
    name: str
    source: str
    """``registered``, ``SURFBENCH_SUITES``, ``entry point`` or ``built-in``."""
    value: str
    """What the name points at: ``module:attr``, a folder, or the registered object's repr."""


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise UnknownPlugin(f"unknown plugin kind {kind!r}; one of {', '.join(KINDS)}")
    return kind


def register(kind: str, name: str, obj: Any) -> Any:
    """Make ``obj`` known as ``name`` of ``kind`` in this process (it wins over every other source)."""
    if not name:
        raise ValueError(f"a {KINDS[_kind(kind)]} needs a name")
    _REGISTERED[_kind(kind)][name] = obj
    return obj


def unregister(kind: str, name: str) -> None:
    """Forget a name :func:`register` added (tests)."""
    _REGISTERED[_kind(kind)].pop(name, None)


@cache
def entry_points(kind: str) -> dict[str, Any]:
    """The entry points of the group ``surfbench.<kind>``, by name (read once; :func:`refresh` reads again)."""
    found: dict[str, Any] = {}
    for point in metadata.entry_points(group=f"surfbench.{_kind(kind)}"):
        found.setdefault(point.name, point)
    return found


def refresh() -> None:
    """Read the installed entry points again (after installing a package, or in a test)."""
    entry_points.cache_clear()


def user_suite_roots() -> list[Path]:
    """The folders ``SURFBENCH_SUITES`` names, in order."""
    return [Path(p) for p in os.environ.get(SUITES_ENV, "").split(os.pathsep) if p]


def _suite_folders(root: Path, declared: bool = False) -> dict[str, Path]:
    """The suites in ``root`` by folder name.

    ``declared``: also by the ``name:`` of a suite.yaml that differs (``surfbench init --name``: a suite
    named apart from its folder).
    """
    found = {p.parent.name: p.parent for p in sorted(root.glob("*/suite.yaml"))}
    if declared:
        for folder in list(found.values()):
            own = _declared_name(folder / "suite.yaml")
            if own and own not in found:
                found[own] = folder
    return found


def _declared_name(path: Path) -> str | None:
    """The top-level ``name:`` of a suite.yaml (None when it has none, or the file cannot be read)."""
    import re

    try:
        with path.open(encoding="utf-8") as fh:
            head = fh.read(65536)
    except OSError:
        return None
    match = re.search(r"^name:[ \t]*['\"]?([A-Za-z0-9][A-Za-z0-9_-]*)['\"]?[ \t]*(?:#.*)?$", head, re.MULTILINE)
    return match.group(1) if match else None


def _sources(kind: str) -> list[tuple[str, dict[str, Any]]]:
    """Each source of ``kind`` with what it knows (unloaded: entry points and ``module:attr`` strings), in order."""
    user: dict[str, Any] = {}
    if kind == "suites":
        for root in user_suite_roots():
            user = _suite_folders(root, declared=True) | user  # the first root that has a name wins
    builtin: dict[str, Any] = _suite_folders(SHIPPED_TASKS) if kind == "suites" else dict(BUILTIN[kind])
    return [
        ("registered", _REGISTERED[kind]),
        (SUITES_ENV, user),
        (ENTRY_POINT, entry_points(kind)),
        ("built-in", builtin),
    ]


def names(kind: str) -> list[str]:
    """Every name of ``kind`` any source knows, sorted."""
    return sorted({name for _, known in _sources(_kind(kind)) for name in known})


def listing(kind: str) -> list[Plugin]:
    """Every name of ``kind`` with the source that wins for it, sorted by name."""
    out: dict[str, Plugin] = {}
    for source, known in _sources(_kind(kind)):
        for name, value in known.items():
            out.setdefault(name, Plugin(kind, name, source, _shown(source, value)))
    return [out[n] for n in sorted(out)]


def _shown(source: str, value: Any) -> str:
    """What a listing prints for a source's value: ``module:attr``, a folder, or the object's qualified name."""
    if source == ENTRY_POINT:
        return str(value.value)
    if isinstance(value, str | Path):
        return str(value)
    if hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}:{value.__qualname__}"
    return repr(value)[:80]


def close_names(kind: str, name: str) -> str:
    """``; did you mean X?`` for a name of ``kind`` nobody knows, or ``""`` when none is close."""
    near = closest(name, names(kind))
    return f"; did you mean {', '.join(near)}?" if near else ""


def unknown(kind: str, name: str) -> UnknownPlugin:
    """The error for a name of ``kind`` nobody knows: ``unknown provider 'x'; did you mean y? (known: ...)``."""
    known = ", ".join(names(kind)) or "none"
    return UnknownPlugin(f"unknown {KINDS[kind]} {name!r}{close_names(kind, name)} (known: {known})")


def lookup(kind: str, name: str) -> Any:
    """What ``name`` stands for among ``kind`` (loaded and checked), or :class:`UnknownPlugin`."""
    noun = KINDS[_kind(kind)]
    for source, known in _sources(kind):
        if name not in known:
            continue
        value = known[name]
        if source == ENTRY_POINT:  # not isinstance: a backport (importlib_metadata) may stand in for the stdlib's
            return _checked(kind, _load_point(kind, value), f"{noun} {name!r} (entry point {value.value!r})")
        if source == "built-in" and isinstance(value, str):
            return _checked(kind, load_attr(value, noun), f"{noun} {name!r} ({value})")
        return _checked(kind, value, f"{noun} {name!r}")
    if kind != "suites" and ":" in name:
        return _checked(kind, load_attr(name, noun), f"{noun} {name!r}")
    raise unknown(kind, name)


def _load_point(kind: str, point: Any) -> Any:
    """An entry point's object; for a suite, its package's folder (the package is not imported)."""
    noun = KINDS[kind]
    try:
        if kind == "suites":
            spec = importlib.util.find_spec(point.value)
            locations = list(spec.submodule_search_locations or []) if spec else []
            return Path(locations[0]).resolve() if locations else Path(point.value)
        return point.load()
    except Exception as exc:  # a broken plugin names itself, not a traceback from deep inside importlib
        raise UnknownPlugin(
            f"{noun} {point.name!r}: its entry point {point.value!r} failed to load: {type(exc).__name__}: {exc}"
        ) from exc


def _is_surface(obj: object) -> bool:
    from surfbench.bench.contracts.surface import Surface  # the contract; imported here to keep this module light

    return isinstance(obj, type) and issubclass(obj, Surface)


CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "surfaces": (_is_surface, "a Surface subclass"),
    "suites": (lambda obj: isinstance(obj, Path) and (obj / "suite.yaml").is_file(), "a folder with a suite.yaml"),
    "checks": (callable, "a function"),
    "providers": (lambda obj: callable(obj) or callable(getattr(obj, "client", None)), "a provider or a factory"),
}
"""What a plugin of each kind must be, checked at lookup."""


def _checked(kind: str, obj: Any, where: str) -> Any:
    test, wanted = CHECKS[kind]
    if not test(obj):
        raise UnknownPlugin(f"{where} is not {wanted} (it is {str(obj) if isinstance(obj, Path) else repr(obj)})")
    return obj


def load_attr(spec: str, role: str) -> Any:
    """The attribute ``module:attr`` or ``file.py:attr`` names (a suite's hooks and checks, a surface class).

    Any problem is one :class:`UnknownPlugin` line, ``ROLE 'SPEC': what is wrong`` (with the close names
    of a misspelt attribute).
    """
    from surfbench.bench.catalog.catalog import CatalogError
    from surfbench.bench.catalog.importers.pycallable import load_module  # a file by path, once per process

    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise UnknownPlugin(f"{role} {spec!r}: must be 'module:name' or 'file.py:name'")
    try:
        module = load_module(module_name, spec)
    except CatalogError as exc:
        raise UnknownPlugin(f"{role} {spec!r}: {exc.reason}") from None
    if not hasattr(module, attr):
        near = closest(attr, [n for n in dir(module) if not n.startswith("_")])
        tip = f" (did you mean {near[0]!r}?)" if near else ""
        raise UnknownPlugin(f"{role} {spec!r}: {module_name} has no attribute {attr!r}{tip}")
    return getattr(module, attr)


def format_listing(kinds: list[str] | None = None) -> str:
    """``surfbench plugins``: each kind's names, where each comes from and what it points at."""
    lines: list[str] = []
    for kind in kinds or list(KINDS):
        found = listing(kind)
        lines.append(f"{kind} (entry point group surfbench.{kind}): {len(found)}")
        width = max((len(p.name) for p in found), default=0)
        lines += [f"  {p.name:<{width}}  {p.source:<16}  {p.value}" for p in found]
    return "\n".join(lines)


def add_commands(sub: argparse._SubParsersAction[ParserT]) -> None:
    """``surfbench plugins [KIND]`` on the CLI's subparsers."""

    def run(args: argparse.Namespace) -> int:
        print(format_listing([args.kind] if args.kind else None))
        return 0

    p = sub.add_parser("plugins", help="surface kinds, suites, checks and model providers by name, and their source")
    p.add_argument("kind", nargs="?", choices=list(KINDS), help="one kind only")
    p.set_defaults(func=run)
