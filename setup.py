"""The package list of the ``surfbench`` namespace, computed from pyproject.toml's package-dir.

pyproject.toml declares the namespace (``[tool.setuptools.package-dir]``: ``surfbench.bench`` is the
folder ``bench/``, ``surfbench.tasks`` is ``tasks/``, ...). setuptools' ``packages.find`` names what it
finds after the folder it searches (``models``, not ``surfbench.bench.models``), so it cannot list the
subpackages of a renamed folder; a hand list would go stale with the first new package. This file walks
each mapped folder instead: every folder below it is a package (a namespace package when it has no
``__init__.py``, which makes data folders such as ``configs/model`` and ``tasks/workspace/files`` package
data), named under its namespace. Nothing else lives here: metadata, dependencies, entry points and
package data stay in pyproject.toml.

The egg-info that setuptools writes while building goes to ``build/``, not the checkout root: a stale
``surfbench.egg-info`` there would be read by ``importlib.metadata`` whenever the checkout is on
``sys.path`` (pytest and scripts put it there), and hide entry points added since.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_namespace_packages, setup

ROOT = Path(__file__).resolve().parent
EXCLUDE = ["__pycache__", "*.__pycache__", "*.__pycache__.*"]


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """Package name -> folder, as pyproject.toml's ``[tool.setuptools.package-dir]`` declares them."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(data["tool"]["setuptools"]["package-dir"])


def packages(root: Path = ROOT) -> list[str]:
    """Every package of the namespace: each mapped folder and every folder below it, by its dotted name."""
    found: set[str] = set()
    for name, folder in package_dirs(root).items():
        found.add(name)
        found.update(f"{name}.{sub}" for sub in find_namespace_packages(where=str(root / folder), exclude=EXCLUDE))
    return sorted(found)


if __name__ == "__main__":  # setuptools' build backend runs this file as __main__; tests import packages()
    Path("build").mkdir(exist_ok=True)  # the backend runs in the project folder (or an unpacked sdist)
    setup(packages=packages(), options={"egg_info": {"egg_base": "build"}})
