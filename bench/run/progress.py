"""Progress for long work: a live bar per cell on a terminal, plain lines elsewhere (and under CI)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from surfbench.bench.base.secrets import redact
from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.run.runner import Cell, ProgressFn


def _rate(rate: float) -> str:
    """Generated tokens per second over the cell so far: one decimal below 10 (a slow model is not "0 tok/s")."""
    return f"{rate:.1f}" if rate < 10 else f"{rate:.0f}"


def _eta(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return (
        f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
    )


class _Tracker:
    def __init__(self) -> None:
        self.started: dict[str, tuple[float, int]] = {}
        self.tokens: dict[str, int] = {}

    def begin(self, cell: Cell, done: int) -> None:
        self.started[cell.label()] = (time.perf_counter(), done)
        self.tokens[cell.label()] = 0

    def step(self, cell: Cell, done: int, total: int, episode: dict[str, Any]) -> tuple[float, float]:
        label = cell.label()
        t0, done0 = self.started.get(label, (time.perf_counter(), 0))
        elapsed = time.perf_counter() - t0
        self.tokens[label] = self.tokens.get(label, 0) + int(episode.get("completion_tokens_total") or 0)
        eta = elapsed / max(done - done0, 1) * (total - done)
        rate = self.tokens[label] / elapsed if elapsed > 0 else 0.0
        return eta, rate


def outcome(episode: Mapping[str, Any], width: int = 90) -> str:
    """``solved``, or ``failed (why)``: why it ended early, the first failed check, else the error types.

    An episode that ended early (its ``outcome``) gives its error, named a harness error when it is one.
    """
    if episode.get("success"):
        return "solved"
    failures = list(episode.get("failures") or [])
    types = list(episode.get("error_types") or [])
    ended = episode.get("outcome")
    if episode.get("error") and ended in (EpisodeOutcome.DOES_NOT_FIT, EpisodeOutcome.CONTEXT_OVERFLOW):
        why = str(episode["error"])  # never sent, or outgrew the context: an outcome, not a harness error
    elif episode.get("error"):
        why = f"harness error: {episode['error']}"
    elif failures:
        why = str(failures[0]) + (f" (+{len(failures) - 1} more)" if len(failures) > 1 else "")
    elif types:
        why = ", ".join(dict.fromkeys(str(t) for t in types))
    else:
        why = "no check passed"
    if episode.get("stuck"):
        why = f"stuck, stopped; {why}"
    why = " ".join(redact(why).split())  # before the cut: a URL cut inside its password is no longer found
    return f"failed ({why if len(why) <= width else why[: width - 1] + '…'})"


def plain_progress(stream: TextIO | None = None) -> ProgressFn:
    """One line per episode: counts, outcome, ETA, generated tokens/s."""
    out = stream or sys.stderr
    tracker = _Tracker()

    def report(cell: Cell, done: int, total: int, episode: dict[str, Any] | None) -> None:
        label = cell.label()
        if episode is None:
            tracker.begin(cell, done)
            print(f"{label}: {done}/{total} episodes already done", file=out, flush=True)
            return
        eta, rate = tracker.step(cell, done, total, episode)
        line = (
            f"[{done}/{total}] {label} {episode['task_id']}: {outcome(episode)}; first-try "
            f"{episode['first_try_correct']}/{episode['expected_calls']}, {episode['round_trips']} steps, "
            f"{episode['wall_s']:.1f}s, ETA {_eta(eta)}, {_rate(rate)} tok/s"
        )
        print(redact(line), file=out, flush=True)  # the episode's own error, unredacted until it is stored

    return report


def live_progress(stream: TextIO | None = None, width: int = 24) -> ProgressFn:
    """A bar redrawn in place: episodes done/total, ETA, generated tokens/s; a final line per cell."""
    out = stream or sys.stderr
    tracker = _Tracker()

    def report(cell: Cell, done: int, total: int, episode: dict[str, Any] | None) -> None:
        label = cell.label()
        if episode is None:
            tracker.begin(cell, done)
            eta, rate = 0.0, 0.0
        else:
            eta, rate = tracker.step(cell, done, total, episode)
        filled = int(width * done / total) if total else width
        bar = "█" * filled + "░" * (width - filled)
        line = f"\r{label} {bar} {done}/{total} ETA {_eta(eta)} {_rate(rate)} tok/s"
        out.write(line.ljust(100))
        if done >= total:
            out.write("\n")
        out.flush()

    return report


def make_progress(mode: str = "auto") -> ProgressFn:
    """``auto``: live on a terminal unless CI is set; ``live`` or ``plain`` to force one."""
    if mode == "live" or (mode == "auto" and sys.stderr.isatty() and not os.environ.get("CI")):
        return live_progress()
    return plain_progress()
