"""Catalog size as an axis: a suite's own operations plus seeded distractors from the pool.

``catalog.grow=N`` on ``surfbench run`` (and ``--grow N`` on ``surfbench retrieval``) grows every
catalog of the suite to N operations: its own, unchanged, plus ``N - own`` operations drawn with a
seeded random generator from the pool of real operations (:mod:`surfbench.bench.catalog.pool`), never one
whose name (case-insensitively) the suite uses; deterministic near-duplicates of pool operations
(``<name>_v2``, ...) only where the pool runs out. Tasks and checks are unchanged. The same suite,
N and seed give the same catalog and so the same catalog hash (the cell identity's).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypedDict

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.suites.suite_model import Suite

MAX_GROW = 100_000


@dataclass(frozen=True)
class GrowSetting:
    """The ``catalog:`` settings of a run: grow to N operations with this seed (N None: no growth)."""

    grow: int | None = None
    """Operations in every grown catalog; None: the suite's own catalog."""
    seed: int = 0
    """Seed of the distractor draw."""


class GrowFields(TypedDict):
    """The CellSpec fields a run's ``catalog`` setting gives (:func:`grow_fields`)."""

    grow: int | None
    grow_seed: int


def grow_setting(node: object) -> GrowSetting:
    """``catalog`` as Hydra composed it (``catalog.grow=1024 catalog.seed=1``), checked.

    Raises:
        ValueError: a key other than grow and seed, or a value that is not a whole number in range.
    """
    from omegaconf import OmegaConf

    value = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    if value is None:
        return GrowSetting()
    if not isinstance(value, Mapping) or set(value) - {"grow", "seed"}:
        raise ValueError(f"catalog={value!r}: takes grow and seed only, e.g. catalog.grow=1024 catalog.seed=0")
    grow, seed = value.get("grow"), value.get("seed", 0)
    if grow is not None and (not isinstance(grow, int) or isinstance(grow, bool) or not 1 <= grow <= MAX_GROW):
        raise ValueError(f"catalog.grow={grow!r}: must be a whole number from 1 to {MAX_GROW:,}, or null (no growth)")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"catalog.seed={seed!r}: must be a whole number, 0 or more")
    return GrowSetting(grow, seed)


def grow_fields(node: object) -> GrowFields:
    """The CellSpec fields (``grow``, ``grow_seed``) of a run's ``catalog`` setting, checked (ConfigError)."""
    from surfbench.bench.base.config import ConfigError

    try:
        setting = grow_setting(node)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return {"grow": setting.grow, "grow_seed": setting.seed}


def grown_label(label: str, size: int) -> str:
    """A surface label marked with its growth: ``preselect[grow=1024]``, ``preselect[k=10,grow=1024]``."""
    return f"{label[:-1]},grow={size}]" if label.endswith("]") else f"{label}[grow={size}]"


def base_label(label: str) -> str:
    """The surface label without its growth mark (what a scale figure draws one line for)."""
    return re.sub(r"\[\]$", "", re.sub(r",?grow=\d+", "", label).replace("[,", "["))


def near_duplicates(pool: Sequence[Operation], count: int, taken: set[str]) -> list[Operation]:
    """``count`` deterministic variants of pool operations: ``<name>_v2``, ``<name>_v3``... in pool order."""
    out: list[Operation] = []
    variant = 2
    while len(out) < count and pool:
        for op in pool:
            name = f"{op.name[:60]}_v{variant}"
            if name.lower() in taken:
                continue
            taken.add(name.lower())
            out.append(replace(op, name=name, description=f"{op.description} (variant {variant})"))
            if len(out) == count:
                break
        variant += 1
    return out


def grow_catalog(catalog: Catalog, size: int, seed: int = 0, pool: Sequence[Operation] | None = None) -> Catalog:
    """``catalog`` grown to ``size`` operations (unchanged when it has that many already).

    ``pool``: the operations to draw from (default: the cached pool, built when missing). The result's
    order is a seeded shuffle of the suite's and the drawn operations, so that no surface sees the
    suite's own operations first.
    """
    if size <= len(catalog):
        return catalog
    if pool is None:
        from surfbench.bench.catalog.pool import load_pool

        pool = load_pool().operations
    taken = {name.lower() for name in catalog.names}
    candidates = [op for op in pool if op.name.lower() not in taken]
    rng = random.Random(f"surfbench-grow:{seed}:{catalog.content_hash}")
    need = size - len(catalog)
    drawn = rng.sample(candidates, min(need, len(candidates)))
    taken |= {op.name.lower() for op in drawn}
    drawn += near_duplicates(candidates, need - len(drawn), taken)
    operations = list(catalog.operations) + drawn
    rng.shuffle(operations)
    return Catalog(catalog.name, tuple(operations), source=f"{catalog.source} (grown to {size}, seed {seed})")


def grow_suite(suite: Suite, size: int, seed: int = 0, pool: Sequence[Operation] | None = None) -> Suite:
    """The suite with every catalog grown to ``size`` (the suite's, and each task's own)."""
    if pool is None:
        from surfbench.bench.catalog.pool import load_pool

        pool = load_pool().operations
    grown_tasks = [
        replace(t, catalog=grow_catalog(t.catalog, size, seed, pool)) if t.catalog is not None else t
        for t in suite.tasks
    ]
    return replace(suite, preset_catalog=grow_catalog(suite.catalog, size, seed, pool), tasks=grown_tasks)
