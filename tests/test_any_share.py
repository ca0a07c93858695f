"""How much of the code says ``Any``: the share of functions in bench/ and surfaces/ with ``Any`` in their signature.

Issue 53 ("what is written is what is read"): a value typed ``Any`` is one the type checker no longer reads, so
what is written there is not checked against what is read back. The issue's target is at most 10% of the functions
of ``bench/`` and ``surfaces/``; :data:`CEILING` is a ratchet toward it.

A function counts when an annotation of its signature (a parameter, ``*args``, ``**kwargs`` or the return) mentions
``Any``: the name, an attribute ``typing.Any``, a string annotation holding it, or a module-level type alias whose
value mentions ``Any`` (``Job = Any``, ``Row = dict[str, Any]``, ``JSON: TypeAlias = ...``, an alias of such an
alias), named in its own module or imported from another (``from ... import Row``, ``module.Row``): an alias does
not hide an ``Any``. A ``TypeVar`` bound to ``Callable[..., Any]`` is not an alias: the function is generic, and
its own signature says what it returns.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT

FOLDERS = ("bench", "surfaces")
CEILING = 10.0
"""The share (percent, rounded up to one decimal) that may have ``Any`` in their signature.

The issue's target is 10%. The ceiling only goes down: lower it to the share you reach when you type more
functions; never raise it (type the new function instead)."""

ALIAS_CALLS = ("NewType", "TypeAliasType")
"""Calls that make a type alias (a ``TypeVar`` is not one: its function is generic)."""


@dataclass
class Share:
    """Functions with ``Any`` in their signature, in all and per package (folder)."""

    functions: int = 0
    with_any: int = 0
    per_package: Counter[str] = field(default_factory=Counter)
    total_per_package: Counter[str] = field(default_factory=Counter)

    @property
    def percent(self) -> float:
        return 100 * self.with_any / self.functions if self.functions else 0.0

    def line(self, top: int = 5) -> str:
        packages = ", ".join(f"{p} {n}/{self.total_per_package[p]}" for p, n in self.per_package.most_common(top))
        return (
            f"Any in signatures: {self.with_any} of {self.functions} functions ({self.percent:.1f}%), "
            f"ceiling {CEILING}%, target 10%; top packages: {packages}"
        )


@dataclass
class _Module:
    path: Path
    tree: ast.Module
    aliases: dict[str, list[ast.expr]]  # module-level type aliases: name -> their value (and annotation)
    imported: dict[str, tuple[str, str]]  # local name -> (module, name) for `from module import name as local`
    modules: dict[str, str]  # local name -> module, for `import a.b as local` and `from a import b`


def _module_name(root: Path, path: Path) -> str:
    parts = ["surfbench", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The module's statements, with those under ``if`` (``TYPE_CHECKING``) and ``try`` blocks."""
    found: list[ast.stmt] = []
    for node in body:
        found.append(node)
        if isinstance(node, ast.If):
            found += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            found += _top_level(node.body) + _top_level(node.orelse) + _top_level(node.finalbody)
            for handler in node.handlers:
                found += _top_level(handler.body)
    return found


def _is_type_alias(annotation: ast.expr | None) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "TypeAlias") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "TypeAlias"
    )


def _looks_like_a_type(value: ast.expr) -> bool:
    if isinstance(value, ast.Subscript | ast.Name | ast.Attribute | ast.BinOp):
        return True
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return _parsed(value.value) is not None
    if isinstance(value, ast.Call):
        func = value.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        return name in ALIAS_CALLS
    return False


def _parsed(text: str) -> ast.expr | None:
    try:
        return ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return None


