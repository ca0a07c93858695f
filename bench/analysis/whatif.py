"""``surfbench whatif stop_on_repeat=K RUN...``: what early stop would have done to recorded runs.

Steps after the K-th consecutive repeat (:mod:`surfbench.bench.score.stuck`) only matter if the model leaves the loop,
so the effect of ``stop_on_repeat=K`` on a run is computed exactly, without a model: each recorded
episode is cut after the step where its run of repeats reaches K, its backend state is replayed from
the kept calls, and it is scored again (:mod:`surfbench.bench.analysis.replay`). "Before" is the same replay without a
cut, so that a before/after difference comes from the cut alone; it is checked against the recorded
scores (the self-check). Per cell it reports the model time saved and every metric before and after,
with a paired bootstrap interval of the difference, and lists the episodes whose outcome changes:
those where the model escaped a loop that the stop would have ended.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.metrics import METRICS, RATIOS, Metric, fmt, summarize_cell
from surfbench.bench.analysis.replay import (
    RecordedEpisode,
    Rescored,
    Suites,
    group_by_cell,
    load_episodes,
    rescore,
    self_check,
)
from surfbench.bench.base.atomic import write_atomic
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.markdown import markdown_table
from surfbench.bench.base.values import missing, signed
from surfbench.bench.score.stuck import RepeatTracker, scan, step_output

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

BOOTSTRAP_ROUNDS = 2000


@dataclass(frozen=True)
class MetricDelta:
    """One metric of a cell before and after the cut."""

    name: str
    label: str
    before: Any
    after: Any
    low: float | None
    high: float | None
    """95% paired-bootstrap interval of after - before (episodes resampled)."""


def model_time(r: Rescored) -> float:
    """The model time of an episode: its steps' latency, summed."""
    return sum(s.latency_s for s in r.trace.steps)


def _mean(values: Sequence[float | int | None]) -> float | None:
    clean = [v for v in values if v is not None]
    return statistics.fmean(clean) if clean else None


def summary_row(r: Rescored) -> dict[str, object]:
    """The episode's columns that :func:`surfbench.bench.analysis.metrics.summarize_cell` reads.

    A list by hand: the declarations' ``per_episode`` are functions of the row that name no columns, and the values
    are made from the rescored score and trace as bench.run.rows.episode_rows makes a run's (which needs its cell).
    A registered metric that reads another column is left out of whatif's tables (:func:`_reads_within`).
    """
    s, steps = r.score, r.trace.steps
    stuck = scan(steps, r.trace.calls)
    return {
        "expected_calls": s.expected_calls, "first_try_correct": s.first_try_correct,
        "selection_correct": s.selection_correct, "success": s.success, "round_trips": s.round_trips,
        "overhead_round_trips": s.overhead_round_trips,
        "prompt_tokens_per_step": _mean([x.prompt_tokens for x in steps]),
        "request_bytes_per_step": _mean([x.request_bytes for x in steps]),
        "recovered_after_error": s.recovered_after_error, "failed_first_tries": s.failed_first_tries,
        "boundary_violations": s.boundary_violations, "protocol_violations": s.protocol_violations,
        "parse_failures": s.parse_failures, "stable_prefix": s.stable_prefix, "latency_s": model_time(r),
        "error": r.trace.error, "outcome": s.outcome, "stuck": stuck.stuck, "stuck_repeats": stuck.repeats,
    }  # fmt: skip


Part = Callable[[Mapping[str, object]], tuple[float, float]]


def episode_part(metric: Metric) -> Part | None:
    """``metric`` as a (numerator, denominator) per episode; None for a metric not computed from such parts.

    Their sums over a cell make its value as :func:`~surfbench.bench.analysis.metrics.summarize_cell` computes it,
    from its declaration (``per_episode``, ``aggregate``: as ``declared_fields`` aggregates it) or its ratio's parts
    (``RATIOS``: first-try accuracy). An episode without a value (None, NaN) is (0, 0), one with a value is
    (value, 1), a share's value 1.0 or 0.0 by its truth; the cell's value is sum(numerators) / sum(denominators),
    or, for a ``total``, sum(numerators) (for a ``sum`` too, where some episode has a value).
    """
    if metric.name in RATIOS:
        return RATIOS[metric.name]
    value_of, share = metric.per_episode, metric.aggregate == "share"
    if value_of is None:
        return None

    def part(row: Mapping[str, object]) -> tuple[float, float]:
        value = value_of(row)
        if value is None or missing(value):
            return 0.0, 0.0
        return (1.0 if value else 0.0) if share else float(value), 1.0

    return part


