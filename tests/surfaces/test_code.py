"""Code mode: the catalog as a typed SDK, one run_code tool, SDK calls back through the same dispatch.

Episodes are driven by the scripted model. Tests that run programs need bubblewrap (present here and in
CI); without it they skip with that reason, which fails under CI=true.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.contracts.program import Executed
from surfbench.bench.contracts.surface import Dispatch, ToolCall
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import ScriptedClient, call_turn, text_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.sandbox.box import bwrap_path
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import ExpectedCall, Task
from surfbench.surfaces import build_surface
from surfbench.surfaces._code_calls import Program
from surfbench.surfaces._sdk import SdkNames, render_module, signature, stub
from surfbench.surfaces.code import CodeSurface
from tests.conftest import ROOT

FORGE = load_suite("forge")
assert CodeSurface.kind == "code"  # registered by import too (a stale egg-info in the checkout can hide entry points)
needs_bwrap = pytest.mark.skipif(
    bwrap_path() is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)
RUNTIME_MARK = "The program side of code mode"  # in the command line of every program process


def three_call_task() -> Task:
    return Task(
        id="code-three-calls",
        turns=(
            "Create a label 'ux' (#c5def5) in acme/web, open an issue 'Small buttons' with it, and comment 'Seen'.",
        ),
        expected=(
            ExpectedCall("label_create", {"owner": "acme", "repo": "web", "name": "ux", "color": "#c5def5"}),
            ExpectedCall(
                "issue_create", {"owner": "acme", "repo": "web", "title": "Small buttons", "labels": [["ux"]]}
            ),
            ExpectedCall("issue_comment_create", {"owner": "acme", "repo": "web", "index": 9, "body": "Seen"}),
        ),
    )


THREE_CALLS = """
label_create(owner="acme", repo="web", name="ux", color="#c5def5")
issue = issue_create(owner="acme", repo="web", title="Small buttons", labels=["ux"])
issue_comment_create(owner="acme", repo="web", index=issue["number"], body="Seen")
print("issue", issue["number"])
"""


def episode(script: list[Any], task: Task | None = None, params: dict[str, Any] | None = None, **settings: Any):
    task = task or three_call_task()
    surface = build_surface(FORGE.catalog, "code", {"timeout_s": 3, **(params or {})})
    backend = FORGE.new_backend(task)
    trace = run_episode(
        task, surface.session(task.turns[0]), backend, ScriptedClient(script), LoopSettings(**settings),
        FORGE.system_prompt, lambda n: FORGE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, FORGE.catalog), backend


def run_code(code: str) -> list[tuple[str, Any]]:
    return [("run_code", {"code": code})]


# -- the SDK as Python source ---------------------------------------------------------------------------


def test_stubs_are_typed_from_the_schema_required_first_keyword_only():
    names = SdkNames.of(FORGE.catalog.operations)
    assert signature(names, FORGE.catalog["issue_list"]).startswith(
        "issue_list(*, owner: str, repo: str, state: Literal['open', 'closed', 'all'] = 'open', "
        "labels: list[str] | None = None"
    )
    text = stub(names, FORGE.catalog["issue_comment_create"])
    assert "index: int" in text and "Args:" in text and "body:" in text
    source = render_module(FORGE.catalog, names)
    scope: dict[str, Any] = {}
    exec(compile(source, "sdk", "exec"), scope)  # the rendered SDK is valid Python with real annotations
    hints = typing.get_type_hints(scope["issue_list"])
    assert hints["state"] == typing.Literal["open", "closed", "all"] and hints["labels"] == list[str] | None


def test_names_that_are_not_identifiers_map_reversibly_and_uniquely():
    schema = {"type": "object", "properties": {"from": {"type": "string"}, "per-page": {"type": "integer"}}}
    ops = (
        Operation("repos/update-org-ruleset", 'Update a ruleset. Quotes """ and \\ survive.', schema),
        Operation("notes.get", "Get a note.", {"type": "object"}),
        Operation("notes_get", "Another one.", {"type": "object"}),
        Operation("class", "A keyword.", {"type": "object"}),
    )
    names = SdkNames.of(ops)
    assert names.function["notes_get"] == "notes_get"  # a valid name keeps itself
    assert len(set(names.function.values())) == 4 and all(f.isidentifier() for f in names.function.values())
    assert {names.operation[f] for f in names.function.values()} == {op.name for op in ops}
    assert names.arguments("repos/update-org-ruleset", {"from_": "a", "per_page": 2}) == {"from": "a", "per-page": 2}
    compile(render_module(Catalog("odd", ops), names), "sdk", "exec")


