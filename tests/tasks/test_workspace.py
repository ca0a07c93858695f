"""The workspace suite: its tasks are solvable on every surface, the sandbox holds, the seed's failure
modes are classified. Needs bubblewrap (`.ci/run` installs it); skipped with that reason without it."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import ScriptedClient, call_turn, text_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.sandbox.box import Limits, bwrap_path
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import Task, load_suite
from surfbench.surfaces import build_surface
from surfbench.tasks.workspace.backend import FILES, WorkspaceBackend, tool_usage

pytestmark = pytest.mark.skipif(
    bwrap_path() is None, reason="bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
)

SUITE = load_suite("workspace")
ORACLE = yaml.safe_load((Path(__file__).parent / "workspace_oracle.yaml").read_text())
SURFACES = ["unified", "split", "four", "bash"]


def command_turn(tools: set[str], command: str) -> ModelTurn:
    if "bash" in tools:
        return call_turn(("bash", {"command": command}))
    return call_turn(("execute_code", {"steps": [{"code": command}]}))


class WorkspaceOracle:
    """Replays the reference commands of tests/tasks/workspace_oracle.yaml on any workspace surface."""

    name = "scripted-oracle"

    def __init__(self) -> None:
        self.by_turn = {t.turns[0]: t.id for t in SUITE.tasks}

    def complete(self, request: ModelRequest) -> ModelTurn:
        first = next(m["content"] for m in request.messages if m["role"] == "user")
        solution = ORACLE[self.by_turn[first]]
        done = sum(len(m.get("tool_calls") or []) for m in request.messages if m["role"] == "assistant")
        if done < len(solution["run"]):
            turn = command_turn({t.name for t in request.tools}, solution["run"][done])
        else:
            turn = text_turn(solution["answer"])
        return with_usage(turn, request)


def test_every_task_has_a_reference_solution_and_the_prompt_lists_every_named_tool():
    assert sorted(ORACLE) == sorted(t.id for t in SUITE.tasks)
    assert len(SUITE.tasks) >= 40
    for name, usage in tool_usage().items():
        assert usage in SUITE.system_prompt, f"system prompt does not describe tools/{name}"


@pytest.mark.parametrize("surface", SURFACES)
def test_reference_solutions_pass_every_task_on_every_surface(surface: str, tmp_path: Path):
    cell = resolve_cell(CellSpec("workspace", surface, "qwen2.5-coder-0.5b-instruct", split="all"))
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "oracle", client=WorkspaceOracle())
    episodes = load_runs([tmp_path / "run"])
    assert len(episodes) == len(SUITE.tasks)
    failed = episodes[~episodes["success"].astype(bool)]
    assert failed.empty, failed[["task_id", "failures", "error"]].to_string()
    # each episode reports the peak size of its folder: the seed files at least, within the quota
    peaks = episodes["disk_peak_bytes"]
    assert peaks.notna().all() and (peaks > 0).all() and (peaks <= 256 * 1024 * 1024).all(), peaks.describe()
    calls = load_runs([tmp_path / "run"], table="calls")
    assert len(calls) == sum(len(s["run"]) for s in ORACLE.values())
    task_of = dict(zip(episodes["episode_key"], episodes["task_id"], strict=True))
    want = calls["episode_key"].map(lambda k: f"[exit {ORACLE[task_of[k]].get('exit', 0)}]")
    broken = calls[[not r.startswith(w) for r, w in zip(calls["result"], want, strict=True)]]
    assert broken.empty, broken[["episode_key", "arguments", "result"]].to_string()


def episode(task_id: str, surface: str, script: list, limits: Limits | None = None) -> tuple[Any, Any, Any]:
    task: Task = next(t for t in SUITE.tasks if t.id == task_id)
    backend = WorkspaceBackend(limits)
    backend.reset(task.scenario)
    session = build_surface(SUITE.catalog, surface).session(task.turns[0])
    trace = run_episode(
        task, session, backend, ScriptedClient(script), LoopSettings(max_steps=10), SUITE.system_prompt,
        lambda n: SUITE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, SUITE.catalog, SUITE.classifier), backend


def bash(command: str) -> list[tuple[str, Any]]:
    return [("bash", {"command": command})]


# -- the sandbox: escapes fail, the episode goes on ---------------------------------------------------


def test_escapes_fail_safely_and_the_episode_goes_on(tmp_path: Path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret 12345")
    outside = tmp_path / "outside.txt"
    started = time.monotonic()
    trace, score, backend = episode(
        "config-port",
        "four",
        [
            bash("cat /etc/shadow"),
            bash(f"cat {secret}"),
            bash(f"echo pwned > {outside}; echo pwned > ../outside.txt; echo pwned > /outside.txt"),
            bash("ln -s /etc/passwd passwd-link; cat passwd-link"),
            [("read_file", {"path": "passwd-link"})],
            [("read_file", {"path": "../../../../etc/passwd"})],
            bash(":(){ :|:& };:"),
            bash("sleep 600"),
            bash("grep port project/config.ini"),
            "The port is 8080.",
        ],
        Limits(timeout_s=3),
    )
    took = time.monotonic() - started
    results = [c.result for c in trace.calls]
    assert trace.error is None and score.success, (trace.error, score.failures)
    assert "root:" not in " ".join(results) and "12345" not in " ".join(results)
    # nothing outside: not the host, nor the root of the namespace that holds the episode's disk
    assert not outside.exists() and not (backend.root.parent / "outside.txt").exists()
    assert backend.state()["files"]["passwd-link"] == "-> /etc/passwd"  # reported, never followed
    # the process cap stops the bomb, or the timeout kills the sandbox and everything in it; which one
    # comes first varies with the machine's load: either way a sandbox result, and nothing left over
    assert results[6].startswith(("[exit ", "[killed")), results[6]
    assert "did not finish in time" in results[7]
    assert "8080" in results[8]
    assert took < 60
    backend.close()  # its idle process holds the episode's disk until then
    _no_sandbox_processes_left()


def _no_sandbox_processes_left(marks: tuple[str, ...] = (":(){", "sleep 600")) -> None:
    """No process of the bomb or the sleeper is left (by their command lines: other sandboxes may run on
    a shared machine)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            except OSError:
                continue
            if any(mark in cmdline for mark in marks):
                left.append(pid)
        if not left:
            return
        time.sleep(0.2)
    raise AssertionError(f"sandbox processes left: {left}")