UNPAIRED = frozenset({"failed_first_tries"})
"""Metrics with parts and a direction that whatif's tables leave out: failed first tries, the operations
``recovered_after_error`` counts the recovered ones of (the report shows the two as one column); whatif lists
recovered alone, as it always has (listed, it would be one more row in every cell's table)."""


def paired_metrics() -> list[tuple[Metric, Part]]:
    """The metrics whatif compares before and after, in METRICS order, with their per-episode parts.

    Those with parts (:func:`episode_part`) and a better direction: not the episode count, which a cut never
    changes, nor the counts of how episodes ended; and not :data:`UNPAIRED`.
    """
    out = []
    for metric in METRICS.values():
        part = episode_part(metric)
        if part is not None and metric.higher_is_better is not None and metric.name not in UNPAIRED:
            out.append((metric, part))
    return out


def _cell_values(
    metric: Metric, parts: npt.NDArray[np.float64], picks: npt.NDArray[np.int64]
) -> npt.NDArray[np.float64]:
    """The metric's cell value in each bootstrap draw (``picks``: a row of episode indices per draw); NaN: none."""
    import numpy as np

    numerators, denominators = parts[picks, 0].sum(1), parts[picks, 1].sum(1)
    if metric.name in RATIOS or metric.aggregate in ("mean", "share"):
        return numerators / denominators
    if metric.aggregate == "sum":
        return np.where(denominators > 0, numerators, np.nan)
    return numerators  # a total: 0 without any value


class _Reads(dict[str, object]):
    """A row that remembers which columns were read (``[]``, ``get``, ``in``)."""

    def __init__(self, row: Mapping[str, object]) -> None:
        super().__init__(row)
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> object:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: object = None) -> object:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self.read.add(str(key))
        return super().__contains__(key)


def _reads_within(metric: Metric, row: Mapping[str, object]) -> bool:
    """Whether ``metric`` reads only the columns whatif rebuilds (:func:`summary_row`'s; a registered one may not)."""
    if metric.per_episode is None:
        return True
    probe = _Reads(row)
    try:
        metric.per_episode(probe)
    except Exception:  # it needs a column the row lacks (KeyError) or a value it cannot take: not rebuilt here
        return False
    return probe.read <= set(row)


def paired_deltas(
    before: list[Mapping[str, object]], after: list[Mapping[str, object]], seed: int = 0
) -> list[MetricDelta]:
    """Every metric before and after, with a 95% paired-bootstrap interval of the difference."""
    import numpy as np

    sb, sa = summarize_cell(before), summarize_cell(after)
    rng = np.random.default_rng(seed)
    n = len(before)
    picks = rng.integers(0, n, size=(BOOTSTRAP_ROUNDS, n)) if n else None
    out = []
    for metric, part in paired_metrics():
        if before and not _reads_within(metric, before[0]):
            continue  # a registered metric reading a column whatif does not rebuild: no made-up "no change"
        low = high = None
        if picks is not None:
            parts_b = np.array([part(r) for r in before], dtype=float)
            parts_a = np.array([part(r) for r in after], dtype=float)
            with np.errstate(invalid="ignore", divide="ignore"):
                diff = _cell_values(metric, parts_a, picks) - _cell_values(metric, parts_b, picks)
            diff = diff[~np.isnan(diff)]
            if len(diff):
                low, high = float(np.percentile(diff, 2.5)), float(np.percentile(diff, 97.5))
        name = metric.name
        out.append(MetricDelta(name, metric.label, sb.metric(name), sa.metric(name), low, high))
    return out


__all__ = ["analyse_run", "main", "paired_deltas", "parse_setting", "run_whatif", "summary_row"]


