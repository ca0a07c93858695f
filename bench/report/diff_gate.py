"""The static gate over a catalog change: ``surfbench diff``'s criteria file and its decision (issue 54).

``surfbench gate`` judges runs; this judges a change before any run, on what ``surfbench diff`` measured
(:class:`surfbench.bench.report.diff_report.ChangeReport`). The criteria file (``configs/gate/diff.yaml`` is the
default) has the shape of the run gate's (:mod:`surfbench.bench.report.gate_criteria`: ``name``, ``description``,
``criteria: [{kind, value, on_fail}]``), with its own kinds (:data:`DIFF_KINDS`). Each criterion passes, fails (its
``on_fail``: revise or close) or is not judged (a suite criterion without ``--suite``: said in the table, counted as
a pass, so that the default file serves a diff with and without a suite). The exit code is the run gate's
(:mod:`surfbench.bench.report.gate_exit`): 0 ship, 1 revise, 2 close (and 2 for any error).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from surfbench.bench.base.config import ConfigError
from surfbench.bench.catalog.catalog_diff import OperationChange
from surfbench.bench.catalog.retrieval import retriever_kind
from surfbench.bench.report.diff_report import ChangeReport, SurfaceChange
from surfbench.bench.report.gate_criteria import _read_criteria
from surfbench.bench.report.gate_exit import EXIT, worst_exit

DIFF_KINDS: dict[str, str] = {
    "tokens_ratio_max": "a surface's tokens (o200k_base) after the change over before, at most the value",
    "tokens_added_max": "tokens a surface gains, at most the value",
    "breaking": "no breaking operation change (removed, renamed, a breaking schema change) unless allow_breaking",
    "help_bytes_max": "no help payload newly over the value in bytes (the help budget)",
    "broken_tasks_max": "tasks of --suite whose expected calls no longer validate, at most the value",
    "recall_drop_max": "recall@k of --suite's tasks before minus after, at most the value (a fraction)",
    "mrr_drop_max": "MRR of --suite's tasks before minus after, at most the value (a fraction)",
}
"""Every criterion kind of a diff gate, and what it requires."""
CRITERION_KEYS = ("kind", "value", "on_fail", "surfaces", "allow_breaking", "k", "retriever")
SURFACE_KINDS = ("tokens_ratio_max", "tokens_added_max", "help_bytes_max")
SUITE_KINDS = ("broken_tasks_max", "recall_drop_max", "mrr_drop_max")
DROP_KINDS = ("recall_drop_max", "mrr_drop_max")
DIFF_EXAMPLE = "configs/gate/diff.yaml"
PASS, FAIL, NOT_JUDGED = "pass", "fail", "not judged"


@dataclass(frozen=True)
class DiffCriterion:
    """One criterion of a diff gate."""

    kind: str
    value: float
    on_fail: str = "revise"
    surfaces: tuple[str, ...] = ()
    """The surfaces judged (a surface kind criterion); (): every surface measured."""
    allow_breaking: bool = False
    """``breaking`` only: breaking changes are listed, and pass."""
    k: int = 5
    """``recall_drop_max`` only: the cut-off."""
    retriever: str | None = None
    """A retrieval criterion's retriever; None: every retriever measured."""

    @property
    def label(self) -> str:
        """The criterion's name in the table: its kind, with its cut-off, retriever and surfaces where set."""
        label = f"{self.kind} (k={self.k})" if self.kind == "recall_drop_max" else self.kind
        label = f"{label} [{self.retriever}]" if self.retriever else label
        return f"{label} [{', '.join(self.surfaces)}]" if self.surfaces else label


