"""A run folder carries what its report needs: the report, the retrieval funnel and the gate read it alone.

Steps record the operations they showed, meta calls the operations they returned with their ranks, episodes
their expected operations, and the run its catalogs and help sizes (bench.store.recorded). So a report on a run
whose suite folder has since been deleted renders every section, with the same numbers.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models.scripted import OracleClient, call_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

SUITE = "copied"
SURFACES = ("dispatcher", "preselect", "search")
MODEL = "qwen2.5-coder-0.5b-instruct"  # its config only: a scripted client answers
GATE = (
    "name: t\nbaseline: preselect\ncandidates: [dispatcher]\nhot_operations: 5\n"
    "criteria:\n  - {kind: help_bytes_max, value: 600}\n  - {kind: first_try_drop_max, value: 0.05}\n"
)


class SearchingOracle(OracleClient):
    """The oracle, but on a search surface it first searches with the user's request (the hits become tools)."""

    def complete(self, request: ModelRequest) -> ModelTurn:
        names = {t.name for t in request.tools}
        if "search_tools" in names and not any(m["role"] == "tool" for m in request.messages):
            first = next(m["content"] for m in request.messages if m["role"] == "user")
            return with_usage(call_turn(("search_tools", {"query": first})), request)
        return super().complete(request)


def copied_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The forge suite copied to a folder of its own, under another name, found through SURFBENCH_SUITES."""
    folder = tmp_path / "suites" / SUITE
    shutil.copytree(ROOT / "tasks" / "forge", folder)
    text = (folder / "suite.yaml").read_text().replace("name: forge", f"name: {SUITE}")
    (folder / "suite.yaml").write_text(text)
    monkeypatch.setenv("SURFBENCH_SUITES", str(folder.parent))
    return folder


def scripted_run(root: Path) -> Path:
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    cells = [resolve_cell(CellSpec(SUITE, s, MODEL, split="dev", limit=4)) for s in SURFACES]
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, None, store, root.name, client=SearchingOracle(SUITE))  # type: ignore[arg-type]
    return root


def rendered(run: Path, criteria: Path) -> tuple[str, str]:
    """The run's report (markdown, every section but the figures) and its gate decision, as text."""
    from surfbench.bench.report.gate import format_gate, judge
    from surfbench.bench.report.report import markdown
    from surfbench.bench.report.report_data import collect

    return markdown(collect([run]), {}), format_gate(judge(criteria, [run]))


def headings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("#")]


def body(text: str) -> list[str]:
    """The text's lines but its timestamp and the note that the suite no longer loads (the one difference)."""
    text = re.sub(r"[^\n]*suite '\w+' no longer loads here[^\n]*(\n\n?|$)", "", text)
    return [re.sub(r"Made .* UTC\.", "", line) for line in text.splitlines()]


def section(text: str, title: str) -> str:
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def test_a_report_on_a_run_whose_suite_was_deleted_renders_every_section_with_the_same_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from surfbench.bench.analysis.funnel import funnel_rows
    from surfbench.bench.store.provenance import load_current

    folder = copied_suite(tmp_path, monkeypatch)
    run = scripted_run(tmp_path / "run")
    (tmp_path / "gate.yaml").write_text(GATE)
    view = load_current([run])
    funnel = {r.surface: r for r in funnel_rows([run], view.frame, view.infos)}
    assert set(funnel) == {"preselect", "search"}
    assert funnel["preselect"].retrieved > 0 and funnel["search"].retrieved > 0  # the funnel has content
    assert funnel["search"].operations == funnel["preselect"].operations == 96
    report_before, gate_before = rendered(run, tmp_path / "gate.yaml")

    shutil.rmtree(folder)  # the suite is gone: only the run folder is left to read
    with pytest.raises(ConfigError):
        load_suite(SUITE)  # nothing of it is left in this process either
    report_after, gate_after = rendered(run, tmp_path / "gate.yaml")

    assert headings(report_after) == headings(report_before) and len(headings(report_before)) >= 5
    funnel_title = "Retrieval funnel (preselect, search, lazy, code with search_api)"
    assert section(report_after, funnel_title) == section(report_before, funnel_title)
    assert f"{funnel['preselect'].retrieved:.0%}" in section(report_after, funnel_title)
    assert body(report_after) == body(report_before)  # every table, number for number
    assert body(gate_after) == body(gate_before) and "help_bytes" in gate_before


def test_a_search_calls_row_records_its_hits_with_ranks_and_a_step_the_operations_it_showed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    copied_suite(tmp_path, monkeypatch)
    run = scripted_run(tmp_path / "run")
    calls, steps = load_runs([run], "calls"), load_runs([run], "steps")
    episodes = load_runs([run]).set_index("episode_key")
    searches = calls[calls["meta"] == "search"]
    assert len(searches) == 4  # one per task of the search cell
    for row in searches.to_dict("records"):
        hits = json.loads(row["hits"])
        assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1)) and 0 < len(hits) <= 5
        assert all(h["score"] > 0 for h in hits)
        texts = re.findall(r'\{"name":\s*"([^"]+)"', row["result"])  # what the model read (the result may be cut)
        assert texts and [h["op"] for h in hits][: len(texts)] == texts
    kinds = episodes["surface_kind"]
    for row in steps.to_dict("records"):
        kind, shown = kinds[row["episode_key"]], row["operations_shown"]
        names = json.loads(shown) if shown is not None else None
        if kind == "dispatcher":  # every operation, by name: recorded as "the whole catalog"
            assert names is None and row["shown_count"] == 96
        elif kind == "preselect":  # its typed tools, in rank order
            assert row["shown_count"] == len(names) == row["tools_shown"] and names
        elif row["step"] == 0:  # search, before any search: nothing callable yet
            assert names == [] and row["shown_count"] == 0
        else:  # after the search: the hits it returned
            hits = json.loads(searches[searches["episode_key"] == row["episode_key"]]["hits"].iloc[0])
            assert names == [h["op"] for h in hits]
    expected = episodes[kinds == "search"]["expected_ops"].map(json.loads)
    assert all(isinstance(e, list) and e for e in expected)
