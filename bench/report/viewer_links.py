"""Where the viewer's pages are, and the report's links to them (``surfbench view``, bench/view/).

The viewer (:mod:`surfbench.bench.view.view_server`) serves, and ``surfbench view --export DIR`` writes, one page per
run set, cell, episode, task and operation, at the paths below, relative to its root; the report links to them
when it is given the viewer's address (``surfbench report --viewer-url URL``, or ``SURFBENCH_VIEWER_URL``): a
running viewer (``http://127.0.0.1:8765``) or an exported folder (a path relative to the report, ``view``).

- ``index.html``: the runs and their cells;
- ``cell/<id>.html``: a cell's episodes (``?op=NAME``, ``?outcome=fail``, ... filter them);
- ``episode/<name>.html``: one episode;
- ``task/<suite>/<task>.html``: one task on every cell of the loaded runs, side by side;
- ``op/<suite>/<operation>.html``: the tasks that expect an operation, and how each cell's first try went.

A cell is a row of the report's cells table (bench.report.report_data: its ``CELL_KEYS``, suite x surface x model x
mode with the surface kind and model size); names that are not safe in a file name get a readable prefix and a hash
(:func:`page_name`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

from surfbench.bench.base.sections import Link
from surfbench.bench.report.report_data import CELL_KEYS

VIEWER_ENV = "SURFBENCH_VIEWER_URL"
"""The viewer's address the report links to when none is passed (unset: no links)."""


def page_name(text: str) -> str:
    """A name for ``text`` that is safe as one file name and one URL segment (the same text, the same name)."""
    if re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,159}", text):
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    prefix = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:60]
    return f"{prefix}-{digest}" if prefix else digest


def cell_id(keys: Mapping[str, Any]) -> str:
    """The id of a cell (its page: ``cell/<id>.html``) from its keys (a report CellRow's ``keys``)."""
    text = "\0".join(str(keys.get(k)) for k in CELL_KEYS)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def cell_path(keys: Mapping[str, Any]) -> str:
    return f"cell/{cell_id(keys)}.html"


def episode_path(key: str) -> str:
    return f"episode/{page_name(key)}.html"


def task_path(suite: str, task_id: str) -> str:
    return f"task/{page_name(suite)}/{page_name(task_id)}.html"


def op_path(suite: str, operation: str) -> str:
    return f"op/{page_name(suite)}/{page_name(operation)}.html"


def viewer_base(url: str | None = None) -> str | None:
    """The viewer address to link to: ``url``, else ``SURFBENCH_VIEWER_URL``, else None (no links)."""
    chosen = url if url else os.environ.get(VIEWER_ENV, "")
    return chosen.rstrip("/") if chosen.strip() else None


def href(base: str, path: str, **query: str) -> str:
    """The address of a viewer page under ``base``, with an optional query (``op=repo_get``)."""
    tail = "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
    return f"{base}/{path}" + (f"?{tail}" if tail else "")


def link_cells_table(rows: list[list[str]], cells: Sequence[Any], head: Sequence[str], base: str | None) -> list[Any]:
    """The cells table with each row's surface linked to its cell page (``rows`` and ``cells`` in the same order)."""
    if base is None or "surface" not in head:
        return rows
    col = list(head).index("surface")
    out = []
    for row, cell in zip(rows, cells, strict=True):
        row = list(row)
        row[col] = Link(row[col], href(base, cell_path(cell.keys)))
        out.append(row)
    return out


def link_per_op_table(
    head: Sequence[str], rows: list[list[str]], cells: Sequence[Any], originals: Mapping[str, str], base: str | None
) -> list[Any]:
    """The per-operation table with links: the operation to its page, each ``c/n`` to its cell's episodes of it.

    ``originals``: name in the tables -> name as the catalog spells it (the rows show the latter). The operation
    links when the runs hold one suite; a ``c/n`` when exactly one cell has its column's surface and model.
    """
    if base is None:
        return rows
    stored = {shown: name for name, shown in originals.items()}
    suites = {str(cell.keys["suite"]) for cell in cells}
    by_column: dict[str, list[Any]] = {}
    for cell in cells:
        by_column.setdefault(f"{cell.keys['surface']} / {cell.keys['model']}", []).append(cell)
    out = []
    for row in rows:
        row = list(row)
        op = stored.get(row[0], row[0])
        if len(suites) == 1:
            row[0] = Link(row[0], href(base, op_path(next(iter(suites)), op)))
        for j in range(2, len(row)):
            matches = by_column.get(head[j], [])
            if row[j] and len(matches) == 1:
                row[j] = Link(row[j], href(base, cell_path(matches[0].keys), op=op))
        out.append(row)
    return out
