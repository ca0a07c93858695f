"""The batching benchmark's pure parts: its settings, outcome identity across settings, and its table rows.

``scripts/bench_batching.py`` runs the same episodes once per setting of the local engine (llama-cpp-python one
at a time; llama-server with ``slots = concurrency = N``, continuous batching) and measures episodes per hour.
What it needs beyond running lives here, so that it is tested without a model:

- :func:`parse_setting`: ``ENGINE[:SLOTS][:t=THREADS][:tb=BATCH_THREADS][:poll=POLL][:wait=W][:fa=F]``;
- :func:`episode_outcomes` / :func:`differences`: at temperature 0 a setting must change when replies come,
  never what they say. Per episode (suite, surface, task, repeat), the sequence of its calls (the operation
  named, else the tool, with the arguments as canonical JSON) and whether it succeeded; episodes that differ
  are listed, not raised: batched decoding may round differently, and the list says where;
- :func:`markdown_rows`: the rows of docs/benchmarks.md, from the JSON the script writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from surfbench.bench.base.values import missing as _missing
from surfbench.bench.models.spec import FLASH_ATTN

ENGINES = {
    "llama-cpp-python": "llama-cpp-python",
    "python": "llama-cpp-python",
    "llama-server": "llama-server",
    "server": "llama-server",
}
"""Engine names a setting may use (short forms too) -> the model config's ``server``."""
WAIT_POLICIES = ("passive", "active")
"""Values of ``OMP_WAIT_POLICY`` a setting may give (``wait=``)."""
CHOICES = {"wait": WAIT_POLICIES, "fa": FLASH_ATTN}
"""The settings' keys whose values are words (``wait=``, ``fa=``: the model config's ``flash_attn``)."""
DEFAULT_SETTINGS = ("llama-cpp-python", "llama-server:1", "llama-server:2", "llama-server:3", "llama-server:4")
"""Today's one-at-a-time server, then llama-server with 1 to 4 slots (as many episodes in flight)."""
BUSY_SETTINGS = ("llama-cpp-python", "llama-server:1", "llama-server:1:t=1", "llama-server:1:t=1:tb=2")
"""With one competing busy process: the old server, then llama-server's default (one slot: more do not pay on
2 cores) with the model's threads (2) against one generation thread (which leaves the busy core alone), and one
generation thread with two prompt threads."""
TARGET_SPEEDUP = 1.5
"""Issue 30: episodes per hour at the best N against today's one-at-a-time server."""
STOP_TARGET = 1.4
"""Issue 51: episodes per hour with the stop inside a step against without, at 0.5B, no verdict changed."""
PROPORTIONAL_SHARE = 0.8
"""Busy against quiet is "in proportion to the cores left" when it keeps at least this share of that proportion
(1 of 2 cores left: at least 0.4x of the quiet rate; the failure the issue names is 10-20x slower)."""


@dataclass(frozen=True)
class Setting:
    """One way to serve the model: engine, slots (= episodes in flight) and thread settings."""

    engine: str
    slots: int = 1
    threads: int | None = None
    """Generation threads; None: the model config's."""
    threads_batch: int | None = None
    """Prompt-processing threads; None: as ``threads``."""
    poll: int | None = None
    """llama-server only: polling level of idle threads (0-100); None: surfbench's default, 0."""
    wait: str | None = None
    """OpenMP's wait policy for the server's threads (``OMP_WAIT_POLICY``: passive, active); None: surfbench's
    default. The shipped builds link OpenMP, whose barriers, not ``poll``, decide how a waiting thread waits."""
    flash_attn: str | None = None
    """llama-server only: ``--flash-attn`` (off, on, auto); None: the model config's (off by default). Compared
    episode by episode like any setting: the identity check flash attention needs before it may be turned on."""
    stop: int | None = None
    """The model config's ``stop_on_repeated_call`` (bench.models.repeats): 0 is off, None the config's own."""

    @property
    def concurrency(self) -> int:
        return self.slots

    @property
    def name(self) -> str:
        """The setting in the form :func:`parse_setting` reads (canonical: engine's full name, slots for the server)."""
        parts = [self.engine] + ([str(self.slots)] if self.engine == "llama-server" else [])
        named = (("t", self.threads), ("tb", self.threads_batch), ("poll", self.poll), ("wait", self.wait),
                 ("fa", self.flash_attn), ("stop", self.stop))  # fmt: skip
        for key, value in named:
            if value is not None:
                parts.append(f"{key}={value}")
        return ":".join(parts)


