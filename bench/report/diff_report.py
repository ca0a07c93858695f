"""What a catalog change costs each surface and each provider's prompt cache: the measured half of ``surfbench diff``.

Issue 54. :mod:`surfbench.bench.catalog.catalog_diff` says what changed per operation; this module says what the
change costs before any model runs:

- per surface: the static footprint of ``surfbench surfaces`` (:func:`surface_report.surface_table`: tool block and
  system bytes, tokens under o200k_base and cl100k_base, help payload sizes) on the old and the new catalog, side
  by side, and the help payloads over the budget that the change put there;
- per surface and cache profile (:data:`surfbench.bench.models.cache_profiles.PROFILES`): whether the prefix a
  conversation had cached survives its next request, and how many cached tokens of the *head* (the surface's tool
  block and system text, in the provider's order) it loses. The head's identical part is counted text by text as
  ``surfbench surfaces`` counts (each tool's wire text on its own, under o200k_base), with the identical beginning of
  the first differing text counted too. The suite's own system prompt is not part of the catalog and is left out.

A cached prefix is what :mod:`surfbench.bench.promptcache.prompt_cache_model` models per request; here there is no run,
so each profile's rule is applied to one conversation in progress whose whole head was cached: ``prefix`` profiles keep
the identical prefix rounded down to whole blocks (nothing below ``min_tokens``), ``breakpoints`` keep the longest
breakpoint prefix (after the tool block, after the system text) that is identical, ``slot`` keeps the identical
prefix. Past the kept prefix a ``prefix`` or ``slot`` conversation also recomputes its whole history.

The suite's side (expected calls that no longer validate, the retrieval funnel) is measured by the command line
(bench/cli/diff_suite.py) into :class:`SuiteChange`; the gate is :mod:`surfbench.bench.report.diff_gate`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from surfbench.bench.base.config import SurfaceConfig
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.catalog_diff import CatalogDiff
from surfbench.bench.catalog.guidance import from_source
from surfbench.bench.catalog.wire import count_tokens, tool_wire_text
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.models.cache_profiles import PROFILES, CacheProfile
from surfbench.bench.report.surface_report import HELP_BUDGET_BYTES, SurfaceRow, surface_table

PREFIX_ENCODING = "o200k_base"
"""The tokenizer of the prefix numbers: the one ``surfbench surfaces`` reports first."""


@dataclass(frozen=True)
class SurfaceChange:
    """One surface on the old and the new catalog (a side is None where the surface does not apply to it)."""

    surface: str
    kind: str
    before: SurfaceRow | None
    after: SurfaceRow | None
    new_over_budget: tuple[str, ...] = ()
    """Operations whose help payload is over the budget after the change and was not before (renames followed)."""

    @property
    def tokens_before(self) -> float | None:
        """o200k_base tokens of the tool block and system text, before."""
        return None if self.before is None else self.before.tokens_o200k

    @property
    def tokens_after(self) -> float | None:
        return None if self.after is None else self.after.tokens_o200k

    @property
    def token_change(self) -> float | None:
        """Tokens added (negative: removed); None when a side is missing."""
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return round(self.tokens_after - self.tokens_before, 1)

    @property
    def token_ratio(self) -> float | None:
        """After over before (inf when a surface that showed nothing now shows something)."""
        if self.tokens_before is None or self.tokens_after is None:
            return None
        if self.tokens_before == 0:
            return 1.0 if self.tokens_after == 0 else float("inf")
        return self.tokens_after / self.tokens_before

    @property
    def bytes_change(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return round(self.after.total_bytes - self.before.total_bytes, 1)


@dataclass(frozen=True)
class PrefixOutcome:
    """One cache profile's view of a conversation in progress when the catalog changes under it."""

    profile: str
    cached_before: int
    """Head tokens the conversation had cached (its whole head; under ``breakpoints``, the longest cached one)."""
    kept: int
    """Of those, the tokens its next request is still served from the cache."""
    history_lost: bool
    """Whether the conversation's history past the head is recomputed too (``prefix``, ``slot``: when any is lost)."""
    note: str = ""

    @property
    def lost(self) -> int:
        """Cached head tokens the next request computes (and, where billed, pays) again."""
        return self.cached_before - self.kept

    @property
    def survives(self) -> bool:
        """The cached prefix is served whole: nothing is lost."""
        return self.lost == 0 and not self.history_lost


@dataclass(frozen=True)
class PrefixChange:
    """A surface's head (tool block and system text) before and after, and what each profile keeps of it."""

    surface: str
    head_before: int
    """o200k_base tokens of the old head."""
    head_after: int
    first_change: str | None
    """Where the heads first differ (``tool 12 'issue_get'``, ``system text``, ``tool count``); None: identical."""
    outcomes: tuple[PrefixOutcome, ...] = ()
    note: str = ""
    """Why there are no outcomes (a request-dependent surface, a surface missing on a side)."""