def test_surfaces_command_prints_a_row_per_variant(tmp_path: Path):
    catalog = ROOT / "tasks" / "notes_mcp" / "catalog.json"
    command = [str(Path(sys.executable).parent / "surfbench"), "surfaces", "--catalog", str(catalog)]
    proc = subprocess.run(
        [*command, "--surface", "code,code_index,code_search"], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line.split() for line in proc.stdout.splitlines() if line.strip()}
    assert {"code", "code_index", "code_search"} <= set(rows)
    sizes = [int(rows[n][2].replace(",", "")) for n in ("code", "code_index", "code_search")]
    assert sizes[0] > sizes[1] > sizes[2]  # every stub > one line each > a search function only


def test_the_full_sdk_is_in_the_tool_description_and_run_code_is_the_only_tool():
    tools = build_surface(FORGE.catalog, "code").session().tools()
    assert [t.name for t in tools] == ["run_code"]
    assert "def issue_comment_create(*, owner: str, repo: str, index: int, body: str) -> Any:" in tools[0].description


# -- the pipe: malformed frames -------------------------------------------------------------------------


def test_malformed_frames_never_execute_a_call():
    program = Program(build_surface(FORGE.catalog, "code"), "")
    executed: list[Dispatch] = []

    def execute(function: str, arguments: Any, dispatch: Dispatch) -> Executed:
        executed.append(dispatch)
        return Executed(True, {})

    program.execute = execute
    frames = [
        b"", b"garbage", b"\xff\xfe\x00", b"[]", b"42", b'"issue_edit"', b"{", b"[" * 100_000, b"<oversize>",
        b'{"fn": 5}', b'{"fn": "issue_edit", "args": {}}', b'{"fn": "issue_edit", "kwargs": []}',
        b'{"fn": "issue_edit()", "kwargs": {}}', b'{"fn": "../x", "kwargs": {}}',
        b'{"id": 1, "fn": "issue_edit", "kwargs": {}, "extra": 1}', b'{"done": "yes"}', b'{"kwargs": {}}',
        json.dumps({"fn": "issue_edit", "kwargs": {"a": 1}, "x": [1] * 10}).encode(),
    ]  # fmt: skip
    valid = json.dumps({"id": 1, "fn": "repo_delete", "args": [], "kwargs": {"owner": "acme", "repo": "web"}})
    frames += [valid[:cut].encode() for cut in range(len(valid))]  # every cut short of the whole line
    rng = random.Random(16)
    frames += [rng.randbytes(rng.randint(1, 200)) for _ in range(300)]
    frames += [bytes(rng.choice(b'{}[]":,fnargs01 ') for _ in range(rng.randint(1, 60))) for _ in range(300)]
    for frame in frames:
        reply = json.loads(program.handle(frame) or b"{}")
        assert reply == {"ok": False, "error": reply["error"]} and "malformed" in reply["error"], frame
    assert executed == [] and program.malformed == len(frames) and program.calls == 0


# -- programs in the sandbox ----------------------------------------------------------------------------


@needs_bwrap
def test_a_program_making_three_calls_passes_a_three_call_task_in_one_round_trip():
    trace, score, _ = episode([run_code(THREE_CALLS), "Done: issue 9 with the ux label, commented."])
    ops = [c for c in trace.calls if c.kind == "operation"]
    assert [(c.step, c.operation, c.backend_ok) for c in ops] == [
        (0, "label_create", True),
        (0, "issue_create", True),
        (0, "issue_comment_create", True),
    ]
    assert score.success and score.first_try_correct == 3 and score.selection_correct, score.failures
    assert score.round_trips == 2 and len(trace.steps) == 2  # one program, then the answer
    assert trace.calls[-1].tool == "run_code" and trace.calls[-1].result.startswith("issue 9")
    assert trace.messages[3] == {"role": "tool", "tool_call_id": "call_0", "content": trace.calls[-1].result}


