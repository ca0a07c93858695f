"""``surfbench gate --sequential``: the criteria marked ``sequential: true`` judged with an always-valid test.

Each sequential criterion is judged per candidate and model on its task pairs (bench.sequential.sequential_pairs)
taken in the runs' recorded order (``sequential.json``, written by ``surfbench run ... until_decided=GATE``), or,
for runs that recorded none, a seeded random order of their tasks (``--seed``, default 0). The test looks after
every batch of pairs (``--batch``, or the recorded one) up to the budget (``--budget``, the recorded one, or every
pair the runs hold) and stops at the first look whose confidence sequence (bench.sequential.sequential) clears the
threshold: ``pass`` or ``fail``, with the pairs it took; else ``underpowered at budget``, or ``continues`` when the
runs hold fewer pairs than the budget. No pairs at all is ``no evidence``, as in the fixed-N gate.

The other criteria are judged by the fixed-N gate (bench.report.gate) on every episode, as without
``--sequential``; the decisions add up the same way (``continues`` and ``underpowered at budget`` count like
inconclusive: revise).
"""

from __future__ import annotations

import json
import math
from collections.abc import Container
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.analysis.metrics import METRICS
from surfbench.bench.analysis.power import Z_SUM
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.values import signed
from surfbench.bench.report.gate import (
    NO_EVIDENCE,
    GateResult,
    Verdict,
    criterion_subsets,
    decision_of,
    hot_operations,
    judge,
    worst_decision,
)
from surfbench.bench.report.gate_criteria import BATCH, KINDS, Criterion, load_criteria
from surfbench.bench.sequential.sequential import (
    ALPHA,
    AT_BUDGET,
    CONTINUES,
    FAIL,
    PASS,
    SequentialResult,
    decide,
)
from surfbench.bench.sequential.sequential_pairs import RECORD, pair_values, read_record, seeded_order, task_key
from surfbench.bench.store.reader import load

if TYPE_CHECKING:
    import pandas as pd

DECIDED = (PASS, FAIL)
SEQUENTIAL_METRICS = ("success_rate", "first_try_accuracy")
"""The drop metrics with a per-pair value; a ratio criterion needs its metric as an episode column."""


def has_per_task_value(criterion: Criterion, columns: Container[str]) -> bool:
    """Whether the criterion is judged on a value per task pair, so that it can be judged sequentially.

    A drop of a metric of :data:`SEQUENTIAL_METRICS`, or a ratio of a metric that is one of ``columns`` (the
    episode columns), not modelled under a cache profile (an effective-cost ratio is modelled over a cell's
    requests: load_criteria refuses ``sequential: true`` on one).
    """
    kind = KINDS[criterion.kind]
    if kind.test == "drop":
        return kind.metric in SEQUENTIAL_METRICS
    return kind.test == "ratio" and kind.metric in columns and not criterion.profile


@dataclass(frozen=True)
class SequentialVerdict:
    """One sequential criterion judged for one candidate on one model."""

    candidate: str
    model: str
    criterion: Criterion
    result: SequentialResult
    fixed_n: int | None
    """Pairs the fixed-N gate would need for an MDE the size of the threshold (drop criteria; None for ratios)."""

    @property
    def outcome(self) -> str:
        return NO_EVIDENCE if not self.result.available else self.result.outcome

    @property
    def on_fail(self) -> str:
        """The criterion's decision on a fail (``revise`` or ``close``)."""
        return self.criterion.on_fail

    @property
    def decided(self) -> bool:
        return self.outcome in DECIDED

    def observed(self) -> str:
        """What was measured: the mean and its confidence sequence at the pairs taken."""
        r, kind = self.result, KINDS[self.criterion.kind]
        metric = METRICS[kind.metric]
        if r.mean is None or r.low is None or r.high is None:
            return f"no paired {metric.label}"
        of = f"{r.pairs} of {r.budget} pairs"
        if kind.test == "ratio":
            return (
                f"{metric.label} {r.mean:.2f}x [95% CS {r.low:.2f}, {r.high:.2f}] (per-task ratios r scored "
                f"r / (r + {self.criterion.value:g})) over {of}"
            )
        word = "drop" if metric.higher_is_better else "rise"
        text = f"{word} {signed(100 * r.mean)} pts [95% CS {signed(100 * r.low)}, {signed(100 * r.high)}] over {of}"
        size = f"{100 * self.criterion.value:.1f}-pt {word}"
        return text + (f"; a fixed-N plan for a {size}: about {self.fixed_n} pairs" if self.fixed_n else "")

    def verdict(self) -> Verdict:
        c = self.criterion
        return Verdict(self.candidate, self.model, c.label, c.value, self.observed(), self.outcome, c.on_fail)


