"""The cache model: what each provider's prompt cache would serve, write and compute for the requests a run sent.

A run's requests are replayed in the order and at the times they were sent (:class:`Request`: its segments, each
a digest and a token count; :mod:`surfbench.bench.promptcache.prompt_cache_requests` builds them from a run folder)
under a :class:`~surfbench.bench.models.cache_profiles.CacheProfile`:

- ``prefix`` (OpenAI, Gemini): the longest prefix any earlier request of the cell shares with this one, among the
  entries used within the profile's lifetime, rounded down to whole blocks; nothing below ``min_tokens`` (and
  nothing for a prompt shorter than that). Writes are free.
- ``breakpoints`` (Anthropic): only prefixes that end at one of this request's breakpoints (after the tool block,
  after the system text) are cached; the longest one an earlier request cached is read, and the prefix up to the
  last breakpoint is written past it. A breakpoint's prefix below ``min_tokens`` is never cached.
- ``slot`` (a one-slot llama.cpp server): the longest common prefix with the previous request, less one token
  when it is the whole prompt (the server evaluates at least one).

Two requests share a prefix as far as their segments are equal (digests, in the provider's order: Anthropic puts
the tool block before the system text). Segment token counts are estimates, scaled to the prompt tokens the
provider reported; a prefix that is a whole earlier request is that request's reported length. Every cell starts
cold. Per step (:class:`StepCache`): tokens served, written and computed (their sum is the prompt), and whether the
prefix changed since the episode's previous request (a *cache break*: where, and the tokens it cost).
:func:`summarize` makes a cell's numbers (:class:`CacheCell`). :func:`slot_cache_counts` replays exact token ids,
which is what llama-server's own counts (``timings.cache_n``) are checked against
(:mod:`surfbench.bench.serverbench.slot_check`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from surfbench.bench.models.cache_profiles import CacheProfile, ProfilePrices, multipliers
from surfbench.bench.models.segments import SYSTEM, TOOLS

HISTORY = "history"
"""A cache break's part when a message of the history changed (any role)."""
LOOKBACK = 20
"""Anthropic checks for a cached prefix up to 20 blocks before each breakpoint (a segment counts as a block)."""


@dataclass(frozen=True)
class Segment:
    """One part of a request: the system text, the tool block, or a message (``part`` is its role)."""

    part: str
    digest: str
    tokens: float
    """Estimated tokens (scaled to the reported prompt when the request is laid out)."""


@dataclass(frozen=True)
class Request:
    """One model call as the cache model replays it."""

    episode: str
    step: int
    at: float
    """When it was sent (seconds; only differences matter)."""
    segments: tuple[Segment, ...]
    """System text, tool block (if any), then the messages, as the loop built them."""
    prompt_tokens: int
    """The prompt's tokens as the provider reported them (else the estimate)."""
    completion_tokens: int = 0
    mode: str = "native"
    """``prompted``: the tools are rendered into the system text, after it, whatever the profile's order."""


@dataclass(frozen=True)
class _Layout:
    parts: tuple[str, ...]
    keys: tuple[str, ...]
    """keys[i]: the digest of the first i segments (keys[0] is the empty prefix)."""
    positions: tuple[int, ...]
    """positions[i]: tokens of the first i segments (positions[-1] is the prompt)."""
    index: dict[str, int]
    """Part (system, tools) -> how many segments precede its end."""


def _arranged(request: Request, order: str) -> list[Segment]:
    head = [s for s in request.segments if s.part in (SYSTEM, TOOLS)]
    rest = [s for s in request.segments if s.part not in (SYSTEM, TOOLS)]
    if order == "tools_first" and request.mode != "prompted":
        head.sort(key=lambda s: s.part != TOOLS)
    else:
        head.sort(key=lambda s: s.part != SYSTEM)
    return head + rest


