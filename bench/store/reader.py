"""The typed reader of run folders: ``surfbench.load(RUN, ...)`` -> :class:`Runs`.

What the report, the gate, the notebook and users read a run through. One call checks each folder as the report
does (``run.json`` the object a run writes, every part an episodes part, no episode key twice) and returns:

- ``cells``: the cells ``run.json`` recorded, as :class:`RecordedCell` records (the latest identity of each
  suite x surface x model x mode label), and ``legacy_cells``, those of runs made before cells had identities;
- ``episodes``: one row per episode of each cell's current identity (columns: ``EpisodeRow`` of
  bench/store/tables.py, as bench/store/schema.py writes them); rows of an older identity are left out and counted in
  ``ignored`` (``surfbench prune RUN`` deletes them), with a line in ``notes``;
- ``steps`` and ``calls``: the rows of those episodes in the steps and calls tables (read on first use);
- ``tools``: the runs' tools tables, each distinct tool's wire text once (records v6, bench/store/tool_texts.py), and
  :meth:`Runs.tool_block`, a step's tool block as sent (None for a run recorded before: not recorded).

Every frame is a ``pandas.DataFrame``; JSON-encoded list columns (``tags``, ``error_types``, ``first_tries``,
a call's ``arguments``) stay text, as in the files. :func:`surfbench.bench.store.results.load_runs` is the raw
reader underneath: every row of one table of some folders, whatever identity it has, without the checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from surfbench.bench.store.evidence import RunInfo
from surfbench.bench.store.provenance import latest_cells, load_current
from surfbench.bench.store.results import load_runs
from surfbench.bench.store.tool_texts import block_texts, read_tools

if TYPE_CHECKING:
    import pandas as pd

RunPath = str | os.PathLike[str]


@dataclass(frozen=True)
class RecordedCell:
    """One cell as a run's ``run.json`` records it (``Cell.provenance`` in bench/run/runner.py)."""

    run: str
    """The run folder that recorded it."""
    suite: str
    surface: str
    """The surface config's name (``preselect``)."""
    model: str
    """The model config's name."""
    surface_label: str
    """The surface's label in the tables (``preselect[params.k=10]`` with overrides)."""
    model_label: str
    mode: str | None
    """Calling mode, ``native`` or ``prompted`` (None: a legacy cell that left it to the model)."""
    cell_id: str | None = None
    """The hash of everything that can change an episode (None: recorded before cells had identities)."""
    provider: str | None = None
    catalog_hash: str | None = None
    catalog_size: int | None = None
    """Operations in the cell's catalog (the suite's own, or grown with ``catalog.grow``)."""
    grow: int | None = None
    grow_seed: int | None = None
    updated: str | None = None
    """When the cell last ran into the folder (ISO time)."""
    task_hashes: Mapping[str, str] = field(default_factory=dict)
    """Task id -> content hash of the task as it ran."""
    suite_files: Mapping[str, str] = field(default_factory=dict)
    """Suite file -> content hash at run time."""
    name_map: Mapping[str, str] = field(default_factory=dict)
    """Original -> valid operation name where an importer renamed one."""
    identity: Mapping[str, Any] = field(default_factory=dict)
    """The resolved identity: ``surface`` (name, kind, params), ``model``, ``max_steps``, ``scoring_version``."""
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False)
    """The record exactly as run.json holds it (the run's spec too: split, repeats, limit, ...)."""

    @property
    def surface_kind(self) -> str | None:
        """The surface's kind (``full``, ``dispatcher``, ``preselect``, ...), from the recorded identity."""
        surface = self.identity.get("surface")
        return str(surface["kind"]) if isinstance(surface, Mapping) and "kind" in surface else None

    @property
    def surface_params(self) -> Mapping[str, object]:
        """The surface's resolved parameters, from the recorded identity (empty for a legacy cell)."""
        surface = self.identity.get("surface")
        params = surface.get("params") if isinstance(surface, Mapping) else None
        return params if isinstance(params, Mapping) else {}

    @classmethod
    def from_record(cls, run: str, cell: Mapping[str, object]) -> RecordedCell:
        """A checked run.json cell (bench.store.evidence.check_cells) as a typed record."""

        def text(name: str) -> str | None:
            value = cell.get(name)
            return None if value is None else str(value)

        def number(name: str) -> int | None:
            value = cell.get(name)
            return int(value) if isinstance(value, int) and not isinstance(value, bool) else None

        def mapping(name: str) -> dict[str, Any]:
            value = cell.get(name)
            return dict(value) if isinstance(value, Mapping) else {}

        surface, model = str(cell["surface"]), str(cell["model"])
        return cls(
            run=run,
            suite=str(cell["suite"]),
            surface=surface,
            model=model,
            surface_label=text("surface_label") or surface,
            model_label=text("model_label") or model,
            mode=text("mode"),
            cell_id=text("cell_id"),
            provider=text("provider"),
            catalog_hash=text("catalog_hash"),
            catalog_size=number("catalog_size"),
            grow=number("grow"),
            grow_seed=number("grow_seed"),
            updated=text("updated"),
            task_hashes=mapping("task_hashes"),
            suite_files=mapping("suite_files"),
            name_map=mapping("name_map"),
            identity=mapping("identity"),
            raw=dict(cell),
        )