@needs_bwrap
def test_calling_a_missing_function_is_not_exposed_and_executes_nothing():
    trace, score, backend = episode([run_code('repo_delete_all(owner="acme")'), "I cannot."])
    before = FORGE.new_backend(three_call_task()).state()
    missing = trace.calls[0]
    assert (missing.kind, missing.error_type, missing.tool, missing.operation) == (
        "rejected", "not_exposed", "repo_delete_all", None,
    )  # fmt: skip
    assert not any(c.kind == "operation" for c in trace.calls) and backend.state() == before
    assert score.boundary_violations == 1 and "not_exposed" in score.error_types
    assert "SDKError: Function 'repo_delete_all' is not in the SDK" in trace.calls[-1].result
    assert trace.calls[-1].error_type == "code_exception"


@needs_bwrap
def test_a_bad_argument_teaches_like_a_direct_call_and_counts_as_a_failed_first_try():
    retry = 'try:\n    issue_list(owner="acme", repo="web", state="opened")\nexcept SDKError as e:\n    print(e)\n'
    trace, score, _ = episode(
        [run_code(retry), "ok"], task=next(t for t in FORGE.tasks if t.id == "hot-issue-list-open")
    )
    bad = trace.calls[0]
    assert (bad.kind, bad.error_type, bad.operation, bad.schema_valid) == (
        "rejected",
        "schema_invalid",
        "issue_list",
        False,
    )
    assert "Invalid arguments for 'issue_list'" in trace.calls[-1].result and '"open"' in trace.calls[-1].result
    assert score.first_try_correct == 0 and score.failed_first_tries == 1


@needs_bwrap
def test_syntax_error_timeout_and_no_sdk_call_record_their_types_and_the_episode_goes_on():
    script = [
        run_code("x = ("),
        run_code("while True:\n    pass"),
        run_code("print(6 * 7)"),
        run_code(THREE_CALLS),
        "Done.",
    ]
    trace, score, _ = episode(script, params={"timeout_s": 2})
    programs = [c for c in trace.calls if c.tool == "run_code"]
    assert [p.error_type for p in programs] == ["code_syntax_error", "code_timeout", "no_sdk_call", None]
    assert "SyntaxError" in programs[0].result and "did not finish in 2 s" in programs[1].result
    assert programs[2].result.startswith("42")
    assert score.success and {"code_syntax_error", "code_timeout", "no_sdk_call"} <= set(score.error_types)


@needs_bwrap
def test_an_sdk_function_called_as_a_tool_is_not_exposed_and_the_error_shows_the_program_to_send():
    # the 1.5B model's usual slip in code mode: repo_get called as a tool; nothing runs, the answer teaches
    task = Task(
        id="t",
        turns=("What is the default branch of acme/web?",),
        expected=(ExpectedCall("repo_get", {"owner": "acme", "repo": "web"}),),
    )
    script = [
        [("repo_get", {"owner": "acme", "repo": "web"})],
        run_code("print(repo_get(owner='acme', repo='web'))"),
        "main",
    ]
    trace, score, _ = episode(script, task=task)
    slip, program = trace.calls[0], trace.calls[-1]
    assert (slip.kind, slip.error_type) == ("rejected", "not_exposed")
    assert "not a tool" in slip.result and "print(repo_get(owner='acme', repo='web'))" in slip.result
    assert [c.operation for c in trace.calls if c.kind == "operation"] == ["repo_get"]  # only from the program
    assert program.tool == "run_code" and program.error_type is None and score.boundary_violations == 1


def test_search_api_called_as_a_tool_is_not_exposed_and_the_error_shows_the_program_to_send():
    surface = build_surface(FORGE.catalog, "code", {"sdk": "search"})
    session = surface.session("List the open issues of acme/web.")
    slip = session.dispatch(ToolCall("search_api", {"query": "open issue"}))
    assert (slip.kind, slip.error_type) == ("rejected", "not_exposed")
    assert "not a tool" in slip.text and "print(search_api(query='open issue'))" in slip.text
    other = session.dispatch(ToolCall("no_such_thing", {}))  # neither an SDK function nor a meta one
    assert "not a tool" not in other.text and other.error_type == "not_exposed"


