"""The retrieval funnel and the scale axis of a report, from recorded runs.

For the retrieval surfaces (``preselect``, ``search``, ``lazy``, and ``code`` with ``sdk: search``) each
episode's funnel is: were the task's expected operations among what the surface showed or returned
(retrieved, recall), at what rank (MRR), then did the model pick the right one (selection), with right
arguments (first try), and did the task succeed. ``preselect``'s shown set is recomputed exactly
(retrieval is deterministic: the cell's surface parameters over the cell's catalog, grown as run.json
records); ``search``'s returned operations are read from its search results in calls.parquet, ``lazy``'s
from its load calls, code mode's from the stubs ``search_api`` returned inside the program. An episode
that showed nothing at all is counted and named (zero shown): retrieval, not the model, failed.

The scale axis: each cell's catalog size (the suite's, or ``catalog.grow``), from run.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surfbench.bench.markdown import markdown_table
from surfbench.bench.retrieval_eval import expected_ops

RETRIEVAL_KINDS = ("preselect", "search", "lazy", "code")  # code: its search variant (search_api in the program)
_RETURNED = re.compile(r'\{"name":\s*"([^"]+)"')
_STUB = re.compile(r"^def (\w+)\(", re.MULTILINE)  # the stubs search_api returns inside a program


@dataclass(frozen=True)
class FunnelRow:
    """One retrieval cell's funnel: where its tasks were lost."""

    surface: str
    """Surface label."""
    model: str
    """Model label."""
    operations: int
    """Operations in the cell's catalog."""
    episodes: int
    """Episodes with expected calls."""
    retrieved: float
    """Mean share of an episode's expected operations that were shown or returned (recall)."""
    mrr: float
    """Mean reciprocal rank of the best-ranked expected operation (0 when none was shown)."""
    selection: float
    """Share of episodes whose first canonical call named the expected operation."""
    first_try: float
    """First-try argument accuracy, micro-averaged over expected calls."""
    success: float
    """Share of episodes that succeeded."""
    zero_shown: tuple[str, ...]
    """Tasks whose episode showed or returned no operation at all."""


