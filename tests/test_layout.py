"""The house: one direction of imports, small modules, one namespace (standard library only: ast)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = {"bench": "surfbench.bench", "surfaces": "surfbench.surfaces", "tasks": "surfbench.tasks"}
SEED_DATA = ROOT / "tasks" / "workspace" / "files"  # a project with bugs on purpose, not package code
MAX_LINES = 500
"""The one size rule left: the stages and the direction of imports hold the shape (tests/test_layers.py)."""


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).rglob("*.py") if SEED_DATA not in p.parents)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement names, absolute, with its line (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(ROOT).with_suffix("")
    package = ["surfbench", *rel.parts[:-1]]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
            found.append((node.lineno, base))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _offences(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in _modules(folder)
        for line, name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in forbidden)
    ]


def test_the_core_never_imports_a_surface_or_a_suite():
    """bench/ finds surfaces and suites by name (entry points), so no arrow points from it to them."""
    assert _offences("bench", ("surfbench.surfaces", "surfbench.tasks")) == []


def test_surfaces_never_import_a_suite():
    assert _offences("surfaces", ("surfbench.tasks",)) == []


def test_nothing_imports_the_old_top_level_names():
    """Only ``surfbench`` is installed: ``import bench`` would work in a checkout and fail everywhere else."""
    offences = []
    for folder in ("bench", "surfaces", "tasks", "tests", "scripts"):
        offences += _offences(folder, tuple(PACKAGES))
    assert offences == []


def test_packaging_declares_the_namespace_and_the_tree_holds_no_link():
    """pyproject.toml maps each layout folder into ``surfbench``; git holds no symbolic link to do it."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert declared["package-dir"] == {"surfbench": "surfbench", **{v: k for k, v in PACKAGES.items()}} | {
        "surfbench.configs": "configs"
    }
    links = [
        str(p.relative_to(ROOT))
        for folder in ("surfbench", *PACKAGES, "configs", "tests", "scripts", "docs", "examples")
        for p in (ROOT / folder).rglob("*")
        if p.is_symlink()
    ]
    assert links == []


def test_no_package_module_is_over_500_lines():
    sizes = sorted(
        (
            (len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(ROOT)))
            for f in PACKAGES
            for p in _modules(f)
        ),
        reverse=True,
    )
    print("longest modules:", sizes[:5])
    assert [s for s in sizes if s[0] > MAX_LINES] == [], f"longest: {sizes[:5]}"


def test_every_class_name_in_the_core_and_the_surfaces_is_unique():
    """A class is found by its name (grep, a traceback, a review): two ``Verdict``s or two ``Session``s in
    bench/ and surfaces/ send a reader to the wrong one (issue 53)."""
    seen: dict[str, list[str]] = {}
    for folder in ("bench", "surfaces"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    seen.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}


def test_every_module_file_name_in_the_core_is_unique():
    """A module is found by its file name (an editor's file search, a traceback's last part, a review): two
    ``client.py``s or two ``server.py``s in bench/ send a reader to the wrong one (issue 53). Package markers
    (``__init__.py``, ``__main__.py``) are the one exception."""
    seen: dict[str, list[str]] = {}
    for path in _modules("bench"):
        if path.name not in ("__init__.py", "__main__.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    duplicates = {name: where for name, where in seen.items() if len(where) > 1}
    print("module file names used more than once:", duplicates)
    assert duplicates == {}, f"module file names used more than once in bench/: {duplicates}"