@functools.lru_cache(maxsize=1 << 16)
def layout(request: Request, order: str) -> _Layout:
    """The request's segments in ``order``, with prefix digests and token positions scaled to its prompt."""
    segs = _arranged(request, order)
    total = sum(s.tokens for s in segs)
    scale = request.prompt_tokens / total if total > 0 else 0.0
    keys, positions, index = [""], [0], {}
    running, chain = 0.0, hashlib.sha256()
    for i, seg in enumerate(segs, start=1):
        chain.update(f"{seg.part}:{seg.digest}|".encode())
        keys.append(chain.copy().hexdigest()[:20])
        running += seg.tokens
        positions.append(min(round(running * scale), request.prompt_tokens))
        if seg.part in (SYSTEM, TOOLS):
            index[seg.part] = i
    positions[-1] = request.prompt_tokens
    return _Layout(tuple(s.part for s in segs), tuple(keys), tuple(positions), index)


def common(a: _Layout, b: _Layout) -> int:
    """How many leading segments two layouts share."""
    n = 0
    for x, y in zip(a.keys[1:], b.keys[1:], strict=False):
        if x != y:
            break
        n += 1
    return n


@dataclass(frozen=True)
class StepCache:
    """One step under one profile: where its prompt tokens came from, and what a changed prefix cost."""

    episode: str
    step: int
    prompt_tokens: int
    served: int
    """Read from the cache (``cached_tokens``, ``cache_read_input_tokens``, ``cachedContentTokenCount``, cache_n)."""
    written: int
    """Written to the cache at a surcharge (``cache_creation_input_tokens``; 0 where writes are free)."""
    computed: int
    """Neither: computed and billed at the input price (``prompt_n`` on the local server)."""
    completion_tokens: int = 0
    break_at: str | None = None
    """Where the prefix changed since the episode's previous request: ``system``, ``tools`` or ``history``."""
    lost_tokens: int = 0
    """The previous request's tokens past the prefix both share (0 without a break)."""
    break_tokens: int = 0
    """Tokens this profile would have served, had the prefix not changed, and does not."""


