"""Many episodes in flight against one endpoint (the OpenAI stub): nothing lost, duplicated or reordered,
429s waited out, usage and cost exact, a SIGKILL mid-flight resumed; and a hosted config end to end."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.base.concurrency import BURST_WINDOW, EndpointGate, EpisodeSlots, in_order, park
from surfbench.bench.models import ModelPool
from surfbench.bench.run.runner import Cell, CellSpec, episode_order, resolve_cell, run_cell
from surfbench.bench.store.results import RunStore, load_runs
from tests.conftest import ROOT
from tests.fixtures.openai_stub import OpenAIStub, oracle_respond, with_429s

PRICE_IN, PRICE_CACHED, PRICE_OUT = 1.5e-07, 7.5e-08, 6e-07  # gpt-4o-mini in LiteLLM's bundled map


def cell_for(api_base: str, concurrency: int, repeats: int = 2, model: str = "openai/gpt-4o-mini") -> Cell:
    data = {"provider": "litellm", "model": model, "api_base": api_base, "mode": "native", "max_tokens": 64}
    spec = CellSpec("notes_mcp", "full", "stub", split="all", repeats=repeats, concurrency=concurrency)
    return resolve_cell(spec, model_data=data)


def run(cell: Cell, root: Path, commit_interval_s: float = 0.0) -> tuple[Any, Any]:
    store = RunStore(root, commit_interval_s=commit_interval_s)
    store.prepare()
    store.write_run_info({"cells": []})
    with ModelPool(None) as pool:
        run_cell(cell, pool, store, "x")
        gate = pool.clients[cell.model_cfg.name].gate  # type: ignore[attr-defined]
    return load_runs([root]), gate


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def first_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def test_rows_are_stored_in_episode_order_whatever_order_episodes_finish_in(tmp_path: Path):
    oracle = oracle_respond("notes_mcp")
    probe = cell_for("http://127.0.0.1:9/v1", 1)
    turns = list(dict.fromkeys(task.turns[0] for task, _ in episode_order(probe)))
    position = {turn: i for i, turn in enumerate(turns)}

    def respond(n: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[Any, ...]:
        time.sleep(0.03 * (len(position) - position[first_user(body)]))  # the first episodes finish last
        return oracle(n, body, headers)

    with OpenAIStub(respond) as stub:
        cell = cell_for(stub.api_base, 8)
        # one group commit at the end: the part's rows are in the order episodes were handed to the store
        frame, _ = run(cell, tmp_path / "run", commit_interval_s=3600)
    assert stub.most_in_flight > 1
    keys = [cell.episode_key(t, r) for t, r in episode_order(cell)]
    assert list(frame["episode_key"]) == keys
    steps = load_runs([tmp_path / "run"], "steps")
    assert list(dict.fromkeys(steps["episode_key"])) == keys  # each episode's steps whole, in the same order


def test_no_episode_is_lost_or_duplicated_under_429s_and_none_is_a_model_failure(tmp_path: Path):
    with OpenAIStub(with_429s(oracle_respond("notes_mcp"), every=4, retry_after="0.05"), latency_s=0.02) as stub:
        cell = cell_for(stub.api_base, 6, repeats=3)
        frame, gate = run(cell, tmp_path / "run")
    limited = sum(1 for n in range(1, len(stub.requests) + 1) if n % 4 == 0)
    answered = len(stub.requests) - limited
    assert len(frame) == 21 and frame["episode_key"].is_unique
    assert set(frame["episode_key"]) == {cell.episode_key(t, r) for t, r in episode_order(cell)}
    assert frame["success"].all() and frame["error"].isna().all()
    assert int(frame["round_trips"].sum()) == answered  # every answered call is one step; no 429 is recorded
    assert gate.rate_limited == limited > 0


def test_usage_and_cost_totals_are_exact_with_cached_prompt_tokens(tmp_path: Path):
    seen: list[dict[str, Any]] = []
    oracle = oracle_respond("notes_mcp", cached=40)

    def respond(n: int, body: dict[str, Any], headers: dict[str, str]) -> tuple[Any, ...]:
        status, payload = oracle(n, body, headers)
        seen.append(payload["usage"])
        return status, payload

    with OpenAIStub(respond, latency_s=0.01) as stub:
        frame, _ = run(cell_for(stub.api_base, 4), tmp_path / "run")
    prompt = sum(u["prompt_tokens"] for u in seen)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in seen)
    completion = sum(u["completion_tokens"] for u in seen)
    assert int(frame["prompt_tokens_total"].sum()) == prompt
    assert int(frame["cached_prompt_tokens_total"].sum()) == cached == 40 * len(seen)
    cost = (prompt - cached) * PRICE_IN + cached * PRICE_CACHED + completion * PRICE_OUT
    steps = load_runs([tmp_path / "run"], "steps")
    assert float(steps["cost_usd"].sum()) == pytest.approx(cost, rel=1e-9)
    assert float(frame["cost_usd"].sum()) == pytest.approx(cost, abs=len(frame) * 5e-7)  # episodes: 6 decimals
    from surfbench.bench.report.report_data import CELL_HEAD, cell_rows

    (row,) = cell_rows(frame.assign(surface_kind="full", params_b=None, mode="native"))
    assert row.summary.cached_share == pytest.approx(cached / prompt)
    assert row.summary.cost_per_solved == pytest.approx(cost / len(frame), abs=5e-7)
    assert {"cached", "$/episode", "$/solved"} <= set(CELL_HEAD)


def test_the_gate_halves_on_a_burst_of_429s_and_grows_back_slowly():
    gate = EndpointGate(16)
    for _ in range(BURST_WINDOW):
        gate.acquire()
        gate.release("rate_limited")
    assert gate.limit == 8 and gate.halvings == 1
    for _ in range(8):
        gate.acquire()
        gate.release("ok")
    assert gate.limit == 9  # one more after a full round of successes, not straight back to 16
    for i in range(200):  # scattered 429s after the burst do not hold the growth back
        gate.acquire()
        gate.release("rate_limited" if i % 5 == 0 else "ok")
    assert gate.limit == 16 and gate.halvings == 1
    noisy, rng = EndpointGate(32), random.Random(7)
    for _ in range(5000):  # one call in five limited, at random (completion order): never a burst
        noisy.acquire()
        noisy.release("rate_limited" if rng.random() < 0.2 else "ok")
    assert noisy.halvings == 0
    scattered = EndpointGate(16)
    for i in range(200):  # one call in five limited: scattered 429s are waited out, not a burst
        scattered.acquire()
        scattered.release("rate_limited" if i % 5 == 0 else "ok")
    assert scattered.limit == 16 and scattered.halvings == 0


def test_an_rpm_budget_holds_calls_back():
    gate = EndpointGate(4, rpm=2)
    gate.acquire()
    gate.release("ok")
    gate.acquire()
    gate.release("ok")
    third = threading.Thread(target=gate.acquire, daemon=True)
    third.start()
    third.join(0.3)
    assert third.is_alive()  # the third call of the minute waits (60 s); the daemon thread ends with the test
    assert gate.in_flight == 0


def test_in_order_yields_in_item_order_and_raises_at_the_failing_item():
    def work(i: int) -> int:
        time.sleep(0.01 * (10 - i))
        if i == 7:
            raise ValueError("seven")
        return i * i

    out = []
    with pytest.raises(ValueError, match="seven"):
        for item, value in in_order(range(10), work, 4):
            out.append((item, value))
    assert out == [(i, i * i) for i in range(7)]


def test_an_episode_waiting_out_a_retry_after_gives_its_slot_to_a_queued_one_and_never_more_than_n_work():
    # concurrency=2: episode 0 parks (as on a 429's Retry-After); 1 and 2 can only meet at the barrier
    # if one of them got episode 0's slot while it waited. At no time do more than 2 episodes work.
    working, most, lock = 0, 0, threading.Lock()
    met = threading.Barrier(2, timeout=10)
    zero_done = threading.Event()
    seen_zero_done: list[bool] = []

    def enter(delta: int) -> None:
        nonlocal working, most
        with lock:
            working += delta
            most = max(most, working)

    def work(i: int) -> int:
        enter(1)
        try:
            if i == 0:
                enter(-1)
                park(1.5)
                enter(1)
                zero_done.set()
            elif i in (1, 2):
                met.wait()
                seen_zero_done.append(zero_done.is_set())
            return i
        finally:
            enter(-1)

    assert [i for i, _ in in_order(range(4), work, 2)] == [0, 1, 2, 3]
    assert seen_zero_done == [False, False]  # 1 and 2 ran together while 0 waited
    assert most == 2


def test_an_episode_back_from_a_wait_gets_the_next_slot_before_a_new_one():
    slots, order = EpisodeSlots(1), []
    slots.take()  # one episode working

    def episode(name: str, returning: bool) -> None:
        slots.take(returning=returning)
        order.append(name)
        slots.give()

    new = threading.Thread(target=episode, args=("new", False))
    new.start()
    time.sleep(0.2)  # the new episode queues first
    back = threading.Thread(target=episode, args=("back", True))
    back.start()
    time.sleep(0.2)
    slots.give()
    new.join(5)
    back.join(5)
    assert order == ["back", "new"]


def _surfbench(tmp: Path, configs: Path, *args: str, env: dict[str, str]) -> list[str]:
    environ = {
        **os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_CACHE": str(tmp / "cache"), "CI": "true", **env,
    }  # fmt: skip
    cmd = [sys.executable, "-m", "surfbench", "run", *args, f"results_dir={tmp / 'results'}", "run=x", "split=all"]
    return [cmd, environ]  # type: ignore[list-item]


def _configs(tmp_path: Path) -> Path:
    import shutil

    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    return configs


def test_sigkill_mid_flight_then_resume_runs_each_remaining_episode_once(tmp_path: Path):
    from surfbench.bench.store.results import RunStore as Store

    with OpenAIStub(oracle_respond("notes_mcp"), latency_s=0.3) as stub:
        cmd, env = _surfbench(
            tmp_path, _configs(tmp_path), "suite=notes_mcp", "surface=full", "model=gpt-4o-mini", "repeats=8",
            "concurrency=4", "no_cache=true", f"+model.api_base={stub.api_base}", env={"OPENAI_API_KEY": "sk-fake"},
        )  # fmt: skip
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # type: ignore[arg-type]
        run_dir = tmp_path / "results" / "x"
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(Store(run_dir).done_keys()) < 6:
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        committed = Store(run_dir).done_keys()
        assert 6 <= len(committed) < 56, "the run was killed mid-flight"  # 56 > 8 per slot taken ahead
        before = len(stub.requests)
        again = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)  # type: ignore[call-overload]
        assert again.returncode == 0, again.stderr[-2000:]
        frame = load_runs([run_dir])
        assert len(frame) == 56 and frame["episode_key"].is_unique
        redone = frame[~frame["episode_key"].isin(committed)]
        assert len(stub.requests) - before == int(redone["round_trips"].sum())  # each remaining episode ran once


def test_a_hosted_config_with_a_fake_key_runs_through_the_cli_and_the_key_is_nowhere(tmp_path: Path):
    key = "sk-fake-0123456789abcdefSECRET"
    with OpenAIStub(
        with_429s(oracle_respond("notes_mcp", cached=16), every=5, retry_after="0.1"), latency_s=0.2
    ) as stub:
        cmd, env = _surfbench(
            tmp_path, _configs(tmp_path), "suite=notes_mcp", "surface=full", "model=gpt-4o-mini",
            f"+model.api_base={stub.api_base}", env={"OPENAI_API_KEY": key},
        )  # fmt: skip
        done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(h.get("authorization") == f"Bearer {key}" for _, h in stub.requests)  # the key was used
    assert stub.most_in_flight > 1  # the config's own concurrency (16)
    frame = load_runs([tmp_path / "results" / "x"])
    assert len(frame) == 7 and frame["success"].all() and (frame["cost_usd"] > 0).all()
    assert (frame["cached_prompt_tokens_total"] > 0).all()
    for path in (tmp_path / "results").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert key not in done.stdout + done.stderr
    assert json.loads((tmp_path / "results" / "x" / "run.json").read_text())["cells"]


@pytest.mark.parametrize("value", [0, 1.5, True, "many"])
def test_a_bad_concurrency_override_is_one_line_naming_it(value: object):
    from omegaconf import OmegaConf

    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.run.overrides import run_settings

    with pytest.raises(ConfigError) as err:
        run_settings(OmegaConf.create({"concurrency": value}))
    assert str(err.value).startswith("concurrency=") and "whole number, 1 or more" in str(err.value)
    assert run_settings(OmegaConf.create({"concurrency": 8})).concurrency == 8
    assert run_settings(OmegaConf.create({})).concurrency is None  # the model config's
