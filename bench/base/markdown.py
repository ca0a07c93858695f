"""A markdown table, the one form every report section and the whatif page write."""

from __future__ import annotations

from collections.abc import Sequence


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """``| a | b |`` header, ``|---|---|`` rule, one line per row (cells as given, no escaping)."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