def _cells(infos: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {c["cell_id"]: c for info in infos.values() for c in info.get("cells", []) if "cell_id" in c}


def _suite(cell: dict[str, Any], cache: dict[tuple[Any, ...], Any]) -> Any:
    from surfbench.bench.grow import grow_suite
    from surfbench.bench.suite import load_suite

    key = (cell["suite"], cell.get("grow"), cell.get("grow_seed", 0))
    if key not in cache:
        suite = load_suite(str(cell["suite"]))
        cache[key] = grow_suite(suite, int(key[1]), int(key[2] or 0)) if key[1] else suite
    return cache[key]


def catalog_sizes(infos: dict[str, dict[str, Any]]) -> dict[str, int]:
    """cell_id -> operations in the cell's catalog (run.json's ``catalog_size``, else the suite's, grown)."""
    out: dict[str, int] = {}
    cache: dict[tuple[Any, ...], Any] = {}
    for cell_id, cell in _cells(infos).items():
        size = cell.get("catalog_size")
        out[cell_id] = int(size) if size else len(_suite(cell, cache).catalog)
    return out


def _args(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def shown_operations(kind: str, surface: Any, task: Any, calls: Sequence[dict[str, Any]]) -> list[str]:
    """What the surface showed or returned in one episode, best first (first appearance)."""
    if kind == "preselect":
        return [h.operation for h in surface.select(task.turns[0])]
    names: list[str] = []
    for call in calls:
        if kind == "search" and call.get("meta") == "search":
            names += _RETURNED.findall(str(call.get("result") or ""))
        elif kind == "code" and call.get("meta") == "search":  # SDK function names back to operations
            names += [surface.names.operation.get(n, n) for n in _STUB.findall(str(call.get("result") or ""))]
        elif kind == "lazy" and call.get("meta") == "load":
            args = _args(call.get("arguments"))
            cats = {str(c) for c in args.get("categories") or []}
            names += [op.name for op in surface.catalog.operations if op.category in cats]
            names += [str(n) for n in args.get("names") or [] if str(n) in surface.catalog]
    return list(dict.fromkeys(names))


def funnel_rows(runs: Sequence[str | Path], frame: Any, infos: dict[str, dict[str, Any]]) -> list[FunnelRow]:
    """One row per retrieval cell (surface x model x catalog size) of ``frame`` (the report's episodes)."""
    import pandas as pd

    from surfbench.bench.registry import build_surface

    episodes = frame[frame["surface_kind"].isin(RETRIEVAL_KINDS)] if len(frame) else frame
    if not len(episodes):
        return []
    parts = [pd.read_parquet(Path(r) / "calls.parquet") for r in runs if (Path(r) / "calls.parquet").exists()]
    calls = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["episode_key"])
    by_episode = {k: g.to_dict("records") for k, g in calls.groupby("episode_key")} if len(calls) else {}
    cells, suites, surfaces = _cells(infos), {}, {}  # type: ignore[var-annotated]
    acc: dict[tuple[str, str, int], dict[str, Any]] = {}
    for ep in episodes.to_dict("records"):
        cell = cells.get(ep["cell_id"])
        if cell is None:
            continue
        suite = _suite(cell, suites)
        task = next((t for t in suite.tasks if t.id == ep["task_id"]), None)
        if task is None or not task.expected:
            continue
        catalog = suite.catalog_for(task)
        surface_id = (ep["cell_id"], id(catalog))
        if surface_id not in surfaces:
            spec = cell.get("identity", {}).get("surface", {})
            surfaces[surface_id] = build_surface(catalog, ep["surface_kind"], spec.get("params"), name=ep["surface"])
        if ep["surface_kind"] == "code" and getattr(surfaces[surface_id], "sdk", None) != "search":
            continue  # code mode without search_api retrieves nothing: not a funnel row
        shown = shown_operations(ep["surface_kind"], surfaces[surface_id], task, by_episode.get(ep["episode_key"], []))
        position = {name: i + 1 for i, name in enumerate(shown)}
        expected = expected_ops(task)
        ranks = [position[op] for op in expected if op in position]
        row = acc.setdefault((str(ep["surface"]), str(ep["model"]), len(catalog)), {
            "n": 0, "recall": 0.0, "rr": 0.0, "sel": 0, "ft": 0, "calls": 0, "ok": 0, "zero": []})  # fmt: skip
        row["n"] += 1
        row["recall"] += len(ranks) / len(expected)
        row["rr"] += 1.0 / min(ranks) if ranks else 0.0
        row["sel"] += bool(ep.get("selection_correct"))
        row["ft"] += int(ep.get("first_try_correct") or 0)
        row["calls"] += int(ep.get("expected_calls") or 0)
        row["ok"] += bool(ep.get("success"))
        if not shown:
            row["zero"].append(str(ep["task_id"]))
    return [
        FunnelRow(surface, model, size, r["n"], r["recall"] / r["n"], r["rr"] / r["n"], r["sel"] / r["n"],
                  r["ft"] / r["calls"] if r["calls"] else 0.0, r["ok"] / r["n"], tuple(sorted(set(r["zero"]))))
        for (surface, model, size), r in sorted(acc.items(), key=_funnel_order)
    ]  # fmt: skip


def _funnel_order(item: tuple[tuple[str, str, int], Any]) -> tuple[str, int, str, str]:
    """By surface config, then catalog size (as a number: 256 before 1,024), then model, then label."""
    (surface, model, size), _ = item
    return (surface.split("[")[0], size, model, surface)


FUNNEL_HEAD = ["surface", "model", "ops", "episodes", "retrieved", "MRR", "selection", "first-try", "success",
               "zero shown"]  # fmt: skip


def funnel_table(rows: Sequence[FunnelRow]) -> list[list[str]]:
    """The funnel as table rows (percentages; zero shown: count and the first task ids)."""
    out = []
    for r in rows:
        zero = f"{len(r.zero_shown)}" + (f" ({', '.join(r.zero_shown[:5])}{'…' if len(r.zero_shown) > 5 else ''})"
                                         if r.zero_shown else "")  # fmt: skip
        out.append([r.surface, r.model, f"{r.operations:,}", str(r.episodes), f"{r.retrieved:.0%}", f"{r.mrr:.2f}",
                    f"{r.selection:.0%}", f"{r.first_try:.0%}", f"{r.success:.0%}", zero])  # fmt: skip
    return out


def funnel_section(rows: Sequence[FunnelRow]) -> list[str]:
    """The report's funnel section (markdown), or nothing when no run has a retrieval surface."""
    if not rows:
        return []
    return [
        "## Retrieval funnel (preselect, search, lazy, code with search_api)\n\n"
        "Per cell: share of expected operations the surface "
        "showed or returned (retrieved), their mean reciprocal rank, then selection, first-try arguments and "
        "success. Zero shown: episodes in which the surface showed or returned no operation at all "
        "(retrieval failed, not the model).\n\n" + markdown_table(FUNNEL_HEAD, funnel_table(rows))
    ]
