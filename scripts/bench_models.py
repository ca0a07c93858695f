"""Benchmark: prompt and generation speed of each embedded local model on this machine, and the time
of the first call on the largest built-in surface (forge `full`, 96 typed tools).

Each model gets its own fresh llama.cpp server (surfbench's), and every request goes through
surfbench's LiteLLM client with the response cache off. Prompt rate: a ~1,000-token prompt with a
unique prefix (no KV reuse) and max_tokens=1. Generation rate: a short prompt asking for a long
answer. First call: the forge `full` surface in the model's default calling mode, cold.
Prints a markdown table and writes results/bench/models.json.

    python scripts/bench_models.py [MODEL ...]
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from bench.models import ModelPool, model_config
from bench.models.local import EMBEDDED, is_pulled
from bench.models.types import ModelRequest
from bench.suite import load_suite
from surfaces import build_surface

ROOT = Path(__file__).resolve().parent.parent
FILLER = " ".join(f"item{i} is a line of filler text for the prompt-speed probe." for i in range(90))


def timed(client, request: ModelRequest) -> tuple[float, object]:
    start = time.perf_counter()
    turn = client.complete(request)
    return time.perf_counter() - start, turn


def bench(name: str) -> dict:
    cfg = model_config(name)
    with ModelPool(cache=None) as pool:
        client = pool.client(cfg)
        warm = ModelRequest(messages=({"role": "user", "content": "Hi"},), max_tokens=1)
        server_start = time.perf_counter()
        client.complete(warm)  # starts the server, loads the weights
        startup = time.perf_counter() - server_start
        nonce = uuid.uuid4().hex
        prompt = ModelRequest(messages=({"role": "user", "content": f"{nonce} {FILLER}"},), max_tokens=1)
        t_prompt, turn = timed(client, prompt)
        prompt_tokens = turn.usage.prompt_tokens or 0
        prompt_rate = prompt_tokens / t_prompt
        gen = ModelRequest(
            messages=(
                {
                    "role": "user",
                    "content": f"[{uuid.uuid4().hex[:8]}] Count from 1 to 400, separated by commas: 1, 2, 3,",
                },
            ),
            max_tokens=256,
        )
        t_gen, turn = timed(client, gen)
        completion = turn.usage.completion_tokens or 0
        gen_prefill = (turn.usage.prompt_tokens or 0) / prompt_rate
        gen_rate = completion / max(t_gen - gen_prefill, 1e-6)
        suite = load_suite("forge")
        full = build_surface(suite.catalog, "full")
        tools = tuple(full.session().tools())
        first = ModelRequest(
            messages=(
                {"role": "system", "content": f"[{uuid.uuid4().hex}] {suite.system_prompt}"},
                {"role": "user", "content": "Close issue 3 in acme/web."},
            ),
            tools=tools,
            mode=cfg.mode,
            prompt_format=cfg.prompt_format,
            max_tokens=cfg.max_tokens,
        )
        t_first, turn = timed(client, first)
    return {
        "model": name,
        "params_b": cfg.params_b,
        "server_start_s": round(startup, 1),
        "prompt_tok_s": round(prompt_rate, 1),
        "prompt_probe_tokens": prompt_tokens,
        "gen_tok_s": round(gen_rate, 1),
        "gen_probe_tokens": completion,
        "full_surface_first_call_s": round(t_first, 1),
        "full_surface_prompt_tokens": turn.usage.prompt_tokens,
        "full_surface_mode": cfg.mode,
    }


def main(argv: list[str]) -> int:
    names = argv or [n for n in EMBEDDED if is_pulled(n)]
    rows = []
    for name in names:
        print(f"benchmarking {name} ...", file=sys.stderr, flush=True)
        rows.append(bench(name))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"local models on {machine}, {stamp} (`python scripts/bench_models.py`)\n")
    print("| model | params | prompt tok/s | generation tok/s | first call, forge `full` (96 tools) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {r['params_b']}B | {r['prompt_tok_s']:.0f} | {r['gen_tok_s']:.0f} | "
            f"{r['full_surface_first_call_s']:.1f} s ({r['full_surface_prompt_tokens']:,} prompt tokens, "
            f"{r['full_surface_mode']}) |"
        )
    out = ROOT / "results" / "bench" / "models.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
