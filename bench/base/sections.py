"""A report section as data, rendered as markdown or as HTML from the same value.

``surfbench report`` writes report.md and report.html. Each used to be a template of its own, and the HTML one
silently lacked the sections added to the markdown later (the funnel, multi-call and catalog-size tables).
Now a section is built once (:func:`surfbench.bench.report.report.report_sections` lists them) and both renderings
walk that one list, so a section cannot be in one file and missing from the other.

A section's title and text are markdown of one kind only: paragraphs separated by a blank line, with
`` `code` `` and ``**bold**`` inline; the HTML rendering escapes everything else.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from surfbench.bench.base.markdown import markdown_table

_INLINE = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*")


@dataclass(frozen=True)
class Section:
    """One ``##`` section of a report: a title, optional prose, an optional table, optional figures."""

    title: str
    """The heading (markdown inline text: `` `code` `` allowed)."""
    text: str = ""
    """Prose under the heading: markdown paragraphs separated by a blank line."""
    table: tuple[Sequence[str], Sequence[Sequence[str]]] | None = None
    """(head, rows) of the section's table, cells as plain text."""
    figures: tuple[tuple[str, str], ...] = ()
    """(title, image file relative to the report) of each figure."""

    @property
    def empty(self) -> bool:
        """Nothing to show: the report leaves such a section out (an empty table under a heading tells nothing).

        Empty: no figure, and a table without rows (its prose only explains the table), or no table and no prose.
        """
        if self.figures:
            return False
        return not self.table[1] if self.table is not None else not self.text

    def markdown(self) -> str:
        """The section as markdown: heading, text, table and figures separated by blank lines."""
        parts = [f"## {self.title}"]
        if self.text:
            parts.append(self.text)
        if self.table is not None:
            head, rows = self.table
            parts.append(markdown_table(head, [[_md_cell(c) for c in row] for row in rows]))
        if self.figures:
            parts.append("\n\n".join(f"![{name}]({path})" for name, path in self.figures))
        return "\n\n".join(parts)

    def html(self, images: Mapping[str, str]) -> str:
        """The section as HTML; ``images``: figure title -> base64 PNG (embedded as ``data:`` URIs)."""
        out = f"<h2>{inline_html(self.title)}</h2>"
        out += "".join(f"<p>{inline_html(p)}</p>" for p in self.text.split("\n\n") if p)
        if self.table is not None:
            out += f'<div class="scroll">{html_table(*self.table)}</div>'  # a wide table scrolls in its box
        out += "".join(
            f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{images[name]}">'
            f"<figcaption>{html.escape(name)}</figcaption></figure>"
            for name, _ in self.figures
            if name in images
        )
        return out


def inline_html(text: str) -> str:
    """Markdown inline text as HTML: escaped, with `` `code` `` and ``**bold**`` rendered."""
    out, end = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[end : m.start()]))
        code, bold = m.groups()
        out.append(f"<code>{html.escape(code)}</code>" if code is not None else f"<strong>{html.escape(bold)}</strong>")
        end = m.end()
    out.append(html.escape(text[end:]))
    return "".join(out)


def html_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table with every cell escaped."""
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_html_cell(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


class Link(str):
    """A table cell that links somewhere: its text as a ``str``, ``href`` its address (a link in both renderings)."""

    href: str

    def __new__(cls, text: str, target: str) -> Link:
        out = super().__new__(cls, text)
        out.href = target
        return out


def _md_cell(cell: str) -> str:
    return f"[{cell}]({cell.href})" if isinstance(cell, Link) and cell else cell


def _html_cell(cell: str) -> str:
    if isinstance(cell, Link) and cell:
        return f'<a href="{html.escape(cell.href)}">{html.escape(cell)}</a>'
    return html.escape(cell)
