"""Spell the ``surfbench`` namespace as folders for static tools: build/namespace/surfbench/bench -> bench/, ...

pyproject.toml declares the namespace (``[tool.setuptools.package-dir]``) and the editable install serves
it with an import hook, which running code follows and static tools cannot: mypy (and an IDE's
indexer) look for ``surfbench/bench/`` on disk. This builds that view outside git, in ``build/``:
``build/namespace/surfbench/`` holds one link per mapped folder (``bench``, ``surfaces``, ``tasks``,
``configs``), so a module added to a folder is in the view at once; ``surfbench/`` itself (its
``__init__.py``, ``__main__.py``) is the checkout's folder, which mypy finds beside the view. mypy
reads it (``mypy_path`` in pyproject.toml); ``make setup`` and ``make lint`` rebuild it, and so does
running this file (``python scripts/namespace_view.py``), which prints the view's folder.
"""

from __future__ import annotations

import runpy
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VIEW = ROOT / "build" / "namespace"


def build(root: Path = ROOT, view: Path | None = None) -> Path:
    """(Re)build the view of ``root``'s namespace and return its folder (the one to put on a tool's path)."""
    view = view or root / "build" / "namespace"
    mapping: dict[str, str] = runpy.run_path(str(root / "setup.py"))["package_dirs"](root)
    if view.exists():
        shutil.rmtree(view)
    for name, folder in sorted(mapping.items()):  # a parent before its children
        source, target = root / folder, view.joinpath(*name.split("."))
        if "." not in name:  # the top package: a bare folder (mypy reads surfbench/ itself from the checkout)
            target.mkdir(parents=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source, target_is_directory=True)
    return view


if __name__ == "__main__":
    print(build(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
