"""The requests a run sent, per cell, as the cache model replays them; and each cell's numbers under each profile.

A step recorded since records v4 carries its request's segments and the time it was sent
(``StepRecord.segments``, ``sent_at``). An older step is rebuilt from the episode's transcript (the LEGACY path):
its request is every message before the step's own answer; the system segment is the transcript's system message;
the tool block is the step's ``prefix_hash`` (system text and tools, and the system text is the same on every step
of an episode) with the tokens the step's estimate leaves beside the messages (``prompt_tokens_est``, which also
counts the tool names); and the step's time is the cell's model time so far (the cell's episodes played one at a
time, in the order their rows were stored). An episode without a transcript is left out and counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.values import decoded
from surfbench.bench.base.values import missing as _missing
from surfbench.bench.models.cache_profiles import PROFILES, CacheProfile, ProfilePrices, profile, profile_prices
from surfbench.bench.models.segments import SYSTEM, TOOLS, digest, message_segment, text_tokens
from surfbench.bench.promptcache.prompt_cache_model import CacheCell, Request, Segment, StepCache, simulate, summarize
from surfbench.bench.store.results import key_stem
from surfbench.bench.store.tables import as_int
from surfbench.bench.store.transcripts import iter_transcripts

if TYPE_CHECKING:
    import pandas as pd

    from surfbench.bench.store.reader import Runs

CELL_KEYS = ("suite", "surface", "surface_kind", "model", "params_b", "mode")
"""What makes a cell of the report (bench.report.report_data.CELL_KEYS)."""


def cell_key(values: Mapping[str, object]) -> tuple[str, ...]:
    """A cell's key: its CELL_KEYS values as text (a missing size is ``nan`` on both sides)."""
    return tuple(str(values.get(k)) for k in CELL_KEYS)


@dataclass
class CellRequests:
    """One cell's requests, and how many of its episodes could be replayed."""

    key: tuple[str, ...]
    requests: list[Request] = field(default_factory=list)
    episodes: int = 0
    rebuilt: int = 0
    """Episodes rebuilt from their transcripts (recorded before records v4)."""
    missing: int = 0
    """Episodes with steps but neither recorded segments nor a transcript: left out."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """The model config's ``cache_profiles`` (run.json), if it had any."""


def _int(value: object, default: int = 0) -> int:
    return default if _missing(value) else as_int(value)


def _recorded(raw: object) -> list[Segment] | None:
    if _missing(raw):
        return None
    items = decoded(raw)
    return [Segment(str(part), str(dig), float(tokens)) for part, dig, tokens in items]


def transcript_messages(text: str | None) -> list[dict[str, object]] | None:
    """The chat messages of an episode's transcript (its ``message`` lines, in order); None without a transcript."""
    if text is None:
        return None
    out: list[dict[str, object]] = []
    for line in text.splitlines():
        if line.strip():
            obj = json.loads(line)
            if isinstance(obj, dict) and isinstance(obj.get("message"), dict):
                out.append(obj["message"])
    return out


def _rebuilt(messages: list[dict[str, object]], steps: Sequence[Mapping[str, object]]) -> list[list[Segment]] | None:
    """LEGACY: each step's segments from the episode's transcript messages (None if they do not line up)."""
    answers = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if len(answers) < len(steps) or not messages or messages[0].get("role") != "system":
        return None
    system = str(messages[0].get("content") or "")
    out = []
    for k, step in enumerate(steps):
        history = [message_segment(m) for m in messages[1 : answers[k]]]
        segs = [Segment(SYSTEM, digest(system), float(text_tokens(system)))]
        rest = sum(t for _, _, t in history) + segs[0].tokens
        tools = max(_int(step.get("prompt_tokens_est")) - rest, 0)
        if _int(step.get("tools_shown")) > 0:
            segs.append(Segment(TOOLS, f"p{step.get('prefix_hash')}", float(tools)))
        segs += [Segment(part, dig, float(tokens)) for part, dig, tokens in history]
        out.append(segs)
    return out


def run_folders(view: Runs) -> dict[str, Path]:
    """A run's name (its folder's name, and the path as given) -> its folder, for every run of ``view``."""
    out: dict[str, Path] = {}
    for run in view.runs:
        out[Path(run).name] = Path(run)
        out[str(run)] = Path(run)
    return out


class Transcripts:
    """The runs' transcripts, each folder's read once (a packed folder is one zip: opening it per episode is slow)."""

    def __init__(self, folders: Mapping[str, Path]) -> None:
        self.folders = folders
        self.read: dict[Path, dict[str, str]] = {}

    def _of(self, folder: Path) -> dict[str, str]:
        if folder not in self.read:
            self.read[folder] = dict(iter_transcripts(folder))
        return self.read[folder]

    def get(self, run: str, key: str) -> str | None:
        """The episode's transcript: in the folder its row names, else in any of the runs (a copied run)."""
        first = self.folders.get(run)
        stem = key_stem(key)
        for folder in [*([first] if first is not None else []), *dict.fromkeys(self.folders.values())]:
            text = self._of(folder).get(stem)
            if text is not None:
                return text
        return None


