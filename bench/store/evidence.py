"""Checks that reports and gates make before they count anything: is this a run, and whose rows are these.

:func:`surfbench.bench.store.provenance.load_current` reads a run's episodes as one DataFrame. A part file that is not
an episodes part (a ``steps`` part copied into ``episodes.parquet/``, a truncated file, a column of the
wrong type) would otherwise surface later as a TypeError or a NaN somewhere in the statistics, or
worse, as a number. :func:`check_episode_parts` reads each part's schema (the footer only, not the
rows) first and refuses with one line naming the part; ``load_current`` calls it for every run it reads.

``run.json`` is checked the same way, by :func:`check_cells` (each cell an object with the fields and types
that ``bench/run/runner.py``'s ``Cell.provenance`` writes) and :func:`check_rows_recorded` (every episode's cell
recorded in it: a ``run.json`` copied from another run folder records other cells). Unchecked, a cell
``1`` crashed the report while the gate, skipping it, judged ``help_bytes_max`` "no evidence" and said
REVISE; an empty or foreign cell list let both count episodes whose configuration nothing recorded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import pyarrow as pa

from surfbench.bench.store.parts import table_parts
from surfbench.bench.store.results import ResultsError
from surfbench.bench.store.schema import EPISODE_COLUMNS

if TYPE_CHECKING:
    import pandas as pd

REQUIRED_COLUMNS = ("episode_key", "suite", "task_id", "surface", "model", "mode", "success")


class ForeignPart(ResultsError):
    """A part in ``episodes.parquet/`` that cannot be an episodes part (unreadable, another table's, wrong types)."""


def _compatible(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a part's column type reads as the schema's (older parts: all-null columns, int for float)."""
    if found == wanted or pa.types.is_null(found):
        return True
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(t(wanted) for t in numeric) and any(t(found) for t in numeric):
        return True
    return pa.types.is_string(wanted) and (pa.types.is_string(found) or pa.types.is_large_string(found))


def episode_parts(run: Path) -> list[Path]:
    """The part files of a run's episodes table (a folder of parts, or one compacted file)."""
    folder = run / "episodes.parquet"
    if folder.is_dir():
        return table_parts(folder)  # not those an interrupted compaction replaced (bench/store/parts.py)
    return [folder] if folder.is_file() else []


def check_part(part: Path) -> None:
    """Refuse a part that is not an episodes part, naming it and what is wrong."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(part)
    except (pa.ArrowException, OSError) as exc:
        why = " ".join(str(exc).split())
        raise ForeignPart(f"{part}: not a readable parquet part ({why}); move it out of the run folder") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise ForeignPart(
            f"{part}: not an episodes part: column(s) {', '.join(missing)} missing (a steps or calls part, or "
            "not written by surfbench); move it out of the run folder"
        )
    wrong = [
        f"{name} is {schema.field(name).type}, not {EPISODE_COLUMNS[name]}"
        for name in schema.names
        if name in EPISODE_COLUMNS and not _compatible(schema.field(name).type, EPISODE_COLUMNS[name])
    ]
    if wrong:
        raise ForeignPart(
            f"{part}: not an episodes part of bench/store/schema.py: {'; '.join(wrong)} (written by another tool? "
            "a run older than the typed schemas: `surfbench migrate RUN`)"
        )


def check_episode_parts(run: Path) -> None:
    """Only episodes parts in the run's episodes table, else one clear error naming the part."""
    for part in episode_parts(run):
        check_part(part)


class MalformedRunRecord(ResultsError):
    """``run.json`` whose cells are not the objects surfbench writes, or that does not record the run's episodes."""


_FIX = "put back the run folder's own run.json, or re-run the cells into a new folder"

CELL_FIELDS: dict[str, tuple[type, ...]] = {
    "cell_id": (str,),
    "suite": (str,),
    "surface": (str,),
    "model": (str,),
    "surface_label": (str,),
    "model_label": (str,),
    "mode": (str,),
    "identity": (dict,),
    "catalog_hash": (str,),
    "task_hashes": (dict,),
}
"""What every cell with an id holds (``Cell.provenance`` in bench/run/runner.py), and the types reports read."""
OPTIONAL_CELL_FIELDS: dict[str, tuple[type, ...]] = {
    "provider": (str,),
    "updated": (str,),
    "name_map": (dict, type(None)),
    "suite_files": (dict, type(None)),
    "catalog_size": (int, type(None)),
    "grow": (int, type(None)),
    "grow_seed": (int, type(None)),
    "records_version": (int,),  # bench.store.recorded: what the run folder records beside the tables
    "suite_catalog_hash": (str,),
    "retrieves": (bool,),
    "cache_profiles": (dict,),  # the model config's overrides of the cache model (bench.models.cache_profiles)
}
LEGACY_CELL_FIELDS = ("suite", "surface", "model")
"""What a cell recorded before cells had ids holds (the run's ``CellSpec``); ``mode`` (null: the model's) and
``provider`` may be there."""


class SurfaceInfo(TypedDict):
    """A recorded cell's surface as resolved: its config name, its kind and its parameters."""

    name: str
    kind: str
    params: dict[str, object]


class IdentityInfo(TypedDict, total=False):
    """A recorded cell's identity (bench.store.identity.CellIdentity.as_dict), as run.json holds it."""

    cell_id: str
    suite: str
    suite_setup: str
    catalog_hash: str
    surface: SurfaceInfo
    model: dict[str, object]
    max_steps: int
    stop_on_repeat: int | None
    backend_options: dict[str, object]
    scoring_version: int
    surface_text: str
    surface_code: dict[str, str]
    policy: dict[str, object] | None


class CellInfo(TypedDict, total=False):
    """One cell of run.json as ``Cell.provenance`` (bench/run/cell.py) writes it.

    With the types :func:`check_cells` checks. A legacy cell, recorded before cells had ids, has no
    ``cell_id``: its suite, surface and model, and maybe its mode (null: the model's own).
    """

    cell_id: str
    suite: str
    surface: str
    model: str
    surface_label: str
    model_label: str
    mode: str | None
    identity: IdentityInfo
    catalog_hash: str
    task_hashes: dict[str, str]
    provider: str
    updated: str
    name_map: dict[str, str] | None
    suite_files: dict[str, str] | None
    catalog_size: int | None
    grow: int | None
    grow_seed: int | None
    records_version: int
    suite_catalog_hash: str
    retrieves: bool
    cache_profiles: dict[str, object]


class RunInfo(TypedDict, total=False):
    """A run folder's run.json, checked (bench.store.provenance.read_run_info): what its readers read of it."""

    cells: list[CellInfo]
    created: str
    catalog_hashes: dict[str, str]


def _type_name(value: object) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def _wrong_type(value: object, types: tuple[type, ...]) -> bool:
    # bool is an int in Python: true is not a catalog size
    return not isinstance(value, types) or (isinstance(value, bool) and bool not in types)


def _cell_problem(cell: object) -> str | None:
    """What is wrong with one recorded cell, or None."""
    if not isinstance(cell, dict):
        return f"is {json.dumps(cell, default=str)[:40]} ({_type_name(cell)}), not a cell object"
    legacy = "cell_id" not in cell and all(isinstance(cell.get(k), str) for k in LEGACY_CELL_FIELDS)
    wanted = {k: (str,) for k in LEGACY_CELL_FIELDS} if legacy else CELL_FIELDS
    missing = [k for k in wanted if k not in cell]
    if missing:
        return f"has no {', '.join(missing)}"
    optional = {"mode": (str, type(None)), "provider": (str,)} if legacy else OPTIONAL_CELL_FIELDS
    for name, types in {**wanted, **optional}.items():
        if name in cell and _wrong_type(cell[name], types):
            return f"field {name} is {_type_name(cell[name])}, not {' or '.join(_type_name(t()) for t in types)}"
    if not legacy:
        if not cell["cell_id"]:
            return "has an empty cell_id"
        if not all(isinstance(v, str) for v in cell["task_hashes"].values()):
            return "field task_hashes is not an object of task id -> content hash"
        surface = cell["identity"].get("surface")
        if not isinstance(surface, dict) or not all(isinstance(surface.get(k), str) for k in ("name", "kind")):
            return "field identity.surface is not an object with the surface's name and kind"
        if not isinstance(surface.get("params"), dict):
            return "field identity.surface.params is not an object"
    return None


def check_cells(path: Path, info: Mapping[str, Any]) -> None:
    """Each of run.json's cells the object the run wrote, else one line naming the file, the cell and the field."""
    for i, cell in enumerate(info["cells"]):
        problem = _cell_problem(cell)
        if problem:
            raise MalformedRunRecord(
                f"{path}: cells[{i}] {problem} (edited, or not written by surfbench): its episodes cannot be "
                f"told apart from another configuration's; {_FIX}"
            )


def check_rows_recorded(run: Path, info: RunInfo, frame: pd.DataFrame) -> None:
    """Every episode row's cell recorded in the run's run.json, else one line: the file belongs to another run.

    A row with a ``cell_id`` needs a cell with that id (run.json keeps every identity a folder ever ran, older
    ones too); a row written before cells had ids needs a cell of its suite, surface and model.
    """
    if not len(frame):
        return
    ids = {c["cell_id"] for c in info["cells"] if "cell_id" in c}
    legacy = {tuple(c.get(k) for k in LEGACY_CELL_FIELDS) for c in info["cells"] if "cell_id" not in c}
    columns = ["cell_id", *LEGACY_CELL_FIELDS] if "cell_id" in frame.columns else list(LEGACY_CELL_FIELDS)
    unknown = []
    for row in frame[columns].to_dict("records"):
        cell_id = row.get("cell_id")
        if isinstance(cell_id, str) and cell_id:
            if cell_id not in ids:
                unknown.append(row)
        elif tuple(str(row[k]) for k in LEGACY_CELL_FIELDS) not in legacy:
            unknown.append(row)
    if unknown:
        first = unknown[0]
        cell = f"{first['suite']}/{first['surface']}/{first['model']}"
        if isinstance(first.get("cell_id"), str) and first["cell_id"]:
            cell += f" (cell_id {first['cell_id'][:12]})"
        raise MalformedRunRecord(
            f"{run / 'run.json'}: records no cell for {len(unknown)} of the {len(frame)} episode(s) in "
            f"{run / 'episodes.parquet'}, e.g. {cell}: the file belongs to another run or lost cells; {_FIX}"
        )


def surface_label(name: str, labels: set[str]) -> str:
    """The run's label for a surface that a gate file or ``--baseline`` names.

    A gate file names a surface config (``preselect``); a run made with overrides labels it
    ``preselect[params.k=10]``: the one label of that config stands for it (two would be ambiguous, so
    the name is returned unchanged and the caller decides).
    """
    if name in labels:
        return name
    matches = [label for label in labels if label.startswith(name + "[")]
    return matches[0] if len(matches) == 1 else name


def config_labels(name: str, labels: set[str]) -> list[str]:
    """Every label of the runs that is the surface config ``name`` (itself, or with overrides)."""
    return sorted(label for label in labels if label == name or label.startswith(name + "["))
