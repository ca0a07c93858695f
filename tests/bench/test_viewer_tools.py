"""The tool block as sent (issue 33): recorded once per distinct tool in the run's tools table, read back by
``surfbench.load``, and shown on the viewer's episode page (served and exported); older runs say "not recorded".

The runs are the scripted oracle on notes_mcp (no real model): ``full`` shows the whole catalog on every step,
``preselect`` a different 5-tool set per request, ``lazy`` its one loader tool first.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.cli.cli import main as cli
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.report.viewer_links import episode_path
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.compact import compact
from surfbench.bench.store.reader import load
from surfbench.bench.store.results import RunStore
from surfbench.bench.store.tool_texts import TOOLS
from surfbench.bench.view.episode_page import StepView
from surfbench.bench.view.index import ViewIndex
from surfbench.bench.view.pages import _tool_block
from surfbench.bench.view.view_server import Site
from tests.conftest import ROOT

MODEL = {"provider": "scripted", "script_suite": "notes_mcp", "params_b": 0.0, "mode": "native", "max_tokens": 64}
OLD_RUN = ROOT / "results" / "reference" / "forge-dev-qwen0.5b"
"""A run recorded before records v6: no tools table, no ``tool_hashes``."""


def tool_run(root: Path, surfaces: tuple[str, ...] = ("full", "preselect", "lazy"), limit: int = 3) -> Path:
    """A scripted run into ``root`` (resumed when it exists): ``limit`` notes_mcp tasks per surface."""
    store = RunStore(root, commit_interval_s=0.0)  # a part per episode: the tools table is written per commit
    store.prepare()
    cells = [resolve_cell(CellSpec("notes_mcp", s, "oracle", split="all", limit=limit), None, MODEL) for s in surfaces]
    store.write_run_info({"cells": [c.provenance() for c in cells]})
    for cell in cells:
        run_cell(cell, None, store, root.name, client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
    return root


def tool_rows(root: Path) -> list[dict[str, str]]:
    return [row for part in sorted((root / TOOLS).glob("part-*.parquet")) for row in pq.read_table(part).to_pylist()]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tool_run(tmp_path_factory.mktemp("tools") / "run")


def catalog_ops() -> list[tuple[str, str]]:
    cell = resolve_cell(CellSpec("notes_mcp", "full", "oracle", split="all", limit=1), None, MODEL)
    return [(op.name, op.description) for op in cell.suite.catalog.operations]


def test_each_distinct_tool_is_stored_once_and_every_step_names_its_block(run: Path):
    data = load(run, suites=False)
    steps, episodes = data.steps, data.episodes
    full = set(episodes.loc[episodes["surface"] == "full", "episode_key"])
    full_steps = steps[steps["episode_key"].isin(full)]
    ops = catalog_ops()
    assert len(full) == 3 and len(full_steps) > len(full)  # several steps per episode
    assert int(full_steps["tools_shown"].sum()) >= 2 * len(ops) * len(full)  # the catalog on every step...
    rows = tool_rows(run)
    hashes = [r["tool_hash"] for r in rows]
    assert len(hashes) == len(set(hashes))  # ...yet each tool once in the run folder
    used = {h for text in steps["tool_hashes"] for h in json.loads(text)}
    assert used == set(hashes)  # full's tools, preselect's sets and lazy's loader: nothing more, nothing lost
    full_used = {h for text in full_steps["tool_hashes"] for h in json.loads(text)}
    assert len(full_used) == len(ops)
    for row in steps.to_dict("records"):  # the block as sent: its texts add up to the bytes the step measured
        block = data.tool_block(row["episode_key"], row["step"])
        assert block is not None and len(block) == row["tools_shown"]
        assert sum(len(t.encode("utf-8")) for t in block) == row["tool_block_bytes"]
    lazy = set(episodes.loc[episodes["surface"] == "lazy", "episode_key"])
    first = steps[steps["episode_key"].isin(lazy) & (steps["step"] == 0)]
    assert set(first["tools_shown"]) == {1}  # a one-tool block
    assert set(data.tools["name"]) >= {name for name, _ in ops} and len(data.tools) == len(hashes)


def test_a_resumed_run_adds_only_new_tools_and_compaction_keeps_them(run: Path, tmp_path: Path):
    copy = tmp_path / "run"
    import shutil

    shutil.copytree(run, copy)
    before = tool_rows(copy)
    tool_run(copy, ("full",), limit=5)  # two more full episodes: the same catalog, nothing new to store
    assert load(copy, suites=False).episodes["surface"].eq("full").sum() == 5
    assert sorted(r["tool_hash"] for r in tool_rows(copy)) == sorted(r["tool_hash"] for r in before)
    texts = load(copy, suites=False).tool_texts
    result = compact(copy)
    assert len(list((copy / TOOLS).glob("part-*.parquet"))) == 1 and result.parts["tools"][1] == len(before)
    assert load(copy, suites=False).tool_texts == texts


def test_the_episode_page_shows_the_tool_block_as_sent(run: Path, tmp_path: Path):
    site = Site(ViewIndex([run]))
    frame = site.index.frame
    key = str(frame.loc[frame["surface"] == "full", "episode_key"].iloc[0])
    status, _, body = site.render(episode_path(key))
    page = body.decode("utf-8")
    assert status == 200
    name, description = catalog_ops()[0]
    shown = html.escape(compact_json(description)[1:-1])  # JSON in the wire text, then escaped for HTML
    assert shown in page and f"<h5>{html.escape(name)} · " in page
    assert "the tool block as sent: " in page and "The same tool block as step 0" in page  # step 1 repeats it
    assert page.count(shown) == 1  # shown once, not on every step
    assert "not recorded in this run" not in page
    out = tmp_path / "site"
    assert cli(["view", str(run), "--export", str(out)]) == 0
    assert shown in (out / episode_path(key)).read_text(encoding="utf-8")


def test_a_run_recorded_before_says_the_tool_block_was_not_recorded():
    index = ViewIndex([OLD_RUN])
    assert index.runs.tools.empty and index.runs.tool_block(str(index.frame["episode_key"][0]), 0) is None
    status, _, body = Site(index).render(episode_path(str(index.frame["episode_key"][0])))
    page = body.decode("utf-8")
    assert status == 200 and "The tool block's text is not recorded in this run" in page
    assert "the tool block as sent" not in page


def test_the_tool_block_is_escaped_and_an_empty_block_says_so():
    text = compact_json({"name": "evil", "description": "<script>alert(1)</script>", "parameters": {}})
    view = StepView(0, record={"tool_hashes": '["h1"]', "tool_block_bytes": len(text)})
    shown = _tool_block(view, None, {"h1": text})
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    empty = StepView(0, record={"tool_hashes": "[]", "tool_block_bytes": 0})
    assert "No tool block" in _tool_block(empty, None, {})
    lost = _tool_block(StepView(0, record={"tool_hashes": '["h2"]'}), None, {})
    assert "not in the run's tools table" in lost
