"""docs/suites.md's worked example of synthesis templates runs as written (issue 50: nobody reads source to
write one): its world.py and templates.yaml, copied from the page into a suite made by ``init --mcp`` over the
knowledge-graph test server, make tasks for every templated operation and the pair, all verified."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main as cli_main
from tests.bench.test_synth_graph import graph_suite
from tests.conftest import ROOT

DOCS = ROOT / "docs" / "suites.md"


def block(marker: str) -> str:
    """The fenced block after ``<!-- synth example: NAME -->`` in docs/suites.md."""
    text = DOCS.read_text()
    found = re.search(rf"<!-- synth example: {re.escape(marker)} -->\n```\w+\n(.*?)```", text, re.DOTALL)
    assert found, f"docs/suites.md has no '{marker}' example block"
    return found.group(1)


def test_the_documented_templates_make_verified_tasks_for_each_template_and_the_pair(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, _, _ = graph_suite(tmp_path)
    (suite / "synth").mkdir()
    (suite / "synth" / "world.py").write_text(block("world.py"))
    (suite / "synth" / "templates.yaml").write_text(block("templates.yaml"))

    capsys.readouterr()
    assert cli_main(["synth", str(suite), "--n", "12", "--seed", "0", "--progress", "plain"]) == 0
    out = capsys.readouterr().out
    assert "world: hook" in out and "unresolved" not in out.split("rejected by reason:")[1].splitlines()[0], out
    rows = [json.loads(line) for line in (suite / "synth" / "tasks.jsonl").read_text().splitlines()]
    assert len(rows) >= 10, out
    templates = {r["meta"]["synth"]["template"].split(".")[0] for r in rows}
    assert {"create_entities", "add_observations", "delete_relations", "pair:hire"} <= templates, templates
    hire = next(r for r in rows if r["meta"]["synth"]["template"].startswith("pair:hire"))
    assert [e["op"] for e in hire["expected"]] == ["create_entities", "create_relations"]
    who = hire["expected"][0]["args"]["entities"]["$list"][0]["name"]
    assert who in ("Dana Reyes", "Lena Okafor", "Tomas Berg") and who in hire["turns"][0]