def parse_setting(text: str) -> Setting:
    """``ENGINE[:SLOTS][:t=N][:tb=N][:poll=N][:wait=W][:fa=F][:stop=K]``, e.g. ``llama-server:2:t=1``.

    A ValueError says what is wrong.
    """
    usage = (
        "ENGINE[:SLOTS][:t=THREADS][:tb=BATCH_THREADS][:poll=0-100][:wait=passive|active][:fa=off|on|auto]"
        "[:stop=K|0], e.g. llama-server:2:t=1"
    )
    head, *rest = text.strip().split(":")
    engine = ENGINES.get(head)
    if engine is None:
        raise ValueError(f"setting {text!r}: unknown engine {head!r} (one of {', '.join(sorted(ENGINES))}); {usage}")
    slots = 1
    found: dict[str, int] = {}
    named: dict[str, str] = {}
    for i, part in enumerate(rest):
        key, sep, value = part.partition("=")
        if not sep and i == 0 and part.isdigit():
            slots = int(part)
            continue
        if value in CHOICES.get(key, ()):
            if key in named:
                raise ValueError(f"setting {text!r}: {key} given twice")
            named[key] = value
            continue
        if not sep or key not in ("t", "tb", "poll", "stop") or not value.isdigit():
            raise ValueError(f"setting {text!r}: cannot read {part!r}; {usage}")
        if key in found:
            raise ValueError(f"setting {text!r}: {key} given twice")
        found[key] = int(value)
    if slots < 1 or any(found.get(k) == 0 for k in ("t", "tb")):
        raise ValueError(f"setting {text!r}: slots and threads are 1 or more")
    if found.get("poll", 0) > 100:
        raise ValueError(f"setting {text!r}: poll is 0 to 100")
    if found.get("stop") == 1:
        raise ValueError(f"setting {text!r}: stop is 0 (off) or 2 or more (a call seen once is no repeat)")
    if engine == "llama-cpp-python" and (slots != 1 or "poll" in found or "fa" in named):
        raise ValueError(
            f"setting {text!r}: llama-cpp-python serves one request at a time (no slots, no poll) and has no "
            "fa=; use llama-server:N for continuous batching"
        )
    wait, fa = named.get("wait"), named.get("fa")
    return Setting(engine, slots, found.get("t"), found.get("tb"), found.get("poll"), wait, fa, found.get("stop"))


def parse_settings(texts: Sequence[str]) -> list[Setting]:
    """Each setting once, in order (a comma inside one argument separates settings too)."""
    out: list[Setting] = []
    for text in texts:
        for part in text.split(","):
            if part.strip():
                setting = parse_setting(part)
                if setting in out:
                    raise ValueError(f"setting {part.strip()!r} given twice")
                out.append(setting)
    if not out:
        raise ValueError("no setting given")
    return out


@dataclass(frozen=True)
class EpisodeCalls:
    """What one episode did: its calls in order and whether it succeeded."""

    calls: tuple[tuple[str, str], ...]
    """(operation named, else the tool called; arguments as canonical JSON), in (step, index) order."""
    success: bool | None
    first_try: int | None = None
    """Expected calls right on the first try (the episode's ``first_try_correct``)."""
    selection: bool | None = None
    """The episode's ``selection_correct``."""

    def verdicts(self) -> tuple[int | None, bool | None, bool | None]:
        """(first-try, selection, success): what a setting that saves time must leave alone."""
        return self.first_try, self.selection, self.success


def _canonical(arguments: object) -> str:
    if isinstance(arguments, str):
        text = arguments
        try:
            arguments = json.loads(text)
        except ValueError:
            return text
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def episode_key(row: Mapping[str, Any]) -> str:
    """An episode across settings: suite/surface/task/repeat (cell ids differ: the engine is in them)."""
    return f"{row['suite']}/{row['surface']}/{row['task_id']}/{int(row['repeat'])}"


