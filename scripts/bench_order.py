"""Benchmark: cache-aware episode order vs naive order (issue 5; issue 7's target is >= 3x on `full`).

The local llama.cpp server keeps the KV cache of its last prompt only, so what a request costs is the
part of its prompt that does not repeat the previous prompt's start. Order matters at two levels:

Inside a cell (``order=cache`` vs ``order=naive``):
1. Prefill work, exact and model-free: every surface's first requests (rendered as the default model's
   prompted mode sends them) in naive and in cache-aware order; characters the server must prefill,
   i.e. the sum over consecutive requests of the part not shared with the previous one.
2. Time, on the real server: the same cell run twice in fresh processes with ``no_cache=true``, once
   per order; model time (sum of request latencies) and wall time.

Across cells on one server (surfbench runs a cell whole, one server per model; the naive alternative
sends each task to every surface in turn): the same two measurements for the `full` and `core` cells'
first requests, interleaved vs grouped. On `full` every first request shares the 9k-token tool block,
so inside the cell order cannot matter there; between cells it decides whether that block is prefilled
once or once per task.

    python scripts/bench_order.py [--surface preselect] [--limit 6] [--repeats 3] [--sweep-tasks 4] [--no-timed]

Prints a table and writes results/bench/order.json. Progress of the timed runs goes to stderr.
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


def first_request(cell, task, max_tokens: int | None = None):  # noqa: ANN001, ANN201
    """The first request of the task's episode, as the episode loop builds it."""
    from dataclasses import replace

    from surfbench.bench.run.episode import system_text

    session = cell.surface_for(task).session(task.turns[0])
    system = system_text(cell.suite.system_prompt, session.system_text())
    request = cell.settings.request  # the model's part of every request, as the loop passes it to each step
    return replace(
        request,
        messages=({"role": "system", "content": system}, {"role": "user", "content": task.turns[0]}),
        tools=tuple(session.tools()),
        max_tokens=max_tokens or request.max_tokens,
    )


def first_prompt(cell, task) -> str:  # noqa: ANN001
    """The first request's prompt as the server sees it (the default model's prompted mode)."""
    from surfbench.bench.models.prompting import prompted_messages

    request = first_request(cell, task)
    rendered = prompted_messages(request.messages, request.tools, cell.model_cfg.prompt_format or "hermes")
    return "".join(f"<{m['role']}>{m['content']}" for m in rendered)


def prefill_chars(prompts: list[str]) -> list[int]:
    """Per request: the characters the server must prefill (what it does not share with the previous one)."""
    return [len(b) - len(os.path.commonprefix([a, b])) for a, b in zip(["", *prompts], prompts, strict=False)]


def prefill_work(surface: str, repeats: int) -> dict:
    from surfbench.bench.run.runner import CellSpec, episode_order, resolve_cell

    out: dict = {"surface": surface, "repeats": repeats}
    for order in ("naive", "cache"):
        cell = resolve_cell(CellSpec("forge", surface, MODEL, split="dev", order=order, repeats=repeats))
        prompts = [first_prompt(cell, t) for t, _ in episode_order(cell)]
        out[f"{order}_chars"] = sum(prefill_chars(prompts))
        out["episodes"] = len(prompts)
        out["prompt_chars"] = sum(map(len, prompts))
    out["ratio"] = round(out["naive_chars"] / out["cache_chars"], 2)
    return out


SWEEP = ("full", "core")


def sweep_cells() -> dict:
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    return {s: resolve_cell(CellSpec("forge", s, MODEL, split="dev")) for s in SWEEP}


def schedules(n: int) -> dict[str, list[tuple[str, int]]]:
    """Two schedules of the same first requests of n tasks on each sweep surface, on one server.

    ``interleaved``: task by task, each on every surface in turn (what a paired loop over tasks sends,
    or two cells sharing one server). ``grouped``: each cell's episodes back to back (what surfbench
    does: a cell runs whole, one server per model, cells one after another).
    """
    return {
        "interleaved": [(s, i) for i in range(n) for s in SWEEP],
        "grouped": [(s, i) for s in SWEEP for i in range(n)],
    }


def sweep_prefill() -> dict:
    """Exact, model-free: characters `full`'s first requests must prefill under each schedule."""
    cells = sweep_cells()
    prompts = {s: [first_prompt(c, t) for t in c.tasks] for s, c in cells.items()}
    n = len(cells["full"].tasks)
    out: dict = {"surfaces": list(SWEEP), "tasks": n}
    for name, sched in schedules(n).items():
        work = prefill_chars([prompts[s][i] for s, i in sched])
        for surface in SWEEP:
            out[f"{name}_{surface}_chars"] = sum(w for w, (s, _) in zip(work, sched, strict=True) if s == surface)
    out["ratio_full"] = round(out["interleaved_full_chars"] / out["grouped_full_chars"], 2)
    return out


