"""The own-server journey end to end (issue 50's first "done when"): a stdio server started as
``env MEMORY_FILE_PATH=<the user's file> ./.venv/bin/python -m <server>``, the way a newcomer runs a server
installed in a virtual environment of its own, through ``init``, ``check``, ``synth`` and a plumbing run.

The server module is installed only in that venv, so an interpreter resolved through its symlink to the base
Python cannot import it (the fault the issue found); the graph file the variable names is the user's data,
which must be byte-identical at the end; and a write outside the copy, planted afterwards, stops ``check``
with one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.store.results import load_runs
from tests.bench.test_synth_graph import SEED, STATE_PY
from tests.conftest import FIXTURES

GRAPH_SERVER = FIXTURES / "mcp_servers" / "graph_server.py"
MODULE = "graph_memory_server"  # the server's module name inside the user's venv, as `-m mcp_server_git`


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (links followed) -> sha256 of its bytes."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def user_venv(project: Path) -> Path:
    """``project/.venv``: a real venv (its python a symlink to the base interpreter) holding the server module."""
    venv = project / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    (site,) = venv.glob("lib/python*/site-packages")
    shutil.copy(GRAPH_SERVER, site / f"{MODULE}.py")
    python = venv / "bin" / "python"
    assert python.is_symlink() or os.path.realpath(python) != str(python)
    base = subprocess.run([os.path.realpath(python), "-c", f"import {MODULE}"], capture_output=True)
    assert base.returncode != 0, "the base interpreter must not import the server: the test would prove nothing"
    return venv


def test_env_path_and_relative_venv_interpreter_through_init_check_synth_and_a_plumbing_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    seed = project / "seed"
    seed.mkdir(parents=True)
    (seed / "memory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SEED))
    user_venv(project)
    slots = tmp_path / "tmp"
    slots.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("TMPDIR", str(slots))
    before = {"seed": digest(seed), "venv": digest(project / ".venv")}

    command = f"env MEMORY_FILE_PATH={seed}/memory.jsonl ./.venv/bin/python -m {MODULE}"
    assert cli_main(["init", "--mcp", command, "--fixture", "seed", "suites/mem"]) == 0
    suite = project / "suites" / "mem"
    mcp = yaml.safe_load((suite / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["command"] == str(project / ".venv" / "bin" / "python")  # as given, made absolute, not resolved
    assert mcp["env"] == {"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}
    (suite / "state.py").write_text(STATE_PY)
    config = yaml.safe_load((suite / "suite.yaml").read_text())
    config["backend_options"] = {"state": "state.py:graph"}
    (suite / "suite.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    assert cli_main(["synth", "suites/mem", "--n", "8", "--seed", "0", "--progress", "plain"]) == 0
    config["tasks"] = ["synth/tasks.jsonl"]  # only the synthesized ones: init's examples are starting points
    (suite / "suite.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    kept = len((suite / "synth" / "tasks.jsonl").read_text().splitlines())
    assert kept >= 4
    capsys.readouterr()
    assert cli_main(["check", "suites/mem"]) == 0, capsys.readouterr()
    assert f"oracle solves {kept}/{kept}" in capsys.readouterr().out

    env = {
        **os.environ,
        "CI": "true",
        "TMPDIR": str(slots),
        "SURFBENCH_SUITES": str(project / "suites"),
        "SURFBENCH_CONFIGS": str(suite / "configs"),
        "SURFBENCH_CACHE": str(tmp_path / "cache"),
    }
    plumbing_run = ["run", "suite=mem", "surface=full", "model=oracle", "split=synth", "run=mem-plumbing"]
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", *plumbing_run], cwd=project, env=env, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    plumbing = load_runs([project / "results" / "mem-plumbing"])
    assert len(plumbing) == kept and plumbing["success"].all()

    assert {"seed": digest(seed), "venv": digest(project / ".venv")} == before  # the user's folder, byte for byte

    # planted: the server pointed at the user's file behind init's back; check stops, one line, naming it
    config["catalog"]["mcp"]["env"] = {"MEMORY_FILE_PATH": str(seed / "memory.jsonl")}
    (suite / "suite.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    capsys.readouterr()
    assert cli_main(["check", "suites/mem"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed your data outside its working copy" in err[0], err
    assert f"{seed / 'memory.jsonl'} (changed)" in err[0], err