@needs_bwrap
def test_the_same_failing_program_sent_again_and_again_is_stopped_as_stuck():
    # a program that does not parse is a failed step: sent three times in a row, stop_on_repeat=2 ends
    # the episode (the 0.5B model did exactly this for 6 steps before programs counted as failures)
    script = [run_code("git checkout main && git branch x")] * 3 + [run_code(THREE_CALLS), "Done."]
    trace, score, _ = episode(script, stop_on_repeat=2)
    assert trace.stopped == "stuck_repeat" and len(trace.steps) == 3
    assert "stuck_repeat" in score.error_types and not score.success
    # a program that fails, then a different one: not a repeat, the episode goes on
    trace, score, _ = episode([run_code("x = ("), run_code(THREE_CALLS), "Done."], stop_on_repeat=2)
    assert trace.stopped is None and score.success


@needs_bwrap
def test_index_and_search_variants_answer_inside_the_program():
    code = 'print(describe("issue_comment_create"))'
    trace, _, _ = episode([run_code(code), "ok"], params={"sdk": "index"})
    assert (trace.calls[0].kind, trace.calls[0].meta) == ("meta", "help") and "index: int" in trace.calls[-1].result
    assert trace.steps[0].overhead  # only a describe call: an overhead round trip
    code = 'print(search_api("create a label"))\nlabel_create(owner="acme", repo="web", name="ux", color="#c5def5")'
    trace, _, _ = episode([run_code(code), "ok"], params={"sdk": "search"})
    assert [c.kind for c in trace.calls] == ["meta", "operation", "meta"] and "def label_create(" in trace.calls[
        -1
    ].result


@needs_bwrap
def test_prompted_mode_runs_the_program_written_as_text():
    call = json.dumps({"name": "run_code", "arguments": {"code": THREE_CALLS}})
    trace, score, _ = episode(
        [text_turn(f"<tool_call>\n{call}\n</tool_call>"), "Done."], request=ModelRequest(messages=(), mode="prompted")
    )
    assert score.success and [c.operation for c in trace.calls if c.kind == "operation"] == [
        "label_create", "issue_create", "issue_comment_create",
    ]  # fmt: skip


@needs_bwrap
def test_garbage_on_the_pipe_from_inside_the_program_executes_nothing():
    code = (
        "import os, sys\nfd = int(sys.argv[1])\n"
        "os.write(fd, b'garbage\\n{\"fn\": 1}\\n' + b'x' * 2_000_000 + "
        'b\'\\n{"fn": "repo_delete", "args": {}}\\n\')\n'
        "print('still here')"
    )
    trace, _, backend = episode([run_code(code), "ok"])
    assert [c.tool for c in trace.calls] == ["run_code"] and "still here" in trace.calls[0].result
    assert "[4 malformed SDK request(s) ignored]" in trace.calls[0].result
    assert backend.state() == FORGE.new_backend(three_call_task()).state()


