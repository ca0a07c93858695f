"""Benchmark: prompt and generation speed of each embedded local model on this machine, and the time
of the first call on the largest built-in surface (forge `full`, 96 typed tools).

Each model gets its own fresh llama.cpp server (surfbench's), through LiteLLM, response cache off.
Prompt rate: a ~1,400-token prompt with a unique prefix (no KV reuse) and max_tokens=1. Generation
rate: a raw completion (no chat template, so base models continue too) of one cached prompt, 8 and
then 256 tokens; the difference is generation alone. First call: the forge `full` surface in the
model's default calling mode, cold (skip with --no-first-call). Prints a markdown table and writes
results/bench/models.json (models-rates.json with --no-first-call).

    python scripts/bench_models.py [--no-first-call] [MODEL ...]
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

from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.local import EMBEDDED, is_pulled
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface

ROOT = Path(__file__).resolve().parent.parent
FILLER = " ".join(f"item{i} is a line of filler text for the prompt-speed probe." for i in range(90))


def timed(client, request: ModelRequest) -> tuple[float, object]:
    start = time.perf_counter()
    turn = client.complete(request)
    return time.perf_counter() - start, turn


def generation_rate(api_base: str, name: str) -> tuple[float, int]:
    """Tokens/s of generation alone: two completions of the same (KV-cached) prompt, 8 vs 256 tokens.

    A raw completion (no chat template), so that a base model continues the text as well.
    """
    from surfbench.bench.models.client import litellm_module

    litellm = litellm_module()
    prompt = f"[{uuid.uuid4().hex[:8]}] " + ", ".join(str(i) for i in range(1, 40)) + ","

    def complete(max_tokens: int) -> tuple[float, int]:
        start = time.perf_counter()
        out = litellm.text_completion(
            model=f"openai/{name}", api_base=api_base, api_key="sk-local", prompt=prompt, max_tokens=max_tokens,
            temperature=0.0,
        )  # fmt: skip
        return time.perf_counter() - start, int(out.usage.completion_tokens or 0)

    complete(1)  # the prompt into the KV cache: both probes below reuse it
    t_short, n_short = complete(8)
    t_long, n_long = complete(256)
    if n_long <= n_short or t_long <= t_short:
        raise RuntimeError(f"{name}: generation probe stopped early ({n_short} then {n_long} tokens)")
    return (n_long - n_short) / (t_long - t_short), n_long


def bench(name: str, first_call: bool = True) -> dict:
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
        gen_rate, completion = generation_rate(pool.servers[name].api_base, name)
        if not first_call:
            return {
                "model": name, "params_b": cfg.params_b, "server_start_s": round(startup, 1),
                "prompt_tok_s": round(prompt_rate, 1), "prompt_probe_tokens": prompt_tokens,
                "gen_tok_s": round(gen_rate, 1), "gen_probe_tokens": completion,
            }  # fmt: skip
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
    first_call = "--no-first-call" not in argv
    names = [a for a in argv if not a.startswith("--")] or [n for n in EMBEDDED if is_pulled(n)]
    rows = []
    for name in names:
        print(f"benchmarking {name} ...", file=sys.stderr, flush=True)
        rows.append(bench(name, first_call))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores"
    print(f"local models on {machine}, {stamp} (`python scripts/bench_models.py`)\n")
    print("| model | params | prompt tok/s | generation tok/s | first call, forge `full` (96 tools) |")
    print("|---|---|---|---|---|")
    for r in rows:
        first = (
            f"{r['full_surface_first_call_s']:.1f} s ({r['full_surface_prompt_tokens']:,} prompt tokens, "
            f"{r['full_surface_mode']})"
            if "full_surface_first_call_s" in r
            else "not measured (--no-first-call)"
        )
        print(f"| {r['model']} | {r['params_b']}B | {r['prompt_tok_s']:.0f} | {r['gen_tok_s']:.0f} | {first} |")
    out = ROOT / "results" / "bench" / ("models.json" if first_call else "models-rates.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
