"""``surfbench.load(RUN)``: typed cells, and the episodes, steps and calls of each cell's current identity."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import surfbench
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.store.reader import RecordedCell
from surfbench.bench.store.results import ResultsError, load_runs
from tests.conftest import FIXTURES

FOLDER = FIXTURES / "alternatives"


def run_into(root: Path, max_steps: int | None) -> None:
    """The fixture suite's four tasks on ``full`` (oracle) into ``root``, recorded in run.json as a run records them."""
    from surfbench.bench.authoring.scaffold import ORACLE_MODEL
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    model = {**ORACLE_MODEL, "script_suite": str(FOLDER)}
    cell = resolve_cell(CellSpec(str(FOLDER), "full", "oracle", split="all", max_steps=max_steps), None, model)
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": [cell.provenance()]})
    run_cell(cell, ModelPool(None), store, "run", client=OracleClient(str(FOLDER)))  # type: ignore[arg-type]


def test_load_gives_typed_cells_and_the_frames_of_the_current_identity_only(tmp_path: Path):
    run = tmp_path / "run"
    run_into(run, max_steps=None)
    run_into(run, max_steps=3)  # the same cell label with another identity: the first four rows are older
    assert len(load_runs([run])) == 8  # the raw reader: every row, whatever its identity

    data = surfbench.load(run)
    assert isinstance(data.episodes, pd.DataFrame) and len(data.episodes) == 4
    assert data.ignored == 4 and any("older cell identity left out" in n for n in data.notes)
    (cell,) = data.cells
    assert isinstance(cell, RecordedCell) and cell.suite == "alternatives" and cell.surface_label == "full"
    assert cell.surface_kind == "full" and cell.identity["max_steps"] == 3 and cell.catalog_size == 5
    assert set(data.episodes["cell_id"]) == {cell.cell_id} and data.cell(str(cell.cell_id)) is cell
    keys = set(data.episodes["episode_key"])
    assert len(data.steps) and set(data.steps["episode_key"]) <= keys  # only the current episodes' steps
    assert len(data.calls) and set(data.calls["episode_key"]) <= keys
    assert len(load_runs([run], "steps")) > len(data.steps)
    assert data.scripted


def test_load_refuses_a_folder_that_is_not_a_run_with_one_line(tmp_path: Path):
    with pytest.raises(ResultsError, match="is not a surfbench run"):
        surfbench.load(tmp_path)
