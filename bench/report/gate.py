"""``surfbench gate``: ship / revise / close per candidate surface, with the evidence.

A criteria file (``configs/gate/*.yaml``)::

    name: dsh-51
    baseline: full
    candidates: [dispatcher]        # default: every surface in the runs but the baseline
    hot_operations: 15              # "on the top-15 operations": first-try accuracy counts these only
    criteria:
      - {kind: help_bytes_max, value: 1536, on_fail: revise}
      - {kind: prompt_tokens_ratio_max, value: 1.0, on_fail: revise}
      - {kind: first_try_drop_max, value: 0.05, on_fail: close}
      - {kind: round_trips_ratio_max, value: 1.5, on_fail: revise}
      - {kind: round_trips_ratio_max, value: 0.7, tasks: {tags: [multi]}}   # only tasks tagged multi

A criterion with ``tasks: {tags: [...]}`` is judged on the episodes of tasks carrying at least one of those tags (both
sides, so a ratio and a pairing compare the same tasks); its name in the table says so.
A criterion with ``suite: NAME`` (or a gate file's ``suite:``, its criteria's default) is judged on that suite's
episodes only; the criteria naming no suite judge the suites no criterion names (criterion_subsets).
A criterion with ``sequential: true`` is judged pair by pair by ``surfbench gate --sequential``
(bench.sequential.sequential_gate); this fixed-N gate ignores the flag.
Each criterion is judged ``pass``, ``fail`` or ``inconclusive`` (an interval that straddles the threshold, or a drop
criterion whose baseline is already at or below the allowed drop, so that no drop could be seen), ``underpowered``
(inconclusive, and the threshold is below the comparison's minimum detectable difference at 80% power,
with the paired N that would suffice), or ``no evidence``: the runs hold nothing the criterion measures (a help-size
criterion on a surface without help payloads, a ratio whose baseline cell is missing, no paired tasks). Missing
evidence is never a pass: it counts like inconclusive.
Per candidate and model: any decisive ``fail`` with ``on_fail: close`` -> close; else any fail, inconclusive,
underpowered or no evidence -> revise; else ship. A drop criterion never passes on fewer than ``MIN_PASS_PAIRS`` paired
tasks (it is ``underpowered``, with the count), however its interval lies. A candidate's decision is its worst over
models. Exit code: 0 only when every candidate ships, 1 if the worst is revise, 2 if any closes
(bench.report.gate_exit: each candidate's own in ``--json``), and 2 with one error line (no table) when the criteria
file or a run cannot be read, or a run's run.json is malformed or records another run's cells
(bench.store.evidence): a broken run record is never judged, so no criterion turns "no evidence" for want of one.
Runs of a scripted model (run.json's cells, ``provider: scripted``) are listed in ``GateResult.scripted``: the
command refuses them (one warning line, exit 2) unless ``--allow-scripted``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from surfbench.bench.analysis.compare import Paired, paired_comparisons
from surfbench.bench.analysis.metrics import METRICS, Metric, summarize_cell
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.values import decoded, signed
from surfbench.bench.catalog.provider_limits import recorded_originals
from surfbench.bench.promptcache.prompt_cache_requests import effective_costs
from surfbench.bench.report.gate_criteria import BATCH, KINDS, Criterion, load_criteria
from surfbench.bench.report.gate_exit import EXIT as EXIT
from surfbench.bench.report.gate_exit import scripted_warning, worst_exit
from surfbench.bench.store.evidence import config_labels, surface_label
from surfbench.bench.store.reader import Runs, load
from surfbench.bench.store.tables import CellSummary

if TYPE_CHECKING:
    import pandas as pd

NO_EVIDENCE = "no evidence"
MIN_PASS_PAIRS = BATCH
"""Fewest paired tasks on which a drop criterion may pass: the pairs the sequential gate takes before its first look."""
DECISIONS = ("ship", "revise", "close")
"""The decisions from best to worst."""


class Judged(Protocol):
    """A criterion's verdict as the decision reads it: its outcome and what a fail means."""

    @property
    def outcome(self) -> str: ...

    @property
    def on_fail(self) -> str: ...


