"""The namespace is declared in packaging: the package list, the editable install, one name per module.

pyproject.toml maps ``surfbench.bench`` to ``bench/`` (and so on); setup.py lists every package below
those folders; the editable install serves the checkout's own files under the ``surfbench`` names;
in a test process the folders never import under their own names, a hook loaded by path is its
package's module, and mypy reads the namespace from a view of links outside git. What the wheel and
the sdist hold is tests/test_install.py's.
"""

from __future__ import annotations

import importlib
import importlib.resources
import runpy
import sys
import tomllib
import types
from pathlib import Path

import pytest

from tests import namespace_guard
from tests.conftest import ROOT, load_script

SETUP = runpy.run_path(str(ROOT / "setup.py"))  # not run as __main__: defines packages(), calls no setup()
VIEW = load_script("namespace_view")


def _tree(root: Path, files: list[str]) -> None:
    (root / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("", encoding="utf-8")


def test_every_folder_below_a_mapped_folder_is_a_package_a_new_one_too(tmp_path: Path):
    _tree(
        tmp_path,
        [
            "surfbench/__init__.py", "bench/__init__.py", "bench/stage/__init__.py", "bench/stage/deep/m.py",
            "bench/__pycache__/x.pyc", "surfaces/__init__.py", "tasks/__init__.py", "tasks/s/files/data/x.csv",
            "configs/config.yaml", "configs/model/a.yaml",
        ],
    )  # fmt: skip
    found = SETUP["packages"](tmp_path)
    assert {"surfbench", "surfbench.bench.stage", "surfbench.bench.stage.deep", "surfbench.tasks.s.files.data"} <= set(
        found
    )
    assert {"surfbench.configs", "surfbench.configs.model"} <= set(found)
    assert not [p for p in found if "__pycache__" in p]


def test_the_package_list_holds_every_package_of_the_checkout():
    found = set(SETUP["packages"]())
    prefix = {folder: name for name, folder in SETUP["package_dirs"]().items()}
    for folder, name in prefix.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            assert ".".join([name, *rel]) in found, init


def test_the_editable_install_serves_the_checkout_folders_under_surfbench_names():
    """Tracebacks, coverage and ``__file__`` name the checkout's files; a new module in bench/ is found at once."""
    catalog = importlib.import_module("surfbench.bench.catalog.catalog")
    assert Path(catalog.__file__ or "") == ROOT / "bench" / "catalog" / "catalog.py"
    for folder in ("bench", "surfaces", "tasks", "configs"):
        name = f"surfbench.{folder}"
        assert [Path(p) for p in importlib.import_module(name).__path__] == [ROOT / folder], name
    assert importlib.resources.files("surfbench.configs").joinpath("config.yaml").is_file(), "package data"


@pytest.mark.parametrize("old", ["bench", "surfaces", "tasks", "configs"])
def test_a_checkout_folder_does_not_import_under_its_own_name(old: str):
    sys.modules.pop(old, None)
    with pytest.raises(ModuleNotFoundError, match=f"import surfbench.{old}"):
        importlib.import_module(old)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{old}.anything")


def test_a_file_loaded_as_two_modules_is_found():
    real = importlib.import_module("surfbench.bench.catalog.catalog")
    second = types.ModuleType("catalog_again")
    second.__file__ = real.__file__
    modules = [("surfbench.bench.catalog.catalog", real), ("alias", real), ("catalog_again", second)]
    assert namespace_guard.twice_loaded(modules) == {
        "bench/catalog/catalog.py": ["catalog_again", "surfbench.bench.catalog.catalog"]
    }
    assert namespace_guard.twice_loaded(modules[:2]) == {}, "one object under two names is an alias, not a copy"
    assert namespace_guard.twice_loaded(list(sys.modules.items())) == {}


def test_an_extension_in_a_venv_inside_the_checkout_is_not_a_second_copy():
    """CI's venv is the checkout's .venv: scipy's _highspy registers three modules from one .so file."""
    so = str(ROOT / ".venv" / "lib" / "site-packages" / "pkg" / "_core.so")
    parts = [types.ModuleType(n) for n in ("pkg._core", "pkg._core.cb")]
    for module in parts:
        module.__file__ = so
    assert namespace_guard.twice_loaded([(m.__name__, m) for m in parts]) == {}


def test_a_suite_hook_loaded_by_path_is_its_package_module(tmp_path: Path):
    from surfbench.bench.catalog.importers.pycallable import load_module

    by_path = load_module(str(ROOT / "tasks" / "forge" / "backend.py"), "suite.yaml")
    assert by_path is importlib.import_module("surfbench.tasks.forge.backend")
    own = tmp_path / "my_hooks.py"  # a file of no package still loads by path, once
    own.write_text("X = object()\n", encoding="utf-8")
    assert load_module(str(own), "suite.yaml") is load_module(str(own), "suite.yaml")


def test_mypy_reads_the_namespace_from_a_view_of_links_outside_git(tmp_path: Path):
    view = VIEW.build(ROOT, tmp_path / "view")
    for name, folder in SETUP["package_dirs"]().items():
        if "." in name:
            assert view.joinpath(*name.split(".")).resolve() == ROOT / folder, name
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["mypy_path"] == "build/namespace"
    python = {n for n, f in SETUP["package_dirs"]().items() if (ROOT / f / "__init__.py").is_file()}
    assert set(mypy["packages"]) == python, "mypy checks every mapped folder that holds Python"