def run_requests(view: Runs, episodes: pd.DataFrame | None = None) -> dict[tuple[str, ...], CellRequests]:
    """Every cell's requests in the order sent (recorded segments, or rebuilt from the transcripts).

    ``episodes``: only these rows of ``view.episodes`` (a gate criterion's tasks); default: all.
    """
    episodes = view.episodes if episodes is None else episodes
    steps = view.steps
    if episodes is None or not len(episodes):
        return {}
    by_episode: dict[str, list[dict[str, Any]]] = {}
    if len(steps):
        for row in steps.to_dict("records"):
            by_episode.setdefault(str(row["episode_key"]), []).append(row)
    transcripts = Transcripts(run_folders(view))
    cells: dict[tuple[str, ...], CellRequests] = {}
    clock: dict[tuple[str, ...], float] = {}
    for ep in episodes.to_dict("records"):
        key = cell_key(ep)
        cell = cells.get(key)
        if cell is None:
            cell = cells[key] = CellRequests(key)
            owner = view.cell(str(ep.get("cell_id"))) if not _missing(ep.get("cell_id")) else None
            overrides = owner.raw.get("cache_profiles") if owner is not None else None
            cell.overrides = dict(overrides) if isinstance(overrides, Mapping) else {}
        cell.episodes += 1
        rows = sorted(by_episode.get(str(ep["episode_key"]), []), key=lambda r: _int(r.get("step")))
        if not rows:
            continue
        stored = [_recorded(r.get("segments")) for r in rows]
        segments = [s for s in stored if s is not None]
        if len(segments) < len(rows):  # LEGACY: recorded before records v4, rebuilt from the transcript
            text = transcripts.get(str(ep.get("run")), str(ep["episode_key"]))
            messages = transcript_messages(text)
            rebuilt = _rebuilt(messages, rows) if messages is not None else None
            if rebuilt is None:
                cell.missing += 1
                continue
            segments = rebuilt
            cell.rebuilt += 1
        t = clock.get(key, 0.0)
        for row, segs in zip(rows, segments, strict=True):
            sent = row.get("sent_at")
            at = float(sent) if isinstance(sent, int | float) and not _missing(sent) else t
            estimate = round(sum(s.tokens for s in segs))
            prompt = _int(row.get("prompt_tokens"), estimate)
            cell.requests.append(
                Request(str(ep["episode_key"]), _int(row.get("step")), at, tuple(segs), prompt,
                        _int(row.get("completion_tokens")), str(ep.get("mode") or "native"))
            )  # fmt: skip
            t = at + max(float(row.get("latency_s") or 0.0), 0.0)
        clock[key] = t
    return cells


@dataclass(frozen=True)
class CellCache:
    """One cell under every profile: its numbers, its steps, and how much of it could be replayed."""

    cells: dict[str, CacheCell]
    """Profile name -> the cell's numbers."""
    steps: dict[str, list[StepCache]]
    """Profile name -> the cell's steps, in the order sent."""
    episodes: int
    rebuilt: int
    missing: int


_PRICES: dict[CacheProfile, ProfilePrices | None] = {}


def prices_of(p: CacheProfile) -> ProfilePrices | None:
    """The profile's prices (LiteLLM's bundled map), looked up once per profile."""
    if p not in _PRICES:
        _PRICES[p] = profile_prices(p)
    return _PRICES[p]


def cell_cache(cell: CellRequests, names: Sequence[str] | None = None) -> CellCache:
    """The cell under each profile of ``names`` (default: every built-in one), with its config's overrides."""
    cells, steps = {}, {}
    for name in names or list(PROFILES):
        p = profile(name, cell.overrides)
        steps[name] = simulate(cell.requests, p)
        modelled = cell.episodes - cell.missing
        cells[name] = summarize(steps[name], p, prices_of(p), modelled)
    return CellCache(cells, steps, cell.episodes, cell.rebuilt, cell.missing)


def cache_cells(view: Runs, names: Sequence[str] | None = None) -> dict[tuple[str, ...], CellCache]:
    """Every cell of ``view`` under each profile of ``names`` (default: all), keyed by :func:`cell_key`."""
    return {key: cell_cache(cell, names) for key, cell in run_requests(view).items()}


def effective_costs(view: Runs, episodes: pd.DataFrame, name: str) -> dict[tuple[str, str], float | None]:
    """(surface, model) -> effective cost per episode under profile ``name`` over ``episodes`` (a gate's tasks).

    None where the profile has no prices or no episode of the pair could be replayed.
    """
    totals: dict[tuple[str, str], list[float]] = {}
    priced: dict[tuple[str, str], bool] = {}
    for key, cell in run_requests(view, episodes).items():
        pair = (key[CELL_KEYS.index("surface")], key[CELL_KEYS.index("model")])
        p = profile(name, cell.overrides)
        prices = prices_of(p)
        steps = simulate(cell.requests, p)
        modelled = cell.episodes - cell.missing
        summary = summarize(steps, p, prices, modelled)
        slot = totals.setdefault(pair, [0.0, 0.0])
        if summary.effective_cost_per_episode is not None and modelled:
            slot[0] += summary.effective_cost_per_episode * modelled
            slot[1] += modelled
        priced[pair] = priced.get(pair, True) and prices is not None
    return {pair: (cost / n if n and priced[pair] else None) for pair, (cost, n) in totals.items()}
