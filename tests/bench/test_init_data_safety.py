"""Nothing outside the copy (issue 50): ``init --mcp`` points every path of the server's command line and
environment at the copy, refuses any other path it could change, keeps a venv's interpreter as given, and
``check`` stops with one line when a server changes the user's data anyway.

The small file server of the recipe tests (it serves ``FILES_ROOT`` and appends each write to ``FILES_LOG``,
as a knowledge-graph server keeps its graph in the file an environment variable names); the scripted oracle.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from tests.conftest import FIXTURES

SERVER = FIXTURES / "mcp_servers" / "files_server.py"
WRITE = [
    {
        "id": "write-note",
        "split": "dev",
        "tags": ["single", "write"],
        "turns": ["Write 'hello' into new.md."],
        "expected": [{"op": "write_file", "args": {"path": "new.md", "text": "hello"}}],
    }
]


def digest(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` -> sha256 of its bytes."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project: the server script, a seed folder with a graph file, run from there."""
    shutil.copy(SERVER, tmp_path / "files_server.py")
    seed = tmp_path / "seed"
    seed.mkdir()
    (seed / "memory.jsonl").write_text('{"entity": "Carol Diaz"}\n')
    (seed / "todo.md").write_text("buy milk\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    return tmp_path


def init(*args: str) -> int:
    return cli_main(["init", *args])


def with_tasks(suite: Path) -> None:
    (suite / "tasks.yaml").write_text(yaml.safe_dump(WRITE, sort_keys=False))


def test_env_paths_into_the_seed_become_the_copy_and_check_leaves_the_seed_byte_identical(
    where: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = where / "seed"
    before = digest(seed)
    command = f"env FILES_ROOT={seed} FILES_LOG={seed}/memory.jsonl python files_server.py"
    assert init("--mcp", command, "--fixture", "seed", "suites/mem") == 0
    mcp = yaml.safe_load((where / "suites" / "mem" / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["command"] == "python" and mcp["args"] == ["{suite}/../../files_server.py"]
    assert mcp["env"] == {"FILES_ROOT": "{workdir}", "FILES_LOG": "{workdir}/memory.jsonl"}
    assert mcp["watch"] == ["../../seed"]
    with_tasks(where / "suites" / "mem")
    capsys.readouterr()
    assert cli_main(["check", "suites/mem"]) == 0, capsys.readouterr()
    assert digest(seed) == before  # the write and the log line went to the copy


def test_a_data_file_argument_becomes_the_copy_or_is_refused_naming_the_folder_to_give(
    where: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 49, finding 5: a file argument (an SQLite database under the project) was rewritten to the
    user's own file, and check appended to it."""
    (where / "seed" / "app.sqlite").write_bytes(b"SQLite format 3\x00")
    assert init("--mcp", "python files_server.py --db=./seed/app.sqlite", "suites/db") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "./seed/app.sqlite is outside the data folder" in err[0], err
    assert "--fixture ./seed" in err[0], err  # the folder to give, named
    assert init("--mcp", "python files_server.py --db=./seed/app.sqlite", "--fixture", "seed", "suites/db") == 0
    mcp = yaml.safe_load((where / "suites" / "db" / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["args"] == ["{suite}/../../files_server.py", "--db={workdir}/app.sqlite"]
    assert (where / "suites" / "db" / "fixture" / "app.sqlite").read_bytes() == b"SQLite format 3\x00"


def test_a_relative_venv_interpreter_is_kept_as_given_not_resolved_to_the_base_python(where: Path) -> None:
    venv_bin = where / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)  # a venv's python is a link to the base interpreter
    assert init("--mcp", "./.venv/bin/python files_server.py ./seed", "suites/v") == 0
    mcp = yaml.safe_load((where / "suites" / "v" / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["command"] == os.path.abspath(".venv/bin/python")  # absolute, the link itself
    assert mcp["command"] != os.path.realpath(".venv/bin/python")


@pytest.mark.parametrize(
    "command",
    [
        "env FILES_LOG={where}/outside.jsonl python files_server.py ./seed",  # an existing file outside the copy
        "env FILES_LOG={where}/new-outside.jsonl python files_server.py ./seed",  # one the server would create
        "python files_server.py ./seed --log={where}/outside.jsonl",
    ],
)
def test_a_path_outside_the_copy_is_refused_with_one_line(
    where: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (where / "outside.jsonl").write_text("mine\n")
    assert init("--mcp", command.format(where=where), "suites/o") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "outside the data folder" in err[0] and "--live-data" in err[0], err
    assert not (where / "suites" / "o").exists()


def test_a_server_that_writes_the_users_data_anyway_stops_check_with_one_line(
    where: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = where / "seed"
    assert init("--mcp", "python files_server.py ./seed", "suites/w") == 0
    suite = where / "suites" / "w"
    with_tasks(suite)
    raw = yaml.safe_load((suite / "suite.yaml").read_text())
    raw["catalog"]["mcp"]["env"] = {"FILES_LOG": str(seed / "memory.jsonl")}  # a path init never saw
    (suite / "suite.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    capsys.readouterr()
    assert cli_main(["check", "suites/w"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "changed your data outside its working copy" in err[0], err
    assert f"{seed / 'memory.jsonl'} (changed)" in err[0], err
