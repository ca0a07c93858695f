"""Gates and reports agree on broken runs (issue 27, item 4): a run.json whose cells are not the objects a run
writes, or that records another run's cells, is one error line naming the file and exit 2 for both commands,
never a verdict (the gate used to say REVISE, with ``help_bytes_max`` quietly "no evidence", while the report
crashed or printed numbers). A criteria file that cannot be one is blamed on itself, not on the run folder.
Scripted oracle model throughout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.cli.cli import main as cli_main
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: forge\nparams_b: 0.0\nmode: native\n"
GATE = """
name: broken
baseline: full
candidates: [dispatcher]
criteria:
  - {kind: help_bytes_max, value: 1536, on_fail: revise}
  - {kind: first_try_drop_max, value: 0.05, on_fail: close}
"""


def run_cli(configs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"}
    cmd = [sys.executable, "-m", "surfbench", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cfg") / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE)
    (folder / "gate" / "broken.yaml").write_text(GATE)
    return folder


@pytest.fixture(scope="module")
def made(configs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two finished runs, made once: ``good`` (full and dispatcher) and ``other`` (core), another run folder."""
    results = tmp_path_factory.mktemp("made")
    common = ("model=oracle", "limit=10", f"results_dir={results}")
    proc = run_cli(configs, "run", "-m", "surface=full,dispatcher", *common, "run=good")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_cli(configs, "run", "surface=core", *common, "run=other")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results


@pytest.fixture
def run(made: Path, tmp_path: Path, configs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the good run, free to damage; the CLI is called in this process."""
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(configs))
    monkeypatch.delenv("SURFBENCH_DEBUG", raising=False)
    shutil.copytree(made / "good", tmp_path / "good")
    return tmp_path / "good"


def gate(configs: Path, run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(["gate", "--criteria", str(configs / "gate" / "broken.yaml"), str(run), "--allow-scripted"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def report(run: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli_main(["report", str(run), "--out", str(run / "report")])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("surfbench: error: ") and "Traceback" not in err, err[-3000:]
    return lines[0]


def edit_cells(run: Path, change: Callable[[list[Any]], Any]) -> None:
    path = run / "run.json"
    info = json.loads(path.read_text())
    info["cells"] = change(info["cells"])
    path.write_text(json.dumps(info))


def _other_cells(made: Path) -> list[Any]:
    cells: list[Any] = json.loads((made / "other" / "run.json").read_text())["cells"]
    return cells


def _surface_as_text(cells: list[Any]) -> list[Any]:
    return [{**c, "identity": {**c["identity"], "surface": "full"}} for c in cells]


BROKEN: dict[str, tuple[Callable[[Path, Path], Any], str]] = {
    "cells [1, 2]": (lambda run, _: edit_cells(run, lambda _: [1, 2]), "cells[0] is 1 (a number), not a cell object"),
    "cells []": (lambda run, _: edit_cells(run, lambda _: []), "records no cell for 20 of the 20 episode(s)"),
    "cells [{}]": (lambda run, _: edit_cells(run, lambda _: [{}]), "cells[0] has no cell_id, suite, surface"),
    "another run's run.json": (
        lambda run, made: shutil.copy(made / "other" / "run.json", run / "run.json"),
        "records no cell for 20 of the 20 episode(s)",
    ),
    "cells without identity": (
        lambda run, _: edit_cells(run, lambda cells: [{k: v for k, v in c.items() if k != "identity"} for c in cells]),
        "cells[0] has no identity",
    ),
    "one cell swapped for another run's": (
        lambda run, made: edit_cells(run, lambda cells: [*_other_cells(made), cells[0]]),
        "records no cell for 10 of the 20 episode(s)",
    ),
    "identity.surface as text": (
        lambda run, _: edit_cells(run, _surface_as_text),
        "identity.surface is not an object",
    ),
    "task_hashes a list": (
        lambda run, _: edit_cells(run, lambda cells: [{**c, "task_hashes": []} for c in cells]),
        "field task_hashes is a list, not an object",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_a_broken_run_json_is_one_line_and_exit_2_for_gate_and_report(
    configs: Path, made: Path, run: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    code, out, _ = gate(configs, run, capsys)  # the intact run: its normal verdict, help sizes measured
    assert code == 0 and "decision for dispatcher: SHIP" in out, out
    assert "no evidence" not in out and "largest" in out, out

    damage, problem = BROKEN[case]
    damage(run, made)
    code, out, err = gate(configs, run, capsys)
    assert code == 2 and "decision" not in out, out
    line = one_error_line(err)
    assert str(run / "run.json") in line and problem in line, line
    assert "run.json" in line.split(problem)[-1], line  # and what to do: put back the run's own run.json

    code, out, err = report(run, capsys)
    assert code == 2, out
    assert one_error_line(err) == line  # the same refusal, word for word
    assert not (run / "report").exists()


# -- criteria files ------------------------------------------------------------------------------------------
NOT_UTF8 = b"name: t\ncriteria:\n  - {kind: help_bytes_max, value: \xff\xfe}\n"
DEEP = "name: t\ncriteria: " + "[" * 200 + "]" * 200 + "\n"
CRITERIA: dict[str, tuple[Callable[[Path], Any], str]] = {
    "not UTF-8": (lambda p: p.write_bytes(NOT_UTF8), "the criteria file is not UTF-8"),
    "a directory": (lambda p: p.mkdir(), "the criteria file is a directory"),
    "nested 200 levels deep": (lambda p: p.write_text(DEEP), "the criteria file nests more than 16 levels"),
}


@pytest.mark.parametrize("case", list(CRITERIA), ids=list(CRITERIA))
def test_an_unreadable_criteria_file_is_one_line_naming_it(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    path = tmp_path / "criteria.yaml"
    make, problem = CRITERIA[case]
    make(path)
    assert cli_main(["gate", "--criteria", str(path), str(run)]) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert line.startswith(f"surfbench: error: {path}: ") and problem in line, line
    assert "run folder" not in line and "decision" not in captured.out, line
