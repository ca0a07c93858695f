"""``surfbench synth``'s command line at fault: every output path is checked before the synthesis starts (one line,
exit 2, nothing written, no file lost), and an interrupt says what is true (issue 49)."""

from __future__ import annotations

from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.synth.synth_run import Synthesizer

HAND = "- id: mine\n  turns: [hello]\n"
"""A hand-written task file that synth must not overwrite."""


@pytest.fixture
def never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The synthesis itself fails the test: a refused --out must cost no work."""

    def run(self: Synthesizer) -> None:
        raise AssertionError("the synthesis ran before its --out was checked")

    monkeypatch.setattr(Synthesizer, "run", run)


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one error line of ``surfbench synth forge --n 5 ARGS``, which exits 2 and prints nothing else."""
    assert cli_main(["synth", "forge", "--n", "5", "--progress", "plain", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1, captured.err
    return captured.err.strip()


def test_an_out_whose_what_made_them_file_is_itself_is_refused(tmp_path: Path, monkeypatch, capsys, never_runs):
    monkeypatch.chdir(tmp_path)
    assert refused(capsys, "--out", "x.md") == (
        "surfbench: error: --out x.md: the tasks and what made them (x.md, written beside JSON lines) would be "
        "the same file; name a .jsonl or a .yaml file"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_out_that_is_a_folder_is_one_line(tmp_path: Path, monkeypatch, capsys, never_runs):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    assert refused(capsys, "--out", "out") == (
        "surfbench: error: --out out: the task file is a folder; name a file, e.g. out/tasks.jsonl"
    )
    assert list((tmp_path / "out").iterdir()) == []


def test_a_what_made_them_file_that_is_a_folder_is_one_line(tmp_path: Path, monkeypatch, capsys, never_runs):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.md").mkdir()
    assert refused(capsys, "--out", "x.jsonl") == (
        "surfbench: error: --out x.jsonl: x.md (what made the tasks, written beside them) is a folder; name a file"
    )


def test_an_out_under_a_file_is_one_line(tmp_path: Path, monkeypatch, capsys, never_runs):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").write_text("mine\n")
    assert refused(capsys, "--out", "notes/sub/x.jsonl") == (
        "surfbench: error: --out notes/sub/x.jsonl: notes is a file, not a folder; name a file in a folder"
    )
    assert (tmp_path / "notes").read_text() == "mine\n"


@pytest.mark.parametrize(("out", "kept"), [("tasks.yaml", "tasks.yaml"), ("x.jsonl", "x.md"), ("x.jsonl", "x.jsonl")])
def test_a_file_synth_did_not_write_is_not_overwritten(tmp_path: Path, monkeypatch, capsys, never_runs, out, kept):
    monkeypatch.chdir(tmp_path)
    (tmp_path / kept).write_text(HAND)
    what = "the task file" if kept == out else f"{kept} (what made the tasks, written beside them)"
    assert refused(capsys, "--out", out) == (
        f"surfbench: error: --out {out}: {what} exists and synth did not write it; name another file (or remove it)"
    )
    assert (tmp_path / kept).read_text() == HAND and sorted(p.name for p in tmp_path.iterdir()) == [kept]


def test_an_interrupt_says_nothing_was_written_and_keeps_the_old_file(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.jsonl").write_text("")

    def run(self: Synthesizer) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Synthesizer, "run", run)
    assert cli_main(["synth", "forge", "--n", "5", "--out", "x.jsonl", "--progress", "plain"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == (
        "surfbench: interrupted; nothing written (synth writes its tasks once all are made), "
        "re-run the same command to start again"
    )
    assert "saved" not in err and sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]
