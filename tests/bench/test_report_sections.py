"""report.md and report.html hold the same sections, in the same order: both render one list of sections.

The HTML report used to be a template of its own and silently lacked the retrieval funnel, the multi-call
and the catalog-size sections that the markdown had. The scripted run here has content for every section
(a ``one_of`` suite with a two-call task, a retrieval surface, a grown catalog, repeats, a wrong first try);
a committed reference run of a real model has the funnel and multi-call sections.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from surfbench.bench.models.scripted import OracleClient, call_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.report.report import html_page, markdown, write_report
from surfbench.bench.report.report_data import collect
from tests.conftest import FIXTURES, ROOT

FOLDER = FIXTURES / "alternatives"
EVERY_SECTION = [
    "Surfaces x models",
    "Paired against full (same tasks)",
    "Repeats: pass@k and pass^k",
    "First-try argument accuracy per operation (hottest first)",
    "Error types: share of episodes with each (at least once)",
    "Alternatives picked (one_of)",
    "First-try argument accuracy: read vs write operations",
    "Retrieval funnel (preselect, search, lazy, code with search_api)",
    "Tasks with two or more expected calls",
    "Catalog size",
    "Prompt caching per provider profile (modelled)",  # bench.promptcache.prompt_cache_section
    "Cache breaks: the prefix changed within an episode",
    "Does caching change the ranking?",
    "Figures",
]


def md_headings(text: str) -> list[str]:
    """The ``#`` and ``##`` headings of a markdown report, as plain text."""
    return [m.group(1).replace("`", "") for m in re.finditer(r"^#{1,2} (.+)$", text, re.MULTILINE)]


def html_headings(page: str) -> list[str]:
    """The ``<h1>`` and ``<h2>`` headings of an HTML report, as plain text."""
    return [html.unescape(re.sub(r"<[^>]+>", "", m.group(2))) for m in re.finditer(r"<h([12])>(.*?)</h\1>", page, re.S)]


class WrongFirstCreate:
    """The oracle, except that its first call on the create-bug task has a wrong argument (an error type)."""

    name = "scripted-oracle"

    def __init__(self) -> None:
        self.oracle = OracleClient(str(FOLDER))

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        done = any(m.get("tool_calls") for m in request.messages if m["role"] == "assistant")
        if first.startswith("Open an issue") and not done:
            wrong = {"method": "update", "title": "Login fails", "body": "Error 500 on submit"}
            return with_usage(call_turn(("issue_write", wrong)), request)
        return self.oracle.complete(request)