@dataclass(frozen=True)
class BrokenCall:
    """One expected call of a suite's task that validated against the old catalog and does not against the new."""

    task: str
    source: str
    """The file the task was read from."""
    call: str
    """``expected[0]`` (``expected[0].one_of[1]`` for an alternative)."""
    op: str
    why: str


@dataclass(frozen=True)
class RetrievalChange:
    """One retriever's funnel on a suite's tasks, before and after (``surfbench retrieval``'s numbers, no model)."""

    retriever: str
    recall_before: dict[int, float]
    recall_after: dict[int, float]
    mrr_before: float
    mrr_after: float
    tasks: int
    newly_missed: dict[int, tuple[str, ...]] = field(default_factory=dict)
    """Per k: tasks none of whose expected operations is shown within k after the change, and one was before."""


@dataclass(frozen=True)
class SuiteChange:
    """What the change does to a suite: its tasks' expected calls, and how findable their operations stay."""

    suite: str
    tasks: int
    """Tasks with expected calls (the ones judged)."""
    broken: tuple[BrokenCall, ...]
    retrieval: tuple[RetrievalChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def broken_tasks(self) -> tuple[str, ...]:
        """The tasks with at least one broken expected call, each once, in order."""
        return tuple(dict.fromkeys(b.task for b in self.broken))


@dataclass(frozen=True)
class ChangeReport:
    """Everything ``surfbench diff`` measured; the gate judges it (bench/report/diff_gate.py)."""

    old: Catalog
    new: Catalog
    diff: CatalogDiff
    surfaces: tuple[SurfaceChange, ...]
    prefixes: tuple[PrefixChange, ...]
    help_budget: int
    suite: SuiteChange | None = None
    notes: tuple[str, ...] = ()


def renames(diff: CatalogDiff) -> dict[str, str]:
    """New name -> old name of every operation guessed renamed."""
    return {c.name: c.old_name for c in diff.changes if c.kind == "renamed" and c.old_name is not None}


# ---- surfaces ---------------------------------------------------------------------------------------------------


def _rows(catalog: Catalog, configs: Sequence[SurfaceConfig], budget: int) -> dict[str, SurfaceRow]:
    return {row.surface: row for row in surface_table(catalog, configs, budget=budget)} if configs else {}


def surface_changes(
    old: Catalog,
    new: Catalog,
    configs: Sequence[SurfaceConfig],
    diff: CatalogDiff,
    budget: int = HELP_BUDGET_BYTES,
    applies: Mapping[str, tuple[bool, bool]] | None = None,
) -> list[SurfaceChange]:
    """Each surface measured on both catalogs (``applies``: per surface, whether it applies to old and to new)."""
    on_old = [c for c in configs if (applies or {}).get(c.name, (True, True))[0]]
    on_new = [c for c in configs if (applies or {}).get(c.name, (True, True))[1]]
    before, after = _rows(old, on_old, budget), _rows(new, on_new, budget)
    old_name = renames(diff)
    out = []
    for config in configs:
        b, a = before.get(config.name), after.get(config.name)
        was = set(b.help_over_budget) if b is not None else set()
        fresh = tuple(n for n in (a.help_over_budget if a is not None else []) if old_name.get(n, n) not in was)
        out.append(SurfaceChange(config.name, config.kind, b, a, fresh))
    return out


# ---- the cached prefix ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Head:
    """What a surface puts before the conversation: its tools' wire texts, in order, and its system text."""

    tools: tuple[tuple[str, str], ...]
    """(tool name, wire text) per tool shown on the first turn."""
    system: str


def surface_head(catalog: Catalog, config: SurfaceConfig) -> Head | None:
    """The head a surface shows on its first turn; None when it depends on the request (preselect, guidance)."""
    surface = build_surface(from_source(catalog), config.kind, config.params, name=config.name)
    if surface.request_dependent or surface.guided:
        return None
    session = surface.session("")
    return Head(tuple((t.name, tool_wire_text(t)) for t in session.tools()), session.system_text())


class HeadTokens:
    """o200k_base counts of texts, each counted once."""

    def __init__(self) -> None:
        self.known: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        if text not in self.known:
            self.known[text] = count_tokens(text, PREFIX_ENCODING) if text else 0
        return self.known[text]


def _segments(head: Head, order: str) -> list[tuple[str, str, str]]:
    """(part, label, text) in the provider's order: tools then system (``tools_first``) or system then tools."""
    tools = [("tools", f"tool {i + 1} {name!r}", text) for i, (name, text) in enumerate(head.tools)]
    system = [("system", "system text", head.system)] if head.system else []
    return tools + system if order == "tools_first" else system + tools


@dataclass(frozen=True)
class _Common:
    tokens: int
    """Tokens of the identical beginning of the two heads."""
    first_change: str | None
    through: dict[str, int]
    """Part -> its end's token position in the old head, for every part identical (with all before it) in both."""
    ends: dict[str, int]
    """Part -> its end's token position in the old head."""


def _part_ends(segments: list[tuple[str, str, str]]) -> dict[str, int]:
    """Part -> how many segments come up to its end."""
    return {part: i + 1 for i, (part, _, _) in enumerate(segments)}


def _common(old: Head, new: Head, order: str, tokens: HeadTokens) -> _Common:
    a, b = _segments(old, order), _segments(new, order)
    common, first = 0, None
    for i, (part, label, text) in enumerate(a):
        if i < len(b) and b[i][0] == part and b[i][2] == text:
            common += tokens(text)
            continue
        if i >= len(b):
            first = f"{label} removed"
        elif b[i][0] != part:
            first = f"{b[i][1]} added" if b[i][0] == "tools" else f"{label} removed"
        else:  # the identical beginning of the first differing text counts too
            first = label
            common += tokens(os.path.commonprefix([text, b[i][2]]))
        break
    else:
        if len(b) > len(a):
            first = f"{b[len(a)][1]} added"
    positions: dict[str, int] = {}
    running = 0
    for part, _, text in a:
        running += tokens(text)
        positions[part] = running
    index_a, index_b = _part_ends(a), _part_ends(b)
    through = {
        part: positions[part]
        for part, i in index_a.items()
        if part in index_b and [(p, t) for p, _, t in a[:i]] == [(p, t) for p, _, t in b[: index_b[part]]]
    }
    return _Common(common, first, through, positions)


def profile_outcome(p: CacheProfile, old: Head, new: Head, tokens: HeadTokens) -> PrefixOutcome:
    """What profile ``p`` still serves of a conversation's cached head once the head becomes ``new``."""
    common = _common(old, new, p.order, tokens)
    total = max(common.ends.values(), default=0)
    identical = common.first_change is None
    if p.style == "breakpoints":
        points = [common.ends[b] for b in p.breakpoints if b in common.ends]
        cached = max((x for x in points if x >= p.min_tokens), default=0)
        intact = [common.through[b] for b in p.breakpoints if b in common.through]
        kept = max((x for x in intact if x >= p.min_tokens), default=0)
        note = "" if cached else f"no breakpoint prefix reaches {p.min_tokens:,} tokens: nothing was cached"
        return PrefixOutcome(p.name, cached, min(kept, cached), history_lost=False, note=note)
    if identical:
        return PrefixOutcome(p.name, total, total, history_lost=False)
    if p.style == "prefix":
        kept = (common.tokens // p.block) * p.block
        kept = kept if kept >= max(p.min_tokens, 1) else 0
        note = f"kept rounded down to {p.block}-token blocks" if p.block > 1 else ""
        if 0 < common.tokens < p.min_tokens:
            note = f"the identical prefix is under {p.min_tokens:,} tokens: not served"
        return PrefixOutcome(p.name, total, kept, history_lost=True, note=note)
    return PrefixOutcome(p.name, total, min(common.tokens, total), history_lost=True)  # slot


def prefix_change(
    old: Catalog,
    new: Catalog,
    config: SurfaceConfig,
    profiles: Sequence[CacheProfile],
    tokens: HeadTokens | None = None,
) -> PrefixChange:
    """The head of one surface on both catalogs, and each profile's outcome."""
    tokens = tokens or HeadTokens()
    before, after = surface_head(old, config), surface_head(new, config)
    if before is None or after is None:
        return PrefixChange(config.name, 0, 0, None, (), "its tools depend on the request: no one head to compare")

    def size(head: Head) -> int:
        return sum(tokens(text) for _, text in head.tools) + tokens(head.system)

    first = _common(before, after, "tools_first", tokens).first_change
    outcomes = tuple(profile_outcome(p, before, after, tokens) for p in profiles)
    return PrefixChange(config.name, size(before), size(after), first, outcomes)


def prefix_changes(
    old: Catalog,
    new: Catalog,
    configs: Sequence[SurfaceConfig],
    applies: Mapping[str, tuple[bool, bool]] | None = None,
    profiles: Sequence[CacheProfile] | None = None,
) -> list[PrefixChange]:
    """:func:`prefix_change` for every surface that applies to both catalogs (the others: a note)."""
    chosen = list(profiles or PROFILES.values())
    tokens = HeadTokens()
    out = []
    for config in configs:
        if not all((applies or {}).get(config.name, (True, True))):
            out.append(PrefixChange(config.name, 0, 0, None, (), "not on both catalogs"))
            continue
        out.append(prefix_change(old, new, config, chosen, tokens))
    return out
