"""``surfbench check`` does not say "ok" when the oracle's own first call misses its task's expected arguments
(issue 50, point 6): such a task is solved (its state check holds) yet no model could be right on the first try.
The small file server over MCP, a state check on the files it serves; the scripted oracle."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from tests.bench.test_init_data_safety import where  # noqa: F401  (the fixture: a project with a seed folder)

STATE = """from pathlib import Path
def files(workdir):
    return {"files": {p.name: p.read_text() for p in Path(workdir).rglob("*") if p.is_file()}}
"""


def suite(where: Path, oracle_text: str) -> Path:  # noqa: F811
    assert cli_main(["init", "--mcp", "python files_server.py ./seed", "suites/c"]) == 0
    folder = where / "suites" / "c"
    task = {
        "id": "write-note",
        "split": "dev",
        "tags": ["single", "write"],
        "turns": ["Write HELLO into new.md."],
        "expected": [{"op": "write_file", "args": {"path": "new.md", "text": "HELLO"}, "oracle_args": {
            "path": "new.md", "text": oracle_text}}],
        "state": [{"path": ["files", "new.md"], "exists": True}],
    }  # fmt: skip
    (folder / "tasks.yaml").write_text(yaml.safe_dump([task], sort_keys=False))
    (folder / "state.py").write_text(STATE)
    text = (folder / "suite.yaml").read_text()
    (folder / "suite.yaml").write_text(
        text.replace("# backend_options: {state: state.py:read_state}", "backend_options: {state: state.py:files}")
    )
    return folder


def test_check_flags_a_task_whose_oracle_first_call_misses_its_own_matcher(
    where: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite(where, "goodbye")  # the state check holds, the expected text does not
    capsys.readouterr()
    assert cli_main(["check", "suites/c"]) == 2
    out, err = capsys.readouterr()
    assert "write_file (wrong_value) fails the task's own expected arguments" in err, err
    assert "oracle solves 0/1" in out and "ok:" not in out


def test_check_is_ok_when_the_oracle_first_call_matches(where: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    suite(where, "HELLO")
    capsys.readouterr()
    assert cli_main(["check", "suites/c"]) == 0
    assert "ok: 1 tasks, oracle solves 1/1" in capsys.readouterr().out
