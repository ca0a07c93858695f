"""``surfbench synth`` is a function of the suite, its templates, N and the seed: the same command writes the same
bytes, another seed other tasks, and the command in a shipped file's header regenerates that file exactly."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

SHIPPED = {
    "forge": ROOT / "tasks" / "forge" / "synth" / "tasks.jsonl",
    "git": ROOT / "tasks" / "git" / "synth" / "tasks.jsonl",
}


def header_command(path: Path) -> list[str]:
    """The regenerating command a task file names: in its YAML header, or in the tasks.md beside its JSON lines."""
    text = path.with_suffix(".md") if path.suffix == ".jsonl" else path
    lines = [line.removeprefix("#").strip() for line in text.read_text(encoding="utf-8").splitlines()]
    at = next(i for i, line in enumerate(lines) if line.endswith("regenerate with:"))
    return shlex.split(next(line for line in lines[at + 1 :] if line.startswith("surfbench synth")))


def synth(folder: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> bytes:
    """The bytes ``surfbench synth ARGS --out tasks.yaml`` writes, run in ``folder`` (the header names the path)."""
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert cli_main(["synth", *args, "--out", "tasks.yaml", "--progress", "plain"]) == 0
    return (folder / "tasks.yaml").read_bytes()


def test_the_same_seed_gives_the_same_bytes_and_another_seed_other_tasks(tmp_path: Path, monkeypatch):
    first = synth(tmp_path / "a", monkeypatch, "forge", "--n", "40", "--seed", "3")
    again = synth(tmp_path / "b", monkeypatch, "forge", "--n", "40", "--seed", "3")
    other = synth(tmp_path / "c", monkeypatch, "forge", "--n", "40", "--seed", "4")
    assert first == again
    rows, others = yaml.safe_load(first), yaml.safe_load(other)
    assert len(rows) == 40 and {r["turns"][0] for r in rows} != {r["turns"][0] for r in others}
    assert all(r["meta"]["synth"]["seed"] == 3 and r["split"] == "synth" for r in rows)
    command = ["surfbench", "synth", "forge", "--n", "40", "--seed", "3", "--out", "tasks.yaml"]
    assert header_command(tmp_path / "a" / "tasks.yaml") == command


@pytest.mark.parametrize("suite", ["forge", "git"])
def test_a_shipped_set_is_its_suites_split_synth_and_names_its_command(suite: str):
    path = SHIPPED[suite]
    command = header_command(path)
    assert command[:3] == ["surfbench", "synth", suite] and "--out" not in command  # the suite's default file
    n = int(command[command.index("--n") + 1])
    loaded = load_suite(suite)
    synthesized = [t for t in loaded.tasks if t.split == "synth"]
    assert {t.source for t in synthesized} == {str(path)}
    assert len(synthesized) == n >= (1000 if suite == "forge" else 300)
    covered = {t.expected[-1].op for t in synthesized if t.expected} | {e.op for t in synthesized for e in t.expected}
    assert len(covered) >= (90 if suite == "forge" else 12)
    assert all(t.meta["synth"]["seed"] == int(command[command.index("--seed") + 1]) for t in synthesized)


def test_the_forge_headers_command_regenerates_the_shipped_file_byte_for_byte(tmp_path: Path, monkeypatch):
    # the command as written (no --out: the suite's own synth/tasks.yaml), run on a copy of the suite found first
    copy = tmp_path / "suites" / "forge"
    shutil.copytree(ROOT / "tasks" / "forge", copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("SURFBENCH_SUITES", str(tmp_path / "suites"))
    command = header_command(SHIPPED["forge"])
    assert cli_main([*command[1:], "--progress", "plain"]) == 0
    assert (copy / "synth" / "tasks.jsonl").read_bytes() == SHIPPED["forge"].read_bytes()
    assert (copy / "synth" / "tasks.md").read_bytes() == SHIPPED["forge"].with_suffix(".md").read_bytes()