@dataclass(frozen=True)
class DiffCriteria:
    """A diff gate's file, read and checked."""

    name: str
    path: str
    description: str
    criteria: tuple[DiffCriterion, ...]

    @property
    def help_budget(self) -> int | None:
        """The smallest ``help_bytes_max``: the budget help payloads are measured against; None without one."""
        values = [int(c.value) for c in self.criteria if c.kind == "help_bytes_max"]
        return min(values) if values else None

    @property
    def surfaces(self) -> tuple[str, ...]:
        """Every surface a criterion names (the command line measures them even when not asked to)."""
        return tuple(dict.fromkeys(s for c in self.criteria for s in c.surfaces))

    @property
    def ks(self) -> tuple[int, ...]:
        """Every cut-off a recall criterion judges."""
        return tuple(sorted({c.k for c in self.criteria if c.kind == "recall_drop_max"}))


def load_diff_criteria(path: Path) -> DiffCriteria:
    """The criteria file, checked field by field: every problem is one ConfigError naming the file and the field."""
    data = _read_criteria(path)  # bounded, UTF-8, YAML, not too deep: the run gate's reader
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping with name and criteria, like {DIFF_EXAMPLE}")
    unknown = sorted(str(k) for k in set(data) - {"name", "description", "criteria"})
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown} (known: name, description, criteria)")
    for key in ("name", "description"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: {key}: {data[key]!r} must be text")
    raw = data.get("criteria")
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{path}: criteria must be a non-empty list of {{kind, value, on_fail}}; see {DIFF_EXAMPLE}")
    crits = tuple(_criterion(f"{path}: criteria[{i}]", item) for i, item in enumerate(raw))
    return DiffCriteria(str(data.get("name") or path.stem), str(path), str(data.get("description") or ""), crits)


def _number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}.value: {value!r} must be a number")
    return float(value)


