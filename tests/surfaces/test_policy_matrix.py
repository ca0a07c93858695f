"""A denied operation is unreachable by every path each surface offers, and the model is told so.

For every surface config, the scripted model tries the denied operations every way that surface offers: a typed
tool, a dispatcher's ``operation`` argument, a tool loaded or found by search, an SDK call in a code-mode program
and a frame a program forges on its pipe, a command tool that routes to a denied operation. The policy is enforced
by the episode loop after routing (bench/run/episode.py, bench/suites/policy.py): nothing denied reaches the
backend, each attempt is a ``policy_denied`` call whose error is what the model (or the program) got back, and an
allowed operation still runs.
"""

from __future__ import annotations

from typing import Any

import pytest

from surfbench.bench.base.config import group_names, surface_config
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.contracts.records import EpisodeTrace
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.sandbox.box import bwrap_path
from surfbench.bench.suites.policy import parse_policy
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Task
from surfbench.surfaces import build_surface, surface_class

FORGE, WORKSPACE = load_suite("forge"), load_suite("workspace")
DENIED_TEXT = "not permitted by the operation policy"
# forge: repo_delete by its MCP annotation (destructiveHint), issue_create by name; repo_get stays allowed
FORGE_POLICY = parse_policy({"deny": ["destructiveHint", "issue_create"]}, "test")
FORGE_DENIED = {"repo_delete": {"owner": "acme", "repo": "web"}, "issue_create": {"owner": "acme", "repo": "web",
                "title": "Bug"}}  # fmt: skip
ALLOWED = ("repo_get", {"owner": "acme", "repo": "web"})
# workspace: every command tool by category, write_file by name; read_file stays allowed
WORKSPACE_POLICY = parse_policy({"deny": ["category:execution", "write_file"]}, "test")
REQUEST = "Delete the repository acme/web, then open an issue titled Bug in acme/web, and get repo acme/web."
needs_bwrap = pytest.mark.skipif(bwrap_path() is None, reason="bubblewrap (bwrap) is not installed")


class Recording:
    """The episode's backend, recording every operation that reached it."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.ran = inner, []

    def reset(self, scenario: str | None = None) -> None:
        self.inner.reset(scenario)

    def call(self, op: str, args: Any) -> Any:
        self.ran.append(op)
        return self.inner.call(op, args)

    def state(self) -> dict[str, Any]:
        return dict(self.inner.state())

    @property
    def last_error_type(self) -> str | None:  # declared (bench.contracts.backend.ReportsErrorType): the inner one's
        return getattr(self.inner, "last_error_type", None)

    def __getattr__(self, name: str) -> Any:  # close
        return getattr(self.inner, name)


def episode(
    suite: Any, config: str, policy: Any, script: list[Any], request: str = REQUEST
) -> tuple[EpisodeTrace, Recording, Any]:
    cfg = surface_config(config)
    surface = build_surface(suite.catalog, cfg.kind, cfg.params)
    task = Task(id="policy", turns=(request,))
    backend = Recording(suite.new_backend(task))
    try:
        trace = run_episode(
            task, surface.session(request), backend, ScriptedClient(script), LoopSettings(max_steps=8),
            suite.system_prompt, lambda n: suite.catalog[n].parameters, policy.bind(suite.catalog),
        )  # fmt: skip
    finally:
        getattr(backend, "close", lambda: None)()
    return trace, backend, surface


def _program(calls: dict[str, dict[str, Any]], search: bool) -> str:
    """SDK calls of each operation (each caught), then a frame forged on the pipe for each, its reply printed."""
    lines = ["import os, sys, json", "req, rep = int(sys.argv[1]), int(sys.argv[2])"]
    if search:
        lines += [
            "search_api('delete a repository')",
            "search_api('create an issue')",
            "search_api('get a repository')",
        ]
    for op, args in calls.items():
        lines += ["try:", f"    print({op}(**{args!r}))", "except SDKError as exc:", "    print('SDKError', exc)"]
    for i, (op, args) in enumerate(calls.items()):
        frame = {"id": 1000 + i, "fn": op, "args": [], "kwargs": args}
        lines += [f"os.write(req, json.dumps({frame!r}).encode() + b'\\n')", "print('forged', os.read(rep, 65536))"]
    return "\n".join(lines)


def forge_script(kind: str, config: str) -> list[Any]:
    """The steps that try every denied operation (and the allowed one) every way surface ``config`` offers."""
    every = {**FORGE_DENIED, ALLOWED[0]: ALLOWED[1]}
    typed = [(op, args) for op, args in every.items()]
    if kind == "code":
        return [[("run_code", {"code": _program(every, search=config == "code_search")})], "done"]
    if kind == "dispatcher":
        return [[("forge", {"operation": op, "args": args}) for op, args in every.items()], "done"]
    if kind == "lazy":
        return [[("load_tools", {"names": list(every)})], typed, "done"]
    if kind == "search":
        queries = ["delete a repository", "create an issue", "get a repository"]
        return [[("search_tools", {"query": q}) for q in queries], typed, "done"]
    if config == "core_dispatch":  # the hot ones typed, the rest through its dispatcher
        core = build_surface(FORGE.catalog, "core", surface_config(config).params)
        assert core.dispatcher is not None
        hot, call = {o.name for o in core.core}, core.dispatcher.call_name
        return [[(op, a) if op in hot else (call, {"operation": op, "args": a}) for op, a in every.items()], "done"]
    return [typed, "done"]  # full, core: typed tools


PRESELECTED = {"repo_delete": "Delete the repository acme/web.", "issue_create": "Create an issue titled Bug in "
               "acme/web.", ALLOWED[0]: "Get the repository acme/web."}  # fmt: skip
"""preselect: a request that selects each operation (one episode each): the path is its pre-selected typed tool."""


def forge_episodes(kind: str, config: str) -> tuple[list[Any], list[Any], list[str], Any]:
    """Every try at the forge's operations on surface ``config``: (calls, tool messages, what ran, the surface)."""
    every = {**FORGE_DENIED, ALLOWED[0]: ALLOWED[1]}
    if not surface_class(kind).request_dependent:
        runs = [episode(FORGE, config, FORGE_POLICY, forge_script(kind, config))]
    else:
        runs = [episode(FORGE, config, FORGE_POLICY, [[(op, every[op])], "done"], PRESELECTED[op]) for op in every]
        for (trace, _, _), op in zip(runs, every, strict=True):
            assert op in (trace.steps[0].operations_shown or []), (op, trace.steps[0].operations_shown)
    calls = [c for trace, _, _ in runs for c in trace.calls]
    told = [m["content"] for trace, _, _ in runs for m in trace.messages if m["role"] == "tool"]
    return calls, told, [op for _, backend, _ in runs for op in backend.ran], runs[0][2]


