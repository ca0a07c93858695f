"""``surfbench synth`` on a suite made by ``surfbench init --mcp``: no templates and no world hook, so the
arguments come from the live server's own answers (its list operation read once) and the phrasings from
the tools' descriptions; each task is verified against the live server, and ``surfbench check`` then
solves every task, the synthesized ones included."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.suites.suite import load_suite
from tests.bench.mcp_helpers import git_repo, processes_with

NOTES = Path(__file__).resolve().parent.parent / "fixtures" / "mcp_servers" / "notes_server.py"
MARK = f"synth-mcp-{uuid.uuid4().hex[:8]}"  # an argument the server ignores: finds only our servers


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("suites") / "notes_demo"
    assert cli_main(["init", "--mcp", f"{sys.executable} {NOTES} {MARK}", str(folder)]) == 0
    return folder


def test_synth_draws_from_the_live_servers_answers_and_verifies_on_it(suite_dir: Path, capsys):
    assert cli_main(["synth", str(suite_dir), "--n", "8", "--seed", "2", "--progress", "plain"]) == 0
    out = capsys.readouterr().out
    assert "world: live" in out and "rejected by reason:" in out and "per operation (kept/tried):" in out
    assert "add synth/tasks.jsonl to the tasks of" in out  # how to run them: the suite does not list them yet
    written = suite_dir / "synth" / "tasks.jsonl"
    rows = [json.loads(line) for line in written.read_text().splitlines()]
    assert 4 <= len(rows) <= 8 and all(r["split"] == "synth" for r in rows)
    ops = {e["op"] for r in rows for e in r.get("expected", [])}
    assert {"list_notes", "get_note"} <= ops and len(ops) >= 3
    gets = [r for r in rows if r["expected"][0]["op"] == "get_note"]
    # the ids the server listed, and the titles it answered with: read back, not invented
    assert {r["expected"][0]["args"]["note_id"] for r in gets} <= {"n1", "n2", "n3"}
    titles = {"n1": "Groceries", "n2": "Quarterly report", "n3": "Dentist"}
    for r in gets:
        assert r["answer"] == {"contains": [titles[r["expected"][0]["args"]["note_id"]]]}
        assert "get_note" not in r["turns"][0] and "note_id" not in r["turns"][0]
    before = written.read_bytes(), written.with_suffix(".md").read_bytes()
    assert cli_main(["synth", str(suite_dir), "--n", "8", "--seed", "2", "--progress", "plain"]) == 0
    assert (written.read_bytes(), written.with_suffix(".md").read_bytes()) == before  # the same answers, the same bytes
    assert f"surfbench synth {suite_dir} --n 8 --seed 2" in before[1].decode()
    assert processes_with(MARK) == []


def test_check_solves_the_synthesized_tasks_of_a_live_suite(suite_dir: Path, capsys):
    if not (suite_dir / "synth" / "tasks.jsonl").is_file():
        assert cli_main(["synth", str(suite_dir), "--n", "8", "--seed", "2", "--progress", "plain"]) == 0
    config = yaml.safe_load((suite_dir / "suite.yaml").read_text())
    config["tasks"] = [*config["tasks"], "synth/tasks.jsonl"]
    (suite_dir / "suite.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    assert {t.split for t in load_suite(str(suite_dir)).tasks} >= {"synth"}
    capsys.readouterr()
    code = cli_main(["check", str(suite_dir)])
    out = capsys.readouterr()
    synthesized = len((suite_dir / "synth" / "tasks.jsonl").read_text().splitlines())
    # the init's example tasks are starting points the check may fail; every synthesized one it solves
    failing = [line for line in out.err.splitlines() if "task 'synth-" in line]
    assert failing == [], out.err
    assert synthesized >= 4 and (code == 0 or "smoke-" in out.err or "refuse-" in out.err), out.out + out.err
    assert processes_with(MARK) == []


@pytest.mark.skipif(importlib.util.find_spec("mcp_server_git") is None, reason="n/a: mcp-server-git not installed")
def test_synth_on_the_real_git_server_from_its_answers_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    """Issue 50's target on ``mcp-server-git`` with no templates: at least 80% of the tasks asked for kept, every
    tool covered, on a repository with two branches, two commits and a change in its working tree. ``git_commit``
    and ``git_diff_staged`` cannot act alone (nothing is staged): each comes in a pair after ``git_add``."""
    repo = git_repo(tmp_path / "repo")
    run = {"cwd": repo, "check": True, "capture_output": True}
    subprocess.run(["git", "checkout", "-qb", "feature"], **run)  # type: ignore[call-overload]
    (repo / "b.txt").write_text("more\n")
    subprocess.run(["git", "add", "b.txt"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "second"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "checkout", "-q", "main"], **run)  # type: ignore[call-overload]
    (repo / "a.txt").write_text("hello\nchanged\n")
    monkeypatch.chdir(tmp_path)
    assert cli_main(["init", "--mcp", f"{sys.executable} -m mcp_server_git --repository ./repo", "mygit"]) == 0
    capsys.readouterr()
    assert cli_main(["synth", "mygit", "--n", "12", "--seed", "0", "--progress", "plain"]) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in (tmp_path / "mygit" / "synth" / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) >= 0.8 * 12, out
    ops = {e["op"] for r in rows for e in r.get("expected", [])}
    every = {"git_status", "git_diff_unstaged", "git_diff_staged", "git_diff", "git_commit", "git_add", "git_reset",
             "git_log", "git_create_branch", "git_checkout", "git_show", "git_branch"}  # fmt: skip
    assert ops == every, (sorted(every - ops), out)
    pairs = [[e["op"] for e in r["expected"]] for r in rows if len(r.get("expected") or []) == 2]
    assert ["git_add", "git_commit"] in pairs and ["git_add", "git_diff_staged"] in pairs, pairs
    assert "operations covered: 12 of 12" in out
    assert {r["expected"][0]["args"]["repo_path"] for r in rows if r.get("expected")} == {"."}
