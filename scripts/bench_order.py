"""Benchmark: cache-aware episode order vs naive order (issue 5; issue 7's target is >= 3x on `full`).

The local llama.cpp server keeps the KV cache of its last prompt only, so what a request costs is the
part of its prompt that does not repeat the previous prompt's start. Two measurements:

1. Prefill work, exact and model-free: every surface's first requests (rendered as the default model's
   prompted mode sends them) in naive and in cache-aware order; characters the server must prefill,
   i.e. the sum over consecutive requests of the part not shared with the previous one.
2. Time, on the real server: the same cell run twice in fresh processes with ``no_cache=true``, once
   per order; model time (sum of request latencies) and wall time.

    python scripts/bench_order.py [--surface preselect] [--limit 6] [--repeats 3] [--no-timed]

Prints a table and writes results/bench/order.json.
"""

from __future__ import annotations

import argparse
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
MODEL = "qwen2.5-coder-0.5b-instruct"


def first_prompt(cell, task) -> str:  # noqa: ANN001
    from bench.models.prompting import prompted_messages

    session = cell.surface.session(task.turns[0])
    surface_text = session.system_text()
    system = f"{cell.suite.system_prompt}\n\n{surface_text}".strip() if surface_text else cell.suite.system_prompt
    messages = ({"role": "system", "content": system}, {"role": "user", "content": task.turns[0]})
    rendered = prompted_messages(messages, tuple(session.tools()), cell.model_cfg.prompt_format or "hermes")
    return "".join(f"<{m['role']}>{m['content']}" for m in rendered)


def prefill_work(surface: str, repeats: int) -> dict:
    from bench.runner import CellSpec, episode_order, resolve_cell

    out: dict = {"surface": surface, "repeats": repeats}
    for order in ("naive", "cache"):
        cell = resolve_cell(CellSpec("forge", surface, MODEL, split="dev", order=order, repeats=repeats))
        prompts = [first_prompt(cell, t) for t, _ in episode_order(cell)]
        work = len(prompts[0]) + sum(
            len(b) - len(os.path.commonprefix([a, b])) for a, b in zip(prompts, prompts[1:], strict=False)
        )
        out[f"{order}_chars"] = work
        out["episodes"] = len(prompts)
        out["prompt_chars"] = sum(map(len, prompts))
    out["ratio"] = round(out["naive_chars"] / out["cache_chars"], 2)
    return out


def timed(surface: str, limit: int, repeats: int) -> list[dict]:
    import pandas as pd

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for order in ("naive", "cache"):
            cmd = [
                sys.executable, "-m", "bench.cli", "run", "suite=forge", "split=dev", f"surface={surface}",
                f"model={MODEL}", f"limit={limit}", f"repeats={repeats}", f"order={order}", "no_cache=true",
                f"results_dir={tmp}", f"run={order}", "progress=plain",
            ]  # fmt: skip
            start = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "CI": "true"})
            wall = time.perf_counter() - start
            steps = pd.concat(pd.read_parquet(p) for p in (Path(tmp) / order / "steps.parquet").glob("*.parquet"))
            rows.append(
                {"order": order, "surface": surface, "episodes": limit * repeats, "steps": len(steps),
                 "model_s": round(float(steps["latency_s"].sum()), 1), "wall_s": round(wall, 1)}
            )  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surface", default="preselect")
    parser.add_argument("--limit", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-timed", action="store_true", help="only the exact prefill-work count")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    work = [prefill_work(s, r) for s, r in (("full", 1), ("full", 3), ("preselect", 1), ("preselect", 3))]
    print(f"prefill work of first requests, forge dev split ({stamp}, {machine})")
    print(f"{'surface':<10} {'repeats':>7} {'episodes':>8} {'naive chars':>12} {'cache chars':>12} {'naive/cache':>11}")
    for w in work:
        print(
            f"{w['surface']:<10} {w['repeats']:>7} {w['episodes']:>8} {w['naive_chars']:>12,} "
            f"{w['cache_chars']:>12,} {w['ratio']:>11}"
        )
    runs = [] if args.no_timed else timed(args.surface, args.limit, args.repeats)
    if runs:
        print(f"\ntimed on the real server: forge dev, {args.surface}, {MODEL}, limit {args.limit}, no cache")
        for r in runs:
            what = f"{r['episodes']} episodes, {r['steps']} steps"
            print(f"{r['order']:<6} {what}: model {r['model_s']} s, wall {r['wall_s']} s")
        print(f"naive/cache model time: {runs[0]['model_s'] / max(runs[1]['model_s'], 1e-9):.2f}x")
    out = ROOT / "results" / "bench" / "order.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, "prefill": work, "timed": runs}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
