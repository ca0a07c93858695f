"""``surfbench synth`` on a suite made by ``surfbench init --mcp``: no templates and no world hook, so the
arguments come from the live server's own answers (its list operation read once) and the phrasings from
the tools' descriptions; each task is verified against the live server, and ``surfbench check`` then
solves every task, the synthesized ones included."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.suites.suite import load_suite
from tests.bench.mcp_helpers import processes_with

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