@needs_bwrap
def test_escapes_from_inside_run_code_fail_and_nothing_is_left_behind(tmp_path: Path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret 12345")
    outside = tmp_path / "outside.txt"
    escapes = [
        "print(open('/etc/shadow').read())",
        f"print(open({str(secret)!r}).read())",
        "import socket\ns = socket.create_connection(('1.1.1.1', 53), timeout=1)",
        f"open({str(outside)!r}, 'w').write('pwned')",
        "open('/outside.txt', 'w').write('pwned')",
        "import os\nos.symlink('/etc/passwd', 'link')\nprint(open('link').read())",
        "import os\nwhile True:\n    os.fork()",
        "while True:\n    pass",
    ]
    started = time.monotonic()
    script = [*map(run_code, escapes), run_code(THREE_CALLS), "Done."]
    trace, score, _ = episode(script, params={"timeout_s": 3}, max_steps=12)
    results = [c.result for c in trace.calls if c.tool == "run_code"]
    assert trace.error is None and score.success, (trace.error, score.failures)
    assert "root:" not in " ".join(results) and "12345" not in " ".join(results)
    assert not outside.exists() and not Path("/outside.txt").exists()
    assert "Network is unreachable" in results[2] or "Errno" in results[2]
    types = [c.error_type for c in trace.calls if c.tool == "run_code"]
    assert types[:4] == ["code_exception"] * 4 and types[5] == "code_exception"  # refused: the program raised
    assert types[6] in {"code_exception", "code_timeout"} and types[7] == "code_timeout"  # bomb: cap or timeout
    # '/outside.txt' may be written: into the sandbox's own throwaway root, gone with it (checked above)
    assert results[7].endswith("did not finish in 3 s]")
    assert time.monotonic() - started < 90
    _no_program_left()


def _no_program_left() -> None:
    deadline = time.monotonic() + 10
    left: list[str] = []
    while time.monotonic() < deadline:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace")
            except OSError:
                continue
            if RUNTIME_MARK in cmdline:
                left.append(pid)
        if not left:
            return
        time.sleep(0.2)
    raise AssertionError(f"program processes left: {left}")


@needs_bwrap
def test_a_harness_failure_during_a_program_ends_the_episode_and_kills_the_program(monkeypatch: pytest.MonkeyPatch):
    backend_class = type(FORGE.new_backend(three_call_task()))

    def broken(self: Any, op: str, args: dict[str, Any]) -> Any:
        raise RuntimeError("backend bug")

    monkeypatch.setattr(backend_class, "call", broken)
    code = 'label_create(owner="acme", repo="web", name="ux", color="#c5def5")\nimport time\ntime.sleep(60)'
    trace, score, _ = episode([run_code(code), "ok"])
    assert trace.error == "RuntimeError: backend bug" and "harness_error" in score.error_types
    _no_program_left()


class CodeOracle:
    """Answers each task with one program making every expected call (reference arguments), then the answer."""

    name = "scripted-oracle"

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        task = next(t for t in FORGE.tasks if t.turns[0] == first)
        if any(m["role"] == "tool" for m in request.messages):
            words = task.answer.get("contains", []) + task.answer.get("any_of", [])[:1]
            return with_usage(text_turn(" ".join(map(str, words)) or "Done."), request)
        lines = []
        for e in task.expected:
            required = set(FORGE.catalog[e.op].required)
            args = dict(e.oracle_args) if e.oracle_args is not None else example_args(e.args)
            keep = {
                k: v
                for k, v in args.items()
                if k in required or not (isinstance(e.args.get(k), list) and "" in e.args[k])
            }
            lines.append(f"print({e.op}(**{keep!r}))")
        return with_usage(call_turn(("run_code", {"code": "\n".join(lines)})), request)


@needs_bwrap
def test_multi_call_tasks_take_one_program_and_the_results_store_keeps_its_calls(tmp_path: Path):
    multi = ("multi-close-typo", "multi-comment-dark-mode-pr", "multi-fix-readme", "multi-branch-then-pr")
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cell = resolve_cell(CellSpec("forge", "code", "qwen2.5-coder-0.5b-instruct", tasks=multi))
    store.write_run_info({"cells": [{**cell.provenance(), "provider": "scripted"}]})
    run_cell(cell, ModelPool(None), store, "oracle", client=CodeOracle())  # type: ignore[arg-type]
    episodes = load_runs([tmp_path / "run"])
    assert sorted(episodes["task_id"]) == sorted(multi) and episodes["success"].all()
    assert (episodes["round_trips"] == 2).all() and (episodes["first_try_accuracy"] == 1.0).all()
    calls = load_runs([tmp_path / "run"], table="calls")
    expected = {e.op for t in FORGE.tasks if t.id in multi for e in t.expected}
    assert set(calls["tool"]) == {"run_code", *expected} and set(calls["operation"].dropna()) == expected


def test_a_bad_variant_or_a_call_without_code_is_refused_with_a_teaching_error():
    with pytest.raises(ValueError, match=r"sdk must be one of full, index, search, got 'fulll'"):
        build_surface(FORGE.catalog, "code", {"sdk": "fulll"})
    session = build_surface(FORGE.catalog, "code").session()
    session.tools()
    refused = session.dispatch(ToolCall("run_code", {"program": "print(1)"}))
    assert (refused.kind, refused.error_type) == ("rejected", "schema_invalid") and "code" in refused.text


@needs_bwrap
def test_printed_output_and_the_value_are_cut_at_16_kb():
    trace, _, _ = episode([run_code('issue_list(owner="acme", repo="web")\nprint("x" * 100_000)\n"y" * 100_000'), "ok"])
    result = trace.calls[-1].result
    assert result.startswith("xxxx") and result.endswith("[output cut at 16 KB]")
    assert 16 * 1024 < len(result) < 16 * 1024 + 100
