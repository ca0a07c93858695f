"""Benchmark: episodes in flight against a slow hosted-style endpoint (issue 18).

A stub OpenAI endpoint (tests/fixtures/openai_stub.py, in its own process so that its work does not
share this process's interpreter lock) answers every call after 500 ms with the scripted oracle's
answer for the task (its reference call, then its answer words). surfbench runs the `notes_mcp`
suite (7 tasks x 29 repeats = 203 episodes, `full` surface, model config gpt-4o-mini pointed at the
stub with a fake key, no response cache) through its real loop, scorer and results store:

1. ``concurrency=1`` and ``concurrency=32``: target >= 25x the episodes per second;
2. ``concurrency=32`` with every 5th call (20%) answered 429 with ``Retry-After: 1``: every episode
   completes, none is duplicated, and the run takes at most 2x the clean one;
3. inspect-ai 0.3.285 (its own virtualenv .venv-peer, as in bench_throughput.py) at
   ``max_connections=32`` against the same stub and task, when .venv-peer has inspect-ai and openai.

Interpreter start and imports are excluded. Writes results/bench/concurrency.json.

    python scripts/bench_concurrency.py [EPISODES]
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PEER = ROOT / ".venv-peer"
LATENCY_S = 0.5
TASKS = 7


def serve(port_file: str, every: int, latency_s: float = LATENCY_S) -> None:
    """The stub endpoint (``--serve PORT_FILE EVERY [LATENCY_S]``): oracle answers after a delay, 429 every EVERY-th."""
    from tests.fixtures.openai_stub import OpenAIStub, oracle_respond, with_429s

    respond = oracle_respond("notes_mcp")
    if every:
        respond = with_429s(respond, every=every, retry_after="1")
    stub = OpenAIStub(respond, latency_s=latency_s, keep_alive=True)
    with stub:
        Path(port_file).write_text(stub.api_base)
        while True:
            time.sleep(3600)


class Stub:
    """The stub endpoint in a child process (ended when the block ends)."""

    def __init__(self, every: int = 0, latency_s: float = LATENCY_S) -> None:
        self.every = every
        self.latency_s = latency_s

    def __enter__(self) -> str:
        self.tmp = tempfile.TemporaryDirectory()
        port_file = Path(self.tmp.name) / "api_base"
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port_file), str(self.every), str(self.latency_s)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        deadline = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError("the stub endpoint did not start")
            time.sleep(0.1)
        return port_file.read_text()

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self.tmp.cleanup()


def surfbench_run(api_base: str, episodes: int, concurrency: int) -> dict:
    from surfbench.bench.catalog.wire import preload_encodings
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.execute import COMMIT_INTERVAL_S
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    repeats = max(1, round(episodes / TASKS))
    data = {"provider": "litellm", "model": "openai/gpt-4o-mini", "api_base": api_base, "mode": "native"}
    spec = CellSpec("notes_mcp", "full", "gpt-4o-mini", split="all", repeats=repeats, concurrency=concurrency)
    cell = resolve_cell(spec, model_data=data)
    with tempfile.TemporaryDirectory() as tmp, ModelPool(None) as pool:
        store = RunStore(Path(tmp) / "run", commit_interval_s=COMMIT_INTERVAL_S)  # as `surfbench run` does
        store.prepare()
        store.write_run_info({"cells": []})
        client = pool.client(cell.model_cfg)  # LiteLLM imported and the price looked up before the clock
        preload_encodings()  # tiktoken's files read (like an import), not timed
        start = time.perf_counter()
        run_cell(cell, pool, store, "concurrency", client=client)
        wall = time.perf_counter() - start
        frame = load_runs([store.root])
        gate = client.gate  # type: ignore[attr-defined]
        expected = {cell.episode_key(t, r) for t in cell.tasks for r in range(repeats)}
        return {
            "harness": "surfbench",
            "concurrency": concurrency,
            "episodes": len(frame),
            "expected": len(expected),
            "duplicated": int(len(frame) - frame["episode_key"].nunique()),
            "missing": len(expected - set(frame["episode_key"])),
            "errors": int(frame["error"].notna().sum()),
            "success": round(float(frame["success"].mean()), 3),
            "calls": int(frame["round_trips"].sum()),
            "rate_limited": gate.rate_limited,
            "halvings": gate.halvings,
            "wall_s": round(wall, 2),
            "per_s": round(len(frame) / wall, 2),
        }


def inspect_run(api_base: str, episodes: int) -> dict | None:
    python = PEER / "bin" / "python"
    probe = (
        subprocess.run([str(python), "-c", "import inspect_ai, openai"], capture_output=True)
        if python.exists()
        else None
    )
    if probe is None or probe.returncode != 0:
        print(f"inspect-ai: skipped ({PEER.name} lacks inspect-ai or openai)", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "inspect.json"
        env = {**os.environ, "OPENAI_API_KEY": "sk-fake-bench", "INSPECT_LOG_LEVEL": "error"}
        script = ROOT / "scripts" / "peer" / "inspect_stub.py"
        subprocess.run([str(python), str(script), str(episodes), api_base, out], check=True, env=env, cwd=ROOT)
        data = json.loads(out.read_text())
    return {"harness": "inspect-ai", "concurrency": 32, "episodes": data["samples"], "success": data["accuracy"],
            "wall_s": round(data["wall_s"], 2), "per_s": round(data["per_s"], 2)}  # fmt: skip


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ["OPENAI_API_KEY"] = "sk-fake-bench"
    episodes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with Stub() as api_base:
        serial = surfbench_run(api_base, episodes, 1)
        wide = surfbench_run(api_base, episodes, 32)
        peer = inspect_run(api_base, serial["episodes"])
    with Stub(every=5) as api_base:
        limited = surfbench_run(api_base, episodes, 32)
    speedup = wide["per_s"] / serial["per_s"]
    slowdown = limited["wall_s"] / wide["wall_s"]
    complete = limited["missing"] == 0 and limited["duplicated"] == 0 and limited["errors"] == 0
    checks = {
        "speedup_32_vs_1": {"value": round(speedup, 1), "target": ">= 25", "ok": speedup >= 25},
        "429s_every_episode_once": {"value": complete, "target": "true", "ok": complete},
        "429s_slowdown": {"value": round(slowdown, 2), "target": "<= 2", "ok": slowdown <= 2},
    }
    if peer:
        ratio = wide["per_s"] / peer["per_s"]
        checks["vs_inspect_ai"] = {"value": round(ratio, 2), "target": ">= 1", "ok": ratio >= 1}
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    rows = [serial, wide, limited] + ([peer] if peer else [])
    print(f"notes_mcp x {serial['episodes']} episodes, stub answering after {LATENCY_S} s ({stamp}, {machine})")
    for name, r in zip(("clean", "clean", "20% 429", "clean"), rows, strict=False):
        print(f"{r['harness']:<11} concurrency {r['concurrency']:>2} {name:<8} {r['episodes']:>4} episodes in "
              f"{r['wall_s']:>7} s = {r['per_s']:>6}/s, success {r['success']}")  # fmt: skip
    for name, c in checks.items():
        print(f"{name}: {c['value']} (target {c['target']}): {'ok' if c['ok'] else 'MISSED'}")
    out = ROOT / "results" / "bench" / "concurrency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"date": stamp, "machine": machine, "latency_s": LATENCY_S, "rows": rows, "checks": checks}
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if all(c["ok"] for c in checks.values()) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else LATENCY_S)
    else:
        raise SystemExit(main())
