"""Reading a gate's criteria file (``configs/gate/*.yaml``; the format is in :mod:`surfbench.bench.report.gate`).

Every way a criteria file can be wrong is one ConfigError naming the criteria file and what is wrong: a
field of the wrong type or range (a wrong value would silently judge something else), and a file that
cannot be one at all (a directory, a device, bytes that are not UTF-8, nesting too deep for the YAML
parser), which used to surface as an unexpected error blamed on "a damaged or foreign file in the run
folder".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.config import ConfigError


@dataclass(frozen=True)
class CriterionKind:
    """What a criterion kind judges: a registry metric (METRICS, which gives its direction) and how.

    ``limit``: every help payload is at most the value (at least, for a higher-is-better metric), or, for a metric
    computed per cell (one :func:`~surfbench.bench.analysis.metrics.register_metric` added), the candidate's value;
    ``ratio``: the candidate's cell value over the baseline's, oriented so that above 1 is worse, is at
    most the value; ``drop``: the paired difference, oriented so that positive is worse, is at most the
    value (a share: the metric is a proportion).
    """

    metric: str
    test: Literal["limit", "ratio", "drop"]


LISTED_FIRST = (
    "help_bytes_max", "prompt_tokens_ratio_max", "first_try_drop_max", "round_trips_ratio_max", "success_drop_max",
)  # fmt: skip
"""The kinds an unknown kind's message has always listed first, in this order (then the metrics' order)."""


def criterion_kinds() -> dict[str, CriterionKind]:
    """Every criterion kind, from the metric declarations (bench.analysis.metrics.Metric.criteria)."""
    from surfbench.bench.analysis.metrics import METRICS

    found = {kind: CriterionKind(m.name, test) for m in METRICS.values() for test, kind in m.criterion_kinds().items()}
    first = {kind: i for i, kind in enumerate(LISTED_FIRST)}
    return dict(sorted(found.items(), key=lambda item: first.get(item[0], len(first))))


class _Kinds(Mapping[str, CriterionKind]):
    """:data:`KINDS`, read from the metric declarations at each use: a metric registered at run time has its kinds."""

    def __getitem__(self, name: str) -> CriterionKind:
        return criterion_kinds()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(criterion_kinds())

    def __len__(self) -> int:
        return len(criterion_kinds())

    def __repr__(self) -> str:
        return f"KINDS({criterion_kinds()!r})"


KINDS: Mapping[str, CriterionKind] = _Kinds()
"""Criterion kind -> the metric it judges and how: ``help_bytes_max`` (limit), ``prompt_tokens_ratio_max``,
``first_try_drop_max``, ... one per test a metric's declaration allows (``STEM_max``, ``STEM_ratio_max``,
``STEM_drop_max``); docs/metrics.md's metrics table lists them."""
CRITERION_KEYS = ("kind", "value", "on_fail", "tasks", "sequential", "profile", "suite")
PROFILE_KINDS = ("effective_cost_ratio_max",)
"""Criteria judged under a cache profile (``profile: openai``; bench.models.cache_profiles), which they require."""
BATCH = 10
"""Pairs between two looks of a sequential gate, by default (bench.sequential.sequential); a fixed-N gate lets a
drop criterion pass on no fewer pairs (bench.report.gate.MIN_PASS_PAIRS)."""


@dataclass(frozen=True)
class Criterion:
    """One line of a criteria file: a kind of :data:`KINDS`, its threshold, and the decision a fail means."""

    kind: str
    value: float
    on_fail: str = "revise"
    tags: tuple[str, ...] = ()
    """Judge only the episodes of tasks with one of these tags (``tasks: {tags: [...]}``); () = every task."""
    sequential: bool = False
    """``sequential: true``: judged pair by pair by ``gate --sequential`` (bench.sequential.sequential_gate)."""
    profile: str | None = None
    """The cache profile an effective-cost criterion models (bench.models.cache_profiles); None for the others."""
    suite: str | None = None
    """Judge only this suite's episodes (the criterion's ``suite:``, else the gate file's); None = every suite."""

    @property
    def scope(self) -> tuple[tuple[str, ...], str | None]:
        """The episodes the criterion is judged on: its task tags and its suite."""
        return self.tags, self.suite

    @property
    def label(self) -> str:
        """The criterion's name in the table: its kind (and profile), and the tasks it is judged on when filtered."""
        kind = f"{self.kind} ({self.profile})" if self.profile else self.kind
        kind = f"{kind} [tasks tagged {'/'.join(self.tags)}]" if self.tags else kind
        return f"{kind} [suite {self.suite}]" if self.suite else kind


