"""Benchmark: does a local model with several server slots (``n_parallel``) finish more calls per second?

llama-cpp-python's server answers one request at a time, so ``n_parallel: N`` runs N servers with
``threads // N`` threads each and sends each call to a free one (bench/models/server.py ServerGroup).
This script sends the same batch of chat calls (each with a unique ~600-token prompt, so no prefix
reuse, and up to 48 generated tokens), ``concurrency`` calls in flight, once per setting, and prints
calls per second:

- ``n_parallel=1`` (one server, all threads), one call in flight: today's default;
- ``n_parallel=N`` (N servers), N calls in flight.

Writes results/bench/slots.json. Run it on a quiet machine; the model is the default 0.5B one.

    python scripts/bench_slots.py [--calls 12] [--n 2] [--model qwen2.5-coder-0.5b-instruct]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from surfbench.bench.base.concurrency import EndpointGate
from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.types import ModelRequest

ROOT = Path(__file__).resolve().parent.parent
FILLER = " ".join(f"note {i}: the quarterly report lists item {i} as pending review." for i in range(40))


def request(i: int) -> ModelRequest:
    text = f"[{uuid.uuid4().hex}] {FILLER}\nIn one sentence, which note numbers mention item 7?"
    return ModelRequest(messages=({"role": "user", "content": text},), max_tokens=48, temperature=0.0)


def measure(model: str, n_parallel: int, calls: int) -> dict[str, float | int]:
    cfg = replace(model_config(model), n_parallel=n_parallel, concurrency=n_parallel)
    with ModelPool(None) as pool:
        client = pool.client(cfg)
        client.gate = EndpointGate(n_parallel)  # type: ignore[attr-defined]
        client.complete(request(-1))  # start the server(s); not timed
        start = time.perf_counter()
        with ThreadPoolExecutor(n_parallel) as workers:
            turns = list(workers.map(lambda i: client.complete(request(i)), range(calls)))
        took = time.perf_counter() - start
    prompt = sum(t.usage.prompt_tokens or 0 for t in turns)
    completion = sum(t.usage.completion_tokens or 0 for t in turns)
    return {
        "n_parallel": n_parallel,
        "threads_per_server": max(1, cfg.threads // n_parallel),
        "calls": calls,
        "s": round(took, 2),
        "calls_per_s": round(calls / took, 3),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=12)
    parser.add_argument("--n", type=int, default=2, help="slots to compare with one")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    args = parser.parse_args()
    rows = []
    for n in (1, args.n):
        row = measure(args.model, n, args.calls)
        rows.append(row)
        print(f"n_parallel={n}: {row['calls']} calls in {row['s']} s = {row['calls_per_s']} calls/s", flush=True)
    rows[1]["speedup"] = round(float(rows[1]["calls_per_s"]) / float(rows[0]["calls_per_s"]), 2)
    print(f"speed-up of n_parallel={args.n} over 1: {rows[1]['speedup']}x")
    out = ROOT / "results" / "bench" / "slots.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_1min": round(os.getloadavg()[0], 1),
        "model": args.model,
        "rows": rows,
    }
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
