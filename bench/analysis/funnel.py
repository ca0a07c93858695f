"""The retrieval funnel and the scale axis of a report, from recorded runs.

For the retrieval surfaces (a cell whose run.json records ``retrieves``: today ``preselect``, ``search``, ``lazy``
and ``code`` with ``sdk: search``; a new surface whose ``retrieves`` is true, with no change here) each episode's
funnel is: were the task's expected operations among what the surface showed or returned (retrieved, recall), at
what rank (MRR), then did the model pick the right one (selection), with right arguments (first try), and did the
task succeed. Everything is read from the run folder (records v2, bench.store.recorded), whatever the surface kind:
the episode's ``expected_ops``; the ``operations_shown`` of its first step (in the surface's order: preselect's
rank order; the others show none before a meta call); then the ranked ``hits`` of its retrieving meta calls
(:data:`~surfbench.bench.contracts.records.RETRIEVAL_METAS`: search's search calls, lazy's load calls, code mode's
``search_api`` calls inside the program); the catalog's size from the run's catalogs table. An episode that showed
nothing at all is counted and named (zero shown): retrieval, not the model, failed.

Runs recorded before records v2 take the legacy path (:class:`_Legacy`): the kinds of :data:`RETRIEVAL_KINDS`
only, today's suite loaded, preselect's set recomputed with a rebuilt surface, and search results parsed back
out of the result text.

The scale axis: each cell's catalog size (the suite's, or ``catalog.grow``), from run.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.analysis.retrieval_eval import expected_ops
from surfbench.bench.base.sections import Section
from surfbench.bench.contracts.records import RETRIEVAL_METAS
from surfbench.bench.store.tables import as_int

if TYPE_CHECKING:
    import pandas as pd

    from surfbench.bench.store.evidence import CellInfo, RunInfo
    from surfbench.bench.store.recorded import RecordedCatalogs
    from surfbench.bench.suites.suite_model import Suite

RETRIEVAL_KINDS = ("preselect", "search", "lazy", "code")
"""LEGACY (runs before records v2, which record no ``retrieves``): the kinds whose cells are funnel rows (code: its
search variant, search_api in the program)."""
# LEGACY (runs before records v2): what search and search_api returned, parsed back out of the result text
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


def _cells(infos: Mapping[str, RunInfo]) -> dict[str, CellInfo]:
    return {c["cell_id"]: c for info in infos.values() for c in info.get("cells", []) if "cell_id" in c}


def _suite(cell: Mapping[str, object], cache: dict[tuple[object, ...], Suite]) -> Suite:
    from surfbench.bench.suites.grow import grow_suite
    from surfbench.bench.suites.suite import load_suite

    key = (cell["suite"], cell.get("grow"), cell.get("grow_seed", 0))
    if key not in cache:
        suite = load_suite(str(cell["suite"]))
        cache[key] = grow_suite(suite, as_int(key[1]), as_int(key[2] or 0)) if key[1] else suite
    return cache[key]


def catalog_sizes(infos: Mapping[str, RunInfo]) -> dict[str, int]:
    """cell_id -> operations in the cell's catalog (run.json's ``catalog_size``; LEGACY: else the suite's, grown)."""
    out: dict[str, int] = {}
    cache: dict[tuple[object, ...], Suite] = {}
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
    """LEGACY (runs before records v2): what the surface showed or returned, recovered from today's suite.

    Preselect's set is recomputed with a surface rebuilt over today's catalog, search's and code's hits are
    parsed back out of the result text (``_RETURNED``, ``_STUB``), lazy's from the load call's arguments. Runs
    recorded since read :func:`recorded_shown` instead.
    """
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


def _listed(value: Any) -> list[Any] | None:
    """A JSON-list column's value as a list; None when the row has none (NaN, None: not recorded)."""
    if isinstance(value, str):
        value = json.loads(value)
    return list(value) if isinstance(value, list) else None


def recorded_shown(
    steps: Sequence[Mapping[str, object]], calls: Sequence[Mapping[str, object]], catalog: Callable[[], Sequence[str]]
) -> list[str]:
    """What the surface showed or returned in one episode, from its own records (records v2), best first.

    Whatever the surface kind: the operations its first step showed (``operations_shown``, in the surface's order;
    ``catalog()``, the names of the episode's catalog, when the step showed all of them), then the ``hits`` of its
    retrieving meta calls (:data:`~surfbench.bench.contracts.records.RETRIEVAL_METAS`), by rank, in call order;
    each operation once. An episode never sent (it does not fit) has no step: nothing shown.
    """
    first = min(steps, key=lambda s: as_int(s["step"]), default=None)
    if first is None:
        return []
    listed = _listed(first.get("operations_shown"))
    names = [str(n) for n in listed] if listed is not None else list(catalog())
    for call in sorted(calls, key=lambda c: (as_int(c["step"]), as_int(c["index"]))):
        hits = _listed(call.get("hits"))
        if hits is not None and call.get("meta") in RETRIEVAL_METAS:
            names += [str(h["op"]) for h in sorted(hits, key=lambda h: int(h["rank"]))]
    return list(dict.fromkeys(names))


