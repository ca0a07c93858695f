"""The report's prompt-caching parts: effective columns, the caching and cache-break tables, rank sentences.

The cells table's effective columns, the caching and cache-break tables, and one sentence per surface on whether
caching changes its rank. Numbers come from the cache model (:mod:`surfbench.bench.promptcache.prompt_cache_model`)
over the requests each cell sent (:mod:`surfbench.bench.promptcache.prompt_cache_requests`), under each provider profile
(:mod:`surfbench.bench.models.cache_profiles`). Takes the report's cells duck-typed (``keys``, ``summary``,
``cache``), so that :mod:`surfbench.bench.report.report_data` can import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from surfbench.bench.analysis.metrics import METRICS, fmt
from surfbench.bench.base.sections import Section
from surfbench.bench.models.cache_profiles import PROFILES
from surfbench.bench.promptcache.prompt_cache_model import CacheCell
from surfbench.bench.promptcache.prompt_cache_requests import CellCache

PROFILE_NAMES = tuple(PROFILES)
"""The profiles every report shows, in this order."""
PARTS = ("tools", "system", "history")


def effective_head(name: str) -> str:
    """The cells table's column for profile ``name``."""
    return f"eff. tok/step, $/ep ({name})"


def effective_text(cell: CacheCell | None) -> str:
    """``1,234 / $0.0012``: effective input tokens per step and cost per episode ("-" where not modelled)."""
    if cell is None or cell.effective_input_tokens_per_step is None:
        return "-"
    tokens = fmt(cell.effective_input_tokens_per_step)
    cost = cell.effective_cost_per_episode
    return f"{tokens} / {METRICS['effective_cost_per_episode'].format(cost)}" if cost is not None else tokens


def _keys(row: Any) -> list[str]:
    return [str(row.keys[k]) for k in ("suite", "model", "mode", "surface")]


def _share(cell: CacheCell | None) -> str:
    return "-" if cell is None else fmt(cell.cached_share, "pct")


MEASURED_HEAD = "cached (measured)"
"""The caching table's column of what the endpoint itself reported (llama-server's cache_n, a provider's cached
tokens), beside the modelled shares; shown when any cell has it."""


def caching_table(rows: Sequence[Any]) -> tuple[list[str], list[list[str]]]:
    """Per cell: steps replayed, raw prompt tokens per step, and each profile's cached share and written tokens.

    With the share the endpoint itself reported (``cached_share``) when any cell has one.
    """
    head = ["suite", "model", "mode", "surface", "steps", METRICS["prompt_tokens_per_step"].label]
    head += [f"cached ({p})" for p in PROFILE_NAMES] + [f"written/step ({p})" for p in ("anthropic",)]
    measured = any(r.cache and r.summary.cached_share is not None for r in rows)
    if measured:
        head.append(MEASURED_HEAD)
    out = []
    for r in rows:
        cache: Mapping[str, CacheCell] = r.cache
        if not cache:
            continue
        first = next(iter(cache.values()))
        written = cache.get("anthropic")
        per_step = fmt(written.written / written.steps) if written is not None and written.steps else "-"
        out.append(
            [*_keys(r), str(first.steps), fmt(r.summary.prompt_tokens_per_step)]
            + [_share(cache.get(p)) for p in PROFILE_NAMES]
            + [per_step]
            + ([fmt(r.summary.cached_share, "pct")] if measured else [])  # fmt gives "-" for None
        )
    return head, out


def breaks_table(rows: Sequence[Any]) -> tuple[list[str], list[list[str]]]:
    """Per cell: steps whose prefix changed within their episode, where, and what that cost under each profile."""
    head = ["suite", "model", "mode", "surface", "breaks", "per episode", "where (tools / system / history)"]
    head += [f"not served tok/ep ({p})" for p in PROFILE_NAMES]
    out = []
    for r in rows:
        cache: Mapping[str, CacheCell] = r.cache
        if not cache:
            continue
        first = next(iter(cache.values()))
        episodes = first.episodes or 0
        where = " / ".join(str(first.break_parts.get(part, 0)) for part in PARTS)
        lost = [fmt(cache[p].break_tokens / episodes) if p in cache and episodes else "-" for p in PROFILE_NAMES]
        out.append([*_keys(r), str(first.breaks), fmt(first.breaks / episodes) if episodes else "-", where, *lost])
    return head, out


