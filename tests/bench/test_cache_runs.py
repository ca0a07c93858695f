"""The cache model on run folders: what a step records, older runs rebuilt from transcripts, the append-only
surfaces, the report's caching sections, the effective-cost gate criterion and the model config's overrides.

Every run here is a scripted model (no real model): a client that loads the task's operation, calls it, answers.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.contracts.surface import ToolCall
from surfbench.bench.models.scripted import call_turn, text_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.promptcache.prompt_cache_requests import cache_cells, run_requests
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.reader import load
from surfbench.bench.store.results import RunStore
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

MODEL = {"provider": "scripted", "script_suite": "notes_mcp", "params_b": 0.0, "mode": "native", "max_tokens": 64}
TASKS = ("search-groceries", "read-note")
PLAN = {
    "Find my notes about groceries.": ("notes_search", {"query": "groceries"}, "Groceries for Sunday"),
    "Read note n7.": ("notes_get", {"id": "n7"}, "Pack the tent."),
}


class Loader:
    """Loads the task's operation, calls it (by name) on the next turn, then answers."""

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        op, args, answer = PLAN[first]
        results = sum(1 for m in request.messages if m["role"] == "tool")
        if results == 0:
            return with_usage(call_turn(("load_tools", {"names": [op]})), request)
        if results == 1:
            return with_usage(call_turn((op, args)), request)
        return with_usage(text_turn(answer), request)


def scripted_run(root: Path, surfaces: tuple[str, ...], model: dict[str, Any] | None = None) -> Path:
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    cells = [
        resolve_cell(CellSpec("notes_mcp", s, "oracle", split="all", tasks=TASKS), None, model or MODEL)
        for s in surfaces
    ]
    store.write_run_info({"cells": [c.provenance() for c in cells]})
    for cell in cells:
        run_cell(cell, None, store, root.name, client=Loader())  # type: ignore[arg-type]
    return root


@pytest.fixture(scope="module")
def lazy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scripted_run(tmp_path_factory.mktemp("cache") / "run", ("lazy", "lazy_append"))


def test_a_step_records_its_requests_segments_and_when_it_was_sent(lazy_run: Path):
    steps = load(lazy_run).steps
    assert len(steps) == 12 and steps["segments"].notna().all() and steps["sent_at"].notna().all()
    for row in steps.to_dict("records"):
        segments = json.loads(row["segments"])
        assert [s[0] for s in segments[:3]] == ["system", "tools", "user"]
        # the segments are the request: their estimates add up to the step's own estimate (less the JSON around it)
        assert abs(row["prompt_tokens_est"] - sum(s[2] for s in segments)) < 60
    surface = dict(zip(load(lazy_run).episodes["episode_key"], load(lazy_run).episodes["surface"], strict=True))
    for key, group in steps.sort_values("step").groupby("episode_key"):
        requests = [json.loads(text) for text in group["segments"]]
        assert all(b[: len(a)] == a for a, b in zip(requests[1:], requests[2:], strict=False))  # history appends
        if surface[key] == "lazy_append":  # the tool block never changes: each request extends the one before
            assert requests[1][: len(requests[0])] == requests[0]
        else:  # the loader's result rewrote the tool block
            assert requests[0][1][1] != requests[1][1][1] and requests[0][0] == requests[1][0]


def test_append_delivery_keeps_the_prefix_that_rewrite_breaks(lazy_run: Path):
    view = load(lazy_run)
    episodes = view.episodes.set_index("surface")
    assert episodes["success"].all(), episodes[["task_id", "failures"]]
    assert not episodes.loc["lazy", "stable_prefix"].any() and episodes.loc["lazy_append", "stable_prefix"].all()
    cells = {key[1]: c for key, c in cache_cells(view).items()}
    rewrite, append = cells["lazy"].cells, cells["lazy_append"].cells
    # the loader's answer rewrote the tool block once per episode: a break at the tools on step 1
    assert rewrite["openai"].breaks == 2 and rewrite["openai"].break_parts == {"tools": 2}
    assert append["openai"].breaks == 0 and append["local"].break_tokens == 0
    assert rewrite["local"].break_tokens > 0
    assert append["local"].cached_share > rewrite["local"].cached_share  # type: ignore[operator]
    for cell in (*rewrite.values(), *append.values()):
        assert cell.served + cell.written + cell.computed == cell.prompt_tokens