@dataclass(frozen=True)
class SequentialGate:
    """The gate's result with the sequential criteria's verdicts in it, and how the pairs were taken."""

    result: GateResult
    sequential: list[SequentialVerdict]
    order: str
    """Where the order came from (recorded by the run, or seeded here)."""
    batch: int
    budget: int | None
    """The budget of pairs per comparison (None: every pair the runs hold)."""

    @property
    def undecided(self) -> list[SequentialVerdict]:
        return [v for v in self.sequential if not v.decided]

    @property
    def exit_code(self) -> int:
        return self.result.exit_code


def _check_sequential(path: Path, criteria: list[Criterion], frame: pd.DataFrame) -> list[Criterion]:
    chosen = [c for c in criteria if c.sequential]
    if not chosen:
        raise ConfigError(
            f"{path}: no criterion is marked sequential; add `sequential: true` to the ones to judge sequentially, "
            "e.g. {kind: success_drop_max, value: 0.05, on_fail: close, sequential: true}"
        )
    for c in chosen:
        if not has_per_task_value(c, frame.columns):
            raise ConfigError(f"{path}: {c.kind} has no per-task value in the episodes: it cannot be sequential")
    return chosen


def _order(runs: list[Path], keys: set[str], seed: int | None) -> tuple[list[str], str, int | None, int | None]:
    """(order, where it came from, recorded batch, recorded budget)."""
    records = [(run, rec) for run in runs if (rec := read_record(run)) is not None]
    if not records:
        chosen = 0 if seed is None else seed
        return seeded_order(keys, chosen), f"a seeded random order (seed {chosen}; the runs record none)", None, None
    designs = {json.dumps(rec.design()) for _, rec in records}
    if len(designs) > 1:
        where = ", ".join(str(run / RECORD) for run, _ in records)
        raise ConfigError(f"the runs record different sequential designs ({where}): judge them one at a time")
    run, rec = records[0]
    source = f"the order recorded by the run ({run / RECORD}: seed {rec.seed})"
    if seed is not None and seed != rec.seed:
        source += f"; --seed {seed} not used"
    return rec.order, source, rec.batch, rec.budget


def _fixed_n(values: list[float], pairs: int, threshold: float, test: str) -> int | None:
    """Z^2 var / threshold^2: the pairs at which a fixed-N comparison's MDE equals the threshold (drops)."""
    if test != "drop" or threshold <= 0 or pairs < 2:
        return None
    taken = values[:pairs]
    mean = sum(taken) / pairs
    var = max(sum((v - mean) ** 2 for v in taken) / (pairs - 1), 1.0 / pairs)
    return math.ceil(Z_SUM**2 * var / threshold**2)


