"""``surfbench init --mcp`` / ``--mcp-url``: a suite over a live MCP server in one command; ``surfbench check``
says per task what the oracle's calls got from the server. The tiny test server, mcp-server-git when installed,
the HTTP test server when uvicorn is; the scripted oracle, no model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.mcp.mcp_catalog import live_catalog
from surfbench.bench.mcp.mcp_spec import from_command
from surfbench.bench.store.results import load_runs
from surfbench.bench.suites.suite import load_suite
from tests.bench.mcp_helpers import TINY, git_repo, processes_with, tiny
from tests.conftest import ROOT

MARK = f"init-mcp-{uuid.uuid4().hex[:8]}"  # an extra argument the tiny server ignores: finds only our servers
COMMAND = f"{tiny('ok')} {MARK}"
ORACLE = "provider: scripted\nscript_suite: {suite}\nparams_b: 0.0\nmode: native\n"


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``surfbench init --mcp`` over the tiny server, made once (the tests below only read it)."""
    folder = tmp_path_factory.mktemp("suites") / "tiny_demo"
    assert cli_main(["init", "--mcp", COMMAND, str(folder)]) == 0
    return folder


def test_init_writes_a_live_suite_pinned_to_the_answer_as_sent(suite_dir: Path):
    assert sorted(p.name for p in suite_dir.iterdir()) == [
        "README.md",
        "configs",
        "gate.yaml",
        "suite.yaml",
        "tasks.yaml",
        "tools.json",
    ]
    # tools.json: the tools/list answer byte for byte, as `catalog dump` writes it
    assert (suite_dir / "tools.json").read_bytes() == live_catalog(from_command(COMMAND)).snapshot()
    raw = yaml.safe_load((suite_dir / "suite.yaml").read_text())
    assert raw["backend"] == "mcp" and raw["catalog"]["pinned"] == "tools.json"
    # its arguments name no folder: nothing to copy, the server starts in a fresh empty folder per episode
    assert raw["catalog"]["mcp"] == {"command": sys.executable, "args": [str(TINY), "ok", MARK], "cwd": "{workdir}"}
    suite = load_suite(str(suite_dir))  # lists the live server again: same catalog as the pin
    assert suite.backend_spec == "mcp" and suite.mcp.pinned == suite_dir / "tools.json"
    assert (suite.mcp.server.command, suite.mcp.server.args) == (sys.executable, (str(TINY), "ok", MARK))
    assert list(suite.catalog.names) == ["echo", "fail", "sleep", "die", "pid"]
    assert [t.id for t in suite.tasks] == ["smoke-echo", "refuse-unrelated"]
    assert all(not t.canned for t in suite.tasks) and suite.tasks[0].expected[0].op == "echo"
    text = (suite_dir / "suite.yaml").read_text()
    assert all(f"# {key}:" in text for key in ("fixture", "setup", "reset_tool", "backend_options"))
    tasks = (suite_dir / "tasks.yaml").read_text()
    assert "STARTING POINTS" in tasks and "canned:" not in tasks and tasks.count("# - id: ") == 5
    assert yaml.safe_load((suite_dir / "configs" / "suite" / "tiny_demo.yaml").read_text()) == {"name": "tiny_demo"}
    readme = (suite_dir / "README.md").read_text()
    readme = " ".join(readme.split())
    for command in (  # the suite is not below the folder init ran in: commands from the suite's parent
        "surfbench check tiny_demo",
        "surfbench surfaces --catalog tiny_demo/tools.json --format mcp --name tiny_demo",
        "surfbench run -m suite=tiny_demo surface=full,dispatcher,preselect,search model=qwen2.5-coder-0.5b-instruct",
        "surfbench run suite=tiny_demo surface=full model=oracle",
        "surfbench report results/tiny_demo",
        "surfbench gate --criteria tiny_demo/gate.yaml results/tiny_demo",
        "export SURFBENCH_SUITES=. SURFBENCH_CONFIGS=tiny_demo/configs",
    ):
        assert command in readme
    assert str(suite_dir) not in readme
    assert processes_with(MARK) == []


