"""A gate that a script cannot fool, and its exit code over several candidates (issue 31, item 8).

Runs of a scripted model (the oracle replays the tasks' reference calls) measure the harness, not a surface: the
gate reads that from the run folder (run.json's cells, ``provider``), prints one warning line and exits 2 with no
decision unless ``--allow-scripted``. With several candidates the exit code is the worst decision: 0 only when
every candidate ships, 1 when the worst is revise, 2 when any closes; ``--json`` gives each candidate's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from surfbench.bench.authoring.scaffold import ORACLE_MODEL
from surfbench.bench.cli.cli import main as cli
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.report.gate import judge
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore
from tests.conftest import FIXTURES, ROOT

FOLDER = FIXTURES / "alternatives"
SURFACES = ("full", "dispatcher", "core")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The oracle on full, dispatcher and core over the alternatives fixture suite, recorded as `surfbench run` does."""
    root = tmp_path_factory.mktemp("gate") / "run"
    model = {**ORACLE_MODEL, "script_suite": str(FOLDER)}
    cells = [resolve_cell(CellSpec(str(FOLDER), s, "replayer", split="all"), None, model) for s in SURFACES]
    store = RunStore(root, commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": [c.provenance() for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "run", client=OracleClient(str(FOLDER)))
    return root


@pytest.fixture(autouse=True)
def suites_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SURFBENCH_SUITES", str(FIXTURES))
    monkeypatch.delenv("SURFBENCH_DEBUG", raising=False)


def criteria(tmp_path: Path, candidates: list[str], help_max: int, on_fail: str = "revise") -> Path:
    """Help size only: dispatcher has help payloads (within ``help_max`` or not), core and full have none."""
    path = tmp_path / f"gate-{'-'.join(candidates)}-{help_max}.yaml"
    spec = {
        "name": "t",
        "baseline": "full",
        "candidates": candidates,
        "criteria": [{"kind": "help_bytes_max", "value": help_max, "on_fail": on_fail}],
    }
    path.write_text(yaml.safe_dump(spec))
    return path


def test_the_run_folder_says_its_model_is_scripted(run: Path):
    assert judge(criteria(run.parent, ["dispatcher"], 100_000), [run]).scripted == ("replayer",)
    recorded = json.loads((run / "run.json").read_text())["cells"]
    assert {c["provider"] for c in recorded} == {"scripted"}
    real = ROOT / "results" / "reference" / "forge-dev-qwen0.5b"  # a recorded run of a real model
    assert judge(ROOT / "configs" / "gate" / "dsh.yaml", [real]).scripted == ()


def test_a_gate_over_a_scripted_run_is_one_warning_line_and_exit_2(run: Path, tmp_path: Path, capsys):
    out = tmp_path / "gate.txt"
    for extra in ((), ("--json",)):
        code = cli(["gate", "--criteria", str(criteria(tmp_path, ["dispatcher"], 100_000)), str(run), *extra])
        captured = capsys.readouterr()
        assert code == 2 and captured.out == "", captured.out
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1, captured.err
        assert all(w in lines[0] for w in ("scripted model (replayer)", "no decision", "--allow-scripted")), lines
    assert (
        cli(["gate", "--criteria", str(criteria(tmp_path, ["dispatcher"], 100_000)), str(run), "--out", str(out)]) == 2
    )
    assert not out.exists()


def test_allow_scripted_judges_it_with_the_warning_on_top(run: Path, tmp_path: Path, capsys):
    code = cli(["gate", "--criteria", str(criteria(tmp_path, ["dispatcher"], 100_000)), str(run), "--allow-scripted"])
    out = capsys.readouterr().out
    assert code == 0 and "decision for dispatcher: SHIP" in out, out
    assert out.splitlines()[1].startswith("warning: the runs hold episodes of a scripted model (replayer)"), out


def test_a_run_recorded_with_a_real_provider_needs_no_flag(run: Path, tmp_path: Path, capsys):
    """The flag is read from run.json alone: the same episodes recorded as another provider's are judged."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    info = json.loads((copy / "run.json").read_text())
    for cell in info["cells"]:
        cell["provider"] = "local"
    (copy / "run.json").write_text(json.dumps(info))
    code = cli(["gate", "--criteria", str(criteria(tmp_path, ["dispatcher"], 100_000)), str(copy)])
    out = capsys.readouterr().out
    assert code == 0 and "decision for dispatcher: SHIP" in out and "scripted" not in out, out


@pytest.mark.parametrize(
    ("candidates", "help_max", "on_fail", "decisions", "code"),
    [
        (["dispatcher"], 100_000, "revise", {"dispatcher": "ship"}, 0),
        (["dispatcher", "core"], 100_000, "revise", {"dispatcher": "ship", "core": "revise"}, 1),  # used to be 0
        (["dispatcher", "core"], 1, "close", {"dispatcher": "close", "core": "revise"}, 2),  # used to be 1
    ],
    ids=["all-ship", "worst-revise", "any-close"],
)
def test_with_several_candidates_the_exit_code_is_the_worst_and_json_gives_each_its_own(
    run: Path, tmp_path: Path, capsys, candidates, help_max, on_fail, decisions, code
):
    path = criteria(tmp_path, candidates, help_max, on_fail)
    assert cli(["gate", "--criteria", str(path), str(run), "--allow-scripted"]) == code
    table = capsys.readouterr().out
    assert all(f"decision for {c}: {d.upper()}" in table for c, d in decisions.items()), table
    assert cli(["gate", "--criteria", str(path), str(run), "--allow-scripted", "--json"]) == code
    got = json.loads(capsys.readouterr().out)
    assert got["exit_code"] == code and got["scripted"] == ["replayer"]
    assert {c: v["decision"] for c, v in got["candidates"].items()} == decisions
    assert {c: v["exit_code"] for c, v in got["candidates"].items()} == {c: EXITS[d] for c, d in decisions.items()}
    assert all(set(v["models"]) == {"replayer"} for v in got["candidates"].values()), got


EXITS = {"ship": 0, "revise": 1, "close": 2}
