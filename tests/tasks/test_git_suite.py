"""The git suite over the real mcp-server-git: its shape, its deterministic fixture repository, the
scripted oracle solving every task through the real server, a wrong call failing each, the ``setup``
hook's errors, and no server left behind."""

from __future__ import annotations

import copy
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.mcp.mcp_catalog import Workdir
from surfbench.bench.mcp.mcp_spec import McpError, from_mapping
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn, text_turn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite import SuiteError, Task, load_suite
from surfbench.surfaces import build_surface
from tests.bench.mcp_helpers import processes_with

pytest.importorskip("mcp_server_git", reason="mcp-server-git is a dev dependency (pip install -e .[dev])")

from surfbench.tasks.git.fixture import build_into, build_repo, git  # noqa: E402  (after the skip)
from surfbench.tasks.git.state import git_state  # noqa: E402

SUITE = load_suite("git")
WRITTEN = [t for t in SUITE.tasks if t.split != "synth"]
"""The hand-written tasks. The synthesized ones (split synth, synth/tasks.jsonl) were each replayed on the real
server, and mutated, when `surfbench synth git` made them (bench/synth/synth_verify.py); `surfbench check git`
replays them all again (a server per task: about half an hour for 300, too long for every test run)."""
HEAD = "a27ed1da48ab55fceb674e1160c5c74fa95377c9"
"""main's tip in the fixture: the same on every machine (fixed names, emails, dates; no global config)."""