def _names(catalogs: RecordedCatalogs, digest: str) -> list[str]:
    """The operations of recorded catalog ``digest`` in catalog order ([] when the run did not record it)."""
    return catalogs.names(digest) if digest in catalogs else []


def _grouped(runs: Sequence[str | Path], table: str) -> dict[str, list[dict[str, object]]]:
    from surfbench.bench.store.results import load_runs

    rows = load_runs(runs, table)
    return {str(k): g.to_dict("records") for k, g in rows.groupby("episode_key")} if len(rows) else {}


def funnel_rows(runs: Sequence[str | Path], frame: pd.DataFrame, infos: Mapping[str, RunInfo]) -> list[FunnelRow]:
    """One row per retrieval cell (surface x model x catalog size) of ``frame`` (the report's episodes).

    An episode recorded with records v2 is read from the run folder only (its expected operations, steps,
    calls and the run's catalogs); an older one takes the legacy path through today's suite.
    """
    from surfbench.bench.store.recorded import RecordedCatalogs, is_recorded

    cells = _cells(infos)

    def path(ep: dict[str, Any]) -> str | None:
        """``recorded`` (read from the run), ``legacy`` (today's suite) or None (not a funnel episode)."""
        cell = cells.get(ep["cell_id"])
        if cell is None:
            return None
        if _listed(ep.get("expected_ops")) is not None and is_recorded(cell):
            # the surface's own flag, recorded: code mode without search_api retrieves nothing, not a funnel row
            return "recorded" if cell.get("retrieves") else None
        return "legacy" if ep["surface_kind"] in RETRIEVAL_KINDS else None

    rows: list[tuple[dict[str, Any], str]] = []
    for ep in frame.to_dict("records"):
        found = path(ep)
        if found is not None:
            rows.append((ep, found))
    if not rows:
        return []
    by_episode = _grouped(runs, "calls")
    recorded = any(found == "recorded" for _, found in rows)
    steps = _grouped(runs, "steps") if recorded else {}
    catalogs = RecordedCatalogs.load(runs) if recorded else RecordedCatalogs()
    legacy = _Legacy()
    acc: dict[tuple[str, str, int], dict[str, Any]] = {}
    for ep, found in rows:
        cell = cells[ep["cell_id"]]
        if found == "recorded":
            listed = _listed(ep.get("expected_ops")) or []
            expected = tuple(dict.fromkeys(str(e if isinstance(e, str) else e[0]) for e in listed))
            digest = str(ep["catalog_hash"])
            size = catalogs.size(digest) if digest in catalogs else int(cell.get("catalog_size") or 0)
            key = str(ep["episode_key"])
            shown = recorded_shown(steps.get(key, []), by_episode.get(key, []), partial(_names, catalogs, digest))
        else:
            legacy_found = legacy.episode(ep, cell, by_episode)
            if legacy_found is None:
                continue
            expected, shown, size = legacy_found
        if not expected:
            continue
        position = {name: i + 1 for i, name in enumerate(shown)}
        ranks = [position[op] for op in expected if op in position]
        row = acc.setdefault((str(ep["surface"]), str(ep["model"]), size), {
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


class _Legacy:
    """LEGACY (runs before records v2): an episode's funnel inputs from today's suite and a rebuilt surface."""

    def __init__(self) -> None:
        self.suites: dict[tuple[object, ...], Suite] = {}
        self.surfaces: dict[tuple[str, int], Any] = {}

    def episode(
        self, ep: dict[str, Any], cell: CellInfo, by_episode: dict[str, list[dict[str, Any]]]
    ) -> tuple[tuple[str, ...], list[str], int] | None:
        """(expected operations, shown, catalog size), or None when the episode is not a funnel row."""
        from surfbench.bench.contracts.registry import build_surface

        suite = _suite(cell, self.suites)
        task = next((t for t in suite.tasks if t.id == ep["task_id"]), None)
        if task is None or not task.expected:
            return None
        catalog = suite.catalog_for(task)
        surface_id = (ep["cell_id"], id(catalog))
        if surface_id not in self.surfaces:
            spec = cell.get("identity", {}).get("surface", {})
            self.surfaces[surface_id] = build_surface(
                catalog, ep["surface_kind"], spec.get("params"), name=ep["surface"]
            )
        surface = self.surfaces[surface_id]
        if ep["surface_kind"] == "code" and getattr(surface, "sdk", None) != "search":
            return None  # code mode without search_api retrieves nothing: not a funnel row
        shown = shown_operations(ep["surface_kind"], surface, task, by_episode.get(str(ep["episode_key"]), []))
        return expected_ops(task), shown, len(catalog)


def _funnel_order(item: tuple[tuple[str, str, int], object]) -> tuple[str, int, str, str]:
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


def funnel_section(rows: Sequence[FunnelRow]) -> list[Section]:
    """The report's funnel section, or nothing when no run has a retrieval surface."""
    if not rows:
        return []
    text = (
        "Per cell: share of expected operations the surface "
        "showed or returned (retrieved), their mean reciprocal rank, then selection, first-try arguments and "
        "success. Zero shown: episodes in which the surface showed or returned no operation at all "
        "(retrieval failed, not the model)."
    )
    title = "Retrieval funnel (preselect, search, lazy, code with search_api)"
    return [Section(title, text, (FUNNEL_HEAD, funnel_table(rows)))]