@dataclass(frozen=True)
class WhatifOutcome:
    """One episode before and after the cut."""

    episode: RecordedEpisode
    before: Rescored
    after: Rescored
    """The same object as ``before`` when the episode is not cut."""
    cut: int | None
    """Index of the last step kept, where the run of repeats reached K; None: not stopped."""
    repeats: RepeatTracker

    @property
    def escaped_at(self) -> int | None:
        """First step after the cut that no longer repeats: where the recorded model left the loop."""
        if self.cut is None:
            return None
        return next((i for i, run in enumerate(self.repeats.runs) if i > self.cut and run == 0), None)

    @property
    def changed(self) -> bool:
        b, a = self.before.score, self.after.score
        return b.success != a.success or b.first_try_correct != a.first_try_correct


@dataclass(frozen=True)
class CellEffect:
    """The effect of ``stop_on_repeat=k`` on one cell: its episodes' outcomes and every metric."""

    cell: str
    k: int
    outcomes: list[WhatifOutcome]
    metrics: list[MetricDelta]

    @property
    def stopped(self) -> int:
        return sum(1 for o in self.outcomes if o.cut is not None)

    @property
    def steps_before(self) -> int:
        return sum(len(o.before.trace.steps) for o in self.outcomes)

    @property
    def steps_after(self) -> int:
        return sum(len(o.after.trace.steps) for o in self.outcomes)

    @property
    def latency_before(self) -> float:
        return sum(model_time(o.before) for o in self.outcomes)

    @property
    def latency_after(self) -> float:
        return sum(model_time(o.after) for o in self.outcomes)

    @property
    def changed(self) -> list[WhatifOutcome]:
        return [o for o in self.outcomes if o.changed]


@dataclass
class RunCheck:
    """The whole-episode replay of one run against its recorded scores, and its repeat statistics."""

    run: str
    episodes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    mismatched: Counter[str] = field(default_factory=Counter)
    """Field -> episodes whose replayed value differs from the recorded one."""
    mismatched_keys: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    steps: int = 0
    identical_steps: int = 0
    """Steps whose tool calls equal the previous step's (failure or not)."""
    repeat_steps: int = 0
    """Steps that repeat a failing step (bench.score.stuck)."""
    stuck: int = 0
    recorded_stopped: int = 0
    """Episodes the run itself ended with stop_on_repeat: for a larger K their later steps are unknown."""
    latency: float = 0.0
    repeat_latency: float = 0.0


def analyse_run(run: str | Path, ks: Sequence[int], suites: Suites) -> tuple[RunCheck, dict[int, list[CellEffect]]]:
    """Replay one run whole (the self-check) and cut at every K; the effects per K and cell."""
    check = RunCheck(run=str(run))
    outcomes: dict[int, dict[str, list[WhatifOutcome]]] = {k: {} for k in ks}
    for cell, episodes in group_by_cell(load_episodes(run)).items():
        for ep in episodes:
            found = suites.task(str(ep.row.get("suite")), str(ep.row.get("task_id")))
            if isinstance(found, str):
                check.skipped[found] += 1
                continue
            suite, task = found
            whole = rescore(suite, task, ep)
            check.episodes += 1
            check.recorded_stopped += int(whole.trace.stopped is not None)
            _count(check, ep)
            bad = self_check(ep, whole)
            check.mismatched.update(bad)
            if bad:
                check.mismatched_keys.append(f"{ep.key}: {', '.join(bad)}")
            check.diverged += [f"{ep.key}: {d}" for d in whole.diverged]
            repeats = scan(ep.steps, ep.calls)
            cuts: dict[int, Rescored] = {}
            for k in ks:
                cut = repeats.stop_step(k)
                if cut is not None and cut not in cuts:
                    cuts[cut] = rescore(suite, task, ep, cut)
                after = whole if cut is None else cuts[cut]
                outcomes[k].setdefault(cell, []).append(WhatifOutcome(ep, whole, after, cut, repeats))
    effects = {
        k: [
            CellEffect(
                cell,
                k,
                items,
                paired_deltas([summary_row(o.before) for o in items], [summary_row(o.after) for o in items]),
            )
            for cell, items in sorted(by_cell.items())
        ]
        for k, by_cell in outcomes.items()
    }
    return check, effects


