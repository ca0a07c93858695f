"""The static surface report: what each surface shows the model before any model is called.

One row per surface: tools shown on the first turn, tool-block wire bytes (the dsh method), surface
system-text bytes, their total, how many times smaller than ``full``, tokens under ``o200k_base`` and
``cl100k_base``, and help payload sizes against a budget (the dsh gate: < 1.5 KB per operation). Where a
surface injects guidance (its ``guidance`` option: bench.catalog.guidance), the snippets' bytes and tokens, part of
its system text; where the catalog has pass-through parameters (``Catalog.passthrough``), the bytes they cost each
surface (its total minus the same surface's over the catalog without them).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from surfbench.bench.base.atomic import write_atomic
from surfbench.bench.base.config import SurfaceConfig
from surfbench.bench.base.paths import cache_root
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.guidance import from_source
from surfbench.bench.catalog.provider_limits import HOSTED_LIMITS, tool_problems
from surfbench.bench.catalog.wire import (
    LONG_RUN,
    RUN_SAMPLES,
    count_tokens,
    preload_encodings,
    tool_wire_text,
    utf8_len,
)
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.contracts.surface import Surface

HELP_BUDGET_BYTES = 1536
PROBES = 24  # request-dependent surfaces are measured as the mean over this many probe requests


@dataclass(frozen=True)
class SurfaceRow:
    """One surface's static footprint."""

    surface: str
    """Config name of the surface."""
    kind: str
    """Surface module (full, core, dispatcher, lazy, search, preselect, ...)."""
    tools: float
    """Tools the model sees on its first turn."""
    tool_block_bytes: float
    """Sum of UTF-8 lengths of compact JSON {name, description, parameters} per tool (the dsh method)."""
    system_bytes: float
    """UTF-8 bytes of system-prompt text the surface adds."""
    total_bytes: float
    """tool_block_bytes + system_bytes."""
    x_smaller_than_full: float | None
    """full's total_bytes / this total_bytes (the dsh issue's "vs canonical" column)."""
    tokens_o200k: float
    """Tokens of the same texts under tiktoken o200k_base."""
    tokens_cl100k: float
    """Tokens of the same texts under tiktoken cl100k_base."""
    help_mean_bytes: float | None = None
    """Mean UTF-8 bytes of the help payload over the operations it covers (surfaces with a help tool)."""
    help_max_bytes: int | None = None
    """Largest help payload."""
    help_max_operation: str | None = None
    """The operation with the largest help payload."""
    help_over_budget: list[str] = field(default_factory=list)
    """Operations whose help payload exceeds the budget."""
    note: str = ""
    """How the row was measured, where that is not obvious."""
    guidance_bytes: float | None = None
    """UTF-8 bytes of the guidance snippets the surface injects (part of ``system_bytes``); None without the option."""
    guidance_tokens_o200k: float | None = None
    """Their o200k_base tokens (part of ``tokens_o200k``)."""
    passthrough_bytes: float | None = None
    """What the catalog's pass-through parameters cost this surface: its total bytes minus its total over the
    catalog without them; None when the catalog has none."""


@dataclass(frozen=True)
class _Footprint:
    tools: int
    tool_block_bytes: int
    system_bytes: int
    tokens_o200k: int
    tokens_cl100k: int
    names: tuple[str, ...] = ()
    guidance_bytes: int = 0
    guidance_tokens: int = 0


def _footprint(surface: Surface, request: str, tokens: TokenTotals) -> _Footprint:
    session = surface.session(request)
    tools = session.tools()
    system = session.system_text()
    texts = [tool_wire_text(t) for t in tools] + ([system] if system else [])
    o200k, cl100k = tokens(texts)
    guidance = session.guidance_text()
    return _Footprint(
        tools=len(tools),
        tool_block_bytes=sum(utf8_len(t) for t in texts[: len(tools)]),
        system_bytes=utf8_len(system),
        tokens_o200k=o200k,
        tokens_cl100k=cl100k,
        names=tuple(t.name for t in tools),
        guidance_bytes=utf8_len(guidance),
        guidance_tokens=tokens([guidance])[0] if guidance else 0,
    )