def judge_sequential(
    criteria_path: Path, runs: list[Path], batch: int | None = None, budget: int | None = None,
    seed: int | None = None, keep_newest: bool = False, upto: int | None = None,
) -> SequentialGate:  # fmt: skip
    """Judge the runs: sequential criteria in the pairs' order, the others as the fixed-N gate does.

    ``upto``: the sequential criteria see only the tasks of the first ``upto`` places of the order (a look of
    ``until_decided``: the pairs up to that look, whatever else the run folder holds, e.g. after a resume).
    """
    fixed = judge(criteria_path, runs, keep_newest=keep_newest)  # every check of the criteria file and the runs
    spec = load_criteria(criteria_path)
    view = load(*runs, keep_newest=keep_newest)
    frame = view.episodes
    chosen = _check_sequential(criteria_path, spec["criteria"], frame)
    keys = {task_key(str(s), str(t)) for s, t in zip(frame["suite"], frame["task_id"], strict=True)}
    order, source, rec_batch, rec_budget = _order(runs, keys, seed)
    batch = batch or rec_batch or BATCH
    budget = budget or rec_budget
    position = {key: i for i, key in enumerate(order[:upto] if upto is not None else order)}
    hot = hot_operations(view, spec.get("hot_operations"))
    subsets = criterion_subsets(frame, spec["criteria"])  # every criterion: a scoped one claims its suite
    out: list[SequentialVerdict] = []
    for cand in fixed.decisions:
        for model in sorted(set(frame[frame["surface"] == cand]["model"])):
            for c in chosen:
                kind = KINDS[c.kind]
                metric = METRICS[kind.metric]
                pairs = pair_values(subsets[c.scope], fixed.baseline, cand, model, metric, kind.test, hot)
                values = [pairs[k] for k in sorted((k for k in pairs if k in position), key=position.__getitem__)]
                try:
                    result = decide(values, c.value, "ratio" if kind.test == "ratio" else "diff", batch, budget)
                except ValueError as exc:
                    raise ConfigError(f"{criteria_path}: {c.label}: {exc}") from None
                fixed_n = _fixed_n(values, result.pairs, c.value, kind.test)
                out.append(SequentialVerdict(cand, model, c, result, fixed_n))
    return SequentialGate(_merged(fixed, out), out, source, batch, budget)


def _merged(fixed: GateResult, sequential: list[SequentialVerdict]) -> GateResult:
    """The fixed-N result with each sequential criterion's verdict in its place, and the decisions again."""
    mine = {(v.candidate, v.model, v.criterion.label, v.criterion.value): v.verdict() for v in sequential}
    verdicts = [mine.get((v.candidate, v.model, v.criterion, v.threshold), v) for v in fixed.verdicts]
    per_model = {key: decision_of(v for v in verdicts if (v.candidate, v.model) == key) for key in fixed.per_model}
    decisions = {cand: worst_decision(d for (c, _), d in per_model.items() if c == cand) for cand in fixed.decisions}
    return replace(fixed, verdicts=verdicts, per_model=per_model, decisions=decisions)


def format_sequential(gate: SequentialGate) -> str:
    """The gate's table (as ``surfbench gate`` prints it) with the sequential design and each criterion's pairs."""
    from surfbench.bench.report.gate import format_gate

    budget = f"budget {gate.budget} pairs per comparison" if gate.budget else "budget: every pair the runs hold"
    lines = [
        f"sequential: the criteria marked sequential judged pair by pair in {gate.order}, a look every {gate.batch} "
        f"pairs, {budget}; "
        f"betting confidence sequence, {100 * (1 - ALPHA):.0f}% under any stopping "
        "(docs/sweeps-and-gates.md#sequential-gates; a ratio r scored r / (r + threshold))",
        "",
        "| candidate | model | criterion | outcome | pairs taken | pairs available |",
        "|---|---|---|---|---|---|",
    ]
    for v in gate.sequential:
        lines.append(
            f"| {v.candidate} | {v.model} | {v.criterion.label} | {v.outcome} | {v.result.pairs} | "
            f"{v.result.available} |"
        )
    decided = sum(v.decided for v in gate.sequential)
    lines += ["", f"{decided} of {len(gate.sequential)} sequential criteria decided", ""]
    return "\n".join(lines) + format_gate(gate.result)


OPEN = (CONTINUES, AT_BUDGET, NO_EVIDENCE)
"""Sequential outcomes that leave a criterion undecided."""
