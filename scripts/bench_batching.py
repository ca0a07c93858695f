"""Benchmark: continuous batching on llama-server against today's one-at-a-time server (issue 30).

For each setting (default: ``llama-cpp-python``, one episode at a time; then ``llama-server`` with
``slots = concurrency = N`` for N = 1..4, each episode pinned to one slot), runs the same episodes on the
0.5B model with no response cache (every request reaches the server), each setting in a fresh temporary
results folder:

- the front door: the cells of ``configs/sweep/front.yaml`` (its surfaces on its six forge dev tasks);
- forge dev ``preselect`` (every dev task).

It measures the wall time of the episodes (server start apart) and episodes per hour, and checks outcome
identity against the first setting: per episode, its calls in order (operation, arguments) and its success;
the episodes that differ are listed (batched decoding may round differently), never raised. ``--busy``
runs each setting twice on the same episodes, first alone and then beside one competing busy process (a
pure-Python spin loop, started for that half only), so that its busy rate is judged against its own quiet
rate on the same work; by default it tries thread settings too (generation threads 1 vs 2; ``tb=``: prompt
threads; ``poll=``: llama-server's polling).

Writes results/bench/batching.json atomically after every setting (section ``quiet`` or ``busy``; the
other section is kept) and prints the rows for docs/benchmarks.md. Run it alone on the machine.

    python scripts/bench_batching.py [--settings llama-cpp-python llama-server:2 ...] [--workloads front,preselect]
        [--limit N] [--busy] [--model NAME] [--dry-run]

A setting is ``ENGINE[:SLOTS][:t=THREADS][:tb=BATCH_THREADS][:poll=0-100][:wait=passive|active][:fa=off|on|auto]``
(bench/serverbench/batching.py); ``--settings llama-server:1 llama-server:1:fa=on`` is flash attention's episode-level
identity check.
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
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODEL = "qwen2.5-coder-0.5b-instruct"
OUT = ROOT / "results" / "bench" / "batching.json"
WORKLOADS = ("front", "preselect")
"""The workloads run by default; ``full`` (forge dev ``full``) on request."""
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
"""The competing busy process: spins until its parent (this script) is gone, so it never outlives it."""


def workload_specs(names: list[str], limit: int | None) -> dict[str, list[dict[str, Any]]]:
    """The cells of each workload, as CellSpec keyword arguments (the front door read from its sweep file)."""
    import yaml

    front = yaml.safe_load((ROOT / "configs" / "sweep" / "front.yaml").read_text(encoding="utf-8"))
    surfaces = [s.strip() for s in str(front["hydra"]["sweeper"]["params"]["surface"]).split(",")]
    tasks = tuple(front["tasks"])[:limit] if limit else tuple(front["tasks"])
    known = {
        "front": [
            {"suite": "forge", "surface": s, "split": front.get("split", "dev"), "tasks": tasks} for s in surfaces
        ],
        "preselect": [{"suite": "forge", "surface": "preselect", "split": "dev", "limit": limit}],
        "full": [{"suite": "forge", "surface": "full", "split": "dev", "limit": limit}],
    }
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"--workloads: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    return {n: known[n] for n in names}


def stop_on_repeat() -> int | None:
    """The run default (configs/config.yaml), so that episodes end as in ``surfbench run``."""
    import yaml

    value = yaml.safe_load((ROOT / "configs" / "config.yaml").read_text(encoding="utf-8")).get("stop_on_repeat")
    return int(value) if value is not None else None


def resolve(setting: Any, model: str, specs: dict[str, list[dict[str, Any]]]) -> list[tuple[str, Any]]:
    """(workload, cell) for each cell of the setting: the model config with its engine, slots and threads."""
    from surfbench.bench.base.config import read_group_config
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    data = {**read_group_config("model", model), "server": setting.engine, "slots": setting.slots}
    data["concurrency"] = setting.concurrency
    if setting.threads is not None:
        data["threads"] = setting.threads
    if setting.flash_attn is not None:
        data["flash_attn"] = setting.flash_attn
    if setting.stop is not None:  # stop=0: off, whatever the config says
        data["stop_on_repeated_call"] = setting.stop or None
    repeat = stop_on_repeat()
    return [
        (name, resolve_cell(CellSpec(model=model, concurrency=setting.concurrency, stop_on_repeat=repeat, **spec),
                            model_data=data))
        for name, cells in specs.items()
        for spec in cells
    ]  # fmt: skip


def server_flags(setting: Any, cfg: Any) -> str:
    """How the server runs for this setting (for the plan)."""
    t = setting.threads or cfg.threads
    tb = setting.threads_batch or t
    if setting.engine == "llama-server":
        poll = 0 if setting.poll is None else setting.poll
        flags = f"llama-server --parallel {setting.slots} --kv-unified --threads {t} --threads-batch {tb} --poll {poll}"
        flags += f" --flash-attn {setting.flash_attn or cfg.flash_attn}"
    else:
        flags = f"python -m llama_cpp.server --n_threads {t} --n_threads_batch {tb}"
    spin = "" if cfg.omp_spincount is None else f"; GOMP_SPINCOUNT={cfg.omp_spincount}"
    return flags + spin + (f"; OMP_WAIT_POLICY={setting.wait.upper()}" if setting.wait else "")


def measure(setting: Any, cells: list[tuple[str, Any]], tmp: Path) -> tuple[dict[str, Any], list[tuple[str, Any, Any]]]:
    """Run the setting's cells on a fresh server; its row, and per cell (workload, episodes, calls)."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.execute import COMMIT_INTERVAL_S
    from surfbench.bench.run.runner import run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    cfg = cells[0][1].model_cfg
    roots: list[Path] = []
    workloads: list[str] = []
    by_workload: dict[str, dict[str, float]] = {}
    with ModelPool(None) as pool:  # no response cache: every request reaches the server
        pool.client(cfg)
        server = pool.servers[cfg.name]
        poll = server.settings.poll if setting.poll is None else setting.poll
        wait = server.settings.omp_wait_policy if setting.wait is None else setting.wait
        server.settings = replace(server.settings, threads_batch=setting.threads_batch, poll=poll, omp_wait_policy=wait)
        started = time.perf_counter()
        server.start()
        startup = time.perf_counter() - started
        begin = time.perf_counter()
        for i, (workload, cell) in enumerate(cells):
            root = tmp / f"{i}-{cell.spec.surface}"
            store = RunStore(root, commit_interval_s=COMMIT_INTERVAL_S)
            store.prepare()
            store.write_run_info({"cells": []})
            t0 = time.perf_counter()

            def progress(c: Any, done: int, total: int, row: Any, t0: float = t0, w: str = workload) -> None:
                if row is not None:
                    took = time.perf_counter() - t0
                    print(f"  {setting.name} {w}/{c.spec.surface}: {done}/{total} ({took:.0f} s)", file=sys.stderr)

            run_cell(cell, pool, store, "batching", progress=progress)
            entry = by_workload.setdefault(workload, {"episodes": 0, "wall_s": 0.0})
            entry["episodes"] += len(cell.tasks) * cell.spec.repeats
            entry["wall_s"] = round(entry["wall_s"] + time.perf_counter() - t0, 2)
            roots.append(root)
            workloads.append(workload)
        wall = time.perf_counter() - begin
    episodes, calls, steps = (load_runs(roots, t) for t in ("episodes", "calls", "steps"))
    cache_n = int(steps["server_cache_n"].fillna(0).sum()) if "server_cache_n" in steps else 0
    prompt_n = int(steps["server_prompt_n"].fillna(0).sum()) if "server_prompt_n" in steps else 0
    row = {
        "name": setting.name, "engine": setting.engine, "slots": setting.slots, "concurrency": setting.concurrency,
        "threads": setting.threads or cfg.threads, "threads_batch": setting.threads_batch, "poll": setting.poll,
        "episodes": len(episodes), "steps": len(steps), "errors": int(episodes["error"].notna().sum()),
        "completion_tokens": int(steps["completion_tokens"].fillna(0).sum()),
        "steps_cut": int(steps["finish_reason"].eq("repeated_call").sum()),
        "steps_at_max_tokens": int(steps["finish_reason"].eq("length").sum()),
        "successes": int(episodes["success"].eq(True).sum()),
        "startup_s": round(startup, 2), "wall_s": round(wall, 2),
        "episodes_per_hour": round(len(episodes) / wall * 3600, 1) if wall else None,
        "by_workload": by_workload, "server_cache_n": cache_n, "server_prompt_n": prompt_n,
        "cached_share": round(cache_n / (cache_n + prompt_n), 3) if cache_n + prompt_n else None,
        "slots_used": sorted(int(s) for s in steps["slot"].dropna().unique()) if "slot" in steps else [],
    }  # fmt: skip
    # each cell's own folder: two workloads may run the same episode (same cell identity, same key)
    parts = [(w, load_runs([r], "episodes"), load_runs([r], "calls")) for w, r in zip(workloads, roots, strict=True)]
    return row, parts


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_sections(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", help="settings to run, the first is the reference")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="front, preselect (comma-separated)")
    parser.add_argument("--limit", type=int, help="first N tasks of each cell (a short run)")
    parser.add_argument("--busy", action="store_true", help="one competing busy process for the whole measurement")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    args = parser.parse_args()
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be 1 or more")

    from surfbench.bench.serverbench.batching import (
        BUSY_SETTINGS,
        DEFAULT_SETTINGS,
        best_setting,
        differences,
        markdown_rows,
        parse_settings,
        speedups,
        verdict_differences,
        workload_outcomes,
    )

    try:
        settings = parse_settings(args.settings or (BUSY_SETTINGS if args.busy else DEFAULT_SETTINGS))
    except ValueError as exc:
        parser.error(str(exc))
    specs = workload_specs([w.strip() for w in args.workloads.split(",") if w.strip()], args.limit)
    plan = [(s, resolve(s, args.model, specs)) for s in settings]
    per_setting = sum(len(c.tasks) * c.spec.repeats for _, c in plan[0][1])
    busy_note = ", one busy process" if args.busy else ""
    total = len(settings) * per_setting * (2 if args.busy else 1)  # busy: each setting alone, then beside it
    times = " x 2 (alone, then beside the busy process)" if args.busy else ""
    head = f"batching benchmark: {args.model}, {len(settings)} setting(s) x {per_setting} episodes{times}"
    head += f" = {total} episodes"
    print(f"{head}, no response cache{busy_note}")
    for setting, cells in plan:
        print(f"  {setting.name}: concurrency {setting.concurrency}; {server_flags(setting, cells[0][1].model_cfg)}")
        if setting is settings[0]:
            for workload, cell in cells:
                print(f"    {workload}: {cell.label()}, {len(cell.tasks)} task(s)")
    if args.dry_run:
        return 0
    if any(s.engine == "llama-server" for s in settings):  # before any setting runs: say how to get it
        from surfbench.bench.models.server import ServerError, upstream_binary

        try:
            upstream_binary()
        except ServerError as exc:
            raise SystemExit(f"bench_batching: {exc}") from None

    cores = os.cpu_count() or 1
    command = "python scripts/bench_batching.py" + "".join(f" {a}" for a in sys.argv[1:])
    sections = read_sections(args.out)
    record: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {cores} cores, Python {platform.python_version()}",
        "command": command, "model": args.model, "workloads": list(specs), "limit": args.limit,
        "busy": args.busy, "cores": cores, "cores_left": cores - 1 if args.busy else cores,
        "load_1min_before": round(os.getloadavg()[0], 1), "load_1min_after": None,
        "complete": False, "settings": [],
    }  # fmt: skip
    busy: subprocess.Popen[bytes] | None = None
    outcomes: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="surfbench-batching-") as tmp:
            for setting, cells in plan:
                folder = Path(tmp) / setting.name.replace(":", "_")
                quiet_row: dict[str, Any] | None = None
                if args.busy:  # the same episodes alone first: the busy rate is judged against this one
                    print(f"{setting.name}: running {per_setting} episodes alone", file=sys.stderr, flush=True)
                    quiet_row, quiet_parts = measure(setting, cells, folder / "quiet")
                    quiet_outcomes = workload_outcomes(quiet_parts)
                    busy = subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
                print(f"{setting.name}: running {per_setting} episodes{busy_note}", file=sys.stderr, flush=True)
                row, parts = measure(setting, cells, folder / ("busy" if args.busy else "quiet"))
                if busy is not None:
                    busy.kill()
                    busy.wait()
                    busy = None
                outcomes[setting.name] = workload_outcomes(parts)
                if quiet_row is not None:
                    row["quiet"] = {k: quiet_row[k] for k in ("episodes", "wall_s", "episodes_per_hour", "steps")}
                    row["differing_vs_quiet"] = differences(quiet_outcomes, outcomes[setting.name])
                row["differing"] = differences(outcomes[settings[0].name], outcomes[setting.name])
                row["verdicts_differing"] = verdict_differences(outcomes[settings[0].name], outcomes[setting.name])
                one = "llama-server:1"
                if setting.engine == "llama-server" and setting.slots > 1 and one in outcomes:
                    row["differing_vs_one_slot"] = differences(outcomes[one], outcomes[setting.name])
                record["settings"].append(row)
                rates = {r["name"]: r["episodes_per_hour"] or 0.0 for r in record["settings"]}
                for r in record["settings"]:
                    r["speedup"] = speedups(rates, settings[0].name)[r["name"]]
                record["load_1min_after"] = round(os.getloadavg()[0], 1)
                write_atomic(args.out, {**sections, "busy" if args.busy else "quiet": record})
                print(f"{setting.name}: {row['episodes']} episodes in {row['wall_s']} s = "
                      f"{row['episodes_per_hour']} episodes/h ({row['speedup']}x); "
                      f"{len(row['differing'])} differ from {settings[0].name}, "
                      f"{len(row['verdicts_differing'])} in a verdict", flush=True)  # fmt: skip
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    record["complete"] = True
    write_atomic(args.out, {**sections, "busy" if args.busy else "quiet": record})
    best = best_setting(record["settings"])
    if best is not None:
        print(f"best llama-server setting: {best['name']} ({best['speedup']}x)")
    for row in record["settings"]:
        for line in row["differing"][:10]:
            print(f"  {row['name']} differs: {line}")
        for line in row["verdicts_differing"]:
            print(f"  {row['name']} verdict differs: {line}")
    print("\nrows for docs/benchmarks.md:")
    for line in markdown_rows(record):
        print(line)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