class TokenTotals:
    """Sums of each text's own token count (never of the texts joined), o200k_base and cl100k_base.

    Counting is the report's slowest part on a big catalog (``full`` on 10,000 operations: 8 MB of tool
    block, about 2 s of BPE, plus 1 s to load the two encodings), and its result depends only on the
    texts: totals are kept keyed by sha256 of the texts, their boundaries and the tiktoken version, in
    one small file per catalog under the cache root. A second report reads them and never loads
    tiktoken; any text that differs is a new key, counted afresh.
    """

    def __init__(self, catalog_hash: str | None = None) -> None:
        self.path = cache_root() / "tokens" / f"{catalog_hash}.json" if catalog_hash else None
        self.known = self._read()
        self.added = False
        # the counting method too: a text with a long run counts differently than before
        self.salt = f"surfbench-token-totals-1 tiktoken {_tiktoken_version()} runs {LONG_RUN}/{RUN_SAMPLES}".encode()

    def __call__(self, texts: Sequence[str]) -> tuple[int, int]:
        digest = hashlib.sha256(self.salt)
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little") + data)
        key = digest.hexdigest()[:32]
        if key not in self.known:
            o200k = sum(count_tokens(t, "o200k_base") for t in texts)
            self.known[key] = (o200k, sum(count_tokens(t, "cl100k_base") for t in texts))
            self.added = True
        return self.known[key]

    def _read(self) -> dict[str, tuple[int, int]]:
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8")) if self.path else {}
            return {str(k): (int(v[0]), int(v[1])) for k, v in saved.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError):
            return {}  # none yet, or a damaged file: counted afresh and rewritten

    def save(self) -> None:
        """Write the totals (atomically) when any were counted; a read-only cache only costs time."""
        if not self.added or self.path is None:
            return
        known = {**self._read(), **self.known}  # keep what a concurrent report wrote meanwhile
        with contextlib.suppress(OSError):
            write_atomic(self.path, json.dumps(known))


def _tiktoken_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tiktoken")
    except PackageNotFoundError:
        return "?"