def test_the_harness_never_follows_a_symlink_out_when_reading_state(tmp_path: Path):
    backend = WorkspaceBackend()
    backend.reset()
    backend.call("run_steps", {"steps": [{"code": "ln -s /etc/hostname evil"}]})
    files = backend.state()["files"]
    assert files["evil"] == "-> /etc/hostname"
    assert files["project/config.ini"].startswith("[server]")


def test_output_is_capped_and_a_full_workspace_file_is_refused():
    backend = WorkspaceBackend(Limits(output_cap=1000, max_file_bytes=1_000_000))
    backend.reset()
    out = backend.call("run_steps", {"steps": [{"code": "yes 0123456789 | head -c 200000"}]})
    assert len(out) < 1200 and "[output cut]" in out
    out = backend.call("run_steps", {"steps": [{"code": "head -c 5000000 /dev/zero > big.bin; echo rc=$?"}]})
    assert "rc=153" in out or "File size limit" in out
    assert (backend.root / "big.bin").stat().st_size <= 1_000_000


def test_a_fresh_copy_per_episode():
    first = WorkspaceBackend()
    first.reset()
    first.call("write_file", {"path": "notes/todo.txt", "content": "gone"})
    second = WorkspaceBackend()
    second.reset()
    assert second.state()["files"]["notes/todo.txt"] == (FILES / "notes/todo.txt").read_text()


# -- the seed's failure modes ---------------------------------------------------------------------------


def test_steps_and_pipe_in_one_call_is_rejected_and_classified():
    both = {"steps": [{"code": "ls"}], "pipe": [{"code": "cat data/users.csv"}, {"tool": "filtercsv"}]}
    trace, score, _ = episode("users-de-count", "unified", [[("execute_code", both)], "4"])
    assert trace.calls[0].kind == "rejected" and trace.calls[0].error_type == "steps_and_pipe"
    assert "not both" in trace.calls[0].result
    assert "steps_and_pipe" in score.error_types


def test_pipe_where_steps_were_right_and_the_reverse():
    pipe = {"pipe": [{"code": "wc -l < logs/app.log"}, {"code": "wc -l < logs/access.log"}]}
    _, score, _ = episode("two-log-lengths", "unified", [[("execute_code", pipe)], "80 and 50"])
    assert "pipe_for_steps" in score.error_types
    steps = {"steps": [{"code": "cat data/users.csv"}, {"tool": "filtercsv", "args": ["country", "DE"]}]}
    _, score, _ = episode("users-de-count", "unified", [[("execute_code", steps)], "4"])
    assert "steps_for_pipe" in score.error_types
    right = {"pipe": [{"code": "cat data/users.csv"}, {"tool": "filtercsv", "args": ["country", "DE"]}]}
    trace, score, _ = episode("users-de-count", "unified", [[("execute_code", right)], "4 users"])
    assert not {"steps_for_pipe", "pipe_for_steps"} & set(score.error_types)
    assert "fay@example.com" in trace.calls[0].result and score.success


