"""One name per module in a test process: the checkout's folders import only as ``surfbench.*``.

pytest puts the checkout root on ``sys.path`` (``tests`` is a package), and there ``bench/`` is also a
top-level package ``bench``: a test or a helper that imported ``bench.catalog.catalog`` would get a second copy
of ``surfbench.bench.catalog.catalog`` (its classes unequal to the first's, its module state twice), and the
suite would pass where an installed surfbench (no ``bench`` at all) fails. :class:`OldNames` refuses
those names while the tests run (tests/conftest.py installs it first on ``sys.meta_path``);
:func:`twice_loaded` finds a file loaded as two module objects by any other route (a hook loaded by
path beside its package name), and the session fails on one.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterable, Sequence
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def old_names(root: Path = ROOT) -> dict[str, str]:
    """Checkout folder -> the package name pyproject.toml's package-dir gives it, where the two differ."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = data["tool"]["setuptools"]["package-dir"]
    return {folder: name for name, folder in mapping.items() if folder != name}


def mapped_folders(root: Path = ROOT) -> list[str]:
    """The folders pyproject.toml's package-dir maps (``surfbench``'s own included)."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return list(data["tool"]["setuptools"]["package-dir"].values())


class OldNames:
    """A meta path finder that refuses the checkout's folders under their own top-level names."""

    def __init__(self, root: Path = ROOT) -> None:
        self.root = root
        self.names = old_names(root)

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: object = None) -> ModuleSpec | None:
        top = fullname.partition(".")[0]
        if top not in self.names or fullname != top:
            return None  # only the top level is asked; its submodules follow it
        spec = PathFinder.find_spec(top)
        where = spec.submodule_search_locations if spec else None
        if where and any(Path(p).resolve() == self.root / top for p in where):
            raise ModuleNotFoundError(
                f"{top!r} is the checkout folder of {self.names[top]} (pyproject.toml's package-dir): "
                f"import {self.names[top]}, or the module exists under two names",
                name=fullname,
            )
        return None


def install(root: Path = ROOT) -> OldNames:
    """Put an :class:`OldNames` first on ``sys.meta_path`` (once) and return it."""
    for finder in sys.meta_path:
        if isinstance(finder, OldNames):
            return finder
    finder = OldNames(root)
    sys.meta_path.insert(0, finder)
    return finder


def twice_loaded(modules: Iterable[tuple[str, ModuleType]], root: Path = ROOT) -> dict[str, list[str]]:
    """A file of ``root`` -> the module names it was loaded under, for each file loaded as two modules."""
    objects: dict[Path, dict[int, str]] = {}
    # the checkout's own sources only: a venv inside the checkout (CI's .venv) holds extension modules
    # that register several modules from one file (scipy's _highspy), which is not a second copy
    sources = {*old_names(root), *(f.split("/")[0] for f in mapped_folders(root)), "tests", "scripts"}
    for name, module in modules:
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        path = Path(file).resolve()
        if path.is_relative_to(root) and path.relative_to(root).parts[0] in sources:
            objects.setdefault(path, {}).setdefault(id(module), name)  # an alias of one object is one module
    return {str(path.relative_to(root)): sorted(names.values()) for path, names in objects.items() if len(names) > 1}