GATE_EXAMPLE = "configs/gate/dsh.yaml"
MAX_CRITERIA_DEPTH = 16
"""Nesting a criteria file may have (a criterion's ``tasks: {tags: [...]}`` is 5 levels deep)."""


def _depth(value: object) -> int:
    """How deeply lists and mappings nest in ``value`` (iterative: a pathological file cannot recurse)."""
    deepest, todo = 0, [(value, 1)]
    seen: set[int] = set()
    while todo:
        item, level = todo.pop()
        if isinstance(item, Mapping | list) and id(item) not in seen:  # YAML aliases share (and can loop)
            seen.add(id(item))
            deepest = max(deepest, level)
            if level <= MAX_CRITERIA_DEPTH:
                todo += [(v, level + 1) for v in (item.values() if isinstance(item, Mapping) else item)]
    return deepest


def _read_criteria(path: Path) -> Any:
    """The criteria file's YAML; every way it cannot be read is one ConfigError naming the criteria file."""
    if path.exists() and not path.is_file():  # a FIFO or a device would block, or never end
        what = "a directory" if path.is_dir() else "not a regular file"
        raise ConfigError(f"{path}: the criteria file is {what}; pass a YAML file, e.g. {GATE_EXAMPLE}")
    try:
        text = read_text(path, "criteria file")  # bounded (bench/base/bounded.py): a size limit, regular files only
    except ReadRefused as exc:
        raise ConfigError(f"{path}: {exc.problem}") from None
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such criteria file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the criteria file is not UTF-8 text (byte {exc.start}); save it as UTF-8 YAML like {GATE_EXAMPLE}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the criteria file ({exc.strerror or exc})") from None
    too_deep = f"{path}: the criteria file nests more than {MAX_CRITERIA_DEPTH} levels deep; see {GATE_EXAMPLE}"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}".replace("\n", " ")) from None
    except RecursionError:  # the YAML parser recurses per level
        raise ConfigError(too_deep) from None
    if _depth(data) > MAX_CRITERIA_DEPTH:
        raise ConfigError(too_deep)
    return data


def load_criteria(path: Path) -> dict[str, Any]:
    """The criteria file, checked field by field (a ConfigError names the file and the field)."""
    data = _read_criteria(path)
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping")
    unknown = set(data) - {"name", "baseline", "candidates", "hot_operations", "criteria", "description", "suite"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {sorted(unknown)}")
    _check_header(path, data)
    raw_list = data.get("criteria")
    if raw_list is not None and not isinstance(raw_list, list):
        raise ConfigError(f"{path}: criteria must be a list of {{kind, value, on_fail}}")
    suite = data.get("suite")  # the criteria's default suite (a criterion's own suite: wins)
    crits = [_criterion(path, i, raw, suite) for i, raw in enumerate(raw_list or [])]
    if not crits:
        raise ConfigError(f"{path}: no criteria")
    return {**data, "criteria": crits}


def _check_header(path: Path, data: Mapping[str, Any]) -> None:
    """The gate file's own fields: each a wrong value would silently judge something else."""
    for key in ("name", "baseline", "description", "suite"):
        if key in data and not isinstance(data[key], str):
            raise ConfigError(f"{path}: {key}: {data[key]!r} must be text")
    candidates = data.get("candidates")
    if candidates is not None and (not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates)):
        raise ConfigError(f"{path}: candidates: {candidates!r} must be a list of surface names, e.g. [dispatcher]")
    hot = data.get("hot_operations")
    # a slice [:-4] would quietly mean "all but the coldest 4"; bool is an int in Python
    if hot is not None and (isinstance(hot, bool) or not isinstance(hot, int) or hot < 1):
        raise ConfigError(f"{path}: hot_operations: {hot!r} must be a whole number of operations, 1 or more")


