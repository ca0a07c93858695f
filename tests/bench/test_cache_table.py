"""docs/results/cache.md's table is derived from the reference report (scripts/cache_table.py), never retyped."""

# ruff: noqa: E501  (a report's table rows, as `surfbench report` writes them, one per line)

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT, load_script

RUN = ROOT / "results" / "reference" / "forge-dev-qwen0.5b-llama-server"

REPORT = """# surfbench report

## Surfaces x models

| suite | model | mode | surface | episodes | prompt tok/step | eff. tok/step, $/ep (openai) | eff. tok/step, $/ep (anthropic) | eff. tok/step, $/ep (gemini) | eff. tok/step, $/ep (local) | first-try args [95% CI] | cached |
|---|---|---|---|---|---|---|---|---|---|---|---|
| forge | m | prompted | full | 2 | 11,000 | 6,000 / $0.0050 | 2,000 / $0.0500 | 1,800 / $0.0040 | 400.0 | 25% [1%, 50%] | 90% |
| forge | m | prompted | lean | 2 | 1,500 | 1,400 / $0.0010 | 1,500 / $0.0300 | 900.5 / $0.0020 | 500.0 | 0% [0%, 16%] | 70% |

## Prompt caching per provider profile (modelled)

| suite | model | mode | surface | cached (local) |
|---|---|---|---|---|
| forge | m | prompted | full | 96% |
| forge | m | prompted | lean | 71% |

## Cache breaks: the prefix changed within an episode

| suite | model | mode | surface | breaks | where (tools / system / history) |
|---|---|---|---|---|---|
| forge | m | prompted | full | 0 | 0 / 0 / 0 |
| forge | m | prompted | lean | 3 | 3 / 0 / 0 |
"""


def _run(tmp_path: Path, text: str = REPORT) -> Path:
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.md").write_text(text)
    return tmp_path


def test_table_and_ranks_from_a_report(tmp_path, capsys, monkeypatch):
    script = load_script("cache_table")
    monkeypatch.setattr("sys.argv", ["cache_table", str(_run(tmp_path))])
    assert script.main() == 0
    out = capsys.readouterr().out
    assert "| full | 11,000 | 90% | 96% | 6,000 | 2,000 | 1,800 | $0.0050 / $0.0500 / $0.0040 | 25% [1%, 50%] |" in out
    # lean is first by raw tokens and under openai and gemini, but second under anthropic and on the local slot
    assert "- lean: 1 / 1 / 1 / 1 / 2; 3 breaks (3 / 0 / 0) in 2 episodes" in out
    assert "- full: 2 / 2 / 2 / 2 / 1; 0 breaks" in out


def test_check_reports_drifted_docs(tmp_path, capsys, monkeypatch):
    script = load_script("cache_table")
    run = _run(tmp_path)
    table, _ = script.rows(run / "report" / "report.md")
    doc = tmp_path / "page.md"
    doc.write_text("# page\n\n" + "\n".join(table) + "\n\nprose\n")
    monkeypatch.setattr("sys.argv", ["cache_table", str(run), "--check", str(doc)])
    assert script.main() == 0
    doc.write_text(doc.read_text().replace("11,000", "11,001"))
    assert script.main() == 1
    assert "differs" in capsys.readouterr().err


def test_a_folder_without_a_report_is_named(tmp_path, capsys, monkeypatch):
    script = load_script("cache_table")
    monkeypatch.setattr("sys.argv", ["cache_table", str(tmp_path)])
    assert script.main() == 2
    assert "surfbench report" in capsys.readouterr().err
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.md").write_text("# surfbench report\n")
    with pytest.raises(SystemExit, match="no 'Surfaces x models' table"):
        script.rows(tmp_path / "report" / "report.md")


def test_the_results_page_matches_the_reference_report(monkeypatch):
    script = load_script("cache_table")
    monkeypatch.setattr("sys.argv", ["cache_table", str(RUN), "--check", str(ROOT / "docs/results/cache.md")])
    assert script.main() == 0, "docs/results/cache.md's table drifted: python scripts/cache_table.py <run>"