def test_inline_code_that_redoes_a_named_tool():
    inline = "python3 -c \"import csv; print(sum(int(r['units']) for r in csv.DictReader(open('data/sales.csv'))))\""
    trace, score, _ = episode("sales-units-total", "bash", [bash("head -3 data/sales.csv"), bash(inline), "354"])
    assert "354" in trace.calls[1].result and score.success
    assert "inline_reimplementation" in score.error_types
    _, score, _ = episode("sales-units-total", "bash", [bash("csvstat data/sales.csv units"), "354"])
    assert "inline_reimplementation" not in score.error_types
    call = [("call_tool", {"calls": [{"tool": "csvstat", "args": ["data/sales.csv", "units"]}]})]
    _, score, _ = episode("sales-units-total", "split", [call, "354"])
    assert "inline_reimplementation" not in score.error_types and score.success


def test_split_call_tool_rejects_inline_code_and_teaches():
    bad = [("call_tool", {"calls": [{"code": "logcount logs/app.log ERROR"}]})]
    trace, score, _ = episode("log-error-count", "split", [bad, "6"])
    assert trace.calls[0].error_type == "inline_code_rejected" and "execute_code" in trace.calls[0].result
    assert "inline_code_rejected" in score.error_types


def test_unknown_named_tool_and_bad_command_shape_are_tool_errors():
    steps = {"steps": [{"tool": "csvstats", "args": []}]}
    trace, _, _ = episode("log-error-count", "unified", [[("execute_code", steps)], "?"])
    assert "no named tool 'csvstats'" in trace.calls[0].result and "csvstat" in trace.calls[0].result
    steps = {"steps": [{"code": "ls", "tool": "csvstat"}]}
    trace, _, _ = episode("log-error-count", "unified", [[("execute_code", steps)], "?"])
    assert "exactly one of" in trace.calls[0].result


def test_parallel_fan_out_and_readonly_sandbox():
    fan = {"steps": [{"parallel": [{"code": "wc -l < logs/app.log"}, {"code": "wc -l < logs/access.log"}]}]}
    trace, score, _ = episode("two-log-lengths", "unified", [[("execute_code", fan)], "80 and 50"])
    assert "80" in trace.calls[0].result and "50" in trace.calls[0].result and score.success
    ro = {"steps": [{"code": "echo x > project/new.txt"}], "sandbox": "readonly"}
    trace, _, backend = episode("debug-off", "unified", [[("execute_code", ro)], "no"])
    assert "Read-only file system" in trace.calls[0].result and "project/new.txt" not in backend.state()["files"]


def test_workspace_surfaces_refuse_other_catalogs_with_a_clear_error():
    forge = load_suite("forge")
    for kind in SURFACES:
        with pytest.raises(ValueError, match="suite=workspace"):
            build_surface(forge.catalog, kind)


def test_workspace_runs_through_the_same_report_and_gate(tmp_path: Path):
    from surfbench.bench.report.gate import judge
    from surfbench.bench.report.report import write_report

    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cells = [
        resolve_cell(CellSpec("workspace", surface, "qwen2.5-coder-0.5b-instruct", split="dev", limit=10))
        for surface in ("unified", "split")
    ]
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "oracle", client=WorkspaceOracle())
    md, html = write_report([tmp_path / "run"], tmp_path / "report", baseline="unified")
    text = md.read_text()
    assert "| workspace |" in text and "not a measurement" in text
    result = judge(Path("configs/gate/ollie-split.yaml"), [tmp_path / "run"])
    assert result.decisions == {"split": "ship"} and result.exit_code == 0


def test_success_drop_is_judged_with_its_paired_interval(tmp_path: Path):
    from surfbench.bench.report.gate import judge

    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    spec = {"split": "dev", "limit": 6}
    unified, split = (
        resolve_cell(CellSpec("workspace", s, "qwen2.5-coder-0.5b-instruct", **spec)) for s in ("unified", "split")
    )
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in (unified, split)]})
    run_cell(unified, ModelPool(None), store, "o", client=WorkspaceOracle())
    run_cell(split, ModelPool(None), store, "o", client=ScriptedClient(["I cannot do that."] * 6))
    result = judge(Path("configs/gate/ollie-split.yaml"), [tmp_path / "run"])
    (drop,) = [v for v in result.verdicts if v.criterion == "success_drop_max"]
    assert drop.outcome == "fail" and "95% CI" in drop.observed and "+100.0" in drop.observed
    assert result.decisions == {"split": "close"} and result.exit_code == 2