def _count(check: RunCheck, ep: RecordedEpisode) -> None:
    repeats = scan(ep.steps, ep.calls)
    check.steps += len(ep.steps)
    check.latency += sum(s.latency_s for s in ep.steps)
    check.repeat_steps += repeats.repeats
    check.stuck += int(repeats.stuck)
    check.repeat_latency += sum(s.latency_s for s, run in zip(ep.steps, repeats.runs, strict=True) if run > 0)
    by_step: dict[int, list[Any]] = {}
    for c in ep.calls:
        by_step.setdefault(c.step, []).append(c)
    outputs = [step_output(s, by_step.get(s.step, [])) for s in ep.steps]
    check.identical_steps += sum(1 for a, b in zip(outputs, outputs[1:], strict=False) if b.calls and a == b)


def parse_setting(text: str) -> list[int]:
    """``stop_on_repeat=K`` or ``stop_on_repeat=K1,K2,...`` -> the Ks."""
    name, _, value = text.partition("=")
    if name.strip() != "stop_on_repeat" or not value:
        raise ConfigError(f"{text!r}: expected stop_on_repeat=K or stop_on_repeated_call=K (or K1,K2,...)")
    try:
        ks = sorted({int(v) for v in value.split(",")})
    except ValueError:
        raise ConfigError(f"{text!r}: K must be a positive whole number") from None
    if ks[0] < 1:
        raise ConfigError(f"{text!r}: K must be a positive whole number")
    return ks


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "-"


def _kind(name: str) -> str:
    """How ``fmt`` prints the metric: a share as a percentage (its declaration's ``kind``), else a number."""
    return "pct" if METRICS[name].kind == "pct" else ""


def _delta(m: MetricDelta) -> str:
    if m.before is None or m.after is None:
        return "-"
    scale, unit = (100.0, " pts") if _kind(m.name) else (1.0, "")
    d = (m.after - m.before) * scale
    ci = f" [{signed((m.low or 0) * scale)}, {signed((m.high or 0) * scale)}]" if m.low is not None else ""
    return f"{signed(d)}{unit}{ci}"


def describe(o: WhatifOutcome) -> str:
    """One line on an episode whose outcome the cut changes."""
    b, a = o.before.score, o.after.score
    steps = len(o.episode.steps)
    where = f"stopped after step {o.cut} of {steps}" if o.cut is not None else "not stopped"
    escaped = o.escaped_at
    left = f"the model left the loop at step {escaped}" if escaped is not None else "the model never left the loop"
    change = []
    if b.success != a.success:
        change.append(f"success {'yes' if b.success else 'no'} -> {'yes' if a.success else 'no'}")
    if b.first_try_correct != a.first_try_correct:
        change.append(f"first-try {b.first_try_correct}/{b.expected_calls} -> {a.first_try_correct}/{a.expected_calls}")
    return f"{o.episode.key} ({o.episode.row.get('task_id')}): {', '.join(change)}; {where}, {left}"


def format_check(check: RunCheck) -> str:
    """The self-check and repeat statistics of one run, as text."""
    lines = [
        f"{check.run}: {check.episodes} episodes, {check.steps} steps; {check.identical_steps} steps "
        f"({_pct(check.identical_steps, check.steps)}) repeat the previous step's calls, {check.repeat_steps} "
        f"({_pct(check.repeat_steps, check.steps)}) repeat a failing step, taking "
        f"{_pct(check.repeat_latency, check.latency)} of model time; {check.stuck} stuck episodes "
        f"({_pct(check.stuck, check.episodes)})",
        f"  self-check (replayed whole vs recorded): {check.episodes - len(check.mismatched_keys)}/{check.episodes} "
        "episodes reproduce every recorded score"
        + (f"; differing: {dict(sorted(check.mismatched.items()))}" if check.mismatched else ""),
    ]
    lines += [f"    {k}" for k in check.mismatched_keys[:10]]
    if len(check.mismatched_keys) > 10:
        lines.append(f"    ... and {len(check.mismatched_keys) - 10} more")
    if check.diverged:
        lines.append(f"  replay diverged from the recorded backend results in {len(check.diverged)} call(s):")
        lines += [f"    {d}" for d in check.diverged[:10]]
    if check.recorded_stopped:
        lines.append(
            f"  note: {check.recorded_stopped} episode(s) were already stopped by the run's own stop_on_repeat; "
            "a K above the run's setting cannot be simulated for them (their later steps never ran): they count "
            "as unchanged"
        )
    for why, n in sorted(check.skipped.items()):
        lines.append(f"  skipped {n} episode(s): {why}")
    return "\n".join(lines)