def _without_v4_columns(run: Path, copy: Path) -> Path:
    """The run as records v3 wrote it: steps without ``segments`` and ``sent_at``."""
    shutil.copytree(run, copy)
    for part in (copy / "steps.parquet").glob("part-*.parquet"):
        table = pq.read_table(part)
        pq.write_table(table.drop_columns([c for c in ("segments", "sent_at") if c in table.column_names]), part)
    return copy


def test_an_older_run_is_rebuilt_from_its_transcripts_with_the_same_requests(lazy_run: Path, tmp_path: Path):
    old = load(_without_v4_columns(lazy_run, tmp_path / "old"))
    assert "segments" not in old.steps.columns
    new_cells, old_cells = run_requests(load(lazy_run)), run_requests(old)
    assert set(new_cells) == set(old_cells)
    for key, cell in old_cells.items():
        assert cell.rebuilt == cell.episodes == 2 and cell.missing == 0
        recorded = new_cells[key].requests
        # the same steps, the same system text and history; the tool block's tokens estimated within a few
        assert [(r.episode, r.step, r.prompt_tokens) for r in cell.requests] == [
            (r.episode, r.step, r.prompt_tokens) for r in recorded
        ]
        for mine, theirs in zip(cell.requests, recorded, strict=True):
            assert [s.part for s in mine.segments] == [s.part for s in theirs.segments]
            assert [s.digest for s in mine.segments if s.part != "tools"] == [
                s.digest for s in theirs.segments if s.part != "tools"
            ]
    rebuilt = {key[1]: c for key, c in cache_cells(old).items()}
    assert rebuilt["lazy"].cells["openai"].break_parts == {"tools": 2}
    assert rebuilt["lazy_append"].cells["openai"].breaks == 0


def test_the_report_shows_effective_columns_caching_and_breaks(lazy_run: Path):
    from surfbench.bench.report.report import markdown
    from surfbench.bench.report.report_data import collect

    text = markdown(collect([lazy_run]), {})
    for heading in ("## Prompt caching per provider profile (modelled)", "## Cache breaks", "## Does caching"):
        assert heading in text
    head = next(line for line in text.splitlines() if line.startswith("| suite | model |"))
    assert "eff. tok/step, $/ep (anthropic)" in head and "prompt tok/step" in head
    assert "`lazy_append` is 1 of 2 by raw prompt tokens" in text or "`lazy` is 1 of 2" in text


def test_the_effective_cost_criterion_judges_a_profile(lazy_run: Path, tmp_path: Path):
    from surfbench.bench.report.gate import format_gate, judge

    criteria = tmp_path / "gate.yaml"
    criteria.write_text(
        "name: t\nbaseline: lazy\ncandidates: [lazy_append]\ncriteria:\n"
        "  - {kind: prompt_tokens_ratio_max, value: 1.5}\n"
        "  - {kind: effective_cost_ratio_max, value: 10, profile: anthropic}\n"
    )
    result = judge(criteria, [lazy_run])
    verdict = next(v for v in result.verdicts if v.criterion == "effective_cost_ratio_max (anthropic)")
    assert verdict.outcome == "pass" and verdict.observed.startswith("eff. $/episode (anthropic) $")
    assert "effective_cost_ratio_max (anthropic)" in format_gate(result)
    for line, says in [
        ("{kind: effective_cost_ratio_max, value: 1}", "profile: None must be a cache profile"),
        ("{kind: effective_cost_ratio_max, value: 1, profile: azure}", "'azure' must be a cache profile"),
        ("{kind: round_trips_ratio_max, value: 1, profile: openai}", "only effective_cost_ratio_max"),
    ]:
        criteria.write_text(f"name: t\nbaseline: lazy\ncriteria:\n  - {line}\n")
        with pytest.raises(ConfigError, match=says.replace("(", r"\(")):
            judge(criteria, [lazy_run])


