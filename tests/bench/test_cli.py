from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from surfbench.bench.cli.cli import main
from tests.conftest import EXAMPLE_MCP, ROOT


def test_surfaces_table_and_outputs(tmp_path: Path, capsys):
    out_csv = tmp_path / "t.csv"
    assert (
        main(
            [
                "surfaces",
                "--catalog",
                str(EXAMPLE_MCP),
                "--surface",
                "full",
                "--surface",
                "dispatcher",
                "--out",
                str(out_csv),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "96 operations" in printed and "dispatcher" in printed
    rows = list(csv.DictReader(out_csv.open()))
    assert [r["surface"] for r in rows] == ["full", "dispatcher"]
    out_json = tmp_path / "t.json"
    assert main(["surfaces", "--catalog", str(EXAMPLE_MCP), "--surface", "core", "--out", str(out_json)]) == 0
    assert json.loads(out_json.read_text())[0]["tools"] == 15


def test_bad_catalog_is_one_line_exit_2(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "surfaces", "--catalog", str(bad)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and "invalid JSON" in lines[0]
    assert proc.stdout == ""


def test_unknown_surface_config_suggests(capsys):
    assert main(["surfaces", "--catalog", str(EXAMPLE_MCP), "--surface", "dispatchr"]) == 2
    assert "did you mean dispatcher" in capsys.readouterr().err


def test_bad_out_suffix_writes_nothing(tmp_path: Path, capsys):
    target = tmp_path / "t.txt"
    assert main(["surfaces", "--catalog", str(EXAMPLE_MCP), "--surface", "full", "--out", str(target)]) == 2
    assert not target.exists()


def test_default_table_names_the_embedding_surface_it_leaves_out_and_all_adds_it(tmp_path: Path, capsys):
    assert main(["surfaces", "--catalog", str(EXAMPLE_MCP), "--out", str(tmp_path / "d.json")]) == 0
    printed = capsys.readouterr().out
    default = {r["surface"] for r in json.loads((tmp_path / "d.json").read_text())}
    embedding = {"preselect_embed", "preselect_ollie"}  # the configs whose retriever needs the embedding model
    assert not embedding & default and {"full", "core", "dispatcher", "lazy", "search"} <= default
    assert "not shown: preselect_embed, preselect_ollie" in printed and "--surface all" in printed
    assert main(["surfaces", "--catalog", str(EXAMPLE_MCP), "--surface", "all", "--out", str(tmp_path / "a.json")]) == 0
    every = {r["surface"] for r in json.loads((tmp_path / "a.json").read_text())}
    assert every == default | embedding
    assert "not shown" not in capsys.readouterr().out
