"""BFCL imported as it is: categories load from the bfcl-eval package, each entry is solvable by its
own ground truth (except where BFCL's answer breaks its own schema), and BFCL's checker agrees with
ours on outputs whose verdict is known."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import SuiteError, load_suite

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("bfcl_eval") is None,
    reason="bfcl-eval is not installed (pip install --no-deps bfcl-eval==2026.3.23; make setup does)",
)
SINGLE = ["simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple", "irrelevance"]


def run(suite: str, client, tmp_path: Path, surface: str = "full", split: str = "all", limit: int | None = None):
    cell = resolve_cell(CellSpec(suite, surface, "qwen2.5-coder-0.5b-instruct", split=split, limit=limit))
    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "t", client=client)
    return tmp_path / "run"


@pytest.mark.parametrize("category", [*SINGLE, "multi_turn_base"])
def test_ground_truth_solves_every_entry_unless_it_breaks_its_own_schema(category: str, tmp_path: Path):
    folder = run(f"bfcl:{category}", OracleClient(f"bfcl:{category}"), tmp_path)
    episodes = load_runs([folder])
    assert len(episodes) == len(load_suite(f"bfcl:{category}").tasks)
    failed = episodes[~episodes["success"].astype(bool)]
    # the only failures allowed: BFCL's own answer fails the entry's JSON Schema (data conflicts,
    # e.g. strings for an integer array, a value outside the enum, a required argument left out), or
    # the entry has a twin (same question, same functions, another answer) the oracle cannot tell apart
    tasks = {t.id: t for t in load_suite(f"bfcl:{category}").tasks}
    twins = {
        t.id
        for t in tasks.values()
        for u in tasks.values()
        if t.id != u.id and t.turns == u.turns and set(t.catalog.names) == set(u.catalog.names)
    }
    calls = load_runs([folder], table="calls")
    schema_broken = set(calls.loc[calls["schema_valid"] == False, "episode_key"]) if len(calls) else set()  # noqa: E712
    unexplained = [
        r["task_id"]
        for r in failed.to_dict("records")
        if r["episode_key"] not in schema_broken and r["task_id"] not in twins
    ]
    assert not unexplained
    assert len(failed) <= 0.03 * len(episodes), failed["task_id"].tolist()


def test_bfcl_checker_and_ours_agree_on_outputs_with_a_known_verdict(tmp_path: Path):
    from surfbench.tasks.bfcl.agreement import verdicts

    folders = []
    for i, category in enumerate(SINGLE):
        folders.append(run(f"bfcl:{category}", OracleClient(f"bfcl:{category}"), tmp_path / str(i), split="dev"))
    items = verdicts(folders)
    assert len(items) >= 200
    agree = sum(v.agree for v in items) / len(items)
    assert agree >= 0.97, [v for v in items if not v.agree][:5]
    # a wrong value: both say invalid
    wrong = ScriptedClient([call_turn(("calculate_triangle_area", {"base": 11, "height": 5}))])
    folder = run("bfcl:simple_python", wrong, tmp_path / "wrong", split="all", limit=1)
    (item,) = verdicts([folder])
    assert not item.bfcl and not item.ours and "base" in item.bfcl_error


def test_a_call_to_an_irrelevant_request_fails_under_both_checkers(tmp_path: Path):
    from surfbench.tasks.bfcl.agreement import verdicts

    suite = load_suite("bfcl:irrelevance")
    name = suite.tasks[0].catalog.names[0]
    folder = run("bfcl:irrelevance", ScriptedClient([call_turn((name, {}))]), tmp_path, limit=1)
    (item,) = verdicts([folder])
    assert (item.bfcl, item.ours) == (False, False)


def test_each_task_gets_its_own_functions_under_any_surface(tmp_path: Path):
    suite = load_suite("bfcl:multiple")
    task = suite.tasks[0]
    cell = resolve_cell(CellSpec("bfcl:multiple", "dispatcher", "qwen2.5-coder-0.5b-instruct", split="all"))
    tools = cell.surface_for(task).session(task.turns[0]).tools()
    listed = tools[0].description
    assert all(name in listed for name in task.catalog.names)
    other = next(op for op in suite.catalog.names if op not in task.catalog.names)
    assert other not in listed
    folder = run("bfcl:multiple", OracleClient("bfcl:multiple"), tmp_path, surface="dispatcher", limit=5)
    assert load_runs([folder])["success"].astype(bool).all()


def test_multi_turn_backend_calls_only_the_entrys_documented_methods():
    from surfbench.bench.contracts.backend import ToolError
    from surfbench.tasks.bfcl.multi_turn import SCENARIOS, MultiTurnBackend, parse_call

    suite = load_suite("bfcl:multi_turn_base")
    task = next(t for t in suite.tasks if "GorillaFileSystem" in SCENARIOS[str(t.scenario)]["classes"])
    backend = MultiTurnBackend()
    backend.reset(task.scenario)
    for name in ("_load_scenario", "__init__", "nonexistent"):
        with pytest.raises(ToolError):
            backend.call(name, {})
    before = backend.state()
    assert backend.call("ls", {}) and backend.state() == before  # a documented, read-only method runs
    for text in ("__import__('os').system('id')", "cd(folder=open('/etc/passwd').read())", "x.y()"):
        with pytest.raises(SuiteError):
            parse_call(text)
    assert parse_call("mv(source='a', destination='b')") == ("mv", {"source": "a", "destination": "b"}, [])
    with pytest.raises(ToolError, match="AttributeError"):  # BFCL's own code fails on the value: a tool error
        backend.call("cd", {"folder": 123})


def test_multi_turn_is_judged_after_every_turn_not_only_at_the_end(tmp_path: Path):
    """Doing a later turn's work early reaches BFCL's final state but not its state after turn 1."""
    from surfbench.bench.models.scripted import text_turn

    suite = load_suite("bfcl:multi_turn_base")
    task = next(
        t for t in suite.tasks
        if len({c.turn for c in t.expected}) > 1
        and [c.equals for c in t.state if c.turn == 0] != [c.equals for c in t.state if c.turn == len(t.turns) - 1]
    )  # fmt: skip
    eager = ScriptedClient([call_turn(*[(c.op, c.oracle_args) for c in task.expected])] + [text_turn("Done.")] * 20)
    cell = resolve_cell(CellSpec("bfcl:multi_turn_base", "full", "qwen2.5-coder-0.5b-instruct", tasks=(task.id,)))
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"cells": []})
    run_cell(cell, ModelPool(None), store, "t", client=eager)
    episode = load_runs([tmp_path / "run"]).iloc[0]
    assert not episode["success"] and "state_mismatch" in episode["error_types"]
    failures = json.loads(episode["failures"])
    turns = sorted({int(f.split(":")[0].removeprefix("after turn ")) for f in failures})
    assert turns and turns[0] == 1 and len(task.turns) not in turns, [f[:40] for f in failures]  # end state is right

    oracle = run("bfcl:multi_turn_base", OracleClient("bfcl:multi_turn_base"), tmp_path / "o", split="dev")
    solved = load_runs([oracle]).set_index("task_id")["success"]
    assert solved.get(task.id, True), "the turn-by-turn ground truth passes the same checks"


def test_unknown_category_and_bad_data_folder_are_clear_errors(monkeypatch, tmp_path: Path):
    with pytest.raises(SuiteError, match="did you mean bfcl:simple_python"):
        load_suite("bfcl:simple_pyhton")
    with pytest.raises(SuiteError, match="needs a variant"):
        load_suite("bfcl")
    monkeypatch.setenv("SURFBENCH_BFCL_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(SuiteError, match="SURFBENCH_BFCL_DATA"):
        load_suite("bfcl:simple_python")
    assert issubclass(SuiteError, ConfigError)


def test_bfcl_runs_through_the_same_report_and_gate(tmp_path: Path):
    from surfbench.bench.report.gate import judge
    from surfbench.bench.report.report import write_report

    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    for surface in ("full", "dispatcher", "core"):
        cell = resolve_cell(CellSpec("bfcl:multiple", surface, "qwen2.5-coder-0.5b-instruct", split="dev", limit=10))
        # what `surfbench run` records (the gate reads it), with the oracle that answers in place of the model
        store.write_run_info({"cells": [{**cell.provenance(), "provider": "scripted"}]})
        run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient("bfcl:multiple"))
    md, _ = write_report([tmp_path / "run"], tmp_path / "report")
    assert "| bfcl:multiple |" in md.read_text()
    result = judge(Path("configs/gate/dsh.yaml"), [tmp_path / "run"])
    # the oracle solves every entry on every surface: nothing drops, nothing grows; core has no help tool,
    # so the help-size criterion has no evidence there and cannot let it ship; the exit code is the worst.
    # The dispatcher passes every criterion BFCL can show, and the multi-instance one (judged on the
    # forge_instances suite, not run here) has no evidence: revise, never a silent ship
    assert result.decisions == {"dispatcher": "revise", "core": "revise"} and result.exit_code == 1
    open_ = [v for v in result.verdicts if v.candidate == "dispatcher" and v.outcome != "pass"]
    assert [(v.criterion, v.outcome) for v in open_] == [
        ("instance_accuracy_ratio_max [suite forge_instances]", "no evidence")
    ]
    help_core = [v for v in result.verdicts if v.candidate == "core" and v.criterion == "help_bytes_max"]
    assert [v.outcome for v in help_core] == ["no evidence"]
