"""The results pages' numbers come from their run folders (scripts/references.py, issue 52): a generated block
that differs from what its runs give fails here, with the page, the line and the command that rewrites it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import ROOT, load_script

RUN = "results/reference/forge-dev-qwen0.5b-llama-server"
PAGE = f"""# A page

Prose the script never touches: 99% of nothing.

<!-- surfbench:generated provenance runs={RUN} -->
stale line
<!-- surfbench:end -->

<!-- surfbench:generated cells runs={RUN} columns="surface|episodes|success" -->
| surface | episodes | success |
|---|---|---|
| full | 1 | 100% |
<!-- surfbench:end -->

The end.
"""


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    module = load_script("references")
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    monkeypatch.setattr(module, "pages", lambda: [page])
    monkeypatch.setattr(module, "ROOT", ROOT)
    return module, page


def test_a_stale_block_is_named_then_rewritten_from_its_run_and_the_prose_is_left_alone(
    script, capsys: pytest.CaptureFixture[str]
):
    module, page = script
    page_rel = page  # outside the repository: named by its whole path
    assert module.cmd_pages(check=True) == 1
    err = capsys.readouterr().err
    assert f"{page_rel}:5 (provenance)" in err and f"{page_rel}:9 (cells)" in err, err
    assert page.read_text() == PAGE  # --check writes nothing

    assert module.cmd_pages(check=False) == 0
    text = page.read_text()
    assert text.startswith("# A page\n\nProse the script never touches: 99% of nothing.\n") and text.endswith(
        "The end.\n"
    )
    assert "llama-server" in text and "repeat_penalty 1.0" in text and "GGUF sha256 1d9614638d18" in text
    table = text.split('columns="surface|episodes|success" -->\n')[1].split("<!--")[0].splitlines()
    assert table[0] == "| surface | episodes | success |" and len(table) == 2 + 8  # a row per surface (8)
    assert any(row.startswith("| full | 45 |") for row in table), table
    assert module.cmd_pages(check=True) == 0


def test_an_unknown_column_names_the_columns_there_are(script):
    module, page = script
    page.write_text(PAGE.replace("surface|episodes|success", "surface|wibble"))
    with pytest.raises(SystemExit, match=r"no column \['wibble'\] in the cells table; it has: suite \| model"):
        module.cmd_pages(check=True)


def test_surfaces_keeps_those_cells_in_the_runs_order_and_names_one_the_runs_lack(script):
    module, page = script
    cut = 'columns="surface|episodes" surfaces=preselect,full'
    page.write_text(PAGE.replace('columns="surface|episodes|success"', cut))
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().split("surfaces=preselect,full -->\n")[1].split("<!--")[0].splitlines()
    assert table[2:] == ["| full | 45 |", "| preselect | 45 |"], table  # the report's order, not the parameter's
    page.write_text(PAGE.replace('columns="surface|episodes|success"', 'columns="surface" surfaces=full,code'))
    with pytest.raises(SystemExit, match=r"surfaces=full,code: no cell of \['code'\] in the runs"):
        module.cmd_pages(check=True)


def test_compare_over_runs_of_several_suites_names_the_suite_of_each_row(script):
    module, page = script
    bfcl = "results/reference/llama-cpp-python/bfcl-dev-qwen0.5b"  # a suite per BFCL category, all on `full`
    block = f'<!-- surfbench:generated compare old={bfcl} new={bfcl} columns="success" -->'
    page.write_text(block + "\n<!-- surfbench:end -->\n")
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().splitlines()[1:-1]
    assert table[0] == "| suite | surface | success, old | success, new |"
    assert "| bfcl:simple_python | full | 73% | 73% |" in table and len(table) == 2 + 7, table


def test_compare_keeps_the_surfaces_named_so_a_run_with_fewer_cells_shows_no_empty_rows(script):
    module, page = script
    old, new = "results/reference/forge-dev-qwen0.5b", "results/reference/forge-dev-qwen0.5b-llama-server"
    block = f'<!-- surfbench:generated compare old={old} new={new} columns="success" surfaces=preselect,full -->'
    page.write_text(block + "\n<!-- surfbench:end -->\n")
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().splitlines()[1:-1]
    assert [row.split(" | ")[0] for row in table[2:]] == ["| full", "| preselect"], table  # the runs' order
    page.write_text(block.replace("preselect,full", "full,lazy_appendix") + "\n<!-- surfbench:end -->\n")
    with pytest.raises(SystemExit, match=r"no cell of \['lazy_appendix'\] in the runs"):
        module.cmd_pages(check=True)


def test_every_results_page_and_the_readme_match_their_run_folders():
    module = load_script("references")
    assert module.cmd_pages(check=True) == 0, "a page drifted from its runs: python scripts/references.py pages"


def test_run_refuses_to_resume_into_a_folder_of_the_old_engine_before_any_model_time(monkeypatch):
    """A reference re-measured on the default engine must not mix its cells into the old engine's folder."""
    module = load_script("references")
    old = module.Reference("forge-dev-qwen0.5b", ("suite=forge",), ())
    monkeypatch.setattr(module, "REFERENCES", (old,))
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(SystemExit, match=r"holds runs on llama-cpp-python; .*git mv results/reference/forge-dev"):
        module.cmd_run([])
    assert module.other_engine(ROOT / RUN) is None  # the default engine's folder resumes


def test_run_writes_the_pages_once_every_run_is_whole_and_not_after_a_run_stops(monkeypatch):
    """`references.py run` is the one command: its runs, then the pages from them; a stopped run leaves them."""
    module = load_script("references")
    monkeypatch.setattr(module, "REFERENCES", (module.Reference("a", ("suite=forge",), ()),))
    monkeypatch.setattr(module, "other_engine", lambda folder: None)
    written: list[bool] = []
    monkeypatch.setattr(module, "cmd_pages", lambda check: written.append(check) or 0)
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=0))
    assert module.cmd_run([]) == 0 and written == [False]
    assert module.cmd_run([], write_pages=False) == 0 and written == [False]
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: SimpleNamespace(returncode=3))
    assert module.cmd_run([]) == 3 and written == [False]