def decision_of(verdicts: Iterable[Judged]) -> str:
    """One candidate's decision on one model from its verdicts (module docstring): the one rule of the gates.

    Any ``fail`` with ``on_fail: close`` -> close; else any outcome but ``pass`` (fail, inconclusive,
    underpowered, no evidence, a sequential test still open) -> revise; else ship (no verdict at all: ship).
    """
    got = list(verdicts)
    if any(v.outcome == "fail" and v.on_fail == "close" for v in got):
        return "close"
    if any(v.outcome != "pass" for v in got):
        return "revise"
    return "ship"


def worst_decision(decisions: Iterable[str]) -> str:
    """The worst of the decisions by :data:`DECISIONS` (a candidate's over its models); close when there is none."""
    return max(decisions, key=DECISIONS.index, default="close")


@dataclass(frozen=True)
class Verdict:
    """One criterion judged for one candidate surface on one model."""

    candidate: str
    model: str
    criterion: str
    threshold: float
    observed: str
    """What was measured (with its interval, where there is one)."""
    outcome: str
    """``pass``, ``fail``, ``inconclusive``, ``underpowered`` (the threshold is below the run's MDE) or
    ``no evidence`` (nothing in the runs that this criterion measures)."""
    on_fail: str


@dataclass(frozen=True)
class GateResult:
    """Every verdict, and the decisions they add up to."""

    name: str
    baseline: str
    verdicts: list[Verdict]
    decisions: dict[str, str]
    """Candidate -> ship / revise / close (worst over models)."""
    per_model: dict[tuple[str, str], str]
    configs: list[str] = field(default_factory=list)
    """Which recorded surface config each candidate was judged with (from run.json)."""
    notes: list[str] = field(default_factory=list)
    """Rows left out, suite files changed since the run."""
    scripted: tuple[str, ...] = ()
    """The scripted models the runs recorded (run.json): not a measurement (``surfbench gate`` refuses them)."""

    @property
    def exit_code(self) -> int:
        """0 only when every candidate ships, 1 if the worst is revise, 2 if any closes (or there is no candidate)."""
        return worst_exit(self.decisions.values())


def _cell(frame: pd.DataFrame, surface: str, model: str) -> CellSummary:
    return summarize_cell(frame[(frame["surface"] == surface) & (frame["model"] == model)].to_dict("records"))


def hot_operations(view: Runs, k: int | None) -> set[str] | None:
    """The operations a criteria file's ``hot_operations: k`` counts first-try accuracy on; None when ``k`` is unset.

    The top ``k`` operations of each suite by traffic weight, from the run folders (legacy runs: today's suites).
    """
    if not k:
        return None
    from surfbench.bench.report.report_choices import catalog_facts

    return catalog_facts(view.runs, view.infos, view.episodes, k).hot


def claimed_suites(criteria: list[Criterion]) -> set[str | None]:
    """The suites the criteria name: each is its criteria's evidence only (criterion_subsets)."""
    return {c.suite for c in criteria if c.suite}


def _in_scope(cell_suite: str, suite: str | None, claimed: set[str | None] | None) -> bool:
    """Whether an episode or cell of ``cell_suite`` is evidence for a criterion of ``suite`` (see criterion_subsets)."""
    return cell_suite == suite if suite else cell_suite not in (claimed or set())


def _payload_sizes(surface: Any) -> dict[str, int]:
    """UTF-8 bytes of the surface's help payload for each operation it has one for."""
    texts = {op.name: surface.help_payload(op) for op in surface.reachable()}
    return {name: len(text.encode("utf-8")) for name, text in texts.items() if text is not None}


