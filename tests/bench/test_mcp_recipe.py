"""Your own MCP server in one recipe (issue 31): ``init --mcp`` copies the data the server serves into the
suite, so ``check`` and every run leave the user's folder byte for byte as it was; each episode's copy has
the same path, so two runs send identical requests and the second is served from the response cache;
``check`` judges each read task's answer words on what the server really returned; the recipe of
docs/suites.md runs verbatim on mcp-server-git and ends with a report. A small file server (it serves a
folder, writes change it, it echoes its paths), mcp-server-git, the scripted oracle; no model."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.authoring.scaffold_mcp import recipe
from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.mcp.mcp_catalog import Workdir
from surfbench.bench.mcp.mcp_spec import from_mapping
from surfbench.bench.store.results import load_runs
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.suite import load_suite
from tests.bench.mcp_helpers import git_repo
from tests.conftest import FIXTURES, ROOT
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, tool_call

SERVER = FIXTURES / "mcp_servers" / "files_server.py"
DOCS = ROOT / "docs" / "suites.md"
STATE = """from pathlib import Path


def files(workdir):
    found = (p for p in Path(workdir).rglob("*") if p.is_file())
    return {"files": {p.relative_to(workdir).as_posix(): p.read_text() for p in found}}
"""
TASKS = [
    {
        "id": "read-todo",
        "split": "dev",
        "tags": ["single", "read"],
        "turns": ["What is on my todo list (todo.md)?"],
        "expected": [{"op": "read_file", "args": {"path": "todo.md"}}],
        "answer": {"contains": ["milk"]},
    },
    {
        "id": "list-files",
        "split": "dev",
        "tags": ["single", "read"],
        "turns": ["Which files are there?"],
        "expected": [{"op": "list_files", "args": {}}],
        "answer": {"contains": ["todo.md", "old.md"]},
    },
    {  # the oracle "solves" it with the task's own words; the server never says bread
        "id": "wrong-words",
        "split": "dev",
        "tags": ["single", "read"],
        "turns": ["What do I need to buy?"],
        "expected": [{"op": "read_file", "args": {"path": "todo.md"}}],
        "answer": {"contains": ["bread"]},
    },
    {
        "id": "write-draft",
        "split": "dev",
        "tags": ["single", "write"],
        "turns": ["Write 'hello' into drafts/new.md."],
        "expected": [{"op": "write_file", "args": {"path": "drafts/new.md", "text": "hello"}}],
        "state": [
            {"path": ["files", "drafts/new.md"], "equals": "hello"},  # a key with a dot: the list form
            {"path": ["files", "drafts/old.md"], "exists": True},
            {"path": ["files", "drafts/gone.md"], "exists": False},
        ],
    },
]


def tree(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under ``folder``: (bytes, mode, modification time in ns); folders by their mode."""
    out: dict[str, tuple[bytes, int, int]] = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        out[path.relative_to(folder).as_posix()] = (
            b"" if path.is_dir() else path.read_bytes(),
            info.st_mode,
            0 if path.is_dir() else info.st_mtime_ns,
        )
    return out


@pytest.fixture
def own_tmp(tmp_path: Path) -> Iterator[Path]:
    """Working copies (slots) under this test's folder only: in-process here, through TMPDIR in subprocesses."""
    slots = tmp_path / "tmp"
    slots.mkdir()
    saved = tempfile.tempdir
    tempfile.tempdir = str(slots)
    try:
        yield slots
    finally:
        tempfile.tempdir = saved


def notes_folder(where: Path) -> Path:
    data = where / "notes"
    (data / "drafts").mkdir(parents=True)
    (data / "todo.md").write_text("buy milk\nwalk the dog\n")
    (data / "drafts" / "old.md").write_text("an old draft\n")
    return data