def _whole(where: str, key: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < low:
        raise ConfigError(f"{where}.{key}: {value!r} must be a whole number, {low} or more")
    return int(value)


def _value(where: str, kind: str, raw: Mapping[str, Any]) -> float:
    """The criterion's threshold, checked against what its kind measures."""
    if kind == "breaking":
        if "value" in raw:
            raise ConfigError(
                f"{where}.value: breaking takes no value (allow_breaking: true lets breaking changes pass)"
            )
        return 0.0
    if "value" not in raw:
        raise ConfigError(f"{where}.value: {kind} needs a value ({DIFF_KINDS[kind]})")
    value = _number(where, raw["value"])
    if kind in DROP_KINDS and not 0 <= value <= 1:
        raise ConfigError(f"{where}.value: {value:g} must be a fraction from 0 to 1 (0.05 is 5 points)")
    if kind in ("tokens_ratio_max", "help_bytes_max") and value <= 0:
        raise ConfigError(f"{where}.value: {value:g} must be above 0")
    if kind in ("help_bytes_max", "broken_tasks_max", "tokens_added_max"):
        return float(_whole(where, "value", value, 1 if kind == "help_bytes_max" else 0))
    return value


def _criterion(where: str, raw: object) -> DiffCriterion:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a mapping {{kind, value, on_fail}}, not {raw!r}")
    extra = sorted(str(k) for k in set(raw) - set(CRITERION_KEYS))
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {extra} (known: {', '.join(CRITERION_KEYS)})")
    kind = raw.get("kind")
    if kind not in DIFF_KINDS:
        raise ConfigError(f"{where}.kind: {kind!r} is not a diff criterion (known: {', '.join(DIFF_KINDS)})")
    value = _value(where, str(kind), raw)
    on_fail = raw.get("on_fail", "revise")
    if on_fail not in ("revise", "close"):
        raise ConfigError(f"{where}.on_fail: {on_fail!r} must be revise or close")
    surfaces = raw.get("surfaces", [])
    if "surfaces" in raw and kind not in SURFACE_KINDS:
        raise ConfigError(f"{where}.surfaces: only {', '.join(SURFACE_KINDS)} are judged per surface")
    if not isinstance(surfaces, list) or not all(isinstance(s, str) and s.strip() for s in surfaces):
        raise ConfigError(f"{where}.surfaces: {surfaces!r} must be a list of surface config names, e.g. [full, core]")
    allow = raw.get("allow_breaking", False)
    if "allow_breaking" in raw and kind != "breaking":
        raise ConfigError(f"{where}.allow_breaking: only the breaking criterion takes it")
    if not isinstance(allow, bool):
        raise ConfigError(f"{where}.allow_breaking: {allow!r} must be true or false")
    if "k" in raw and kind != "recall_drop_max":
        raise ConfigError(f"{where}.k: only recall_drop_max takes a cut-off")
    k = _whole(where, "k", raw.get("k", 5), 1)
    retriever = raw.get("retriever")
    if retriever is not None:
        if kind not in DROP_KINDS:
            raise ConfigError(f"{where}.retriever: only {', '.join(DROP_KINDS)} are judged per retriever")
        try:
            retriever = retriever_kind(str(retriever))
        except ValueError as exc:
            raise ConfigError(f"{where}.retriever: {exc}") from None
    return DiffCriterion(str(kind), value, str(on_fail), tuple(surfaces), allow, k, retriever)


# ---- judging ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DiffVerdict:
    """One criterion judged."""

    criterion: str
    threshold: str
    observed: str
    outcome: str
    """``pass``, ``fail`` or ``not judged``."""
    decision: str
    """``ship`` (a pass, or not judged), else the criterion's ``on_fail``."""
    detail: str = ""


@dataclass(frozen=True)
class DiffGateResult:
    """Every criterion of a diff gate judged; the decision is the worst."""

    name: str
    path: str
    verdicts: tuple[DiffVerdict, ...]

    @property
    def exit_code(self) -> int:
        """0 every criterion ships, 1 the worst is revise, 2 any closes."""
        return worst_exit(v.decision for v in self.verdicts)

    @property
    def decision(self) -> str:
        return {code: name for name, code in EXIT.items()}[self.exit_code]

    def to_json(self) -> dict[str, Any]:
        return {
            "gate": self.name,
            "criteria_file": self.path,
            "decision": self.decision,
            "exit_code": self.exit_code,
            "criteria": [asdict(v) for v in self.verdicts],
        }


def _listed(names: Sequence[str], limit: int = 5) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _verdict(c: DiffCriterion, threshold: str, observed: str, ok: bool | None, detail: str = "") -> DiffVerdict:
    outcome = NOT_JUDGED if ok is None else PASS if ok else FAIL
    return DiffVerdict(c.label, threshold, observed, outcome, c.on_fail if outcome == FAIL else "ship", detail)


def _in_scope(c: DiffCriterion, report: ChangeReport) -> tuple[list[SurfaceChange], list[str]]:
    """The surfaces a criterion judges (measured on both catalogs), and those it names that are not."""
    measured = {s.surface: s for s in report.surfaces if s.before is not None and s.after is not None}
    names = list(c.surfaces) or list(measured)
    return [measured[n] for n in names if n in measured], [n for n in names if n not in measured]


def _surface_tokens(c: DiffCriterion, report: ChangeReport) -> DiffVerdict:
    judged, missing = _in_scope(c, report)
    if not judged:
        return _verdict(c, f"{c.value:g}", "-", None, f"no surface measured on both catalogs: {_listed(missing)}")
    ratio = c.kind == "tokens_ratio_max"

    def seen(s: SurfaceChange) -> float:
        return (s.token_ratio if ratio else s.token_change) or 0.0

    worst = max(judged, key=seen)
    over = [s.surface for s in judged if seen(s) > c.value + 1e-9]
    observed = f"{seen(worst):.3f} ({worst.surface})" if ratio else f"{seen(worst):+,.0f} ({worst.surface})"
    detail = f"over: {_listed(over)}" if over else ""
    if missing:
        detail = "; ".join(x for x in (detail, f"not on both catalogs: {_listed(missing)}") if x)
    return _verdict(c, f"{c.value:g}" if ratio else f"{c.value:+,.0f}", observed, not over, detail)


def _breaking_change(ch: OperationChange) -> str:
    """``removed hook_create``, ``renamed issue_lock -> issue_lock_conversation``, ``issue_create (required_added)``."""
    if ch.kind == "changed":
        return f"{ch.name} ({', '.join(dict.fromkeys(sc.kind for sc in ch.schema_changes if sc.breaking))})"
    return f"{ch.kind} {ch.old_name + ' -> ' if ch.old_name else ''}{ch.name}"


def _breaking(c: DiffCriterion, report: ChangeReport, allow: bool) -> DiffVerdict:
    broken = [_breaking_change(ch) for ch in report.diff.breaking]
    allowed = allow or c.allow_breaking
    threshold = "allowed" if allowed else "none"
    if broken and allowed:
        return _verdict(c, threshold, str(len(broken)), True, f"allowed: {_listed(broken)}")
    return _verdict(c, threshold, str(len(broken)), not broken, _listed(broken) if broken else "")


def _help(c: DiffCriterion, report: ChangeReport) -> DiffVerdict:
    judged, _ = _in_scope(c, report)
    over = [f"{s.surface}: {n}" for s in judged for n in s.new_over_budget]
    with_help = [s for s in judged if s.after is not None and s.after.help_max_bytes is not None]
    if not with_help:
        return _verdict(c, f"{report.help_budget:,} B", "-", None, "no surface judged has a help payload")
    biggest = max(with_help, key=lambda s: (s.after.help_max_bytes or 0) if s.after is not None else 0)
    assert biggest.after is not None
    observed = f"largest {biggest.after.help_max_bytes or 0:,} B ({biggest.after.help_max_operation})"
    detail = f"newly over: {_listed(over)}" if over else ""
    if int(c.value) != report.help_budget:  # --help-budget overrides the file's value
        detail = "; ".join(x for x in (detail, f"measured against --help-budget {report.help_budget:,} B") if x)
    return _verdict(c, f"{report.help_budget:,} B", observed, not over, detail)


def _suite(c: DiffCriterion, report: ChangeReport) -> DiffVerdict:
    suite = report.suite
    if suite is None:
        return _verdict(c, f"{c.value:g}", "-", None, "no --suite given")
    if c.kind == "broken_tasks_max":
        names = list(suite.broken_tasks)
        return _verdict(c, f"{c.value:g}", str(len(names)), len(names) <= c.value, _listed(names) if names else "")
    rows = [r for r in suite.retrieval if c.retriever in (None, r.retriever)]
    if not rows:
        return _verdict(c, f"{c.value:g}", "-", None, f"retriever {c.retriever or 'any'} not measured")
    drops: dict[str, float] = {}
    for r in rows:
        if c.kind == "mrr_drop_max":
            drops[r.retriever] = r.mrr_before - r.mrr_after
        elif c.k in r.recall_before and c.k in r.recall_after:
            drops[r.retriever] = r.recall_before[c.k] - r.recall_after[c.k]
    if not drops:
        return _verdict(c, f"{c.value:g}", "-", None, f"recall@{c.k} not measured (add {c.k} to --k)")
    worst = max(drops, key=lambda name: drops[name])
    over = [name for name, drop in drops.items() if drop > c.value + 1e-9]
    detail = f"dropped too far: {', '.join(over)}" if over else ""
    drop = drops[worst]
    observed = f"{'drop' if drop >= 0 else 'gain'} {abs(drop):.3f} ({worst})"
    return _verdict(c, f"{c.value:g}", observed, not over, detail)


def judge_diff(criteria: DiffCriteria, report: ChangeReport, allow_breaking: bool = False) -> DiffGateResult:
    """Every criterion on what ``surfbench diff`` measured; ``allow_breaking``: the command line's override."""
    verdicts = []
    for c in criteria.criteria:
        if c.kind in ("tokens_ratio_max", "tokens_added_max"):
            verdicts.append(_surface_tokens(c, report))
        elif c.kind == "breaking":
            verdicts.append(_breaking(c, report, allow_breaking))
        elif c.kind == "help_bytes_max":
            verdicts.append(_help(c, report))
        else:
            verdicts.append(_suite(c, report))
    return DiffGateResult(criteria.name, criteria.path, tuple(verdicts))