def _ranks(values: Mapping[str, float]) -> dict[str, int]:
    ordered = sorted(values, key=lambda s: (values[s], s))
    return {surface: ordered.index(surface) + 1 for surface in values}


def rank_sentences(rows: Sequence[Any]) -> list[str]:
    """One sentence per surface: its rank by raw prompt tokens per step against its rank under each profile.

    Per suite, model and mode with two surfaces or more; ranks by effective input tokens per step, 1 = fewest.
    """
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for r in rows:
        if r.cache and r.summary.prompt_tokens_per_step is not None:
            groups.setdefault((str(r.keys["suite"]), str(r.keys["model"]), str(r.keys["mode"])), []).append(r)
    lines = []
    for (suite, model, mode), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        raw = _ranks({str(r.keys["surface"]): float(r.summary.prompt_tokens_per_step) for r in members})
        per_profile = {}
        for p in PROFILE_NAMES:
            values = {
                str(r.keys["surface"]): float(r.cache[p].effective_input_tokens_per_step)
                for r in members
                if p in r.cache and r.cache[p].effective_input_tokens_per_step is not None
            }
            if len(values) == len(members):
                per_profile[p] = _ranks(values)
        for surface in sorted(raw, key=lambda s: raw[s]):
            moved = [
                f"{per_profile[p][surface]} under {p}" for p in per_profile if per_profile[p][surface] != raw[surface]
            ]
            verdict = f"caching changes its rank: {', '.join(moved)}" if moved else "caching does not change its rank"
            lines.append(
                f"{suite} / {model} / {mode}: `{surface}` is {raw[surface]} of {len(raw)} by raw prompt tokens per "
                f"step; {verdict}."
            )
    return lines


def cache_sections(rows: Sequence[Any], cache: Mapping[tuple[str, ...], CellCache]) -> list[Section]:
    """The report's caching sections (none when no cell could be replayed)."""
    head, body = caching_table(rows)
    if not body:
        return []
    replayed = [c for c in cache.values() if c.rebuilt or c.missing]
    notes = []
    if any(c.rebuilt for c in replayed):
        notes.append(
            "Steps recorded before records v4 are rebuilt from the transcripts (their tool-block tokens are "
            "estimated from the step's prompt estimate)."
        )
    missing = sum(c.missing for c in cache.values())
    if missing:
        notes.append(f"{missing} episode(s) without recorded segments or a transcript are left out.")
    profiles = "; ".join(
        f"`{p.name}`: {p.style}, from {p.min_tokens:,} tokens"
        + (f" in blocks of {p.block}" if p.block > 1 else "")
        + (f", {p.ttl_s:g} s lifetime" if p.ttl_s else "")
        + (f", priced as {p.price_model}" if p.price_model else ", not priced")
        for p in PROFILES.values()
    )
    text = (
        "Modelled from the requests each cell sent, in order (bench/promptcache/prompt_cache_model.py; "
        "docs/metrics.md): "
        f"{profiles}. Each cell starts cold; overrides come from the model config's `cache_profiles`."
    )
    if MEASURED_HEAD in head:
        text += (
            f" `{MEASURED_HEAD}`: what the endpoint itself reported (llama-server's per-request `cache_n`, a "
            "provider's cached tokens); with one slot the `local` profile should equal it."
        )
    sections = [Section("Prompt caching per provider profile (modelled)", "\n\n".join([text, *notes]), (head, body))]
    b_head, b_body = breaks_table(rows)
    sections.append(
        Section(
            "Cache breaks: the prefix changed within an episode",
            "A break is a step whose system text, tool block or earlier history differs from the episode's previous "
            "request (lazy and search rewriting the tool list, preselect's per-request tool set). Not served: the "
            "tokens each profile would have served from its cache had the prefix stayed, per episode.",
            (b_head, b_body),
        )
    )
    sentences = rank_sentences(rows)
    if sentences:
        sections.append(
            Section(
                "Does caching change the ranking?",
                "Rank by effective input tokens per step under each profile against the rank by raw prompt tokens "
                "(1 = fewest).\n\n" + "\n\n".join(f"- {line}" for line in sentences),
            )
        )
    return sections