def files_suite(where: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> Path:
    """``init --mcp "python files_server.py ./notes" suites/notes`` in ``where``, then tasks written as a user would."""
    shutil.copy(SERVER, where / "files_server.py")
    monkeypatch.chdir(where)
    assert cli_main(["init", "--mcp", "python files_server.py ./notes", "suites/notes", *extra]) == 0
    suite = where / "suites" / "notes"
    (suite / "tasks.yaml").write_text(yaml.safe_dump(TASKS, sort_keys=False))
    (suite / "state.py").write_text(STATE)
    text = (suite / "suite.yaml").read_text()
    (suite / "suite.yaml").write_text(
        text.replace("# backend_options: {state: state.py:read_state}", "backend_options: {state: state.py:files}")
    )
    return suite


def surfbench_env(where: Path, slots: Path, *configs: Path, cache: Path | None = None) -> dict[str, str]:
    return {
        **os.environ,
        "CI": "true",
        "TMPDIR": str(slots),
        "SURFBENCH_SUITES": str(where / "suites"),
        "SURFBENCH_CONFIGS": os.pathsep.join(map(str, configs)),
        "SURFBENCH_CACHE": str(cache or where / "cache"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def run(where: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", *args], cwd=where, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_init_copies_the_data_so_check_and_a_run_leave_the_users_folder_untouched(
    tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    data = notes_folder(tmp_path)
    before = tree(data)
    suite = files_suite(tmp_path, monkeypatch)
    out = capsys.readouterr().out
    assert "copied notes (2 files, 35 bytes) into suites/notes/fixture" in out
    assert "argument files_server.py written as {suite}/../../files_server.py" in out
    mcp = yaml.safe_load((suite / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp == {
        "command": "python", "args": ["{suite}/../../files_server.py", "{workdir}"], "fixture": "fixture",
        "watch": ["../../notes"],  # the user's folder: check and run stop if anything changes it
    }  # fmt: skip
    assert {k: v[0] for k, v in tree(suite / "fixture").items()} == {k: v[0] for k, v in before.items()}
    # nothing generated names this machine's folders: the suite moves with its parent folder
    for path in (p for p in suite.rglob("*") if p.is_file() and "fixture" not in p.parts and p.suffix != ".json"):
        text = path.read_text()
        assert str(tmp_path) not in text and str(tmp_path.resolve()) not in text, path

    assert cli_main(["check", "suites/notes"]) == 0
    out = capsys.readouterr().out
    assert '  read-todo: read_file -> "buy milk walk the dog"' in out
    assert "    answer check: holds on the server's results" in out
    assert "  wrong-words: read_file" in out
    assert "FLAG: its answer check cannot be read off the server's results: they never say 'bread'" in out
    assert '  write-draft: write_file -> "wrote ' in out and str(data) not in out  # wrote into a copy
    assert "ok: 4 tasks, oracle solves 4/4; answers found in the server's results 2/3" in out

    configs = suite / "configs"  # model=oracle: the shipped configs/model/oracle.yaml, no config of our own
    run(tmp_path, surfbench_env(tmp_path, own_tmp, configs), "suite=notes", "surface=full", "model=oracle", "run=r")
    episodes = load_runs([tmp_path / "results" / "r"])
    assert sorted(episodes["task_id"]) == sorted(t["id"] for t in TASKS) and episodes["success"].all()
    calls = load_runs([tmp_path / "results" / "r"], "calls")
    wrote = calls[calls["operation"] == "write_file"]["result"].iloc[0]
    assert wrote.startswith(f"wrote {own_tmp}") and wrote.endswith("/fixture/drafts/new.md")

    assert tree(data) == before  # byte for byte, modes and times included
    assert not (data / "drafts" / "new.md").exists()
    assert list(own_tmp.iterdir()) == []  # every working copy removed


def test_live_data_is_explicit_and_check_says_what_each_task_changed(
    tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    data = notes_folder(tmp_path)
    suite = files_suite(tmp_path, monkeypatch, "--live-data")
    assert "warning: --live-data: the server works on notes itself" in capsys.readouterr().out
    mcp = yaml.safe_load((suite / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["args"] == ["{suite}/../../files_server.py", "{suite}/../../notes"] and mcp["live_data"] == "../../notes"
    assert "fixture" not in mcp and not (suite / "fixture").exists()
    assert cli_main(["check", "suites/notes"]) == 0
    out = capsys.readouterr().out
    assert "on live data: NOT a copy" in out
    assert "    notes: changed drafts/new.md (new) (calls not marked read-only: write_file)" in out
    assert "    notes: changed nothing" in out  # the read tasks
    assert (data / "drafts" / "new.md").read_text() == "hello"  # for real: that is what --live-data means


def test_two_identical_runs_send_identical_requests_and_the_second_is_served_from_the_cache(
    tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch
):
    """The file server echoes its folder's absolute path (list_files, write_file): with a new working path
    per episode the requests after those calls would differ from run to run."""
    notes_folder(tmp_path)
    suite = files_suite(tmp_path, monkeypatch)
    from surfbench.bench.contracts.surface import ToolSpec
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.models.types import ModelRequest

    oracle = OracleClient(str(suite))

    def respond(n: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[Any, ...]:
        tools = tuple(ToolSpec(t["function"]["name"], "", t["function"]["parameters"]) for t in body.get("tools", []))
        turn = oracle.complete(ModelRequest(messages=tuple(body["messages"]), tools=tools))
        step = sum(m["role"] == "assistant" for m in body["messages"])  # ids from the conversation, not the clock
        calls = [tool_call(c.name, c.arguments, f"call_{step}_{i}") for i, c in enumerate(turn.tool_calls)]
        return 200, chat_reply(turn.text or None, calls or None)

    stub_configs = tmp_path / "stub-configs"
    (stub_configs / "model").mkdir(parents=True)
    with OpenAIStub(respond) as stub:
        (stub_configs / "model" / "stub.yaml").write_text(
            f"provider: litellm\nmodel: openai/stub-model\napi_base: {stub.api_base}\nmode: native\nmax_tokens: 64\n"
        )
        cell = ("suite=notes", "surface=full", "model=stub")
        env = surfbench_env(tmp_path, own_tmp, suite / "configs", stub_configs, cache=tmp_path / "cache-a")
        run(tmp_path, env, *cell, "run=a")
        first = [body for body, _ in stub.requests]
        run(tmp_path, {**env, "SURFBENCH_CACHE": str(tmp_path / "cache-b")}, *cell, "run=b")  # an empty cache
        second = [body for body, _ in stub.requests[len(first) :]]
        run(tmp_path, env, *cell, "run=c")  # the first run's cache
        third = stub.requests[len(first) + len(second) :]
    echoed = [m["content"] for body in first for m in body["messages"] if m["role"] == "tool"]
    assert any(re.search(rf"files in {re.escape(str(own_tmp))}/\S+/0/fixture", t) for t in echoed), echoed
    assert len(first) == 2 * len(TASKS) and second == first  # byte for byte, in the same order
    assert third == []  # nothing reached the model
    episodes = load_runs([tmp_path / "results" / "c"])
    assert len(episodes) == len(TASKS) and (episodes["cache_hits"] == episodes["round_trips"]).all()
    assert episodes["success"].all()  # wrong-words too: the oracle says the task's own words


def test_a_working_copy_has_the_same_path_each_time_and_one_per_episode_in_flight(tmp_path: Path, own_tmp: Path):
    data = notes_folder(tmp_path)
    first = Workdir(str(data))
    assert first.path is not None and (first.path / "todo.md").is_file()
    path = first.path
    second = Workdir(str(data))  # in flight at the same time: the next slot
    assert second.path is not None and second.path != path and second.path.parent.name == "1"
    (path / "todo.md").write_text("changed")
    first.close()
    second.close()
    again = Workdir(str(data))  # slot 0 again, emptied and filled afresh
    assert again.path == path and (path / "todo.md").read_text() == "buy milk\nwalk the dog\n"
    again.close()
    assert list(own_tmp.iterdir()) == []
    (tmp_path / "suite").mkdir()  # a fixture beside the suite: ../notes
    beside = {"command": "python", "args": ["{workdir}"], "fixture": "../notes"}
    spec = from_mapping(beside, "suite.yaml", tmp_path / "suite")
    assert Path(str(spec.fixture)).resolve() == data.resolve()


def test_init_asks_which_folder_when_the_arguments_name_several(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    notes_folder(tmp_path)
    (tmp_path / "other").mkdir()
    shutil.copy(SERVER, tmp_path / "files_server.py")
    monkeypatch.chdir(tmp_path)
    command = "python files_server.py ./notes --cache-dir=./other"
    assert cli_main(["init", "--mcp", command, "suites/two"]) == 2
    err = capsys.readouterr().err
    assert "its arguments name several folders (./notes, ./other)" in err and "--fixture DIR" in err
    assert not (tmp_path / "suites").exists()
    # the other folder is outside the copy: the server could write there, so init refuses it (issue 50)
    assert cli_main(["init", "--mcp", command, "--fixture", "notes", "suites/two"]) == 2
    assert "./other is outside the data folder init copies" in capsys.readouterr().err
    assert cli_main(["init", "--mcp", "python files_server.py ./notes --cache-dir=./notes/cache", "suites/two"]) == 0
    mcp = yaml.safe_load((tmp_path / "suites" / "two" / "suite.yaml").read_text())["catalog"]["mcp"]
    assert mcp["args"] == ["{suite}/../../files_server.py", "{workdir}", "--cache-dir={workdir}/cache"]
    assert cli_main(["init", "--mcp", "python files_server.py .", "notes/inside"]) == 2  # a copy of itself
    assert "is inside the data folder" in capsys.readouterr().err


def test_a_suite_named_apart_from_its_folder_and_a_missing_one_names_where_it_looked(
    tmp_path: Path, own_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    notes_folder(tmp_path)
    shutil.copy(SERVER, tmp_path / "files_server.py")
    monkeypatch.chdir(tmp_path)
    assert cli_main(["init", "--mcp", "python files_server.py ./notes", "--name", "fsmcp", "suites/myfs"]) == 0
    folder = tmp_path / "suites" / "myfs"
    assert yaml.safe_load((folder / "configs" / "suite" / "fsmcp.yaml").read_text()) == {"name": "fsmcp"}
    monkeypatch.setenv("SURFBENCH_SUITES", str(tmp_path / "suites"))
    monkeypatch.chdir(ROOT)
    assert load_suite("fsmcp").folder == folder
    assert "surfbench check suites/myfs" in (folder / "README.md").read_text()
    monkeypatch.delenv("SURFBENCH_SUITES")
    with pytest.raises(SuiteError) as missing:
        load_suite("fsmcp")
    said = str(missing.value)
    assert "unknown suite 'fsmcp'" in said and "SURFBENCH_SUITES (not set)" in said
    assert str(ROOT / "tasks") in said and "add its parent folder to SURFBENCH_SUITES" in said
    env = {k: v for k, v in os.environ.items() if k not in ("SURFBENCH_SUITES", "SURFBENCH_CONFIGS")}
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", "suite=fsmcp"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "SURFBENCH_CONFIGS=DIR/configs" in proc.stderr
    assert "SURFBENCH_SUITES=the folder holding DIR (now not set)" in proc.stderr


# --- the recipe, verbatim ---------------------------------------------------------------------------------

GIT_TASKS = """\
- id: last-commit
  split: dev
  tags: [single, read]
  turns: ["What does the last commit of the repository '.' say?"]
  expected: [{op: git_log, args: {repo_path: "."}}]
  answer: {contains: [first]}
- id: status
  split: dev
  tags: [single, read]
  turns: ["Which branch is the repository '.' on?"]
  expected: [{op: git_status, args: {repo_path: "."}}]
  answer: {contains: [main]}
- id: refuse-unrelated
  split: dev
  tags: [should-refuse]
  turns: ["Book me a table for two at an Italian restaurant tonight."]
  answer: {any_of: ["can't", cannot, unable]}
"""


def recipe_block() -> list[str]:
    """The commands of docs/suites.md's recipe block (the fenced block after its marker), one per line."""
    text = DOCS.read_text()
    marker = text.index("<!-- the recipe: tests/bench/test_mcp_recipe.py runs this block verbatim -->")
    block = re.search(r"```bash\n(.*?)```", text[marker:], re.DOTALL)
    assert block is not None
    return block.group(1).strip().splitlines()


def test_the_readme_shows_the_same_recipe_block():
    """The README's "Measure your own MCP server" block is the tested one, command for command."""
    readme = (DOCS.parent.parent / "README.md").read_text()
    start = readme.index("### Measure your own MCP server")
    block = re.search(r"```bash\n(.*?)```", readme[start:], re.DOTALL)
    assert block is not None and block.group(1).strip().splitlines() == recipe_block()


def words(lines: list[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines]


@pytest.mark.skipif(importlib.util.find_spec("mcp_server_git") is None, reason="n/a: mcp-server-git not installed")
def test_the_recipe_of_the_docs_runs_verbatim_on_mcp_server_git_and_ends_with_a_report(tmp_path: Path):
    lines = recipe_block()
    # steps 3 to 7 are the ones init writes into every suite's README (bench.authoring.scaffold_mcp.recipe)
    assert words(lines[1:]) == words(recipe("myrepo", "suites/myrepo", "suites").splitlines())
    repo = git_repo(tmp_path / "myrepo")
    before = tree(repo)
    editor = tmp_path / "editor.py"  # step 3, as a user would: the tasks written into the file named
    editor.write_text(f"import pathlib, sys\npathlib.Path(sys.argv[1]).write_text({GIT_TASKS!r})\n")
    script = "\n".join(
        # the changes: a scripted model, which the gate judges when told to; revise is exit 1: read, not stop
        ("set +e\n" + line.replace(" results/myrepo ", " results/myrepo --allow-scripted "))
        if line.startswith("surfbench gate")
        else line.replace("model=qwen2.5-coder-0.5b-instruct", "model=oracle")
        for line in lines
    )
    script += '\necho "recipe: gate exit $?"'

    slots = tmp_path / "tmp"
    slots.mkdir()
    env = {**surfbench_env(tmp_path, slots), "EDITOR": f"{sys.executable} {editor}"}
    for name in ("SURFBENCH_SUITES", "SURFBENCH_CONFIGS"):
        env.pop(name)  # the recipe sets them
    proc = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "copied myrepo" in proc.stdout and "ok: 3 tasks, oracle solves 3/3" in proc.stdout
    assert "answers found in the server's results 2/2" in proc.stdout
    report = tmp_path / "results" / "myrepo" / "report"
    assert (report / "report.md").is_file() and (report / "report.html").is_file()
    # the gate decides with the files init and check wrote: every candidate of init's gate.yaml is in the run
    assert re.search(r"recipe: gate exit [01]$", proc.stdout.rstrip()), proc.stdout[-3000:] + proc.stderr[-2000:]
    for candidate in ("dispatcher", "preselect", "search"):
        assert re.search(rf"decision for {candidate}: (SHIP|REVISE)", proc.stdout), proc.stdout[-3000:]
    measured = tmp_path / "suites" / "myrepo" / "configs" / "surface" / "preselect.yaml"
    assert measured.is_file() and "retriever:" in measured.read_text()  # check chose it on the tasks
    episodes = load_runs([tmp_path / "results" / "myrepo"])
    assert sorted(set(episodes["surface"])) == ["dispatcher", "full", "preselect", "search"]
    plumbing = load_runs([tmp_path / "results" / "myrepo-plumbing"])
    assert plumbing["success"].all() and len(plumbing) == 3
    assert tree(repo) == before
    readme = (tmp_path / "suites" / "myrepo" / "README.md").read_text()
    assert all(" ".join(line.split()) in " ".join(readme.split()) for line in lines[1:])