def _help_sizes(
    view: Runs, candidate: str, suite: str | None = None, claimed: set[str | None] | None = None
) -> tuple[dict[str, int], list[str]]:
    """Help payload bytes per operation for the candidate surface, as the run recorded them (bench.store.recorded).

    ``suite``: only that suite's cells (a criterion scoped to one suite); None: the cells of every suite but the
    ``claimed`` ones (those another criterion is scoped to: criterion_subsets).

    Returns the sizes and a line per cell saying which surface config was used (the run's, never
    today's file). LEGACY: a cell recorded before records v2 rebuilds its surface over today's suite,
    from the config the run recorded (refused when the catalog changed since).
    """
    from surfbench.bench.base.config import surface_config
    from surfbench.bench.contracts.registry import build_surface
    from surfbench.bench.store.recorded import RecordedCatalogs, is_recorded
    from surfbench.bench.suites.suite import load_suite

    sizes: dict[str, int] = {}
    used: list[str] = []
    recorded = RecordedCatalogs.load(view.runs)
    for cell in view.cells:
        if cell.surface_label != candidate or not _in_scope(cell.suite, suite, claimed):
            continue
        resolved = cell.identity["surface"]
        used_line = f"{candidate}: kind {resolved['kind']}, params {json.dumps(resolved['params'], sort_keys=True)}"
        if is_recorded(cell.raw) and str(cell.cell_id) in recorded.help_cells:
            used.append(used_line)
            back = recorded_originals([cell.raw])  # shown under the catalog's own names (run.json's name_map)
            sizes.update({back.get(n, n): size for n, size in recorded.help.get(str(cell.cell_id), {}).items()})
            continue
        catalog = load_suite(cell.suite).catalog
        if catalog.content_hash != cell.catalog_hash:
            raise ConfigError(
                f"suite {cell.suite!r}: its catalog changed since the run (hash {cell.catalog_hash} "
                f"recorded, {catalog.content_hash} now); help sizes cannot be judged on the catalog the run used"
            )
        surface = build_surface(catalog, str(resolved["kind"]), dict(resolved["params"]), name=str(resolved["name"]))
        used.append(used_line)
        back = recorded_originals([cell.raw])  # shown under the catalog's own names (run.json's name_map)
        sizes.update({back.get(name, name): size for name, size in _payload_sizes(surface).items()})
    for cell in view.legacy_cells:  # recorded before run.json kept the resolved config: today's file
        if (
            cell.surface != candidate
            or not _in_scope(cell.suite, suite, claimed)
            or any(u.startswith(f"{candidate}:") for u in used)
        ):
            continue
        cfg = surface_config(candidate)
        surface = build_surface(load_suite(cell.suite).catalog, cfg.kind, cfg.params, name=cfg.name)
        used.append(
            f"{candidate}: kind {cfg.kind}, params {json.dumps(cfg.params, sort_keys=True)} (today's "
            f"configs/surface/{candidate}.yaml: the run predates recorded configs)"
        )
        sizes.update(_payload_sizes(surface))
    return sizes, used


def judge(criteria_path: Path, runs: list[Path], keep_newest: bool = False) -> GateResult:
    """Judge every candidate surface of the runs on the criteria file's criteria."""
    spec = load_criteria(criteria_path)
    view = load(*runs, keep_newest=keep_newest)
    frame = view.episodes
    surfaces = {str(s) for s in frame["surface"]}
    baseline = surface_label(str(spec.get("baseline", "full")), surfaces)
    if baseline not in surfaces:
        raise ConfigError(f"baseline surface {baseline!r} is not in the runs (they have {', '.join(sorted(surfaces))})")
    named = spec.get("candidates")
    candidates = [surface_label(str(c), surfaces) for c in named] if named else sorted(surfaces - {baseline})
    missing = [c for c in candidates if c not in surfaces]
    if missing and len(missing) == len(candidates):
        raise ConfigError(
            f"candidate surface(s) {', '.join(missing)} not in the runs (they have {', '.join(sorted(surfaces))}): "
            "run them, or name the ones they have under `candidates:` in the criteria file"
        )
    hot = hot_operations(view, spec.get("hot_operations"))
    subsets = criterion_subsets(frame, spec["criteria"])
    paired = {
        (scope, p.candidate, p.model): p
        for scope, sub in subsets.items()
        for p in paired_comparisons(sub, baseline, hot)
    }
    # an effective-cost criterion: each surface x model under its cache profile (bench.promptcache)
    effective = {c: effective_costs(view, subsets[c.scope], c.profile) for c in spec["criteria"] if c.profile}
    verdicts: list[Verdict] = []
    per_model: dict[tuple[str, str], str] = {}
    configs: list[str] = []
    claimed = claimed_suites(spec["criteria"])
    for cand in missing:  # a candidate the runs never ran: no evidence, so never ship, and what to do about it
        for model in sorted(set(frame[frame["surface"] == baseline]["model"])):
            verdicts.append(_not_run(cand, model, baseline, surfaces))
            per_model[(cand, model)] = "revise"
    for cand in (c for c in candidates if c not in missing):
        helps = {suite: _help_sizes(view, cand, suite, claimed) for suite in {c.suite for c in spec["criteria"]}}
        configs += [line for line in dict.fromkeys(u for _, used in helps.values() for u in used)]
        for model in sorted(set(frame[frame["surface"] == cand]["model"])):
            cells = {scope: (_cell(sub, baseline, model), _cell(sub, cand, model)) for scope, sub in subsets.items()}
            got = [
                _absent(c, cand, model)
                if c.suite and subsets[c.scope].empty
                else _cost_verdict(c, cand, model, baseline, effective[c])
                if c.profile
                else _verdict(c, cand, model, *cells[c.scope], paired.get((c.scope, cand, model)), helps[c.suite][0])
                for c in spec["criteria"]
            ]
            verdicts += got
            per_model[(cand, model)] = decision_of(got)
    decisions = {cand: worst_decision(d for (c, _), d in per_model.items() if c == cand) for cand in candidates}
    name = str(spec.get("name", criteria_path.stem))
    return GateResult(name, baseline, verdicts, decisions, per_model, configs, list(view.notes), view.scripted_models)


