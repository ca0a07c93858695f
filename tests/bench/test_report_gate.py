"""Reports and gates over a real (scripted-model) sweep."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main as cli
from tests.bench.test_sweep import configs, surfbench  # noqa: F401  (fixture)
from tests.conftest import ROOT

GATE = """
name: t
baseline: full
candidates: [dispatcher, core]
hot_operations: 15
criteria:
  - {kind: help_bytes_max, value: HELP, on_fail: revise}
  - {kind: prompt_tokens_ratio_max, value: 1.0, on_fail: revise}
  - {kind: first_try_drop_max, value: 0.05, on_fail: close}
  - {kind: round_trips_ratio_max, value: 1.5, on_fail: revise}
"""


@pytest.fixture
def sweep(configs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    proc = surfbench(
        configs, "-m", "surface=full,core,dispatcher", "model=oracle", "limit=18", f"results_dir={tmp_path}", "run=s"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(configs))
    return tmp_path / "s"


def test_report_writes_markdown_html_and_figures(sweep: Path, tmp_path: Path):
    out = tmp_path / "rep"
    assert cli(["report", str(sweep), "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "Scripted model in these runs" in md
    assert "| forge | oracle | native | dispatcher | 18 |" in md
    assert "Paired against `full`" in md and "McNemar" in md
    assert md.index("| repo_get | hot |") < md.index("| label_create |")  # hottest operations first
    for png in ("pareto.png", "per_op_heatmap.png"):
        assert (out / png).stat().st_size > 5000
    assert not (out / "by_size.png").exists()  # one model, one size: nothing to compare by size
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 2
    assert "<script" not in page and "http://" not in page and "https://" not in page


def test_gate_ships_when_criteria_hold_and_revises_when_help_is_too_big(sweep: Path, tmp_path: Path, capsys):
    ok = tmp_path / "ok.yaml"
    ok.write_text(GATE.replace("HELP", "1536"))
    # core has no help payloads (no evidence: revise): the exit code is the worst candidate's
    assert cli(["gate", "--criteria", str(ok), str(sweep), "--allow-scripted"]) == 1
    out = capsys.readouterr().out
    assert "decision for dispatcher: SHIP" in out and "largest 848 B (release_create)" in out
    assert "decision for core: REVISE" in out
    strict = tmp_path / "strict.yaml"
    strict.write_text(GATE.replace("HELP", "500").replace("candidates: [dispatcher, core]", "candidates: [dispatcher]"))
    assert cli(["gate", "--criteria", str(strict), str(sweep), "--allow-scripted"]) == 1
    assert "decision for dispatcher: REVISE" in capsys.readouterr().out


def test_gate_closes_on_a_decisive_accuracy_drop(sweep: Path, tmp_path: Path, capsys):
    import pandas as pd

    # make every dispatcher first try wrong in the stored episodes: a decisive drop vs full
    folder = sweep / "episodes.parquet"
    for part in folder.glob("part-*__dispatcher__*.parquet"):
        frame = pd.read_parquet(part)
        frame["first_tries"] = frame["first_tries"].str.replace('"correct": true', '"correct": false')
        frame["first_try_correct"] = 0
        frame.to_parquet(part, index=False)
    crit = tmp_path / "c.yaml"
    crit.write_text(GATE.replace("HELP", "1536").replace("candidates: [dispatcher, core]", "candidates: [dispatcher]"))
    assert cli(["gate", "--criteria", str(crit), str(sweep), "--allow-scripted"]) == 2
    assert "decision for dispatcher: CLOSE" in capsys.readouterr().out


def test_a_candidate_the_runs_lack_is_revised_with_what_to_do_and_the_others_are_judged(
    sweep: Path, tmp_path: Path, capsys
):
    """init's gate.yaml names preselect; a run without it stopped the whole gate with one line. Now the candidates
    the runs have are judged, and the missing one is revised (never shipped, never closed) saying what to run."""
    crit = tmp_path / "c.yaml"
    crit.write_text(GATE.replace("HELP", "1536").replace("[dispatcher, core]", "[dispatcher, preselect]"))
    assert cli(["gate", "--criteria", str(crit), str(sweep), "--allow-scripted"]) == 1
    out = capsys.readouterr().out
    assert "decision for dispatcher: SHIP" in out and "decision for preselect: REVISE" in out
    assert "not in the runs: no episode of surface preselect" in out and "surface=preselect" in out
    none = tmp_path / "none.yaml"
    none.write_text(GATE.replace("HELP", "1536").replace("[dispatcher, core]", "[preselect]"))
    assert cli(["gate", "--criteria", str(none), str(sweep), "--allow-scripted"]) == 2
    err = capsys.readouterr().err
    assert "candidate surface(s) preselect not in the runs (they have core, dispatcher, full)" in err


def test_gate_errors_are_exit_2(tmp_path: Path, sweep: Path, capsys):
    assert cli(["gate", "--criteria", str(tmp_path / "missing.yaml"), str(sweep)]) == 2
    assert "no such criteria file" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed (Debian package chromium)")
def test_html_report_renders_in_headless_chromium_without_console_errors(sweep: Path, tmp_path: Path):
    out = tmp_path / "rep"
    assert cli(["report", str(sweep), "--out", str(out)]) == 0
    proc = subprocess.run(
        [
            "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'ud'}",
            "--enable-logging=stderr", "--v=0", f"--screenshot={tmp_path / 'shot.png'}", "--window-size=1400,2000",
            (out / "report.html").as_uri(),
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "shot.png").stat().st_size > 10000
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line and "ERROR" in line.upper()]
    assert console == []


def test_a_baseline_too_weak_to_show_a_drop_makes_the_gate_inconclusive():
    """On the committed 0.5b reference run, `full` gets 0% first-try accuracy on the hot operations:
    "at most 5 points below full" cannot fail there, so it must not pass either."""
    from surfbench.bench.report.gate import judge

    run = ROOT / "results" / "reference" / "forge-dev-qwen0.5b"
    result = judge(ROOT / "configs" / "gate" / "dsh.yaml", [run])
    drop = [v for v in result.verdicts if v.criterion == "first_try_drop_max"]
    assert drop and all(v.outcome == "inconclusive" and "cannot show" in v.observed for v in drop)
    assert result.decisions == {"dispatcher": "revise", "core": "revise"} and result.exit_code == 1


def test_a_drop_criterion_does_not_pass_on_a_handful_of_pairs(
    configs: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys,
):
    """A newcomer's stopped run held 5 pairs; the fixed-N gate passed "at most 5 points below" on a bootstrap
    interval of them that the sequential gate left open. Below ten pairs a drop criterion is underpowered."""
    proc = surfbench(
        configs, "-m", "surface=full,core", "model=oracle", "limit=5", f"results_dir={tmp_path}", "run=few"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(configs))
    gate = tmp_path / "g.yaml"
    gate.write_text("name: t\nbaseline: full\ncriteria:\n  - {kind: first_try_drop_max, value: 0.05, on_fail: close}\n")
    assert cli(["gate", "--criteria", str(gate), str(tmp_path / "few"), "--allow-scripted"]) == 1
    out = capsys.readouterr().out
    assert "only 5 paired tasks: a pass needs at least 10" in out
    assert "decision for core: REVISE" in out