@dataclass(frozen=True, eq=False)
class Runs:
    """What :func:`load` read from one or more run folders (see the module docstring)."""

    runs: tuple[str, ...]
    """The run folders, as given."""
    cells: tuple[RecordedCell, ...]
    """Per run, the latest recorded identity of each suite x surface x model x mode label."""
    legacy_cells: tuple[RecordedCell, ...]
    """Cells of runs recorded before cells kept their resolved config (no ``cell_id``)."""
    episodes: pd.DataFrame
    """One row per episode of each cell's current identity."""
    ignored: int = 0
    """Episode rows of an older identity left out."""
    notes: tuple[str, ...] = ()
    """What the reader left out or noticed (older identities, suite files changed since the run)."""
    infos: dict[str, RunInfo] = field(default_factory=dict, repr=False)
    """Run folder -> its run.json, as recorded."""

    @cached_property
    def steps(self) -> pd.DataFrame:
        """One row per model call of the episodes (StepRow columns), read on first use."""
        return self._rows("steps")

    @cached_property
    def calls(self) -> pd.DataFrame:
        """One row per tool call of the episodes (CallRow columns), read on first use."""
        return self._rows("calls")

    @cached_property
    def tools(self) -> pd.DataFrame:
        """One row per distinct tool each run showed (``run``, ``tool_hash``, ``name``, ``text``: its wire text).

        Empty for runs recorded before records v6, which kept their tool blocks' sizes and hashes, not their text.
        """
        return read_tools(self.runs)

    @cached_property
    def tool_texts(self) -> dict[str, str]:
        """Tool hash -> its wire text, over the runs (a step's ``tool_hashes`` name them)."""
        tools = self.tools
        return {str(h): str(t) for h, t in zip(tools["tool_hash"], tools["text"], strict=True)}

    def tool_block(self, episode_key: str, step: int) -> list[str] | None:
        """The tool block step ``step`` of an episode sent, each tool's wire text in order ([]: no tools).

        None: not recorded (a run from before records v6, or a step the tables do not hold).
        """
        steps = self.steps
        if not len(steps) or "tool_hashes" not in steps.columns:
            return None
        found = steps[(steps["episode_key"] == episode_key) & (steps["step"] == step)]
        return block_texts(found["tool_hashes"].iloc[0], self.tool_texts) if len(found) else None

    def _rows(self, table: str) -> pd.DataFrame:
        frame = load_runs(self.runs, table)
        if not len(frame) or "episode_key" not in frame.columns:
            return frame
        keep = frame["episode_key"].isin(set(self.episodes["episode_key"]))
        return frame[keep].reset_index(drop=True)

    @property
    def scripted(self) -> bool:
        """Whether any recorded cell ran a scripted model (its numbers are not a measurement)."""
        return any(
            isinstance(c, Mapping) and c.get("provider") == "scripted"
            for info in self.infos.values()
            for c in info["cells"]
        )

    @property
    def scripted_models(self) -> tuple[str, ...]:
        """The models of the recorded cells that ran a scripted model (run.json's ``provider``), each once, sorted."""
        return tuple(
            sorted(
                {
                    str(c.get("model") or c.get("model_label") or "scripted")
                    for info in self.infos.values()
                    for c in info["cells"]
                    if isinstance(c, Mapping) and c.get("provider") == "scripted"
                }
            )
        )

    def cell(self, cell_id: str) -> RecordedCell | None:
        """The recorded cell of an episode's ``cell_id`` (None: not recorded, or an older identity)."""
        return next((c for c in self.cells if c.cell_id == cell_id), None)


def load(*runs: RunPath, keep_newest: bool = False, suites: bool = True) -> Runs:
    """Read run folders for analysis: typed cells and the episodes, steps and calls of their current identity.

    ``keep_newest``: an episode key committed twice counts its newest row (else that is an error naming the key).
    ``suites``: also load today's suites to note the files changed since the run (False: read the folders only).
    Raises :class:`surfbench.bench.store.results.ResultsError` (one line naming the folder or file) when a folder is
    not a run, is damaged, or holds no episode.
    """
    folders = [os.fspath(r) for r in runs]
    view = load_current(folders, keep_newest=keep_newest, suites=suites)
    cells, legacy = [], []
    for run, info in view.infos.items():
        cells += [RecordedCell.from_record(run, c) for c in latest_cells(info).values()]
        legacy += [
            RecordedCell.from_record(run, c) for c in info["cells"] if isinstance(c, dict) and not c.get("cell_id")
        ]
    return Runs(tuple(folders), tuple(cells), tuple(legacy), view.frame, view.ignored, tuple(view.notes), view.infos)
