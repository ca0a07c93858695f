"""The viewer's HTML pieces: the page frame, tables, badges, collapsed blocks; everything escaped here.

Every page links its stylesheet and script (``_static/viewer.css``, ``_static/viewer.js``, served from the package)
and every other page relatively (``../`` per folder level), so the same files work served by ``surfbench view`` and
opened from an export folder without a server.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import SupportsFloat

STATIC = {"viewer.css": "text/css; charset=utf-8", "viewer.js": "text/javascript; charset=utf-8"}
"""The package's static files, by name, with their content types: nothing else is ever served from disk."""


def static_file(name: str) -> bytes:
    """The bytes of one of :data:`STATIC` (a name not in it is a KeyError)."""
    if name not in STATIC:
        raise KeyError(name)
    return resources.files("surfbench.bench.view").joinpath(name).read_bytes()


def esc(value: object) -> str:
    return html.escape("" if value is None else str(value))


def page(title: str, body: str, depth: int, static: bool = False) -> str:
    """A whole page; ``depth``: folder levels below the viewer's root; ``static``: an exported page (no server)."""
    up = "../" * depth
    mode = ' data-static="1"' if static else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} · surfbench view</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><link rel="stylesheet" href="{up}_static/viewer.css"></head>'
        f'<body{mode}><nav><a href="{up}index.html">surfbench view</a> <span class="crumb">{esc(title)}</span></nav>'
        f'<main>{body}</main><script src="{up}_static/viewer.js"></script></body></html>\n'
    )


def link(href: str, text: object, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<a href="{esc(href)}"{klass}>{esc(text)}</a>'


def badge(text: str, kind: str) -> str:
    """A coloured word: ``pass``, ``fail``, ``error``, ``none``."""
    return f'<span class="badge {esc(kind)}">{esc(text)}</span>'


def table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    sortable: bool = False,
    cls: str = "",
    row_attrs: Sequence[Mapping[str, str]] | None = None,
    table_id: str = "",
) -> str:
    """A table in a box that scrolls sideways; cells are HTML already (escape with :func:`esc`)."""
    classes = " ".join(c for c in ("sortable" if sortable else "", cls) if c)
    attrs = (f' class="{classes}"' if classes else "") + (f' id="{esc(table_id)}"' if table_id else "")
    th = "".join(f"<th>{h}</th>" for h in head)
    body = []
    for i, row in enumerate(rows):
        extra = "".join(f' {k}="{esc(v)}"' for k, v in (row_attrs[i] if row_attrs else {}).items())
        body.append(f"<tr{extra}>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    return f'<div class="scroll"><table{attrs}><thead><tr>{th}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


def details(summary: str, inner: str, open_: bool = False) -> str:
    """A block collapsed by default (``open_``: shown)."""
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{inner}</details>"


def pre(text: object) -> str:
    return f"<pre>{esc(text)}</pre>"


def number(value: object, digits: int = 0) -> str:
    """A count or measure as text ("-" when missing)."""
    if not isinstance(value, SupportsFloat | str):  # None, pandas' NA: what float() refuses
        return "-"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return "-"
    if x != x:
        return "-"
    return f"{x:,.{digits}f}"
