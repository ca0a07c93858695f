"""The run stage writes run.json itself: a cell run with ``run_cell`` alone leaves a run folder the reader takes."""

from __future__ import annotations

import json
from pathlib import Path

from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.reader import load
from surfbench.bench.store.results import RunStore


def test_a_cell_run_by_the_run_stage_alone_is_a_run_folder(tmp_path: Path):
    store = RunStore(tmp_path / "run", commit_interval_s=0.0)
    store.prepare()  # no run.json written by a front end
    cell = resolve_cell(CellSpec("notes_mcp", "dispatcher", "qwen2.5-coder-0.5b-instruct", split="all", limit=2))
    rows = run_cell(cell, None, store, "run", client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
    assert len(rows) == 2
    info = json.loads((store.root / "run.json").read_text())
    assert [c["cell_id"] for c in info["cells"]] == [cell.cell_id]
    assert info["cells"][0]["limit"] == 2 and info["catalog_hashes"] == {"notes_mcp": cell.suite.catalog.content_hash}
    runs = load(store.root)
    assert [c.cell_id for c in runs.cells] == [cell.cell_id] and len(runs.episodes) == 2

    created = info["created"]
    run_cell(cell, None, store, "run", client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
    again = json.loads((store.root / "run.json").read_text())
    assert again["created"] == created and len(again["cells"]) == 1  # a recorded cell is not written again