def episode_outcomes(episodes: Any, calls: Any) -> dict[str, EpisodeCalls]:
    """Each episode's outcome from a run's episodes and calls tables (DataFrames, as ``load_runs`` reads them)."""
    by_episode: dict[str, list[tuple[int, int, str, str]]] = {}
    for row in calls.to_dict("records") if len(calls) else []:
        named = row.get("operation")
        name = str(row["tool"]) if _missing(named) else str(named)
        by_episode.setdefault(str(row["episode_key"]), []).append(
            (int(row["step"]), int(row["index"]), name, _canonical(row.get("arguments")))
        )
    out: dict[str, EpisodeCalls] = {}
    for row in episodes.to_dict("records"):
        key = episode_key(row)
        if key in out:
            raise ValueError(f"episode {key} appears twice in one setting's episodes")
        made = sorted(by_episode.get(str(row["episode_key"]), []))
        success = None if _missing(row.get("success")) else bool(row["success"])
        first = None if _missing(row.get("first_try_correct")) else int(row["first_try_correct"])
        selection = None if _missing(row.get("selection_correct")) else bool(row["selection_correct"])
        out[key] = EpisodeCalls(tuple((name, args) for _, _, name, args in made), success, first, selection)
    return out


def workload_outcomes(parts: Sequence[tuple[str, Any, Any]]) -> dict[str, EpisodeCalls]:
    """Outcomes of a setting run as several workloads, each ``(workload, episodes, calls)`` of its own run folder.

    Keys are ``workload:suite/surface/task/repeat``: two workloads may run the same episode (the front door's
    ``preselect`` cell and forge dev ``preselect`` share six tasks, and their cells share an identity, so even
    their episode keys are equal); each is compared with its own counterpart, never merged.
    """
    out: dict[str, EpisodeCalls] = {}
    for workload, episodes, calls in parts:
        for key, outcome in episode_outcomes(episodes, calls).items():
            if f"{workload}:{key}" in out:
                raise ValueError(f"episode {key} appears twice in workload {workload}")
            out[f"{workload}:{key}"] = outcome
    return out


def differences(reference: Mapping[str, EpisodeCalls], other: Mapping[str, EpisodeCalls]) -> list[str]:
    """One line per episode whose outcome differs (or that only one side has), in key order; [] when identical."""
    lines = []
    for key in sorted(set(reference) | set(other)):
        if key not in other:
            lines.append(f"{key}: missing")
        elif key not in reference:
            lines.append(f"{key}: not in the reference")
        else:
            a, b = reference[key], other[key]
            if a.calls != b.calls:
                at = next((i for i, (x, y) in enumerate(zip(a.calls, b.calls, strict=False)) if x != y), None)
                at = min(len(a.calls), len(b.calls)) if at is None else at
                lines.append(f"{key}: calls differ from call {at + 1} ({len(a.calls)} vs {len(b.calls)} calls)")
            elif a.success != b.success:
                lines.append(f"{key}: success {a.success} vs {b.success}")
    return lines


def verdict_differences(reference: Mapping[str, EpisodeCalls], other: Mapping[str, EpisodeCalls]) -> list[str]:
    """One line per episode whose first-try, selection or success differs (or that one side lacks); [] when none.

    For a setting meant to change what is executed but no verdict (``stop=K``: a repeated call runs once).
    """
    lines = []
    for key in sorted(set(reference) | set(other)):
        if key not in other or key not in reference:
            lines.append(f"{key}: {'missing' if key not in other else 'not in the reference'}")
            continue
        a, b = reference[key], other[key]
        changed = [
            f"{name} {x} vs {y}"
            for name, x, y in zip(("first-try", "selection", "success"), a.verdicts(), b.verdicts(), strict=True)
            if x != y
        ]
        if changed:
            lines.append(f"{key}: {', '.join(changed)}")
    return lines


def speedups(rates: Mapping[str, float], baseline: str) -> dict[str, float | None]:
    """Each setting's episodes per hour over the baseline's (None when the baseline has no rate)."""
    base = rates.get(baseline)
    return {name: (round(rate / base, 3) if base else None) for name, rate in rates.items()}


def best_setting(rows: Sequence[Mapping[str, Any]], engine: str = "llama-server") -> Mapping[str, Any] | None:
    """The fastest row of ``engine`` (episodes per hour; the fewer slots on a tie)."""
    mine = [r for r in rows if r.get("engine") == engine and r.get("episodes_per_hour")]
    return max(mine, key=lambda r: (float(r["episodes_per_hour"]), -int(r["slots"])), default=None)


def _verdict(ok: bool) -> str:
    return "met" if ok else "missed"


