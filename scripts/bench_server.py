"""Benchmark: llama-server's own speed under surfbench's server settings, one request at a time.

Where ``scripts/bench_batching.py`` times whole episodes, this one times single requests with the server's own
timers, so that a server setting can be chosen in minutes: flash attention, threads, and how OpenMP's threads
wait for each other (both shipped engines link libgomp, whose barriers, not llama-server's ``--poll``, decide
whether a waiting thread spins or sleeps). For each setting a fresh llama-server gets, per surface (default
``full``, whose first forge dev request is about 11k tokens, and ``preselect``), the first request of forge
dev's first task as the episode loop builds it, twice:

- ``cold``: the whole prompt is processed (prompt tokens per second), then ``--tokens`` are generated;
- ``cached``: the same request again, its prompt from the slot's KV cache: generation alone at that context.

``ignore_eos`` makes every answer ``--tokens`` long, so rates compare like with like; the rates are the server's
(``timings.prompt_per_second``, ``timings.predicted_per_second``). ``--busy`` runs each setting alone and then
beside one competing busy process (a pure-Python spin loop, as in bench_batching.py) and gives the busy rate as
a share of the alone one. Settings alternate for ``--rounds`` rounds; the table gives medians. Writes
results/bench/server.json after every setting and prints the rows for docs/models.md. Run it alone on the
machine.

    python scripts/bench_server.py [--settings fa=off fa=on] [--surfaces full,preselect] [--tokens 128]
        [--rounds 2] [--busy] [--model NAME]

A setting is ``KEY=VALUE[:KEY=VALUE...]`` over ``fa`` (on, off, auto), ``t`` (threads), ``tb`` (prompt
threads), ``wait`` (OMP_WAIT_POLICY: passive, active) and ``spin`` (GOMP_SPINCOUNT; ``env``: the environment's,
unset GCC's 300,000); ``default`` is the model config's own settings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
MODEL = "qwen2.5-coder-0.5b-instruct"
OUT = ROOT / "results" / "bench" / "server.json"
DEFAULT_SETTINGS = ("fa=off", "fa=on")
KEYS = {"fa": "flash_attn", "t": "n_threads", "tb": "threads_batch", "wait": "omp_wait_policy", "spin": "omp_spincount"}


def parse(text: str) -> dict[str, Any]:
    """``fa=on:t=1`` -> ServerSettings fields; SystemExit saying what is wrong."""
    if text == "default":
        return {}
    fields: dict[str, Any] = {}
    for part in text.split(":"):
        key, sep, value = part.partition("=")
        if not sep or key not in KEYS:
            raise SystemExit(f"bench_server: setting {text!r}: cannot read {part!r} (keys: {', '.join(KEYS)})")
        if key == "fa" and value not in ("on", "off", "auto"):
            raise SystemExit(f"bench_server: setting {text!r}: fa is on, off or auto")
        if key == "wait" and value not in ("passive", "active"):
            raise SystemExit(f"bench_server: setting {text!r}: wait is passive or active")
        if key == "spin" and value == "env":
            fields[KEYS[key]] = None  # GOMP_SPINCOUNT as the environment has it (unset: GCC's 300,000)
            continue
        if key in ("t", "tb", "spin") and not value.isdigit():
            raise SystemExit(f"bench_server: setting {text!r}: {key} is a whole number")
        fields[KEYS[key]] = int(value) if key in ("t", "tb", "spin") else value
    return fields


def post(url: str, payload: dict[str, Any], timeout: float = 3600.0) -> dict[str, Any]:
    body = json.dumps(payload).encode("utf-8")
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the local server only
        return dict(json.loads(resp.read()))


def measure(cfg: Any, setting: str, requests: list[tuple[str, Any]], tokens: int) -> list[dict[str, Any]]:
    """One fresh server with the setting; each request cold, then again from the cache."""
    from surfbench.bench.models import ModelPool

    rows = []
    with ModelPool(None) as pool:
        client = pool.client(cfg)
        server = pool.servers[cfg.name]
        server.settings = replace(server.settings, **parse(setting))
        server.start()
        for surface, req in requests:
            payload = {**client.wire_payload(req), "model": server.settings.alias, "ignore_eos": True}
            payload["max_tokens"] = tokens
            for attempt in ("cold", "cached"):
                t = post(f"{server.api_base}/chat/completions", payload)["timings"]
                row = {
                    "setting": setting, "surface": surface, "attempt": attempt,
                    "cache_n": t.get("cache_n"), "prompt_n": t["prompt_n"], "predicted_n": t["predicted_n"],
                    "prompt_per_s": round(float(t["prompt_per_second"]), 1),
                    "predicted_per_s": round(float(t["predicted_per_second"]), 1),
                    "prompt_ms": round(float(t["prompt_ms"])), "predicted_ms": round(float(t["predicted_ms"])),
                }  # fmt: skip
                context = (row["cache_n"] or 0) + row["prompt_n"]
                print(f"  {setting} {surface} {attempt}: {context} prompt tokens "
                      f"({row['prompt_n']} computed at {row['prompt_per_s']}/s), "
                      f"{row['predicted_n']} generated at {row['predicted_per_s']}/s", flush=True)  # fmt: skip
                rows.append(row)
    return rows


def median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows]
    return round(statistics.median(values), 1) if values else None


def table(record: dict[str, Any], surfaces: list[str]) -> list[str]:
    """Rows: per surface, request and setting, the median rates (and, busy, their share of the alone ones)."""
    busy = record["busy"]
    head = "| setting | surface | request | prompt tokens | prompt/s | generated/s |"
    lines = [head + (" busy prompt/s | busy generated/s | busy / alone (generated) |" if busy else ""),
             "|---" * (9 if busy else 6) + "|"]  # fmt: skip
    for setting in record["settings"]:
        for surface in surfaces:
            for attempt in ("cold", "cached"):
                key = (setting, surface, attempt)
                mine = [r for r in record["rows"] if (r["setting"], r["surface"], r["attempt"]) == key]
                alone = [r for r in mine if not r.get("busy")]
                if not alone:
                    continue
                context = (alone[0]["cache_n"] or 0) + alone[0]["prompt_n"]
                p = median(alone, "prompt_per_s") if attempt == "cold" else "-"
                line = f"| {setting} | {surface} | {attempt} | {context} | {p} | {median(alone, 'predicted_per_s')} |"
                if busy:
                    beside = [r for r in mine if r.get("busy")]
                    bp = median(beside, "prompt_per_s") if attempt == "cold" and beside else "-"
                    bg = median(beside, "predicted_per_s")
                    ag = median(alone, "predicted_per_s")
                    share = f"{round(bg / ag, 2)}x" if bg is not None and ag else "-"
                    line += f" {bp} | {bg if bg is not None else '-'} | {share} |"
                lines.append(line)
    return lines


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="+", default=list(DEFAULT_SETTINGS), help="e.g. fa=off fa=on t=1")
    parser.add_argument("--surfaces", default="full,preselect", help="forge surfaces whose first request is sent")
    parser.add_argument("--tokens", type=int, default=128, help="tokens generated per request")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the settings")
    parser.add_argument("--busy", action="store_true", help="each setting alone, then beside one busy process")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.tokens < 1 or args.rounds < 1:
        parser.error("--tokens and --rounds must be 1 or more")
    for setting in args.settings:
        parse(setting)  # every setting readable before anything starts

    from bench_batching import SPIN, write_atomic  # type: ignore[import-not-found]  # the same busy process
    from bench_order import first_request  # type: ignore[import-not-found]

    from surfbench.bench.models.server import ServerError, upstream_binary
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    try:
        upstream_binary()
    except ServerError as exc:
        raise SystemExit(f"bench_server: {exc}") from None
    surfaces = [s.strip() for s in args.surfaces.split(",") if s.strip()]
    if not surfaces:
        parser.error("--surfaces names none")
    requests = []
    cfg = None
    for surface in surfaces:
        cell = resolve_cell(CellSpec(model=args.model, suite="forge", split="dev", surface=surface, limit=1))
        if cell.model_cfg.server != "llama-server":
            raise SystemExit(f"bench_server: {args.model} runs on {cell.model_cfg.server}, not llama-server")
        requests.append((surface, first_request(cell, cell.tasks[0], max_tokens=args.tokens)))
        cfg = cell.model_cfg
    command = "python scripts/bench_server.py" + "".join(f" {a}" for a in sys.argv[1:])
    record: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "command": command, "model": args.model,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_1min_before": round(os.getloadavg()[0], 1), "tokens": args.tokens, "busy": args.busy,
        "settings": list(args.settings), "rows": [], "complete": False,
    }  # fmt: skip

    for r in range(args.rounds):
        for setting in args.settings:
            for beside in (False, True) if args.busy else (False,):
                where = ", beside a busy process" if beside else ""
                print(f"round {r + 1}/{args.rounds}: {setting}{where}", flush=True)
                spin = subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL) if beside else None
                try:
                    rows = measure(cfg, setting, requests, args.tokens)
                finally:
                    if spin is not None:
                        spin.kill()
                        spin.wait()
                record["rows"] += [{**row, "round": r + 1, "busy": beside} for row in rows]
                write_atomic(args.out, record)  # after every setting: nothing lost on a stop
    record["load_1min_after"] = round(os.getloadavg()[0], 1)
    record["complete"] = True
    write_atomic(args.out, record)
    print(f"\nrows for docs/models.md (median of {args.rounds} round(s); `{command}`, {record['date']}):")
    for line in table(record, surfaces):
        print(line)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