SUMMARY_HEAD = [
    "run", "K", "episodes", "stopped", "steps dropped", "model time saved", "success changed",
    "first-try changed", "success before -> after", "first-try before -> after",
]  # fmt: skip


def summary_rows(run: str, k: int, cells: list[CellEffect]) -> list[str]:
    """The summary table's row of one run and K (its cells together)."""
    outcomes = [o for c in cells for o in c.outcomes]
    before = summarize_cell([summary_row(o.before) for o in outcomes])
    after = summarize_cell([summary_row(o.after) for o in outcomes])
    steps_b, steps_a = sum(c.steps_before for c in cells), sum(c.steps_after for c in cells)
    lat_b, lat_a = sum(c.latency_before for c in cells), sum(c.latency_after for c in cells)
    success = sum(1 for o in outcomes if o.before.score.success != o.after.score.success)
    first = sum(abs(o.before.score.first_try_correct - o.after.score.first_try_correct) for o in outcomes)
    return [
        Path(run).name, str(k), str(len(outcomes)), str(sum(c.stopped for c in cells)),
        f"{steps_b - steps_a} ({_pct(steps_b - steps_a, steps_b)})",
        f"{lat_b - lat_a:,.0f} s ({_pct(lat_b - lat_a, lat_b)})", f"{success} episodes", f"{first} calls",
        f"{fmt(before.success_rate, 'pct')} -> {fmt(after.success_rate, 'pct')}",
        f"{fmt(before.first_try_accuracy, 'pct')} -> {fmt(after.first_try_accuracy, 'pct')}",
    ]  # fmt: skip


def format_cells(run: str, k: int, cells: list[CellEffect]) -> str:
    """The per-cell section of one run and K, as markdown."""
    parts = [f"## {Path(run).name}, stop_on_repeat={k}"]
    for c in cells:
        saved = c.latency_before - c.latency_after
        parts.append(
            f"### {c.cell}\n\n{len(c.outcomes)} episodes, {c.stopped} stopped; steps {c.steps_before} -> "
            f"{c.steps_after}; model time saved {saved:,.1f} s of {c.latency_before:,.1f} s "
            f"({_pct(saved, c.latency_before)})"
        )
        rows = [[m.label, fmt(m.before, _kind(m.name)), fmt(m.after, _kind(m.name)), _delta(m)] for m in c.metrics]
        parts.append(markdown_table(["metric", "before", "after", "after - before [95% CI]"], rows))
        changed = c.changed
        if changed:
            parts.append("\noutcome changes (escaped a loop):\n" + "\n".join(f"- {describe(o)}" for o in changed))
    return "\n\n".join(parts)


def run_whatif(setting: str, runs: Sequence[str | Path], summary_only: bool = False) -> str:
    """The whole ``surfbench whatif`` report as markdown."""
    ks = parse_setting(setting)
    suites = Suites()
    checks, sections, summary = [], [], []
    for run in runs:
        check, effects = analyse_run(run, ks, suites)
        checks.append(format_check(check))
        for k in ks:
            summary.append(summary_rows(str(run), k, effects[k]))
            if not summary_only:
                sections.append(format_cells(str(run), k, effects[k]))
    head = f"# whatif {setting}\n\n" + "\n".join(checks)
    return "\n\n".join([head, "## Summary\n\n" + markdown_table(SUMMARY_HEAD, summary), *sections]) + "\n"


def main(setting: str, runs: Sequence[str], out: str | None = None, summary_only: bool = False) -> int:
    """Entry point of ``surfbench whatif``: print the report (and write it to ``out``)."""
    if setting.partition("=")[0].strip() == "stop_on_repeated_call":  # the stop inside a step: its own analysis
        from surfbench.bench.analysis.whatif_step import run_whatif_step

        text = run_whatif_step(setting, runs)
    else:
        text = run_whatif(setting, runs, summary_only=summary_only)
    print(text, end="")
    if out:
        write_atomic(Path(out), text)  # a report is whole or absent
    return 0
