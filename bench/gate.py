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

Each criterion is judged ``pass``, ``fail`` or ``inconclusive`` (an interval that straddles the
threshold, or a drop criterion whose baseline is already at or below the allowed drop, so that no
drop could be seen). Per candidate and model: any decisive ``fail`` with ``on_fail: close`` -> close; else
any fail or inconclusive -> revise; else ship. A candidate's decision is its worst over models.
Exit code: 0 if some candidate ships, 1 if the best is revise, 2 if all close (or on error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.config import ConfigError
from bench.metrics import summarize_cell
from bench.results import load_runs

KINDS = ("help_bytes_max", "prompt_tokens_ratio_max", "first_try_drop_max", "round_trips_ratio_max", "success_drop_max")
DECISIONS = ("ship", "revise", "close")
EXIT = {"ship": 0, "revise": 1, "close": 2}


@dataclass(frozen=True)
class Criterion:
    kind: str
    value: float
    on_fail: str = "revise"


@dataclass(frozen=True)
class Verdict:
    candidate: str
    model: str
    criterion: str
    threshold: float
    observed: str
    """What was measured (with its interval, where there is one)."""
    outcome: str
    """``pass``, ``fail`` or ``inconclusive``."""
    on_fail: str


@dataclass(frozen=True)
class GateResult:
    name: str
    baseline: str
    verdicts: list[Verdict]
    decisions: dict[str, str]
    """Candidate -> ship / revise / close (worst over models)."""
    per_model: dict[tuple[str, str], str]

    @property
    def exit_code(self) -> int:
        if not self.decisions:
            return 2
        return min(EXIT[d] for d in self.decisions.values())


def load_criteria(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such criteria file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".replace("\n", " ")) from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping")
    unknown = set(data) - {"name", "baseline", "candidates", "hot_operations", "criteria", "description"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {sorted(unknown)}")
    crits = []
    for i, raw in enumerate(data.get("criteria") or []):
        if not isinstance(raw, Mapping) or raw.get("kind") not in KINDS or "value" not in raw:
            raise ConfigError(f"{path}: criteria[{i}] needs kind (one of {', '.join(KINDS)}) and value")
        if raw.get("on_fail", "revise") not in ("revise", "close"):
            raise ConfigError(f"{path}: criteria[{i}].on_fail must be revise or close")
        crits.append(Criterion(str(raw["kind"]), float(raw["value"]), str(raw.get("on_fail", "revise"))))
    if not crits:
        raise ConfigError(f"{path}: no criteria")
    return {**data, "criteria": crits}


def _hot_ops(suites: set[str], k: int | None) -> set[str] | None:
    if not k:
        return None
    from bench.suite import load_suite

    hot: set[str] = set()
    for name in suites:
        hot |= {op.name for op in load_suite(name).catalog.by_weight()[:k]}
    return hot


def _help_sizes(runs: list[Path], candidate: str) -> dict[str, int]:
    """Help payload bytes per operation for the candidate surface, rebuilt from the run's own config."""
    from bench.config import surface_config
    from bench.suite import load_suite
    from surfaces import build_surface

    sizes: dict[str, int] = {}
    for run in runs:
        info = json.loads((run / "run.json").read_text())
        for cell in info.get("cells", []):
            if cell.get("surface") != candidate:
                continue
            cfg = surface_config(candidate)
            catalog = load_suite(cell["suite"]).catalog
            surface = build_surface(catalog, cfg.kind, cfg.params, name=cfg.name)
            for op in surface.reachable():
                text = surface.help_payload(op)
                if text is not None:
                    sizes[op.name] = len(text.encode("utf-8"))
    return sizes


def judge(criteria_path: Path, runs: list[Path]) -> GateResult:
    from bench.compare import paired_comparisons

    spec = load_criteria(criteria_path)
    frame = load_runs(runs)
    if len(frame) == 0:
        raise ConfigError(f"no episodes in {', '.join(map(str, runs))}")
    baseline = str(spec.get("baseline", "full"))
    surfaces = set(frame["surface"])
    if baseline not in surfaces:
        raise ConfigError(f"baseline surface {baseline!r} is not in the runs (they have {', '.join(sorted(surfaces))})")
    candidates = list(spec.get("candidates") or sorted(surfaces - {baseline}))
    missing = [c for c in candidates if c not in surfaces]
    if missing:
        raise ConfigError(f"candidate surface(s) {missing} not in the runs")
    hot = _hot_ops(set(frame["suite"]), spec.get("hot_operations"))
    paired = {(p.candidate, p.model): p for p in paired_comparisons(frame, baseline, hot)}
    verdicts: list[Verdict] = []
    per_model: dict[tuple[str, str], str] = {}
    for cand in candidates:
        helps = _help_sizes(runs, cand)
        for model in sorted(set(frame[frame["surface"] == cand]["model"])):
            base = summarize_cell(frame[(frame["surface"] == baseline) & (frame["model"] == model)].to_dict("records"))
            mine = summarize_cell(frame[(frame["surface"] == cand) & (frame["model"] == model)].to_dict("records"))
            pair = paired.get((cand, model))
            got = [_verdict(c, cand, model, base, mine, pair, helps) for c in spec["criteria"]]
            verdicts += got
            if any(v.outcome == "fail" and v.on_fail == "close" for v in got):
                per_model[(cand, model)] = "close"
            elif any(v.outcome != "pass" for v in got):
                per_model[(cand, model)] = "revise"
            else:
                per_model[(cand, model)] = "ship"
    decisions = {
        cand: max((d for (c, _), d in per_model.items() if c == cand), key=DECISIONS.index, default="close")
        for cand in candidates
    }
    return GateResult(str(spec.get("name", criteria_path.stem)), baseline, verdicts, decisions, per_model)


def _ratio_verdict(c: Criterion, cand: str, model: str, mine: float | None, base: float | None, what: str) -> Verdict:
    if mine is None or not base:
        return Verdict(cand, model, c.kind, c.value, f"{what}: not measured", "inconclusive", c.on_fail)
    ratio = mine / base
    outcome = "pass" if ratio <= c.value else "fail"
    return Verdict(
        cand, model, c.kind, c.value, f"{what} {mine:,.1f} vs {base:,.1f} = {ratio:.2f}x", outcome, c.on_fail
    )


def _verdict(
    c: Criterion,
    cand: str,
    model: str,
    base: dict[str, Any],
    mine: dict[str, Any],
    pair: Any,
    helps: dict[str, int],
) -> Verdict:
    if c.kind == "help_bytes_max":
        if not helps:
            return Verdict(cand, model, c.kind, c.value, "surface has no help payloads", "pass", c.on_fail)
        worst = max(helps, key=lambda n: helps[n])
        over = sum(1 for s in helps.values() if s > c.value)
        outcome = "pass" if helps[worst] <= c.value else "fail"
        observed = f"largest {helps[worst]:,} B ({worst}); {over} of {len(helps)} over"
        return Verdict(cand, model, c.kind, c.value, observed, outcome, c.on_fail)
    if c.kind == "prompt_tokens_ratio_max":
        return _ratio_verdict(
            c, cand, model, mine["prompt_tokens_per_step"], base["prompt_tokens_per_step"], "prompt tok/step"
        )
    if c.kind == "round_trips_ratio_max":
        return _ratio_verdict(c, cand, model, mine["round_trips"], base["round_trips"], "round trips")
    if c.kind in ("first_try_drop_max", "success_drop_max"):
        first_tries = c.kind == "first_try_drop_max"
        if pair is None:
            delta = low = high = baseline = None
        elif first_tries:
            delta, low, high = pair.first_try_delta, pair.first_try_delta_low, pair.first_try_delta_high
            baseline = pair.baseline_first_try
        else:
            delta, low, high = pair.success_delta, pair.success_delta_low, pair.success_delta_high
            baseline = pair.baseline_success
        if delta is None or low is None or high is None:
            what = "first tries" if first_tries else "success"
            return Verdict(cand, model, c.kind, c.value, f"no paired {what}", "inconclusive", c.on_fail)
        drop, worst, best = -delta, -low, -high
        observed = f"drop {100 * drop:+.1f} pts [95% CI {100 * best:+.1f}, {100 * worst:+.1f}] over {pair.pairs} tasks"
        outcome = "pass" if worst <= c.value else ("fail" if best > c.value else "inconclusive")
        if outcome == "pass" and (baseline or 0.0) <= c.value:
            # the baseline is too weak to lose more than the allowed drop: no test can fail, so none passes
            observed += f"; baseline only {100 * (baseline or 0.0):.0f}%: a drop cannot show"
            outcome = "inconclusive"
        return Verdict(cand, model, c.kind, c.value, observed, outcome, c.on_fail)
    raise ConfigError(f"unknown criterion {c.kind!r}")


def format_gate(result: GateResult) -> str:
    lines = [f"gate {result.name}: baseline {result.baseline}", ""]
    lines.append("| candidate | model | criterion | threshold | observed | outcome |")
    lines.append("|---|---|---|---|---|---|")
    for v in result.verdicts:
        lines.append(f"| {v.candidate} | {v.model} | {v.criterion} | {v.threshold:g} | {v.observed} | {v.outcome} |")
    lines.append("")
    for (cand, model), decision in sorted(result.per_model.items()):
        lines.append(f"{cand} on {model}: {decision}")
    for cand, decision in result.decisions.items():
        lines.append(f"decision for {cand}: {decision.upper()}")
    return "\n".join(lines)