def _criterion(path: Path, i: int, raw: object, default_suite: str | None = None) -> Criterion:
    where = f"{path}: criteria[{i}]"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where} must be a mapping {{kind, value, on_fail}}, not {raw!r}")
    extra = sorted(str(k) for k in set(raw) - set(CRITERION_KEYS))
    if extra:
        raise ConfigError(f"{where}: unknown key(s) {extra} (known: {', '.join(CRITERION_KEYS)})")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where}.kind: {kind!r} is not a criterion (known: {', '.join(KINDS)})")
    value = raw.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}.value: {value!r} must be a number")
    drop = KINDS[str(kind)].test == "drop"
    if drop and not 0 <= value <= 1:
        # a drop is a fraction: 5 (meaning points) would let any drop pass
        raise ConfigError(f"{where}.value: {value!r} must be a fraction from 0 to 1 (0.05 is 5 points)")
    if not drop and value <= 0:
        raise ConfigError(f"{where}.value: {value!r} must be above 0")
    on_fail = raw.get("on_fail", "revise")
    if on_fail not in ("revise", "close"):
        raise ConfigError(f"{where}.on_fail: {on_fail!r} must be revise or close")
    tasks = raw.get("tasks")
    tags = tasks.get("tags") if isinstance(tasks, Mapping) and set(tasks) == {"tags"} else None
    if tasks is not None and (not isinstance(tags, list) or not tags or not all(isinstance(t, str) for t in tags)):
        raise ConfigError(f"{where}.tasks: {tasks!r} must be {{tags: [TAG, ...]}}, e.g. {{tags: [multi]}}")
    sequential = _sequential(where, str(kind), float(value), raw.get("sequential", False))
    profile = _profile(where, str(kind), raw.get("profile"), sequential)
    suite = raw.get("suite", default_suite)
    if suite is not None and (not isinstance(suite, str) or not suite.strip()):
        raise ConfigError(f"{where}.suite: {suite!r} must be a suite name, e.g. forge_instances")
    return Criterion(str(kind), float(value), str(on_fail), tuple(tags or ()), sequential, profile, suite)


def _profile(where: str, kind: str, name: object, sequential: bool) -> str | None:
    """``profile:`` checked: a cache profile, required by (and only for) the criteria judged under one."""
    from surfbench.bench.models.cache_profiles import PROFILES

    if kind in PROFILE_KINDS and sequential:
        raise ConfigError(f"{where}.sequential: {kind} is modelled over a cell's requests, not judged on task pairs")
    if kind not in PROFILE_KINDS:
        if name is not None:
            raise ConfigError(f"{where}.profile: only {', '.join(PROFILE_KINDS)} is judged under a cache profile")
        return None
    if name not in PROFILES:
        raise ConfigError(f"{where}.profile: {name!r} must be a cache profile ({', '.join(PROFILES)})")
    return str(name)


def threshold_to_unit(value: float, kind: str) -> float:
    """A criterion's threshold on the sequential test's [0, 1] scale (strictly inside, or a ValueError saying why)."""
    if kind == "ratio":
        if not value > 0:
            raise ValueError(f"a ratio threshold must be above 0 (not {value})")
        return 0.5  # r / (r + c) at r = c
    if not -1 < value < 1:
        raise ValueError(f"a sequential difference threshold must be between -1 and 1 (not {value})")
    return (value + 1.0) / 2.0


def _sequential(where: str, kind: str, value: float, flag: object) -> bool:
    """``sequential:`` checked: true or false, on a kind judged on pairs, with a threshold the test can take."""
    if not isinstance(flag, bool):
        raise ConfigError(f"{where}.sequential: {flag!r} must be true or false")
    if flag and KINDS[kind].test == "limit":
        raise ConfigError(f"{where}.sequential: {kind} is judged on the surface, not on task pairs: it cannot be")
    if flag:
        try:
            threshold_to_unit(value, "ratio" if KINDS[kind].test == "ratio" else "diff")
        except ValueError as exc:
            raise ConfigError(f"{where}.value: {exc}") from None
    return flag