@pytest.fixture(scope="module", autouse=True)
def own_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Working copies (and so every server's --repository) under a folder of this module only: the leak
    check then finds this module's servers, not another job's."""
    folder = tmp_path_factory.mktemp("git-suite")
    saved = tempfile.tempdir
    tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        tempfile.tempdir = saved


def no_server_left(folder: Path) -> None:
    deadline = time.monotonic() + 5
    while processes_with(str(folder)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(str(folder)) == []


# --- shape -------------------------------------------------------------------------------------------


def test_suite_shape_and_live_catalog(own_tmp: Path) -> None:
    assert len(SUITE.tasks) >= 30
    splits = {t.split for t in WRITTEN}
    assert splits == {"dev", "test"} and {t.split for t in SUITE.tasks} <= {"dev", "test", "synth"}
    tags = {tag for t in SUITE.tasks for tag in t.tags}
    assert {"single", "multi", "read", "write", "should-refuse", "arg-heavy", "multi-turn"} <= tags
    assert sum("should-refuse" in t.tags for t in SUITE.tasks) >= 3
    assert all(t.state for t in SUITE.tasks if "write" in t.tags), "every task that writes has state checks"
    assert all(t.answer for t in SUITE.tasks if "read" in t.tags), "every read task checks the answer"
    assert len(SUITE.catalog.names) == 12  # the live server, started (setup hook run) and stopped
    assert all(e.op in SUITE.catalog.names for t in SUITE.tasks for e in t.expected)
    assert SUITE.mcp.server.identity()["setup"] == "fixture.py:build_repo"
    no_server_left(own_tmp)


# --- fixture -----------------------------------------------------------------------------------------


def test_the_fixture_build_is_deterministic(tmp_path: Path) -> None:
    build_into(tmp_path / "a")
    build_into(tmp_path / "b")
    heads = [git(tmp_path / n, "rev-parse", "HEAD", "feature/login").split() for n in ("a", "b")]
    assert heads[0] == heads[1] and heads[0][0] == HEAD
    copy_ = tmp_path / "copy"
    copy_.mkdir()
    build_repo(copy_)  # the setup hook: the per-process build, copied
    assert git(copy_, "rev-parse", "HEAD").strip() == HEAD
    state = git_state(copy_)
    assert state["branch"] == "main" and state["branches"] == ["feature/login", "main"]
    assert state["head"] == {"message": "Bump version to 0.2.0", "author": "Carol Chen", "commits": 5,
                             "files": ["src/version.py"]}  # fmt: skip
    assert (state["staged"], state["unstaged"], state["untracked"]) == (
        ["CHANGELOG.md", "src/farewell.py"], ["src/app.py"], ["TODO.txt"],
    )  # fmt: skip
    assert git_state(None) == {} and git_state(tmp_path) == {}


# --- the oracle, and a wrong call ----------------------------------------------------------------------


def test_the_oracle_solves_every_task_through_the_real_server(tmp_path: Path, own_tmp: Path) -> None:
    ids = tuple(t.id for t in WRITTEN)
    cell = resolve_cell(CellSpec("git", "full", "qwen2.5-coder-0.5b-instruct", split="all", tasks=ids, concurrency=2))
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient("git"))
    episodes = load_runs([tmp_path / "run"])
    assert len(episodes) == len(WRITTEN) and episodes["episode_key"].is_unique
    failed = episodes[~episodes["success"].astype(bool)]
    assert failed.empty, failed[["task_id", "failures", "error"]].to_string()
    no_server_left(own_tmp)


def reference(call: Any) -> dict[str, Any]:
    if call.oracle_args is not None:
        return dict(call.oracle_args)
    op = SUITE.catalog.get(call.op)
    required = set(op.required) if op else set()
    args = example_args(call.args)
    optional = {k for k, m in call.args.items() if isinstance(m, list) and "" in m}
    return {k: v for k, v in args.items() if k in required or k not in optional}


def mutate(args: dict[str, Any]) -> dict[str, Any]:
    """One meaningful argument changed (the repository path only when there is no other)."""
    wrong = copy.deepcopy(args)
    keys = [k for k in wrong if k not in ("repo_path", "context_lines")] or ["repo_path"]
    key = keys[0]
    value = wrong[key]
    if isinstance(value, str):
        wrong[key] = "x" + value[::-1]  # not a prefix or suffix change a $regex could still accept
    elif isinstance(value, int):
        wrong[key] = value + 100
    else:
        wrong[key] = ["wrong.txt"]
    return wrong


def answer(task: Task) -> str:
    parts = [str(x) for x in task.answer.get("contains", [])] + [str(x) for x in task.answer.get("any_of", [])[:1]]
    return " ".join(parts) or "Done."


def script_for(task: Task, wrong: bool) -> list[Any]:
    """Each turn's expected calls then an answer; ``wrong``: the last call's arguments mutated (a
    should-refuse task: a destructive call made instead of refusing)."""
    calls = [(e.turn or 0, e.op, reference(e)) for e in task.expected]
    if wrong and calls:
        turn, op, args = calls[-1]
        calls[-1] = (turn, op, mutate(args))
    script: list[Any] = []
    for i in range(len(task.turns)):
        if wrong and not calls and i == 0:
            script.append(call_turn(("git_reset", {"repo_path": "."})))
        script += [call_turn((op, args)) for t, op, args in calls if t == i]
        script.append(text_turn(answer(task)))
    return script


def replay(task: Task, wrong: bool) -> Any:
    backend = SUITE.new_backend(task)
    try:
        trace = run_episode(
            task,
            build_surface(SUITE.catalog, "full").session(task.turns[0]),
            backend,
            ScriptedClient(script_for(task, wrong)),
            LoopSettings(max_steps=len(task.expected) + 3),
            SUITE.system_prompt,
            lambda name: SUITE.catalog[name].parameters,
        )
    finally:
        getattr(backend, "close", lambda: None)()
    return trace, score_episode(task, trace, SUITE.catalog)


@pytest.mark.parametrize("task", WRITTEN, ids=lambda t: t.id)
def test_a_wrong_call_fails_the_task(task: Task) -> None:
    trace, score = replay(task, wrong=True)
    assert trace.error is None, trace.traceback
    assert not score.success, f"{task.id}: a wrong call passed"
    check = "refusal" if task.refuse else "state" if task.state else "calls"
    assert any(f"(check: {check})" in line for line in score.failures), score.failures  # failed for the mistake


def test_the_script_without_the_mistake_passes() -> None:
    """The wrong-call replay's own machinery, unmutated, passes (so the failures above are the mistake's)."""
    for task_id in ("commit-todo-alone", "branch-then-switch-turns", "refuse-push", "log-since"):
        task = next(t for t in SUITE.tasks if t.id == task_id)
        trace, score = replay(task, wrong=False)
        assert score.success, (task_id, score.failures, [c.result for c in trace.calls])


# --- the setup hook ------------------------------------------------------------------------------------


def server(**extra: Any) -> dict[str, Any]:
    return {"command": "python", "args": ["-m", "mcp_server_git", "--repository", "{workdir}"], **extra}


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        (42, "mcp.setup must be a non-empty string"),
        ("build_repo", "mcp.setup must be 'file.py:function'"),
        ("nope.py:build", "mcp.setup 'nope.py:build': no file"),
        ("hooks.py:buld", "mcp.setup"),
    ],
)
def test_a_bad_setup_is_a_one_line_error_naming_the_field(tmp_path: Path, setup: Any, says: str) -> None:
    (tmp_path / "hooks.py").write_text("def build(path):\n    pass\n")
    with pytest.raises(ValueError, match="mcp.setup") as caught:
        from_mapping(server(setup=setup), "suite.yaml", tmp_path)
    assert says in str(caught.value) and "\n" not in str(caught.value)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "hooks.py").write_text("def build(path):\n    pass\n")
    suite = {"name": "mine", "catalog": {"mcp": server(setup=setup)}, "backend": "mcp", "tasks": ["tasks.yaml"]}
    (folder / "suite.yaml").write_text(yaml.safe_dump(suite))
    (folder / "tasks.yaml").write_text(yaml.safe_dump([{"id": "t", "turns": ["go"], "refuse": True}]))
    with pytest.raises(SuiteError, match=r"suite\.yaml: .*mcp\.setup") as caught_suite:
        load_suite(str(folder))
    assert "\n" not in str(caught_suite.value)


def test_a_failing_setup_names_the_hook_and_leaves_no_copy(tmp_path: Path, own_tmp: Path) -> None:
    (tmp_path / "hooks.py").write_text("def boom(path):\n    raise RuntimeError('no git here')\n")
    spec = from_mapping(server(setup="hooks.py:boom"), "suite.yaml", tmp_path)
    assert spec.setup == f"{tmp_path / 'hooks.py'}:boom" and spec.identity()["setup"] == "hooks.py:boom"
    before = set(own_tmp.iterdir())
    with pytest.raises(McpError, match="setup failed: RuntimeError: no git here"):
        Workdir(spec.fixture, spec.setup)
    assert set(own_tmp.iterdir()) == before
    assert "setup" not in from_mapping(server(), "suite.yaml", tmp_path).identity()  # others keep theirs


def test_no_server_is_left_behind(own_tmp: Path) -> None:
    no_server_left(own_tmp)