def criterion_subsets(frame: pd.DataFrame, criteria: list[Criterion]) -> dict[Any, pd.DataFrame]:
    """Each criterion's episodes by its scope: its tasks' tags (``tasks: {tags: [...]}``) and its suite.

    A suite a criterion names (``suite: forge_instances``) is that criterion's evidence only: the criteria that name
    none judge the episodes of the other suites, so adding a suite-specific criterion changes no other verdict.
    """
    tags = [set(decoded(t)) for t in frame["tags"]]  # stored as JSON text
    suites = [str(s) for s in frame["suite"]]
    claimed = claimed_suites(criteria)

    def judged(c: Criterion, task_tags: set[str], suite: str) -> bool:
        return _in_scope(suite, c.suite, claimed) and (not c.tags or bool(task_tags & set(c.tags)))

    keep = {c.scope: [judged(c, t, s) for t, s in zip(tags, suites, strict=True)] for c in criteria}
    return {scope: frame[rows] for scope, rows in keep.items()}


def _not_run(cand: str, model: str, baseline: str, surfaces: set[str]) -> Verdict:
    """A candidate of the criteria file with no episode in the runs: revise (run it), never ship or close."""
    like = config_labels(cand, surfaces)
    hint = f" (labels of it with overrides: {', '.join(like)}; name one of them)" if like else ""
    observed = (
        f"not in the runs: no episode of surface {cand}{hint}; run it beside {baseline} "
        f"(surfbench run ... surface={cand}) and pass its run folder, or drop it from `candidates:`"
    )
    return Verdict(cand, model, "in the runs", 0.0, observed, NO_EVIDENCE, "revise")


def _absent(c: Criterion, cand: str, model: str) -> Verdict:
    """A criterion of a suite the runs did not run: no evidence, and which suite to run."""
    observed = f"no episodes of suite {c.suite} in the runs (run suite={c.suite} and pass its run folder too)"
    return Verdict(cand, model, c.label, c.value, observed, NO_EVIDENCE, c.on_fail)


def _cost_verdict(
    c: Criterion, cand: str, model: str, baseline: str, costs: dict[tuple[str, str], float | None]
) -> Verdict:
    """An effective-cost criterion: the candidate's modelled cost per episode over the baseline's, under its profile."""
    metric = METRICS[KINDS[c.kind].metric]
    mine, base = costs.get((cand, model)), costs.get((baseline, model))
    label = f"{metric.label} ({c.profile})"
    if mine is None or not base:
        return Verdict(cand, model, c.label, c.value, f"{label}: not modelled", NO_EVIDENCE, c.on_fail)
    ratio = metric.worse_ratio(mine, base)
    observed = f"{label} {metric.format(mine)} vs {metric.format(base)} = {ratio:.2f}x"
    return Verdict(cand, model, c.label, c.value, observed, "pass" if ratio <= c.value else "fail", c.on_fail)