@pytest.fixture
def scripted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture suite on full (twice per task), preselect, and full over a catalog grown to 20 operations."""
    from surfbench.bench.authoring.scaffold import ORACLE_MODEL
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    monkeypatch.setenv("SURFBENCH_SUITES", str(FIXTURES))  # the report finds the run's suite by its name
    model = {**ORACLE_MODEL, "script_suite": str(FOLDER)}
    specs = [
        CellSpec(str(FOLDER), "full", "oracle", split="all", repeats=2),
        CellSpec(str(FOLDER), "preselect", "oracle", split="all"),
        CellSpec(str(FOLDER), "full", "oracle", split="all", grow=20),
    ]
    cells = [resolve_cell(spec, None, model) for spec in specs]
    store = RunStore(tmp_path / "run", commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": [cell.provenance() for cell in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "run", client=WrongFirstCreate())  # type: ignore[arg-type]
    return store.root


def test_report_md_and_html_have_every_section_of_a_run_with_content_for_each(scripted_run: Path, tmp_path: Path):
    md_path, html_path = write_report([scripted_run], tmp_path / "report", by_access=True)
    text, page = md_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")
    assert md_headings(text) == ["surfbench report", *EVERY_SECTION]  # the run has content for every section
    assert html_headings(page) == md_headings(text)
    # and the same tables: as many rows (heads included) in each
    md_rows = [line for line in text.splitlines() if line.startswith("|") and not line.startswith("|---")]
    assert page.count("<tr>") == len(md_rows)
    assert "<td>preselect</td>" in page.split("Retrieval funnel")[1].split("<h2>")[0]


def test_a_reference_runs_funnel_and_multi_call_sections_are_in_both_renderings(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(ROOT)  # the git suite's 0.5B reference run: full, dispatcher, preselect, search
    data = collect(["results/reference/llama-cpp-python/git-dev-qwen0.5b"], baseline="full")
    md, page = markdown(data, {}), html_page(data, {})
    headings = md_headings(md)
    assert {
        "Retrieval funnel (preselect, search, lazy, code with search_api)",
        "Tasks with two or more expected calls",
    } <= set(headings)
    assert html_headings(page) == headings


REFERENCE = ROOT / "results" / "reference"


def test_a_section_with_nothing_to_show_is_left_out_of_both_renderings():
    """The workspace suite has no expected calls: its per-operation table has no row, so no section at all."""
    data = collect([REFERENCE / "workspace-all"])
    md, page = markdown(data, {}), html_page(data, {})
    assert "First-try argument accuracy per operation (hottest first)" not in md_headings(md)
    assert html_headings(page) == md_headings(md)
    assert "<tbody></tbody>" not in page
    from surfbench.bench.base.sections import Section

    assert Section("Repeats", "pass@k over repeats.", (["k"], [])).empty  # prose about an empty table
    assert not Section("Note", "one line saying why").empty and not Section("T", table=(["k"], [["2"]])).empty


def test_accuracy_by_model_size_needs_two_sizes(tmp_path: Path):
    from surfbench.bench.report.figures import draw_all

    one = draw_all(collect([REFERENCE / "forge-dev-qwen0.5b"]), tmp_path)
    assert "accuracy by model size" not in one and not (tmp_path / "by_size.png").exists()
    two = draw_all(
        collect([REFERENCE / "forge-dev-qwen0.5b", REFERENCE / "llama-cpp-python" / "forge-dev-qwen1.5b"]), tmp_path
    )
    assert (tmp_path / "by_size.png").stat().st_size > 5000 and "accuracy by model size" in two


def test_every_point_on_an_accuracy_axis_has_its_95_percent_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import matplotlib.axes
    from statsmodels.stats.proportion import proportion_confint

    from surfbench.bench.report.figures import by_size, interval, pareto

    data = collect([REFERENCE / "forge-dev-qwen0.5b", REFERENCE / "llama-cpp-python" / "forge-dev-qwen1.5b"])
    for cell in data.cells:  # first-try accuracy: the summary's Wilson interval over expected calls
        value, low, high = interval(cell, "first_try_accuracy") or (None, None, None)
        s = cell.summary
        ref = proportion_confint(round(s.first_try_accuracy * s.expected_calls), s.expected_calls, method="wilson")
        assert (low, high) == pytest.approx((100 * ref[0], 100 * ref[1]), abs=0.01)  # z = 1.96, not 1.95996...
        value, low, high = interval(cell, "success_rate") or (None, None, None)
        ref = proportion_confint(round(s.success_rate * s.episodes), s.episodes, method="wilson")
        assert (low, high) == pytest.approx((100 * ref[0], 100 * ref[1]), abs=0.01) and low <= value <= high
    bars: list[int] = []
    real = matplotlib.axes.Axes.errorbar

    def counting(self, x, y, *args, **kwargs):  # type: ignore[no-untyped-def]
        bars.append(len(x) if hasattr(x, "__len__") else 1)
        assert kwargs.get("yerr") is not None
        return real(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "errorbar", counting)
    pareto(data, tmp_path / "p.png")
    assert sum(bars) == len(data.cells) == 12  # six surfaces x two sizes, each point with its bar
    bars.clear()
    by_size(data, tmp_path / "s.png")
    assert sum(bars) == 12


def test_the_tables_link_to_the_viewer_when_given_its_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from surfbench.bench.view.index import ViewIndex
    from surfbench.bench.view.view_server import Site

    monkeypatch.delenv("SURFBENCH_VIEWER_URL", raising=False)
    run = REFERENCE / "forge-dev-qwen0.5b"
    md_path, html_path = write_report([run], tmp_path / "plain")
    assert "/cell/" not in md_path.read_text() and "<a href" not in html_path.read_text()
    md_path, html_path = write_report([run], tmp_path / "linked", viewer_url="http://127.0.0.1:8765/")
    md, page = md_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")
    assert "| [repo_get](http://127.0.0.1:8765/op/forge/repo_get.html) | hot |" in md  # the per-operation table
    links = re.findall(r'href="http://127\.0\.0\.1:8765/([^"?]+)(?:\?op=([^"]+))?"', page)
    cells = {path for path, op in links if path.startswith("cell/") and not op}
    assert len(cells) == 6 and any(op == "repo_get" for _, op in links)
    site = Site(ViewIndex([run]))  # every page the report links to is one the viewer serves
    assert all(site.render("/" + path)[0] == 200 for path, _ in set(links))
    monkeypatch.setenv("SURFBENCH_VIEWER_URL", "view")  # an export folder beside the report
    md_path, _ = write_report([run], tmp_path / "env")
    assert "](view/op/forge/repo_get.html)" in md_path.read_text()


def test_a_wide_table_scrolls_inside_its_box():
    data = collect([REFERENCE / "forge-dev-qwen0.5b"])
    page = html_page(data, {})
    assert page.count("<table>") == page.count('<div class="scroll"><table>') > 0
    assert ".scroll{overflow-x:auto;max-width:100%}" in page


def test_cells_that_ran_different_tasks_are_flagged_above_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A stopped sequential run's report compared cells of 10, 8, 5 and 5 episodes side by side with no word; repeats
    of the same tasks (the fixture run's full x2) are not uneven, other tasks are."""
    from surfbench.bench.authoring.scaffold import ORACLE_MODEL
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    monkeypatch.setenv("SURFBENCH_SUITES", str(FIXTURES))
    model = {**ORACLE_MODEL, "script_suite": str(FOLDER)}

    def run(specs: list[CellSpec], name: str) -> str:
        cells = [resolve_cell(spec, None, model) for spec in specs]
        store = RunStore(tmp_path / name, commit_interval_s=0.0)
        store.prepare()
        store.write_run_info({"cells": [cell.provenance() for cell in cells]})
        for cell in cells:
            run_cell(cell, ModelPool(None), store, "run", client=WrongFirstCreate())  # type: ignore[arg-type]
        return markdown(collect([str(store.root)], baseline="full"), {})

    full, core = (
        CellSpec(str(FOLDER), "full", "oracle", split="all"),
        CellSpec(str(FOLDER), "core", "oracle", split="all"),
    )
    even = run([CellSpec(str(FOLDER), "full", "oracle", split="all", repeats=2), core], "even")
    assert "Cells ran different tasks" not in even
    uneven = run([full, CellSpec(str(FOLDER), "core", "oracle", split="all", limit=1)], "uneven")
    table = uneven.split("## Surfaces x models")[1].split("\n## ")[0]
    assert "Cells ran different tasks" in table and "tasks per cell: full 4, core 1)" in table
