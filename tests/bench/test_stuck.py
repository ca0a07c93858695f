"""Stuck episodes: detection, early stop (stop_on_repeat) and ``surfbench whatif`` on recorded runs."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.analysis.metrics import METRICS, Metric, register_metric, summarize_cell, unregister_metric
from surfbench.bench.analysis.replay import Suites
from surfbench.bench.analysis.whatif import analyse_run, paired_deltas, run_whatif, summary_row
from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import OracleClient, ScriptedClient, call_turn, text_turn, with_usage
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.score.stuck import STUCK_REPEAT, scan, stop_setting
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface
from tests.bench.test_scoring import CLOSE, FORGE
from tests.bench.test_sweep import ORACLE, surfbench
from tests.conftest import ROOT

BAD = [("forge", {"operation": "issue_edit", "args": {**CLOSE, "state": "close"}})]  # enum error: rejected
GOOD = [("forge", {"operation": "issue_edit", "args": CLOSE})]


def run(script: list, stop: int | None, max_steps: int = 10):
    task = next(t for t in FORGE.tasks if t.id == "hot-issue-close")
    session = build_surface(FORGE.catalog, "dispatcher").session(task.turns[0])
    settings = LoopSettings(max_steps=max_steps, stop_on_repeat=stop)
    trace = run_episode(
        task, session, FORGE.new_backend(task), ScriptedClient(script), settings, FORGE.system_prompt,
        lambda n: FORGE.catalog[n].parameters,
    )  # fmt: skip
    return trace, score_episode(task, trace, FORGE.catalog)


def test_a_repeated_failing_call_stops_at_k_and_is_recorded_as_stuck_repeat():
    trace, score = run([BAD] * 10, stop=2)
    assert len(trace.steps) == 3  # the call, then two identical repeats: the second one ends the episode
    assert trace.stopped == STUCK_REPEAT
    assert STUCK_REPEAT in score.error_types and "no_answer" not in score.error_types
    assert not score.success and trace.final_text is None
    repeats = scan(trace.steps, trace.calls)
    assert (repeats.repeats, repeats.stuck) == (2, True)


def test_without_the_option_the_same_script_runs_to_max_steps_and_is_only_flagged():
    trace, score = run([BAD] * 10, stop=None)
    assert len(trace.steps) == 10 and trace.stopped is None
    assert "no_answer" in score.error_types and STUCK_REPEAT not in score.error_types
    repeats = scan(trace.steps, trace.calls)
    assert (repeats.repeats, repeats.longest_run, repeats.stuck) == (9, 9, True)


def test_one_repeat_then_a_changed_call_is_not_stopped():
    trace, score = run([BAD, BAD, GOOD, "Closed issue 3."], stop=2)
    assert trace.stopped is None and score.success
    repeats = scan(trace.steps, trace.calls)
    assert (repeats.repeats, repeats.stuck) == (1, False)


def test_stop_on_repeat_1_stops_at_the_first_identical_retry():
    trace, _ = run([BAD, BAD, GOOD, "Closed issue 3."], stop=1)
    assert len(trace.steps) == 2 and trace.stopped == STUCK_REPEAT


def test_the_same_successful_call_twice_is_not_a_repeat():
    read = [("forge", {"operation": "issue_get", "args": {"owner": "acme", "repo": "web", "index": 3}})]
    trace, _ = run([read, read, read, GOOD, "Closed."], stop=1)
    assert trace.stopped is None and len(trace.steps) == 5
    assert scan(trace.steps, trace.calls).repeats == 0


def test_an_unparseable_call_sent_again_is_a_repeat_and_can_be_stopped():
    broken = '<tool_call>{"name": "forge", "arguments": {"operation": </tool_call> oops'
    assert text_turn(broken).parse_failures  # the loop answers with a request for valid JSON
    trace, score = run([broken] * 6, stop=3)
    assert len(trace.steps) == 4 and trace.stopped == STUCK_REPEAT
    assert STUCK_REPEAT in score.error_types


def test_arguments_sent_as_a_json_string_are_the_same_call():
    as_string = call_turn(("forge", json.dumps(BAD[0][1])))  # the same call, its arguments JSON-encoded
    trace, _ = run([BAD, as_string, GOOD, "Done."], stop=None)
    assert scan(trace.steps, trace.calls).runs[:3] == [0, 1, 0]


def test_stop_setting_accepts_counts_and_off_and_rejects_the_rest():
    assert [stop_setting(v) for v in (None, "null", 0, 2, "3")] == [None, None, None, 2, 3]
    for bad in (-1, 1.5, "two", True):
        with pytest.raises(ConfigError, match="stop_on_repeat"):
            stop_setting(bad)


ROW: dict[str, object] = {
    "expected_calls": 1, "first_try_correct": 1, "selection_correct": True, "success": True, "round_trips": 2,
    "overhead_round_trips": 0, "prompt_tokens_per_step": 10, "request_bytes_per_step": 100,
    "recovered_after_error": 0, "failed_first_tries": 0, "boundary_violations": 0, "protocol_violations": 0,
    "parse_failures": 0, "stable_prefix": True, "latency_s": 1.0,
}  # fmt: skip
"""An episode row from before stuck detection (no stuck column)."""


def test_stuck_share_is_unknown_for_runs_recorded_before_detection():
    row = ROW
    assert summarize_cell([row])["stuck_rate"] is None
    assert summarize_cell([{**row, "stuck": True}, {**row, "stuck": False}])["stuck_rate"] == 0.5


def test_whatif_pairs_the_metrics_its_declarations_compute_per_episode_a_registered_one_too():
    before = [{**ROW, "stuck": False, "round_trips": 4}, {**ROW, "stuck": True, "selection_correct": None}]
    after = [{**ROW, "stuck": False, "round_trips": 2}, {**ROW, "stuck": True, "selection_correct": None}]
    shown = {
        "success_rate", "first_try_accuracy", "selection_accuracy", "round_trips", "overhead_round_trips",
        "prompt_tokens_per_step", "request_bytes_per_step", "recovered_after_error", "boundary_violations",
        "protocol_violations", "parse_failures", "stable_prefix_rate", "latency_s", "stuck_rate",
    }  # fmt: skip
    deltas = paired_deltas(before, after)
    assert [d.name for d in deltas] == [name for name in METRICS if name in shown]  # the declarations' order
    by = {d.name: d for d in deltas}
    assert (by["round_trips"].before, by["round_trips"].after, by["round_trips"].low) == (3.0, 2.0, -2.0)
    assert by["selection_accuracy"].before == 1.0 and by["stuck_rate"].after == 0.5  # None skipped, as the cell's
    register_metric(Metric("steps_over_two", "steps > 2", False, "t", "pct", per_episode=lambda r: r["round_trips"] > 2,
                           aggregate="share"))  # fmt: skip
    try:
        added = paired_deltas(before, after)[-1]
        assert (added.name, added.before, added.after, added.low, added.high) == ("steps_over_two", 0.5, 0.0, -1.0, 0.0)
    finally:
        unregister_metric("steps_over_two")
    # one that reads a column whatif does not rebuild is left out, not shown as "no change"
    register_metric(
        Metric("answer_chars", "answer chars", False, "t", per_episode=lambda r: len(r.get("final_text") or ""))
    )
    try:
        assert "answer_chars" not in [d.name for d in paired_deltas(before, after)]
    finally:
        unregister_metric("answer_chars")


# -- whatif on a recorded run vs a fresh run with the option on -------------------------------------------


class Stubborn:
    """The oracle, after first sending a failing call (an unknown tool) 1 + R times; R = the task's position % 5.

    R = 0..3 leaves the loop after R identical repeats; R = 4 never leaves it.
    """

    name = "stubborn"

    def __init__(self) -> None:
        self.oracle = OracleClient("forge")
        self.order = {t.turns[0]: i for i, t in enumerate(FORGE.select("dev"))}

    def complete(self, request: ModelRequest) -> ModelTurn:
        first_user = next(m["content"] for m in request.messages if m["role"] == "user")
        repeats = self.order[first_user] % 5
        sent = sum(1 for m in request.messages if m["role"] == "assistant")
        if repeats == 4 or sent <= repeats:
            return with_usage(call_turn(("no_such_tool", {"q": 1})), request)
        kept: list[dict[str, Any]] = []
        skipping = False
        for m in request.messages:  # the oracle counts its own calls: hide the failed ones from it
            if m["role"] == "assistant" and any(
                c["function"]["name"] == "no_such_tool" for c in m.get("tool_calls") or []
            ):
                skipping = True
                continue
            if skipping and m["role"] == "tool":
                continue
            skipping = False
            kept.append(m)
        turn = self.oracle.complete(replace(request, messages=tuple(kept)))
        return replace(with_usage(turn, request), latency_s=1.0)


def record(tmp_path: Path, name: str, stop: int | None) -> Path:
    spec = CellSpec(suite="forge", surface="full", model="stubborn", limit=12, max_steps=12, stop_on_repeat=stop)
    data = {"provider": "scripted", "script_suite": "forge", "params_b": 0.0, "mode": "native"}
    cell = resolve_cell(spec, model_data=data)
    store = RunStore(tmp_path / name)
    store.prepare()
    store.write_run_info({"cells": [{"suite": "forge", "provider": "scripted"}]})
    run_cell(cell, ModelPool(None), store, name, client=Stubborn())
    return store.root


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("whatif")
    return record(tmp, "off", None), record(tmp, "k2", 2)


def test_whatif_on_a_recorded_run_equals_a_fresh_run_with_the_option_on(runs: tuple[Path, Path]):
    off, k2 = runs
    check, effects = analyse_run(off, [2], Suites())
    assert check.episodes == 12 and not check.mismatched and not check.diverged  # the self-check holds
    outcomes = {o.episode.row["task_id"]: o for cell in effects[2] for o in cell.outcomes}
    fresh = {r["task_id"]: r for r in load_runs([k2]).to_dict("records")}
    assert set(outcomes) == set(fresh)
    for task_id, o in outcomes.items():
        got, want = summary_row(o.after), fresh[task_id]
        for column in ("success", "first_try_correct", "round_trips", "latency_s", "stuck", "stuck_repeats"):
            assert got[column] == want[column], (task_id, column)
        assert sorted(o.after.score.error_types) == sorted(json.loads(want["error_types"])), task_id
    stopped = [o for o in outcomes.values() if o.cut is not None]
    assert any(o.changed for o in stopped), "no episode escaped a loop: the comparison shows nothing"
    assert any(not o.changed for o in stopped), "no episode stayed stuck"


def test_whatif_reports_time_saved_and_lists_the_episodes_that_escaped(runs: tuple[Path, Path]):
    off, _ = runs
    text = run_whatif("stop_on_repeat=2,3", [off])
    assert "12/12 episodes reproduce every recorded score" in text
    assert "outcome changes (escaped a loop)" in text and "the model left the loop at step" in text
    assert "| success |" in text and "model time saved" in text
    with pytest.raises(ConfigError):
        run_whatif("max_steps=2", [off])


def test_an_episode_whose_task_is_gone_is_skipped_with_the_reason(runs: tuple[Path, Path], monkeypatch):
    off, _ = runs
    suite = load_suite("forge")
    gone = str(load_runs([off])["task_id"].iloc[0])
    edited = replace(suite, tasks=[t for t in suite.tasks if t.id != gone])
    monkeypatch.setattr("surfbench.bench.analysis.replay.load_suite", lambda name: edited)
    text = run_whatif("stop_on_repeat=2", [off], summary_only=True)
    assert f"skipped 1 episode(s): suite 'forge' has no task {gone!r} any more" in text
    assert "11/11 episodes reproduce every recorded score" in text


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE.format(delay=0.0))
    return folder


def test_runs_stop_at_the_second_repeat_by_default_and_a_bad_setting_is_a_clear_error(configs: Path, tmp_path: Path):
    proc = surfbench(configs, "surface=full", "model=oracle", "limit=2", f"results_dir={tmp_path}", "run=s")
    assert proc.returncode == 0, proc.stderr
    info = json.loads((tmp_path / "s" / "run.json").read_text())
    assert [c["stop_on_repeat"] for c in info["cells"]] == [2]
    frame = load_runs([tmp_path / "s"])
    assert list(frame["stuck"]) == [False, False] and list(frame["stuck_repeats"]) == [0, 0]
    bad = surfbench(configs, "surface=full", "model=oracle", "stop_on_repeat=two", f"results_dir={tmp_path}")
    assert bad.returncode == 2 and "stop_on_repeat='two': must be a positive number" in bad.stderr
