"""``surfbench whatif stop_on_repeated_call=K RUN...``: what the stop inside a step would do to recorded runs.

The stop (bench.models.repeats) ends an answer at the K-th copy of one complete call and runs each call of a
step once. On a recorded step both are exact: the text kept is ``text[:cut_at(text, K)]``, and the calls kept
are the recorded calls of the step that come first with their name and arguments and appear in the kept text.
What the model would have done *after* the first step the setting changes is not recorded: from there the
conversation differs. So, per cell:

- **generated tokens and model seconds saved**, over every recorded step the rule cuts, each in proportion to
  the text cut away (tokens: an estimate; seconds: at most, since the proportion of a step's time includes its
  prompt). Steps after an episode's first change would be different steps: the sum is what the recorded steps
  spent on text the stop removes, not a prediction of the new run's time;
- **first-try and selection, proved unchanged or not**: an episode's first-try verdict cannot change when the
  first call to each expected operation lies before the change (an earlier step, or a kept call of the changed
  step: a dropped copy is never the first call to anything); selection likewise for the first call naming an
  operation. Episodes where that does not hold are counted as *open*, not guessed;
- **success**: open for every episode the setting changes (the end state depends on the steps after it).

The live comparison (``scripts/bench_batching.py --settings llama-server:1:stop=0 llama-server:1:stop=K``)
answers what stays open here.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from surfbench.bench.analysis.replay import RecordedEpisode, Suites, group_by_cell, load_episodes
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.markdown import markdown_table
from surfbench.bench.contracts.records import CallRecord
from surfbench.bench.models.parsing import parse_turn
from surfbench.bench.models.repeats import cut_at

SETTING = "stop_on_repeated_call"


@dataclass
class EpisodeCut:
    """One recorded episode under the setting."""

    key: str
    changed_at: int | None = None
    """The first step the setting changes (cut, or a copy of a call dropped); None: the episode is unchanged."""
    steps_cut: int = 0
    tokens_saved: float = 0.0
    seconds_saved: float = 0.0
    first_try_open: bool = False
    selection_open: bool = False


@dataclass
class CellCut:
    cell: str
    episodes: list[EpisodeCut] = field(default_factory=list)
    steps: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def total(self, name: str) -> float:
        return sum(float(getattr(e, name)) for e in self.episodes)

    def count(self, name: str) -> int:
        return sum(1 for e in self.episodes if getattr(e, name))


def parse_step_setting(text: str) -> list[int]:
    """``stop_on_repeated_call=K`` or ``=K1,K2,...`` -> the Ks (each 2 or more)."""
    _, _, value = text.partition("=")
    try:
        ks = sorted({int(v) for v in value.split(",")})
    except ValueError:
        raise ConfigError(f"{text!r}: K must be a whole number, 2 or more") from None
    if not ks or ks[0] < 2:
        raise ConfigError(f"{text!r}: K must be 2 or more (a call seen once is no repeat)")
    return ks


def _key(name: object, arguments: object) -> tuple[str, str]:
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return str(name), json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


def kept_calls(text: str, calls: Sequence[CallRecord], k: int) -> tuple[list[CallRecord] | None, bool]:
    """The recorded calls of one step the setting keeps (None: not known), and whether it cuts the step's text.

    The step's calls are parsed again from its text, as the episode loop parsed them: one record per parsed call
    (a code-mode program may record several per call: then which records a dropped call made is not known). The
    kept ones are those parsed from the text up to the cut, each name and arguments once.
    """
    at = cut_at(text, k)
    cut = at is not None and at < len(text.rstrip())
    parsed = parse_turn(text, ()).calls
    n_kept = len(parse_turn(text[:at], ()).calls) if cut and at is not None else len(parsed)
    seen: set[tuple[str, str]] = set()
    keep: list[int] = []
    for i, call in enumerate(parsed[:n_kept]):
        key = _key(call.name, call.arguments)
        if key not in seen:
            seen.add(key)
            keep.append(i)
    if len(keep) == len(parsed):
        return list(calls), cut
    if len(calls) != len(parsed):
        return None, cut
    return [calls[i] for i in keep], cut


def episode_cut(ep: RecordedEpisode, expected_ops: set[str], k: int) -> EpisodeCut:
    """The setting's effect on one recorded episode."""
    out = EpisodeCut(ep.key)
    by_step: dict[int, list[CallRecord]] = {}
    for c in ep.calls:
        by_step.setdefault(c.step, []).append(c)
    prefix: list[CallRecord] = []  # the calls that happen as recorded, in order
    known = True
    for s in ep.steps:
        text = s.text or ""
        calls = by_step.get(s.step, [])
        kept, cut = kept_calls(text, calls, k)
        if cut:
            at = cut_at(text, k) or len(text)
            share = 1.0 - at / len(text)
            out.steps_cut += 1
            out.tokens_saved += share * float(s.completion_tokens or 0)
            out.seconds_saved += share * float(s.latency_s or 0.0)
        if out.changed_at is None:
            if kept is None:  # which calls the step would keep is not known: both verdicts stay open
                out.changed_at, out.first_try_open, out.selection_open = s.step, True, True
                known = False
                continue
            prefix += kept
            if cut or len(kept) < len(calls):
                out.changed_at = s.step
    if out.changed_at is not None and known:
        first_ops = {c.operation for c in prefix if c.operation}
        out.first_try_open = not expected_ops <= first_ops
        out.selection_open = not any(c.operation for c in prefix)
    return out