def test_a_scale_reference_is_refused_before_any_model_time_when_the_pool_lacks_a_source(monkeypatch):
    """Without the npm packs the pool is Gitea and BFCL alone: the grown catalogs would be others than recorded."""
    import surfbench.bench.catalog.pool as pool

    module = load_script("references")
    scale = module.Reference("scale-somewhere", ("+sweep=scale",), (), whole_pool=True)
    monkeypatch.setattr(module, "REFERENCES", (scale,))
    monkeypatch.setattr(module.subprocess, "run", lambda *a, **k: pytest.fail("a run started"))
    lacking = pool.Pool((), {"gitea": 268}, {"github": "no octokit-openapi-23.0.2.tgz"}, "0" * 16)
    monkeypatch.setattr(pool, "load_pool", lambda **k: lacking)
    with pytest.raises(SystemExit, match=r"lacks github \(no octokit.*surfbench pool fetch-github && surfbench pool"):
        module.cmd_run([])


def test_a_paired_block_gives_each_candidate_against_its_baseline_and_needs_a_baseline(script):
    module, page = script
    block = f'<!-- surfbench:generated paired runs={RUN} baseline=full columns="candidate|vs|pairs|McNemar p" -->'
    page.write_text(f"# A page\n\n{block}\n<!-- surfbench:end -->\n")
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().split("-->\n")[1].split("<!--")[0].splitlines()
    assert table[0] == "| candidate | vs | pairs | McNemar p |"
    assert len(table) == 2 + 7 and all("| full | 45 |" in row for row in table[2:]), table  # 7 surfaces against full
    page.write_text(f"# A page\n\n{block.replace(' baseline=full', '')}\n<!-- surfbench:end -->\n")
    with pytest.raises(SystemExit, match="a paired block needs baseline=SURFACE"):
        module.cmd_pages(check=True)


def test_a_workspace_block_gives_each_cells_failure_modes_and_the_calls_to_tools_a_surface_lacks(script):
    module, page = script
    old = "results/reference/llama-cpp-python/workspace-all"
    page.write_text(f"<!-- surfbench:generated workspace runs={old} -->\n<!-- surfbench:end -->\n")
    assert module.cmd_pages(check=False) == 0
    lines = page.read_text().splitlines()[1:-1]
    assert lines[0].startswith("| model | surface | episodes | success |") and "not_exposed" in lines[0]
    assert "| 1.5b | bash | 43 | 14% (6) | 2.6 |" in "\n".join(lines) and len(lines[2:10]) == 8  # 2 sizes x 4
    assert lines[-1].startswith("calls to tools the surface lacks: 930; naming a tools/ script: 397"), lines[-1]
    page.write_text(f"<!-- surfbench:generated workspace runs={RUN} -->\n<!-- surfbench:end -->\n")
    with pytest.raises(SystemExit, match="no workspace episode"):  # a forge run
        module.cmd_pages(check=True)


def test_a_scale_block_gives_each_surface_at_each_catalog_size_and_names_what_does_not_fit(script):
    module, page = script
    runs = "results/reference/scale-dev-qwen0.5b"  # 0.5B at 96 ... 10,000 operations
    block = f'<!-- surfbench:generated scale runs={runs} columns="surface|operations (N)|first-try args [95% CI]" '
    page.write_text(block + "surfaces=full,preselect -->\n<!-- surfbench:end -->\n")
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().splitlines()[1:-1]
    assert table[0] == "| surface | operations (N) | first-try args [95% CI] |" and len(table) == 2 + 2 * 5, table
    assert "| full | 256 | does not fit |" in table and "| preselect | 10,000 | 4% [1%, 14%] |" in table, table
    page.write_text(block + "surfaces=full,preselct -->\n<!-- surfbench:end -->\n")
    with pytest.raises(SystemExit, match=r"no cell of \['preselct'\] in the runs"):  # a misspelt surface
        module.cmd_pages(check=True)
    page.write_text(f"<!-- surfbench:generated scale runs={RUN} -->\n<!-- surfbench:end -->\n")
    with pytest.raises(SystemExit, match="the runs hold one catalog size"):
        module.cmd_pages(check=True)


def test_a_wide_scale_block_puts_each_catalog_size_in_a_column(script):
    module, page = script
    runs = "results/reference/scale-dev-qwen0.5b"
    block = f"<!-- surfbench:generated scale runs={runs} wide=true surfaces=dispatcher,preselect columns="
    page.write_text(block + '"first-try args [95% CI]|selection" -->\n<!-- surfbench:end -->\n')
    assert module.cmd_pages(check=False) == 0
    table = page.read_text().splitlines()[1:-1]
    assert table[0] == "| model | surface | N = 96 | N = 256 | N = 1,024 | N = 4,096 | N = 10,000 |", table
    dispatcher = next(row for row in table if "| dispatcher |" in row)
    assert "| 2% [0%, 11%] · 27% | 0% [0%, 7%] · 9% | does not fit | does not fit | does not fit |" in dispatcher, (
        dispatcher
    )  # the old page's hand-typed 2% · 27% and 0% · 9%
    assert table[-1].endswith("| 4% [1%, 14%] · 27% |") and len(table) == 2 + 2, table
    page.write_text(block + '"surface|operations (N)" -->\n<!-- surfbench:end -->\n')
    with pytest.raises(SystemExit, match="a wide scale block needs columns= with a metric"):
        module.cmd_pages(check=True)
