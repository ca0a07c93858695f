"""A markdown table, the one form every report section and the whatif page write, and its reader."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``| a | b |`` header, ``|---|---|`` rule, one line per row (cells as given, no escaping)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def tables_by_heading(text: str) -> dict[str, list[dict[str, str]]]:
    """Each ``## heading``'s first table, as rows keyed by the header's cells (how scripts read a written report)."""
    out: dict[str, list[dict[str, str]]] = {}
    heading, head = "", None
    for line in text.splitlines():
        if line.startswith("## "):
            heading, head = line[3:].strip(), None
        elif line.startswith("|") and heading:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if head is None:
                head = cells
            elif not set("".join(cells)) <= set("-: "):
                out.setdefault(heading, []).append(dict(zip(head, cells, strict=False)))
        elif not line.strip():
            head = None
    return out