def analyse(run: str | Path, k: int, suites: Suites) -> tuple[list[CellCut], dict[str, int]]:
    """Per cell of one run, the setting's effect at K; and the episodes skipped, by why."""
    cells: list[CellCut] = []
    skipped: dict[str, int] = {}
    for cell, episodes in sorted(group_by_cell(load_episodes(run)).items()):
        out = CellCut(cell)
        for ep in episodes:
            found = suites.task(str(ep.row.get("suite")), str(ep.row.get("task_id")))
            if isinstance(found, str):
                skipped[found] = skipped.get(found, 0) + 1
                continue
            ops = {op for call in found[1].expected for op in call.ops}
            out.episodes.append(episode_cut(ep, ops, k))
            out.steps += len(ep.steps)
            out.tokens += sum(int(s.completion_tokens or 0) for s in ep.steps)
            out.seconds += sum(float(s.latency_s or 0.0) for s in ep.steps)
        cells.append(out)
    return cells, skipped


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


HEAD = [
    "run", "cell", "K", "episodes", "steps cut", "generated tokens saved (est.)", "model s saved (at most)",
    "episodes changed", "first-try open", "selection open",
]  # fmt: skip


def rows(run: str | Path, k: int, cells: Sequence[CellCut]) -> list[list[str]]:
    out = []
    for c in cells:
        n = len(c.episodes)
        changed = c.count("changed_at")
        out.append([
            Path(run).name, c.cell, str(k), str(n), f"{int(c.total('steps_cut'))} of {c.steps}",
            f"{c.total('tokens_saved'):,.0f} ({_pct(c.total('tokens_saved'), c.tokens)})",
            f"{c.total('seconds_saved'):,.0f} ({_pct(c.total('seconds_saved'), c.seconds)})",
            f"{changed} of {n}", str(c.count("first_try_open")), str(c.count("selection_open")),
        ])  # fmt: skip
    return out


def _add(total: list[float], cells: Sequence[CellCut]) -> None:
    """Add the cells' counts to a running total (see :func:`_total_row`)."""
    for c in cells:
        parts = (
            len(c.episodes), c.tokens, c.seconds, c.total("steps_cut"), c.total("seconds_saved"),
            c.count("changed_at"), c.count("first_try_open"), c.count("selection_open"), c.total("tokens_saved"),
            c.steps,
        )  # fmt: skip
        for i, value in enumerate(parts):
            total[i] += value


def _total_row(head: list[str], t: Sequence[float]) -> list[str]:
    return [
        *head, f"{t[0]:.0f}", f"{t[3]:.0f} of {t[9]:.0f}", f"{t[8]:,.0f} ({_pct(t[8], t[1])})",
        f"{t[4]:,.0f} ({_pct(t[4], t[2])})", f"{t[5]:.0f}", f"{t[6]:.0f}", f"{t[7]:.0f}", f"{t[5]:.0f}",
    ]  # fmt: skip


TOTAL_HEAD = [
    "episodes", "steps cut", "generated tokens saved (est.)", "model s saved (at most)", "episodes changed",
    "first-try open", "selection open", "success open",
]  # fmt: skip


def run_whatif_step(setting: str, runs: Sequence[str | Path]) -> str:
    """The whole report as markdown: all runs together, then per run, then per cell, for each K."""
    ks = parse_step_setting(setting)
    suites = Suites()
    table: list[list[str]] = []
    totals = {k: [0.0] * 10 for k in ks}
    per_run: list[list[str]] = []
    notes: list[str] = []
    for run in runs:
        for k in ks:
            cells, skipped = analyse(run, k, suites)
            table += rows(run, k, cells)
            _add(totals[k], cells)
            mine = [0.0] * 10
            _add(mine, cells)
            per_run.append(_total_row([Path(run).name, str(k)], mine))
            if k == ks[0]:
                notes += [f"{Path(run).name}: skipped {n} episode(s): {why}" for why, n in sorted(skipped.items())]
    parts = [
        f"# whatif {setting}",
        "What the stop inside a step would cut from the recorded steps, and whether first-try and selection are "
        "proved unchanged (*open*: decided by steps the setting changes; success is open for every changed "
        "episode). bench/analysis/whatif_step.py says how each column is computed.",
        "## All runs\n\n" + markdown_table(["K", *TOTAL_HEAD], [_total_row([str(k)], t) for k, t in totals.items()]),
        "## Per run\n\n" + markdown_table(["run", "K", *TOTAL_HEAD], per_run),
        "## Per cell\n\n" + markdown_table(HEAD, table),
    ]
    if notes:
        parts.append("\n".join(notes))
    return "\n\n".join(parts) + "\n"