def test_check_says_per_task_what_the_live_server_answered(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert cli_main(["check", str(suite_dir)]) == 0
    out = capsys.readouterr().out
    assert f"live MCP server {COMMAND}" in out and '  smoke-echo: echo -> "example"' in out
    assert "each read task's answer words occur in what the server returned (0 flagged)" in out
    assert "ok: 2 tasks, oracle solves 2/2" in out

    folder = tmp_path / "tiny_demo"  # the example edited to a call the server answers with an error
    shutil.copytree(suite_dir, folder)
    text = (folder / "tasks.yaml").read_text()
    (folder / "tasks.yaml").write_text(text.replace("op: echo\n    args: {text: example}", "op: fail\n    args: {}", 1))
    assert cli_main(["check", str(folder)]) == 2
    out, err = capsys.readouterr()
    assert "  smoke-echo: 1 of 1 answered with an error: fail: Error: the widget is broken" in out
    problem = one_error_line(err)
    assert "task 'smoke-echo': the oracle fails: expected call fail not matched by any successful call" in problem
    assert "1 problem(s): 2 tasks, oracle solves 1/2" in out
    assert processes_with(MARK) == []


def test_the_live_suite_runs_through_the_cli_on_the_oracle(suite_dir: Path, tmp_path: Path):
    oracle = tmp_path / "oracle-configs"
    (oracle / "model").mkdir(parents=True)
    (oracle / "model" / "oracle.yaml").write_text(ORACLE.format(suite="tiny_demo"))
    env = {
        **os.environ,
        "CI": "true",
        "SURFBENCH_SUITES": str(suite_dir.parent),
        "SURFBENCH_CONFIGS": f"{suite_dir / 'configs'}{os.pathsep}{oracle}",
    }
    cmd = [sys.executable, "-m", "surfbench", "run", "suite=tiny_demo", "surface=full", "model=oracle", "limit=1"]
    proc = subprocess.run(
        [*cmd, f"results_dir={tmp_path / 'results'}", "run=r"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = load_runs([tmp_path / "results" / "r"])
    assert list(episodes["task_id"]) == ["smoke-echo"] and episodes["success"].all()
    calls = load_runs([tmp_path / "results" / "r"], "calls")
    assert list(calls["operation"]) == ["echo"] and list(calls["result"]) == ["example"]  # the server's answer
    assert processes_with(MARK) == []


def test_python_stays_python_and_relative_paths_become_relative_to_the_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.chdir(TINY.parent)
    folder = tmp_path / "rel_demo"
    assert cli_main(["init", "--mcp", f"python {TINY.name} ok {MARK}", str(folder)]) == 0
    written = "{suite}/" + os.path.relpath(TINY, folder)
    assert yaml.safe_load((folder / "suite.yaml").read_text())["catalog"]["mcp"] == {
        "command": "python",
        "args": [written, "ok", MARK],
        "cwd": "{workdir}",
    }
    assert f"argument {TINY.name} written as {written}" in capsys.readouterr().out
    readme = " ".join((folder / "README.md").read_text().split())
    assert f"Relative paths among its arguments are written relative to this folder: `{TINY.name}` -> `{written}`" in (
        readme
    )
    monkeypatch.chdir(tmp_path)  # anywhere: the path resolves from the suite's folder
    assert cli_main(["check", str(folder)]) == 0
    assert "ok: 2 tasks, oracle solves 2/2" in capsys.readouterr().out
    assert processes_with(MARK) == []


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ([], "give exactly one of --catalog FILE, --mcp 'COMMAND ARGS' or --mcp-url URL"),
        (["--mcp", COMMAND, "--catalog", "tools.json"], "give exactly one of"),
        (["--mcp", COMMAND, "--mcp-url", "http://127.0.0.1:9/mcp"], "give exactly one of"),
        (["--mcp", COMMAND, "--mcp-header", "Authorization=TOKEN"], "--mcp-header applies to --mcp-url only"),
        (["--mcp", COMMAND, "--format", "openai"], "--format applies to --catalog only"),
        (["--mcp-url", "ftp://host/mcp"], "--mcp-url must start with http:// or https://"),
        (["--mcp", f"{tiny('crash')} {MARK}"], "crash"),
    ],
)
def test_a_bad_combination_or_server_is_one_line_and_writes_nothing(
    options: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert cli_main(["init", *options, str(tmp_path / "demo")]) == 2
    assert says in one_error_line(capsys.readouterr().err)
    assert list(tmp_path.iterdir()) == []
    assert processes_with(MARK) == []


@pytest.mark.skipif(importlib.util.find_spec("mcp_server_git") is None, reason="n/a: mcp-server-git not installed")
def test_init_over_mcp_server_git(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    repo = git_repo(tmp_path / "repo")
    command = f"python -m mcp_server_git --repository {repo}"
    folder = tmp_path / "suites" / "git_demo"
    assert cli_main(["init", "--mcp", command, str(folder)]) == 0
    assert (folder / "tools.json").read_bytes() == live_catalog(from_command(command)).snapshot()
    suite = load_suite(str(folder))
    assert suite.mcp.server.command == "python" and suite.mcp.server.args == (
        "-m",
        "mcp_server_git",
        "--repository",
        "{workdir}",  # the repository was copied into the suite: every episode serves a fresh copy
    )
    assert (folder / "fixture" / ".git").is_dir() and (folder / "fixture" / "a.txt").read_text() == "hello\n"
    assert len(suite.catalog) == 12 and suite.tasks[0].id == "smoke-git-status"  # read-only, per its annotations
    assert "git_status is marked read-only" in (folder / "tasks.yaml").read_text()
    # the placeholder repo_path is refused by the server until edited: the edited task passes the check
    text = (folder / "tasks.yaml").read_text()
    (folder / "tasks.yaml").write_text(text.replace("args: {repo_path: example}", "args: {repo_path: .}", 1))
    capsys.readouterr()
    assert cli_main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert '  smoke-git-status: git_status -> "Repository status:' in out and "ok: 2 tasks, oracle solves 2/2" in out
    assert processes_with(str(repo)) == []


def test_init_over_streamable_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("uvicorn", reason="n/a: the HTTP test server needs uvicorn (installed with mcp)")
    from tests.bench.test_mcp_http import SERVER, TOKEN, free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port), TOKEN, "json"], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        url = f"http://127.0.0.1:{port}/mcp"
        monkeypatch.setenv("MY_TOKEN", f"Bearer {TOKEN}")
        folder = tmp_path / "http_demo"
        assert cli_main(["init", "--mcp-url", url, "--mcp-header", "Authorization=MY_TOKEN", str(folder)]) == 0
        raw = yaml.safe_load((folder / "suite.yaml").read_text())
        assert raw["catalog"]["mcp"] == {"url": url, "headers": {"Authorization": "MY_TOKEN"}}
        readme = (folder / "README.md").read_text()
        head = "Written by `surfbench init --mcp-url` for a server with 2 tools, as suite.yaml starts it:"
        assert f"{head}\n\n    {url}" in readme
        assert "surfbench surfaces --catalog http_demo/tools.json --format mcp --name http_demo" in readme
        assert "`MY_TOKEN`" in readme and TOKEN not in readme + (folder / "suite.yaml").read_text()
        assert load_suite(str(folder)).mcp.server.url == url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