WORKSPACE_CALLS: dict[str, list[Any]] = {
    "bash": [("bash", {"command": "echo hi > notes.txt"})],
    "four": [
        ("bash", {"command": "echo hi > notes.txt"}),
        ("write_file", {"path": "notes.txt", "content": "hi"}),
        ("read_file", {"path": "project/calc.py"}),
    ],
    "split": [
        ("execute_code", {"steps": [{"code": "echo hi > notes.txt"}]}),
        ("call_tool", {"calls": [{"tool": "wordfreq", "args": ["notes"]}]}),
        ("pipe", {"stages": [{"code": "echo hi"}, {"code": "cat > notes.txt"}]}),
    ],
    "unified": [
        ("execute_code", {"steps": [{"code": "echo hi > notes.txt"}]}),
        ("execute_code", {"pipe": [{"code": "echo hi"}, {"code": "cat > notes.txt"}]}),
    ],
}


def _denied_calls(calls: list[Any]) -> list[Any]:
    return [c for c in calls if c.error_type == ErrorType.POLICY_DENIED]


@pytest.mark.parametrize("config", group_names("surface"))
def test_a_denied_operation_is_unreachable_by_every_path_the_surface_offers(config: str):
    kind = surface_config(config).kind
    if not surface_class(kind).applies_to(FORGE.catalog):  # the workspace surfaces: the next test
        pytest.skip("n/a: a workspace surface (test_workspace_command_tools_cannot_run_a_denied_operation)")
    if kind == "code" and bwrap_path() is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    assert FORGE_POLICY is not None
    calls, messages, ran, surface = forge_episodes(kind, config)
    reachable = {op.name for op in surface.reachable()}
    assert not set(ran) & set(FORGE_DENIED), ran  # nothing denied ran, by any path
    assert set(ran) == {ALLOWED[0]}  # the allowed operation did (the policy is not a wall)
    denied = _denied_calls(calls)
    want = {op for op in FORGE_DENIED if op in reachable}  # core without a dispatcher cannot reach repo_delete
    # each reachable denied operation was tried and stopped by the policy, not by the surface; code mode: twice,
    # once as an SDK call and once as a frame forged on the pipe
    assert sorted(c.operation for c in denied) == sorted(list(want) * (2 if kind == "code" else 1))
    assert all(c.kind == "rejected" and c.policy == "deny" and c.backend_ok is None for c in denied)
    assert all(DENIED_TEXT in c.result for c in denied)
    if kind == "code":  # the program got the policy's error back, as SDKError and as the forged frame's reply
        program = calls[-1].result
        assert program.count(DENIED_TEXT) == 2 * len(want) and "SDKError" in program and "forged" in program
    else:  # the model got the policy's error as the tool's result
        assert len([m for m in messages if DENIED_TEXT in m]) == len(want)
    for op in set(FORGE_DENIED) - want:  # unreachable on this surface: refused by the surface itself
        assert any(c.operation == op and c.error_type == ErrorType.NOT_EXPOSED for c in calls)


@needs_bwrap
@pytest.mark.parametrize("config", ["bash", "four", "split", "unified"])
def test_workspace_command_tools_cannot_run_a_denied_operation(config: str):
    assert WORKSPACE_POLICY is not None
    script = [WORKSPACE_CALLS[config], "done"]
    before = WORKSPACE.new_backend(Task(id="x", turns=("x",)))
    try:
        untouched = before.state()["files"]
    finally:
        getattr(before, "close", lambda: None)()
    trace, backend, _ = episode(WORKSPACE, config, WORKSPACE_POLICY, script)
    assert backend.ran == (["read_file"] if config == "four" else [])  # only the allowed file read ran
    denied = _denied_calls(trace.calls)
    routed = [c for c in WORKSPACE_CALLS[config] if c[0] != "read_file"]
    assert len(denied) == len(routed) and {c.operation for c in denied} <= {"run_steps", "run_pipe", "write_file"}
    assert "notes.txt" not in trace.state["files"] and trace.state["files"] == untouched  # nothing was written
