"""Benchmark: where a local-model run spends its time (issue 7).

Runs one cell (forge dev split, default `core` surface, the default local model, first N tasks, no
response cache) through the real loop, scorer and results store, with the llama.cpp server started
beforehand in verbose mode, so that its own per-request timers land in its log. Then:

- harness overhead = (cell wall time - time spent waiting for model responses) / cell wall time;
  target <= 1%. Process start-up (server start, importing LiteLLM, loading the tokenizer), paid once
  per sweep process, is measured apart and not in the cell wall time;
- physical limit = cell wall time / the model's own compute time for the same requests, i.e. the
  server's prompt-eval time (uncached prompt tokens only: llama.cpp reuses the cached prefix) plus its
  eval (generation) time, as llama.cpp measured them in this run; target <= 1.2x. The rates this
  implies (prompt and generation tokens per second) are printed too.

    python scripts/bench_harness.py [--surface core] [--limit 8]

Prints a table and writes results/bench/harness.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODEL = "qwen2.5-coder-0.5b-instruct"
PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
EVAL = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs")


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surface", default="core")
    parser.add_argument("--limit", type=int, default=8)
    args = parser.parse_args()

    from surfbench.bench.models import ModelPool, model_config
    from surfbench.bench.run.execute import COMMIT_INTERVAL_S
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    cell = resolve_cell(CellSpec("forge", args.surface, MODEL, split="dev", limit=args.limit))
    pool = ModelPool(None)  # no response cache: every request reaches the model
    client = pool.client(model_config(MODEL))
    server = pool.servers[MODEL]
    server.settings = replace(server.settings, verbose=True)
    try:
        # one-time process start-up, paid once per sweep process whatever its length: measured apart
        warm = time.perf_counter()
        server.start()
        from surfbench.bench.catalog.wire import count_tokens
        from surfbench.bench.models.client import litellm_module

        litellm_module()
        count_tokens("warm up", "o200k_base")
        startup = time.perf_counter() - warm
        log_start = server.log_path.stat().st_size
        with tempfile.TemporaryDirectory() as tmp:
            store = RunStore(Path(tmp) / "run", commit_interval_s=COMMIT_INTERVAL_S)
            store.prepare()
            store.write_run_info({"cells": []})
            start = time.perf_counter()
            run_cell(cell, pool, store, "bench", client=client)
            wall = time.perf_counter() - start
            steps = load_runs([store.root], "steps")
        with server.log_path.open("rb") as fh:
            fh.seek(log_start)
            log = fh.read().decode("utf-8", "replace")
    finally:
        pool.close()
    waiting = float(steps["latency_s"].sum())
    prompt = [(float(ms), int(n)) for ms, n in PROMPT.findall(log)]
    gen = [(float(ms), int(n)) for ms, n in EVAL.findall(log)]
    compute = (sum(ms for ms, _ in prompt) + sum(ms for ms, _ in gen)) / 1000
    uncached = sum(n for _, n in prompt)
    row = {
        "surface": args.surface, "model": MODEL, "episodes": args.limit, "requests": len(steps),
        "timed_requests": len(prompt), "startup_s": round(startup, 2), "wall_s": round(wall, 2),
        "waiting_for_model_s": round(waiting, 2),
        "harness_overhead": round((wall - waiting) / wall, 4), "model_compute_s": round(compute, 2),
        "wall_over_compute": round(wall / compute, 3) if compute else None,
        "prompt_tokens": int(steps["prompt_tokens"].sum()), "uncached_prompt_tokens": uncached,
        "prompt_tok_per_s": round(uncached / (sum(ms for ms, _ in prompt) / 1000), 1) if prompt else None,
        "completion_tokens": sum(n for _, n in gen),
        "gen_tok_per_s": round(sum(n for _, n in gen) / (sum(ms for ms, _ in gen) / 1000), 1) if gen else None,
    }  # fmt: skip
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"local-model cell: forge dev, {args.surface}, {MODEL}, {args.limit} tasks ({stamp}, {machine})")
    for key, value in row.items():
        print(f"  {key:<24} {value}")
    ok_overhead = row["harness_overhead"] <= 0.01
    ok_limit = row["wall_over_compute"] is not None and row["wall_over_compute"] <= 1.2
    print(f"harness overhead {row['harness_overhead']:.2%} (target <= 1%): {'ok' if ok_overhead else 'MISSED'}")
    print(f"wall / model compute {row['wall_over_compute']}x (target <= 1.2x): {'ok' if ok_limit else 'MISSED'}")
    out = ROOT / "results" / "bench" / "harness.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, **row}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if ok_overhead and ok_limit else 1


if __name__ == "__main__":
    raise SystemExit(main())