def _ratio_verdict(
    c: Criterion, cand: str, model: str, metric: Metric, mine: float | None, base: float | None
) -> Verdict:
    # the ratio's denominator: the baseline's value, or the candidate's for a higher-is-better metric
    if mine is None or base is None:
        return Verdict(cand, model, c.label, c.value, f"{metric.label}: not measured", NO_EVIDENCE, c.on_fail)
    if not (mine if metric.higher_is_better else base):  # a measured 0 below: equal when both are 0, else worse
        top = base if metric.higher_is_better else mine
        ratio = 1.0 if not top else math.inf
    else:
        ratio = metric.worse_ratio(mine, base)
    outcome = "pass" if ratio <= c.value else "fail"
    return Verdict(cand, model, c.label, c.value, _ratio_text(metric, mine, base, ratio), outcome, c.on_fail)


def _ratio_text(metric: Metric, mine: float, base: float, ratio: float) -> str:
    """``candidate vs baseline = ratio``, as the gate table shows it.

    For a higher-is-better metric the ratio is the baseline's over the candidate's, and the text says so
    (``50% vs 80% = 1.59x`` would read as the candidate's share of the baseline).
    """
    if metric.higher_is_better:
        shown = (metric.format(mine), metric.format(base)) if metric.kind == "pct" else (f"{mine:,.2f}", f"{base:,.2f}")
        return f"{metric.label} {shown[0]} vs {shown[1]}: baseline over candidate {ratio:.2f}x"
    return f"{metric.label} {mine:,.1f} vs {base:,.1f} = {ratio:.2f}x"


def _limit_verdict(c: Criterion, cand: str, model: str, metric: Metric, helps: dict[str, int]) -> Verdict:
    if not helps:
        # nothing to measure is not a measurement within the budget
        return Verdict(cand, model, c.label, c.value, "surface has no help payloads", NO_EVIDENCE, c.on_fail)
    worst = max(helps, key=lambda n: metric.worsening(helps[n]))
    beyond = sum(1 for size in helps.values() if metric.worsening(size) > metric.worsening(c.value))
    outcome = "pass" if metric.worsening(helps[worst]) <= metric.worsening(c.value) else "fail"
    extreme, side = ("smallest", "under") if metric.higher_is_better else ("largest", "over")
    observed = f"{extreme} {helps[worst]:,} B ({worst}); {beyond} of {len(helps)} {side}"
    return Verdict(cand, model, c.label, c.value, observed, outcome, c.on_fail)


def _cell_limit_verdict(c: Criterion, cand: str, model: str, metric: Metric, value: float | None) -> Verdict:
    """A limit on a metric's cell value: at most the threshold (at least, for a higher-is-better metric)."""
    if value is None:
        return Verdict(cand, model, c.label, c.value, f"{metric.label}: not measured", NO_EVIDENCE, c.on_fail)
    outcome = "pass" if metric.worsening(value) <= metric.worsening(c.value) else "fail"
    bound = "at least" if metric.higher_is_better else "at most"
    observed = f"{metric.label} {metric.format(value)} ({bound} {c.value:g})"
    return Verdict(cand, model, c.label, c.value, observed, outcome, c.on_fail)


def _pts(share: float) -> str:
    """A signed difference of shares in points, one decimal (never ``-0.0``)."""
    return signed(100 * share)