def test_the_model_configs_overrides_reach_the_cache_model(tmp_path: Path):
    cheap = {**MODEL, "cache_profiles": {"openai": {"min_tokens": 0, "block": 1}}}
    run = scripted_run(tmp_path / "run", ("lazy_append",), cheap)
    (cell,) = json.loads((run / "run.json").read_text())["cells"]
    assert cell["cache_profiles"] == {"openai": {"min_tokens": 0, "block": 1}}
    (cached,) = cache_cells(load(run)).values()
    # scripted prompts are a few hundred tokens: under the shipped 1,024 nothing is cached, here step 1 onwards is
    assert cached.cells["openai"].served > 0 and cached.cells["gemini"].served == 0
    with pytest.raises(ConfigError, match=r"cache_profiles=.*openai\.block=0 must be"):
        resolve_cell(
            CellSpec("notes_mcp", "lazy", "oracle"), None, {**MODEL, "cache_profiles": {"openai": {"block": 0}}}
        )


@pytest.mark.parametrize("kind", ["lazy", "search"])
def test_an_append_session_keeps_its_tool_block_and_calls_what_it_returned_by_name(kind: str):
    catalog = load_suite("notes_mcp").catalog
    session = build_surface(catalog, kind, {"delivery": "append"}).session("Read note n7.")
    before = session.tools()
    meta = "load_tools" if kind == "lazy" else "search_tools"
    args = {"names": ["notes_get"]} if kind == "lazy" else {"query": "get a note by its id"}
    found = session.dispatch(ToolCall(meta, args))
    assert found.hits and '"parameters"' in found.text  # the schemas come in the result
    op = found.hits[0].operation
    early = session.dispatch(ToolCall(op, {}))
    assert early.protocol_violation  # callable from the next turn, as with a rewritten block
    assert session.tools() == before and op in session.operations_shown()
    routed = session.dispatch(ToolCall(op, {"id": "n7"} if op == "notes_get" else {}))
    assert routed.operation == op and routed.kind in ("operation", "rejected")
    rewrite = build_surface(catalog, kind).session("Read note n7.")
    rewrite.tools()
    rewrite.dispatch(ToolCall(meta, args))
    assert [t.name for t in rewrite.tools()] != [t.name for t in before]  # today's variant rewrites the block


def test_delivery_must_be_rewrite_or_append():
    with pytest.raises(ValueError, match="delivery='inline' must be one of rewrite, append"):
        build_surface(load_suite("notes_mcp").catalog, "lazy", {"delivery": "inline"})


def test_the_reference_forge_run_rebuilt_from_its_transcripts():
    """results/reference/forge-dev-qwen0.5b predates records v4: every request comes from its transcripts."""
    cells = {key[1]: c for key, c in cache_cells(load(ROOT / "results" / "reference" / "forge-dev-qwen0.5b")).items()}
    assert {"full", "lazy", "dispatcher"} <= set(cells)
    assert all(c.missing == 0 and c.rebuilt > 0 for c in cells.values())
    assert cells["full"].cells["local"].breaks == 0 and cells["dispatcher"].cells["openai"].breaks == 0
    lazy = cells["lazy"].cells["openai"]
    assert lazy.breaks > 0 and set(lazy.break_parts) == {"tools"}
    assert (cells["full"].cells["local"].cached_share or 0) > 0.5


def test_the_caching_table_shows_the_servers_own_share_beside_the_modelled_local_one(lazy_run: Path):
    """A llama-server run: the measured share (its cache_n) sits beside the single-slot model's; within a point here
    (the model misses 5 of 1,973 tokens on one request: tests/bench/test_slot_check_recorded.py). A scripted run
    reports no cache, so the column is left out."""
    from surfbench.bench.base.markdown import tables_by_heading
    from surfbench.bench.report.report import markdown
    from surfbench.bench.report.report_data import collect

    def caching_rows(run: Path) -> list[dict[str, str]]:
        return tables_by_heading(markdown(collect([run]), {}))["Prompt caching per provider profile (modelled)"]

    (row,) = caching_rows(ROOT / "tests" / "fixtures" / "runs" / "llama-server-forge-core")
    measured, local = (float(row[k].rstrip("%")) for k in ("cached (measured)", "cached (local)"))
    assert row["surface"] == "core" and measured > 50 and abs(measured - local) <= 1
    assert all("cached (measured)" not in r for r in caching_rows(lazy_run))