def probe_requests(catalog: Catalog, n: int = PROBES) -> list[str]:
    """Stand-in user requests for request-dependent surfaces: operation summaries, evenly spread."""
    ops = catalog.operations
    step = max(1, len(ops) // n)
    return [op.summary or op.name for op in ops[::step][:n]]


def measure_surface(
    catalog: Catalog, config: SurfaceConfig, budget: int = HELP_BUDGET_BYTES, tokens: TokenTotals | None = None
) -> SurfaceRow:
    tokens = tokens or TokenTotals()
    surface = build_surface(catalog, config.kind, config.params, name=config.name)
    notes = surface.notes()
    if surface.guided and not catalog.guidance:
        notes.append("guidance: the catalog has no snippets (guidance/*.md beside it): nothing injected")
    if surface.request_dependent or surface.guided:
        probes = probe_requests(catalog)
        surface.prefetch(probes)
        prints = [_footprint(surface, p, tokens) for p in probes]
        notes.append(f"mean over {len(probes)} probe requests (operation summaries)")
    else:
        prints = [_footprint(surface, "", tokens)]

    def mean(attr: str) -> float:
        return round(statistics.fmean(getattr(p, attr) for p in prints), 1)

    # hosted providers (OpenAI, Anthropic) reject such a request outright: flag it before anything is sent
    broken = tool_problems(prints[0].names, HOSTED_LIMITS)
    if broken:
        notes.append(f"breaks hosted-provider limits: {'; '.join(broken)}")
    helps = {op.name: surface.help_payload(op) for op in surface.reachable()}
    sizes = {name: utf8_len(text) for name, text in helps.items() if text is not None}
    biggest = max(sizes, key=lambda n: sizes[n]) if sizes else None
    block, system = mean("tool_block_bytes"), mean("system_bytes")
    return SurfaceRow(
        surface=config.name,
        kind=config.kind,
        tools=mean("tools"),
        tool_block_bytes=block,
        system_bytes=system,
        total_bytes=round(block + system, 1),
        x_smaller_than_full=None,
        tokens_o200k=mean("tokens_o200k"),
        tokens_cl100k=mean("tokens_cl100k"),
        help_mean_bytes=round(statistics.fmean(sizes.values()), 1) if sizes else None,
        help_max_bytes=sizes[biggest] if biggest else None,
        help_max_operation=biggest,
        help_over_budget=sorted(n for n, s in sizes.items() if s > budget),
        note="; ".join(notes),
        guidance_bytes=mean("guidance_bytes") if surface.guided else None,
        guidance_tokens_o200k=mean("guidance_tokens") if surface.guided else None,
    )


def surface_table(
    catalog: Catalog, configs: Sequence[SurfaceConfig], budget: int = HELP_BUDGET_BYTES
) -> list[SurfaceRow]:
    """Measure every surface; ``full`` is always measured (it is the ratio's denominator)."""
    catalog = from_source(catalog)  # the guidance beside the catalog's file (bench.catalog.guidance), if any
    tokens = TokenTotals(catalog.content_hash)
    if not tokens.known:
        preload_encodings()  # overlaps tokenizer loading with building surfaces and retrieval indexes
    rows = [measure_surface(catalog, c, budget, tokens) for c in configs]
    if catalog.passthrough:  # what the pass-through parameters cost each surface, by difference
        bare = catalog.without_passthrough()
        rows = [
            replace(r, passthrough_bytes=round(r.total_bytes - measure_surface(bare, c, budget, tokens).total_bytes, 1))
            for r, c in zip(rows, configs, strict=True)
        ]
    full = next((r for r in rows if r.kind == "full"), None)
    if full is None:
        full = measure_surface(catalog, SurfaceConfig("full", "full"), budget, tokens)
    full_total = full.total_bytes
    tokens.save()
    out = []
    for r in rows:
        ratio = round(full_total / r.total_bytes, 2) if r.total_bytes else None
        out.append(SurfaceRow(**{**asdict(r), "x_smaller_than_full": ratio}))
    return out


COLUMNS = [
    ("surface", "surface"),
    ("tools", "tools"),
    ("tool_block_bytes", "block B"),
    ("system_bytes", "system B"),
    ("total_bytes", "total B"),
    ("x_smaller_than_full", "x smaller"),
    ("tokens_o200k", "o200k tok"),
    ("tokens_cl100k", "cl100k tok"),
    ("help_mean_bytes", "help mean B"),
    ("help_max_bytes", "help max B"),
    ("help_max_operation", "largest help"),
]
OPTIONAL_COLUMNS = [
    ("guidance_bytes", "guidance B"),
    ("guidance_tokens_o200k", "guidance tok"),
    ("passthrough_bytes", "pass-through B"),
]
"""Shown only when some row has a value (a surface with guidance, a catalog with pass-through parameters)."""


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() or value >= 100 else f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_table(rows: Sequence[SurfaceRow], catalog: Catalog, budget: int = HELP_BUDGET_BYTES) -> str:
    columns = COLUMNS + [(k, h) for k, h in OPTIONAL_COLUMNS if any(getattr(r, k) is not None for r in rows)]
    head = [label for _, label in columns]
    body = [[_cell(getattr(r, key)) for key, _ in columns] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    title = f"catalog {catalog.name!r} ({catalog.source}): {len(catalog)} operations"
    lines = [
        f"{title}, hash {catalog.content_hash}",
        "  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths, strict=True))),
    ]
    for b in body:
        lines.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(b, widths, strict=True)))
        )
    for r in rows:
        if r.help_over_budget:
            shown = ", ".join(r.help_over_budget[:10]) + (" ..." if len(r.help_over_budget) > 10 else "")
            lines.append(f"{r.surface}: {len(r.help_over_budget)} help payload(s) over {budget:,} B: {shown}")
        if r.note:
            lines.append(f"{r.surface}: {r.note}")
    return "\n".join(lines)


def write_rows(rows: Sequence[SurfaceRow], path: Path) -> None:
    """Write ``.csv`` or ``.json`` atomically (a reader never sees half a file)."""
    records = [asdict(r) for r in rows]
    if path.suffix.lower() == ".json":
        text = json.dumps(records, indent=2, ensure_ascii=False) + "\n"
    elif path.suffix.lower() == ".csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(records[0]) if records else [])
        writer.writeheader()
        for rec in records:
            writer.writerow({k: ";".join(v) if isinstance(v, list) else v for k, v in rec.items()})
        text = buf.getvalue()
    else:
        raise ValueError(f"--out must end in .csv or .json, got {path.name!r}")
    write_atomic(path, text)
