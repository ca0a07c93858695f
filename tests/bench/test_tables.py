"""Every table of a run folder reads as one dataset with pandas and DuckDB (one schema per table)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import TABLES, RunStore
from surfbench.bench.store.schema import SchemaError, table_from_rows
from tests.conftest import ROOT

duckdb = pytest.importorskip("duckdb")

REFERENCE = sorted(p.parent for p in (ROOT / "results" / "reference").rglob("run.json"))  # the old engine's too


def fresh_run(tmp_path: Path) -> Path:
    """notes_mcp on two surfaces, one episode per part (commit interval 0): parts whose optional columns
    are all empty in one part and filled in another (error types, operations, first tries)."""
    store = RunStore(tmp_path / "fresh", commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": []})
    for surface in ("full", "dispatcher"):
        cell = resolve_cell(CellSpec("notes_mcp", surface, "qwen2.5-coder-0.5b-instruct", split="all"))
        run_cell(cell, None, store, "fresh", client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
    return store.root


def test_a_fresh_run_folder_reads_with_pandas_and_duckdb(tmp_path: Path):
    root = fresh_run(tmp_path)
    for table in TABLES:
        frame = pd.read_parquet(root / f"{table}.parquet")
        assert len(frame) > 0
        count = duckdb.sql(f"select count(*) from '{root}/{table}.parquet/*.parquet'").fetchall()[0][0]
        assert count == len(frame)
    episodes = pd.read_parquet(root / "episodes.parquet")
    assert len(episodes) == 14 and episodes["episode_key"].is_unique


@pytest.mark.parametrize("run", REFERENCE, ids=[p.name for p in REFERENCE])
def test_reference_runs_read_with_pandas_and_duckdb(run: Path):
    for table in TABLES:
        path = run / f"{table}.parquet"
        frame = pd.read_parquet(path)
        glob = f"{path}/*.parquet" if path.is_dir() else str(path)
        assert duckdb.sql(f"select count(*) from '{glob}'").fetchall()[0][0] == len(frame)


def test_a_row_with_an_undeclared_column_is_refused():
    with pytest.raises(SchemaError, match="new_metric"):
        table_from_rows("episodes", [{"episode_key": "k", "new_metric": 1}])