def _stamp(record: Mapping[str, Any]) -> str:
    return f"`{record['command']}`, {record['date']}, load {record['load_1min_before']} to {record['load_1min_after']}"


def markdown_rows(record: Mapping[str, Any]) -> list[str]:
    """docs/benchmarks.md rows (measure | result | target | verdict | measured by) for one run of the benchmark.

    ``record``: one mode's section of results/bench/batching.json (``settings``: rows with ``name``, ``engine``,
    ``slots``, ``episodes``, ``wall_s``, ``episodes_per_hour``, ``speedup``, ``differing``). In a busy run each
    row also has ``quiet`` (the same episodes run alone just before): its busy rate is given as a share of that
    one, never of another run's (other episodes take other times).
    """
    rows = list(record["settings"])
    if not rows:
        return []
    base = rows[0]
    busy = bool(record.get("busy"))
    what = f"{' + '.join(record['workloads'])}, {record['model']}"
    where = " with one competing busy process" if busy else ""
    stamp = _stamp(record)
    share = float(record.get("cores_left", 1)) / float(record.get("cores", 1))
    out = []
    for row in rows[1:]:
        differing = row.get("differing") or []
        same = f"{row['episodes'] - len(differing)} of {row['episodes']} episodes identical to {base['name']}"
        result = (
            f"{row['speedup']}x ({row['episodes_per_hour']} vs {base['episodes_per_hour']} episodes/h; "
            f"{row['wall_s']} vs {base['wall_s']} s; {same})"
        )
        if "verdicts_differing" in row and "completion_tokens" in base:  # a stop setting: what it cut, what it kept
            kept = row["episodes"] - len(row["verdicts_differing"])
            result = result[:-1] + (
                f"; {row.get('steps_cut', 0)} steps cut, {row['completion_tokens']:,} vs "
                f"{base['completion_tokens']:,} tokens generated; first-try, selection and success identical in "
                f"{kept} of {row['episodes']})"
            )
        out.append(
            f"| batching{where}: episodes per hour, {row['name']} (concurrency {row['slots']}) vs "
            f"{base['name']} ({what}) | {result} | - | - | {stamp} |"
        )
        if "stop=" in str(row["name"]) and row.get("speedup") is not None:
            ok = float(row["speedup"]) >= STOP_TARGET and not row.get("verdicts_differing")
            out.append(
                f"| stop inside a step: {row['name']} vs {base['name']} ({what}) | {row['speedup']}x, "
                f"{len(row.get('verdicts_differing') or [])} episode(s) with a verdict changed | "
                f">= {STOP_TARGET}x, none changed | {_verdict(ok)} | {stamp} |"
            )
    best = best_setting(rows)
    if best is not None and not busy:
        ok = best.get("speedup") is not None and float(best["speedup"]) >= TARGET_SPEEDUP
        identical = not best.get("differing")
        out.append(
            f"| batching: best N on {record['cores']} cores, episodes per hour vs {base['name']} ({what}) | "
            f"N={best['slots']}: {best['speedup']}x | >= {TARGET_SPEEDUP}x | {_verdict(ok)} | {stamp} |"
        )
        n_diff = len(best.get("differing") or [])
        out.append(
            f"| batching: outcome identity at temperature 0 at N={best['slots']} "
            f"({what}; calls and success per episode) | "
            f"{best['episodes'] - n_diff} of {best['episodes']} identical | all | {_verdict(identical)} | {stamp} |"
        )
    if busy:
        for row in rows:
            quiet_rate = (row.get("quiet") or {}).get("episodes_per_hour")
            if not quiet_rate or not row.get("episodes_per_hour"):
                continue
            ratio = round(float(row["episodes_per_hour"]) / float(quiet_rate), 3)
            ok = ratio >= share * PROPORTIONAL_SHARE
            changed = len(row.get("differing_vs_quiet") or [])
            same = f"{row['episodes'] - changed} of {row['episodes']} episodes as alone"
            out.append(
                f"| busy / quiet, {row['name']} ({record['cores_left']} of {record['cores']} cores left) | "
                f"{ratio}x ({row['episodes_per_hour']} vs {quiet_rate} episodes/h alone; {same}) | "
                f">= {round(share * PROPORTIONAL_SHARE, 2)}x (in proportion: {round(share, 2)}x) | {_verdict(ok)} | "
                f"{stamp} |"
            )
    return out