def timed_sweep(n: int) -> dict:
    """On the real server: the same first requests (prefill only, max_tokens=1) in both schedules."""
    from surfbench.bench.models import ModelPool, model_config
    from surfbench.bench.models.types import ModelRequest

    cells = sweep_cells()
    requests = {s: [first_request(c, t, max_tokens=1) for t in c.tasks[:n]] for s, c in cells.items()}
    out: dict = {"surfaces": list(SWEEP), "tasks": n, "model": MODEL}
    for name, sched in schedules(n).items():
        spent = dict.fromkeys(SWEEP, 0.0)
        prompt_tokens = dict.fromkeys(SWEEP, 0)
        with ModelPool(cache=None) as pool:  # a fresh server per schedule: empty KV cache; no response cache
            client = pool.client(model_config(MODEL))
            client.complete(ModelRequest(messages=({"role": "user", "content": "Hi"},), max_tokens=1))
            for k, (surface, i) in enumerate(sched, 1):
                start = time.perf_counter()
                turn = client.complete(requests[surface][i])
                took = time.perf_counter() - start
                spent[surface] += took
                prompt_tokens[surface] += turn.usage.prompt_tokens or 0
                print(f"  {name} {k}/{len(sched)}: {surface} task {i}, {took:.1f} s", file=sys.stderr, flush=True)
        for surface in SWEEP:
            out[f"{name}_{surface}_s"] = round(spent[surface], 1)
            out[f"{name}_{surface}_prompt_tokens"] = prompt_tokens[surface]
    out["ratio_full"] = round(out["interleaved_full_s"] / max(out["grouped_full_s"], 1e-9), 2)
    return out


def timed(surface: str, limit: int, repeats: int) -> list[dict]:
    import pandas as pd

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for order in ("naive", "cache"):
            cmd = [
                sys.executable, "-m", "surfbench", "run", "suite=forge", "split=dev", f"surface={surface}",
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
    parser.add_argument("--sweep-tasks", type=int, default=4, help="tasks per surface in the timed sweep check")
    parser.add_argument("--no-timed", action="store_true", help="only the exact prefill-work counts")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    work = [prefill_work(s, r) for s, r in (("full", 1), ("full", 3), ("preselect", 1), ("preselect", 3))]
    print(f"inside a cell: prefill work of first requests, forge dev split ({stamp}, {machine})")
    print(f"{'surface':<10} {'repeats':>7} {'episodes':>8} {'naive chars':>12} {'cache chars':>12} {'naive/cache':>11}")
    for w in work:
        print(
            f"{w['surface']:<10} {w['repeats']:>7} {w['episodes']:>8} {w['naive_chars']:>12,} "
            f"{w['cache_chars']:>12,} {w['ratio']:>11}"
        )
    sweep = sweep_prefill()
    print(f"\nacross cells on one server ({' + '.join(SWEEP)}, {sweep['tasks']} tasks each): prefill work of")
    print(f"full's first requests: interleaved {sweep['interleaved_full_chars']:,} chars, grouped "
          f"{sweep['grouped_full_chars']:,} chars = {sweep['ratio_full']}x")  # fmt: skip
    runs = [] if args.no_timed else timed(args.surface, args.limit, args.repeats)
    if runs:
        print(f"\ntimed on the real server: forge dev, {args.surface}, {MODEL}, limit {args.limit}, no cache")
        for r in runs:
            what = f"{r['episodes']} episodes, {r['steps']} steps"
            print(f"{r['order']:<6} {what}: model {r['model_s']} s, wall {r['wall_s']} s")
        print(f"naive/cache model time: {runs[0]['model_s'] / max(runs[1]['model_s'], 1e-9):.2f}x")
    sweep_timed = None if args.no_timed else timed_sweep(args.sweep_tasks)
    if sweep_timed:
        print(f"\ntimed on the real server: first requests of {args.sweep_tasks} tasks on {' + '.join(SWEEP)}, {MODEL}")
        for name in ("interleaved", "grouped"):
            print(f"{name:<12} full {sweep_timed[f'{name}_full_s']} s, core {sweep_timed[f'{name}_core_s']} s")
        print(f"full, interleaved/grouped: {sweep_timed['ratio_full']}x")
    out = ROOT / "results" / "bench" / "order.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"date": stamp, "machine": machine, "prefill": work, "timed": runs, "sweep_prefill": sweep,
            "sweep_timed": sweep_timed}  # fmt: skip
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