def _quantized(p: CacheProfile, length: int, prompt: int) -> int:
    if prompt < p.min_tokens:
        return 0
    q = (length // p.block) * p.block
    return q if q >= max(p.min_tokens, 1) else 0


def _breakpoints(p: CacheProfile, lay: _Layout) -> list[int]:
    out = {len(lay.keys) - 1 if name == "last" else lay.index.get(name, 0) for name in p.breakpoints}
    return sorted(i for i in out if i > 0)


def breakpoint_prefix(request: Request, p: CacheProfile) -> int:
    """The longest prefix of ``request`` ending at a breakpoint of ``p`` (0: none); cached from ``p.min_tokens``."""
    lay = layout(request, p.order)
    return max((lay.positions[i] for i in _breakpoints(p, lay)), default=0)


def _reusable(p: CacheProfile, lay: _Layout, length: int, prompt: int) -> int:
    """Tokens the profile can serve from a match of ``length`` tokens (whatever is in its cache)."""
    if p.style == "prefix":
        return _quantized(p, length, prompt)
    if p.style == "breakpoints":
        fits = [lay.positions[i] for i in _breakpoints(p, lay) if p.min_tokens <= lay.positions[i] <= length]
        return max(fits, default=0)
    return min(length, prompt - 1) if prompt > 0 else 0


_CANONICAL = "system_first"


def _break(
    prev: Request, cur: Request, p: CacheProfile, lay: _Layout, prev_lay: _Layout
) -> tuple[str | None, int, int]:
    """(where the prefix changed, the previous request's tokens past it, the tokens that costs this profile)."""
    a, b = layout(prev, _CANONICAL), layout(cur, _CANONICAL)
    n = common(a, b)
    if n == len(a.keys) - 1:
        return None, 0, 0
    part = a.parts[n]
    where = part if part in (SYSTEM, TOOLS) else HISTORY
    shared = common(prev_lay, lay)
    lost = prev.prompt_tokens - prev_lay.positions[shared]
    here = lay.positions[shared]
    kept = min(here + lost, cur.prompt_tokens)
    cost = _reusable(p, lay, kept, cur.prompt_tokens) - _reusable(p, lay, here, cur.prompt_tokens)
    return where, lost, max(cost, 0)


@dataclass
class _Entry:
    last: float
    length: int | None
    """The whole request's reported prompt tokens when this prefix was a whole request (else None)."""


@dataclass
class _Cache:
    profile: CacheProfile
    entries: dict[str, _Entry] = field(default_factory=dict)

    def fresh(self, key: str, at: float) -> _Entry | None:
        entry = self.entries.get(key)
        ttl = self.profile.ttl_s
        if entry is None or (ttl is not None and at - entry.last > ttl):
            return None
        return entry

    def put(self, key: str, at: float, length: int | None) -> None:
        old = self.entries.get(key)
        self.entries[key] = _Entry(at, length if length is not None else (old.length if old else None))


def _match(cache: _Cache, lay: _Layout, at: float, limit: int | None = None) -> tuple[int, int]:
    """(segments of the longest fresh cached prefix, its tokens); ``limit``: look no further than that segment."""
    top = len(lay.keys) - 1 if limit is None else limit
    for i in range(top, 0, -1):
        entry = cache.fresh(lay.keys[i], at)
        if entry is not None:
            length = lay.positions[i] if entry.length is None else min(entry.length, lay.positions[-1])
            return i, length
    return 0, 0


def _prefix_step(cache: _Cache, r: Request, lay: _Layout) -> tuple[int, int]:
    p = cache.profile
    _, length = _match(cache, lay, r.at)
    served = _quantized(p, length, r.prompt_tokens)
    if r.prompt_tokens >= p.min_tokens:
        last = len(lay.keys) - 1
        for i in range(1, last + 1):
            cache.put(lay.keys[i], r.at, r.prompt_tokens if i == last else None)
    return served, 0


def _breakpoint_step(cache: _Cache, r: Request, lay: _Layout) -> tuple[int, int]:
    p = cache.profile
    points = _breakpoints(p, lay)
    if not points:
        return 0, 0
    hit, read = 0, 0
    for i in range(points[-1], 0, -1):  # a hit counts only within LOOKBACK segments before a breakpoint
        if any(0 <= b - i <= LOOKBACK for b in points) and cache.fresh(lay.keys[i], r.at) is not None:
            hit, read = i, lay.positions[i]
            break
    cacheable = [i for i in points if lay.positions[i] >= p.min_tokens]
    beyond = [i for i in cacheable if i > hit]
    written = lay.positions[beyond[-1]] - read if beyond else 0
    for i in [*cacheable, *([hit] if hit else [])]:
        cache.put(lay.keys[i], r.at, None)
    return read, written


def _slot_step(prev: _Layout | None, prev_request: Request | None, r: Request, lay: _Layout) -> int:
    if prev is None or prev_request is None:
        return 0
    n = common(prev, lay)
    length = prev_request.prompt_tokens if n == len(prev.keys) - 1 else lay.positions[n]
    length = min(length, r.prompt_tokens)
    return length - 1 if length >= r.prompt_tokens and r.prompt_tokens > 0 else length


def simulate(requests: Iterable[Request], p: CacheProfile) -> list[StepCache]:
    """Every request of one cell under profile ``p``, replayed in the order sent (ties: as given)."""
    ordered = sorted(enumerate(requests), key=lambda pair: (pair[1].at, pair[0]))
    cache = _Cache(p)
    previous: dict[str, tuple[Request, _Layout]] = {}
    slot: tuple[_Layout, Request] | None = None
    out: list[StepCache] = []
    for _, r in ordered:
        lay = layout(r, p.order)
        if p.style == "prefix":
            served, written = _prefix_step(cache, r, lay)
        elif p.style == "breakpoints":
            served, written = _breakpoint_step(cache, r, lay)
        else:
            served, written = _slot_step(slot[0] if slot else None, slot[1] if slot else None, r, lay), 0
            slot = (lay, r)
        where, lost, cost = None, 0, 0
        if r.episode in previous:
            before, before_lay = previous[r.episode]
            where, lost, cost = _break(before, r, p, lay, before_lay)
        previous[r.episode] = (r, lay)
        computed = r.prompt_tokens - served - written
        out.append(
            StepCache(r.episode, r.step, r.prompt_tokens, served, written, computed, r.completion_tokens,
                      where, lost, cost)
        )  # fmt: skip
    return out


@dataclass(frozen=True)
class CacheCell:
    """A cell's numbers under one profile (:func:`summarize`)."""

    profile: str
    episodes: int
    steps: int
    prompt_tokens: int
    served: int
    written: int
    computed: int
    cached_share: float | None
    """Served / prompt tokens."""
    effective_input_tokens_per_step: float | None
    """Computed + written x write multiplier + served x read multiplier, per step (mean over episodes)."""
    effective_cost_per_episode: float | None
    """USD per episode at the profile's prices (input parts as above, completion at the output price)."""
    breaks: int
    """Steps whose prefix changed since the episode's previous request."""
    break_parts: dict[str, int]
    """``system``, ``tools``, ``history`` -> breaks there."""
    break_tokens: int
    """Tokens the profile did not serve because of those breaks."""
    break_effective_tokens: float
    """Their cost in effective input tokens (each costs its write or input price instead of the read price)."""
    read_multiplier: float
    write_multiplier: float


def step_effective(s: StepCache, read: float, write: float) -> float:
    """A step's effective input tokens: what its prompt costs in input-price tokens."""
    return s.computed + s.written * write + s.served * read


def step_cost(s: StepCache, prices: ProfilePrices | None) -> float | None:
    """A step's USD at the profile's prices; None without prices."""
    if prices is None:
        return None
    return (
        s.computed * prices.input + s.written * prices.write + s.served * prices.read
        + s.completion_tokens * prices.output
    )  # fmt: skip


def summarize(
    steps: Sequence[StepCache], p: CacheProfile, prices: ProfilePrices | None, episodes: int | None = None
) -> CacheCell:
    """One cell's numbers under ``p`` from its steps; ``episodes``: the cell's episode count (default: those seen)."""
    read, write = multipliers(p, prices)
    per_episode: dict[str, list[StepCache]] = {}
    for s in steps:
        per_episode.setdefault(s.episode, []).append(s)
    n_episodes = episodes if episodes is not None else len(per_episode)
    prompt = sum(s.prompt_tokens for s in steps)
    served = sum(s.served for s in steps)
    means = [sum(step_effective(s, read, write) for s in group) / len(group) for group in per_episode.values()]
    costs = [step_cost(s, prices) for s in steps]
    parts: dict[str, int] = {}
    for s in steps:
        if s.break_at:
            parts[s.break_at] = parts.get(s.break_at, 0) + 1
    lost = sum(s.break_tokens for s in steps)
    return CacheCell(
        profile=p.name,
        episodes=n_episodes,
        steps=len(steps),
        prompt_tokens=prompt,
        served=served,
        written=sum(s.written for s in steps),
        computed=sum(s.computed for s in steps),
        cached_share=served / prompt if prompt else None,
        effective_input_tokens_per_step=sum(means) / len(means) if means else None,
        effective_cost_per_episode=(
            sum(c for c in costs if c is not None) / n_episodes if prices is not None and n_episodes else None
        ),
        breaks=sum(parts.values()),
        break_parts=parts,
        break_tokens=lost,
        break_effective_tokens=lost * (max(write, 1.0) - read),
        read_multiplier=read,
        write_multiplier=write,
    )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def slot_cache_counts(
    prompts: Sequence[Sequence[int]], generated: Sequence[Sequence[int] | None] | None = None
) -> list[int]:
    """The tokens a one-slot llama.cpp server reuses for each prompt, sent in this order (``timings.cache_n``).

    The slot holds the previous prompt and the tokens generated for it but the last (sampled, never decoded);
    the server reuses their longest common prefix with the new prompt (``n_past``), less one token when that is
    the whole prompt (it evaluates at least one token to get logits). ``generated``: per prompt, the token ids
    generated for it, where known.
    """
    slot: list[int] = []
    out: list[int] = []
    for i, prompt in enumerate(prompts):
        n = common_prefix(slot, prompt)
        if n == len(prompt) and n > 0:
            n -= 1
        out.append(n)
        made = list(generated[i] or []) if generated is not None and i < len(generated) else []
        slot = [*prompt, *made[:-1]]
    return out
