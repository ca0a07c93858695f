"""Catalog listings that surfaces put into tool descriptions: one line per operation, or grouped names."""

from __future__ import annotations

from collections.abc import Sequence

from surfbench.bench.catalog.catalog import Operation

LISTINGS = ("oneline", "grouped", "none")
SUMMARY_CHARS = 100


def one_line(op: Operation) -> str:
    summary = op.summary
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1].rstrip() + "…"
    return f"{op.name}: {summary}" if summary else op.name


def render_listing(ops: Sequence[Operation], style: str) -> str:
    """``oneline``: ``name: summary`` per line; ``grouped``: ``category: name, name`` per category."""
    if style == "none" or not ops:
        return ""
    if style == "oneline":
        return "\n".join(one_line(op) for op in ops)
    if style == "grouped":
        groups: dict[str, list[str]] = {}
        for op in ops:
            groups.setdefault(op.category, []).append(op.name)
        return "\n".join(f"{cat}: {', '.join(names)}" for cat, names in groups.items())
    raise ValueError(f"unknown listing style {style!r}; choose one of {', '.join(LISTINGS)}")