def _drop_verdict(c: Criterion, cand: str, model: str, metric: Metric, pair: Paired | None) -> Verdict:
    d = pair.delta(metric.name) if pair is not None else None
    if pair is None or d is None or d.delta is None or d.low is None or d.high is None:
        return Verdict(cand, model, c.label, c.value, f"no paired {metric.label}", NO_EVIDENCE, c.on_fail)
    # oriented so that positive is worse: a drop for a higher-is-better metric, a rise otherwise
    drop = metric.worsening(d.delta)
    worst, best = sorted((metric.worsening(d.low), metric.worsening(d.high)), reverse=True)
    # how far the baseline can worsen at all (the metric is a share: down to 0, or up to 1)
    room = (d.baseline or 0.0) if metric.higher_is_better else 1.0 - (d.baseline if d.baseline is not None else 1.0)
    word = "drop" if metric.higher_is_better else "rise"
    observed = f"{word} {_pts(drop)} pts [95% CI {_pts(best)}, {_pts(worst)}] over {pair.pairs} tasks"
    if d.mde is not None:
        observed += f"; MDE {100 * d.mde:.1f} pts"
    outcome = "pass" if worst <= c.value else ("fail" if best > c.value else "inconclusive")
    if outcome == "inconclusive" and d.mde is not None and c.value < d.mde and room > c.value:
        # the run is too small to see a drop of the threshold's size: say what would be enough
        needed = math.ceil(pair.pairs * (d.mde / c.value) ** 2) if c.value > 0 else None
        outcome = "underpowered"
        observed += f"; threshold below the MDE: about {needed} paired tasks x repeats needed" if needed else ""
    if outcome == "pass" and pair.pairs < MIN_PASS_PAIRS:
        # a percentile bootstrap over a handful of pairs is far narrower than the truth (5 pairs gave [-60, -0]
        # with an MDE of 56 pts): too few to show that no drop of the threshold's size is there
        observed += f"; only {pair.pairs} paired tasks: a pass needs at least {MIN_PASS_PAIRS}"
        outcome = "underpowered"
    elif outcome == "pass" and room <= c.value:
        # the baseline is too weak to lose more than the allowed drop: no test can fail, so none passes
        shown = d.baseline or 0.0
        observed += (
            f"; baseline {'only' if metric.higher_is_better else 'already'} {100 * shown:.0f}%: a {word} cannot show"
        )
        outcome = "inconclusive"
    return Verdict(cand, model, c.label, c.value, observed, outcome, c.on_fail)


def _verdict(
    c: Criterion,
    cand: str,
    model: str,
    base: CellSummary,
    mine: CellSummary,
    pair: Paired | None,
    helps: dict[str, int],
) -> Verdict:
    """Judge criterion ``c``; the metric it measures and that metric's direction come from the registry."""
    kind = KINDS.get(c.kind)
    if kind is None:
        raise ConfigError(f"unknown criterion {c.kind!r}")
    metric = METRICS[kind.metric]
    if kind.test == "limit" and metric.per_cell:  # a registered metric: the candidate's cell value
        return _cell_limit_verdict(c, cand, model, metric, mine.metric(metric.name))
    if kind.test == "limit":
        return _limit_verdict(c, cand, model, metric, helps)
    if kind.test == "ratio":
        verdict = _ratio_verdict(c, cand, model, metric, mine.metric(metric.name), base.metric(metric.name))
        fewest = min(base.episodes, mine.episodes)
        if verdict.outcome in ("pass", "fail") and fewest < MIN_PASS_PAIRS:
            # two means over a handful of episodes: said, not refused (docs/sweeps-and-gates.md#gates: the ratio
            # criteria have no floor, by choice), so that a reader weighs a ratio of 8 episodes as one
            return replace(verdict, observed=f"{verdict.observed} (over {fewest} episodes)")
        return verdict
    return _drop_verdict(c, cand, model, metric, pair)


def format_gate(result: GateResult) -> str:
    """The gate's verdicts table and decisions, as ``surfbench gate`` prints them."""
    lines = [f"gate {result.name}: baseline {result.baseline}", ""]
    if result.scripted:
        lines[1:1] = [scripted_warning(result.scripted, allowed=True)]
    lines.append("| candidate | model | criterion | threshold | observed | outcome |")
    lines.append("|---|---|---|---|---|---|")
    for v in result.verdicts:
        lines.append(f"| {v.candidate} | {v.model} | {v.criterion} | {v.threshold:g} | {v.observed} | {v.outcome} |")
    lines.append("")
    for (cand, model), decision in sorted(result.per_model.items()):
        lines.append(f"{cand} on {model}: {decision}")
    for cand, decision in result.decisions.items():
        lines.append(f"decision for {cand}: {decision.upper()}")
    if result.configs or result.notes:
        lines.append("")
    lines += [f"surface config used: {c}" for c in result.configs]
    lines += [f"note: {n}" for n in result.notes]
    if any(v.outcome == NO_EVIDENCE for v in result.verdicts):
        lines += ["", "no evidence: the runs hold nothing this criterion measures; it counts as inconclusive (revise)"]
    return "\n".join(lines)