def _read(root: Path, path: Path) -> _Module:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = ["surfbench", *path.relative_to(root).with_suffix("").parts[:-1]]
    aliases: dict[str, list[ast.expr]] = {}
    for node in _top_level(tree.body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if _looks_like_a_type(node.value):
                aliases[node.targets[0].id] = [node.value]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            if _is_type_alias(node.annotation):
                aliases[node.target.id] = [node.value]
        elif hasattr(ast, "TypeAlias") and isinstance(node, ast.TypeAlias) and isinstance(node.name, ast.Name):
            aliases[node.name.id] = [node.value]
    imported: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            for alias in node.names:
                local = alias.asname or alias.name
                imported[local] = (base, alias.name)
                modules[local] = f"{base}.{alias.name}"
    return _Module(path, tree, aliases, imported, modules)


class _AnyAliases:
    """The type aliases that mention ``Any``, per module: its own and those it imports (to a fixed point)."""

    def __init__(self, modules: dict[str, _Module]) -> None:
        self.modules = modules
        self.names: dict[str, set[str]] = {name: set() for name in modules}
        changed = True
        while changed:
            changed = False
            for name, module in modules.items():
                known = self.names[name]
                for local, (source, original) in module.imported.items():
                    if local not in known and original in self.names.get(source, ()):
                        known.add(local)
                        changed = True
                for alias, values in module.aliases.items():
                    if alias not in known and any(self.mentions(name, value) for value in values):
                        known.add(alias)
                        changed = True

    def _module_of(self, module: str, node: ast.expr) -> str | None:
        """The module a dotted name means in ``module`` (``results``, ``store.results``, ``surfbench.bench.x``)."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.modules[module].modules.get(node.id, node.id)
        return ".".join([head, *parts])

    def mentions(self, module: str, node: ast.AST) -> bool:
        """Whether ``node`` (an annotation of ``module``) mentions ``Any``, itself or through an alias."""
        known = self.names[module]
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and (n.id == "Any" or n.id in known):
                return True
            if isinstance(n, ast.Attribute):
                if n.attr == "Any":
                    return True
                source = self._module_of(module, n.value)
                if source is not None and n.attr in self.names.get(source, ()):
                    return True
            if isinstance(n, ast.Constant) and isinstance(n.value, str):
                if "Any" in n.value:
                    return True
                parsed = _parsed(n.value)
                if parsed is not None and self.mentions(module, parsed):
                    return True
        return False


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    args = function.args
    annotations = [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.annotation]
    annotations += [a.annotation for a in (args.vararg, args.kwarg) if a is not None and a.annotation]
    return annotations + ([function.returns] if function.returns is not None else [])


def any_share(root: Path, folders: tuple[str, ...] = FOLDERS) -> Share:
    """Count the functions under ``root``'s ``folders`` (``folder/x.py`` is ``surfbench.folder.x``) with ``Any``."""
    modules = {
        _module_name(root, path): _read(root, path)
        for folder in folders
        for path in sorted((root / folder).rglob("*.py"))
    }
    aliases = _AnyAliases(modules)
    share = Share()
    for name, module in modules.items():
        package = str(module.path.parent.relative_to(root))
        for node in ast.walk(module.tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                share.functions += 1
                share.total_per_package[package] += 1
                if any(aliases.mentions(name, a) for a in _signature(node)):
                    share.with_any += 1
                    share.per_package[package] += 1
    return share


def test_the_share_of_functions_with_any_stays_under_the_ceiling(
    record_property: pytest.RecordProperty, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's target is 10%; the ceiling only goes down (:data:`CEILING`)."""
    share = any_share(ROOT)
    record_property("any_share", f"{share.percent:.1f}")
    with capsys.disabled():
        print(f"\n{share.line()}")
    assert share.functions > 1000, "the count found too few functions: did the folders move?"
    assert share.percent <= CEILING, (
        f"{share.line()}: over the ceiling; type the new functions (a record, a TypedDict, Mapping[str, object])"
    )


PLANTED_ALIASES = """
from typing import Any, TypeAlias, TypeVar
from collections.abc import Callable

Job = Any
Row = dict[str, Any]
JSON: TypeAlias = "dict[str, Any] | list[Any]"
Rows = list[Row]
Clean = dict[str, int]
F = TypeVar("F", bound=Callable[..., Any])
NOTE = "Any text that is not a type"
"""

PLANTED_USES = """
from typing import Any
import typing

import surfbench.bench.planted.aliases
from surfbench.bench.planted import aliases
from surfbench.bench.planted.aliases import Job, Rows, F, Clean
from .aliases import JSON as Json


def plain(x: Any) -> None: ...
def attribute() -> typing.Any: ...
def in_a_string(x: "list[Any]") -> None: ...
def job(x: Job) -> None: ...
def through_the_module(x: int) -> aliases.Row: ...
def renamed(*args: Json) -> None: ...
def chained(**kwargs: "Rows") -> None: ...
async def asynchronous(x: int) -> Job: ...
def clean(x: Clean, y: int = 0) -> str: ...
def generic(f: F) -> F: ...
def unannotated(x, y): ...
def dotted() -> surfbench.bench.planted.aliases.Rows: ...
"""


def test_a_planted_any_is_counted_even_through_an_alias(tmp_path: Path) -> None:
    package = tmp_path / "bench" / "planted"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "aliases.py").write_text(PLANTED_ALIASES, encoding="utf-8")
    (package / "uses.py").write_text(PLANTED_USES, encoding="utf-8")
    share = any_share(tmp_path, ("bench",))
    assert (share.functions, share.with_any) == (12, 9)
    assert share.per_package == Counter({"bench/planted": 9})
    (package / "more.py").write_text("from .aliases import Row\n\ndef hidden() -> Row: ...\n", encoding="utf-8")
    assert any_share(tmp_path, ("bench",)).with_any == 10
