"""Benchmark: ``keep_prefix`` (bench.models.prefix_store), a session's first request with and without a saved prefix.

A run resumed in a new session (or a sweep's next cell on a fresh server) computes the whole tool block again on
its first request: ``full`` on the forge is about 10k tokens. With ``keep_prefix: true`` the first session saves
the slot after that request, and the next server restores it before its own. This script plays two sessions for
each surface, each on a fresh llama-server through the real client (``LiteLLMClient.complete``, no response
cache), sending the first request of forge dev's first task as the episode loop builds it:

- ``session 1``: no saved file: the prompt is computed (timed); then the second task's first request, after which
  the slot is saved (a prefix is saved once two tasks share it);
- ``session 2``: a new server: the file is restored, then the same request.

Reported per surface: each session's wall time for the request, the prompt tokens the server computed and took
from its cache, the size of the saved file, and whether the two answers are the same text (greedy decoding: they
must be). Slot files go to a temporary folder, deleted at the end. Writes results/bench/prefix.json; run it alone.

    python scripts/bench_prefix.py [--surfaces full,preselect] [--model NAME]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
MODEL = "qwen2.5-coder-0.5b-instruct"
OUT = ROOT / "results" / "bench" / "prefix.json"


def session(cfg: Any, request: Any, folder: Path, then: Any = None) -> dict[str, Any]:
    """One fresh server with ``keep_prefix`` saving under ``folder``: the request's time, counts and answer.

    ``then``: a request of another task sent after it (the second task that shares the prefix: the slot is saved).
    """
    from surfbench.bench.models import ModelPool

    with ModelPool(None) as pool:
        client: Any = pool.client(cfg)
        server = pool.servers[cfg.name]
        server.settings = replace(server.settings, slot_save_path=folder)
        client.prefix_store.folder = folder
        t0 = time.monotonic()
        turn = client.complete(request)
        wall = time.monotonic() - t0
        if then is not None:
            client.complete(then)
    return {
        "wall_s": round(wall, 1), "computed": turn.usage.server_prompt_n, "cached": turn.usage.server_cache_n,
        "completion_tokens": turn.usage.completion_tokens, "text": turn.text,
    }  # fmt: skip


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surfaces", default="full,preselect", help="forge surfaces whose first request is sent")
    parser.add_argument("--model", default=MODEL)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()

    from bench_batching import write_atomic  # type: ignore[import-not-found]
    from bench_order import first_request  # type: ignore[import-not-found]

    from surfbench.bench.models.server import ServerError, upstream_binary
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    try:
        upstream_binary()
    except ServerError as exc:
        raise SystemExit(f"bench_prefix: {exc}") from None
    surfaces = [s.strip() for s in args.surfaces.split(",") if s.strip()]
    if not surfaces:
        parser.error("--surfaces names none")
    command = "python scripts/bench_prefix.py" + "".join(f" {a}" for a in sys.argv[1:])
    record: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "command": command, "model": args.model,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_1min_before": round(os.getloadavg()[0], 1), "rows": [], "complete": False,
    }  # fmt: skip
    for surface in surfaces:
        cell = resolve_cell(CellSpec(model=args.model, suite="forge", split="dev", surface=surface, limit=2))
        cfg = replace(cell.model_cfg, keep_prefix=True)
        if cfg.server != "llama-server":
            raise SystemExit(f"bench_prefix: {args.model} runs on {cfg.server}, not llama-server")
        request = first_request(cell, cell.tasks[0], max_tokens=cfg.max_tokens)
        other = first_request(cell, cell.tasks[1], max_tokens=cfg.max_tokens)
        with tempfile.TemporaryDirectory(prefix="surfbench-prefix-") as tmp:
            folder = Path(tmp)
            first = session(cfg, request, folder, then=other)
            size = sum(p.stat().st_size for p in folder.iterdir())
            print(f"  {surface} session 1: {first['wall_s']} s, {first['computed']} computed, file {size:,} B",
                  flush=True)  # fmt: skip
            second = session(cfg, request, folder)
            print(f"  {surface} session 2: {second['wall_s']} s, {second['computed']} computed, "
                  f"{second['cached']} from the restored cache", flush=True)  # fmt: skip
        row = {
            "surface": surface, "file_bytes": size, "first": first, "second": second,
            "same_answer": first["text"] == second["text"],
            "speedup": round(first["wall_s"] / second["wall_s"], 2) if second["wall_s"] else None,
        }  # fmt: skip
        record["rows"].append(row)
        write_atomic(args.out, record)  # after every surface: nothing lost on a stop
    record["load_1min_after"] = round(os.getloadavg()[0], 1)
    record["complete"] = True
    write_atomic(args.out, record)
    print(f"\n`{command}`, {record['date']}:")
    print("| surface | session 1: computed, s | session 2: restored + computed, s | speed-up | same answer | file |")
    print("|---|---|---|---|---|---|")
    for r in record["rows"]:
        a, b = r["first"], r["second"]
        print(f"| `{r['surface']}` | {a['computed']:,} tokens, {a['wall_s']} s | {b['cached'] or 0:,} + "
              f"{b['computed']:,} tokens, {b['wall_s']} s | {r['speedup']}x | {'yes' if r['same_answer'] else 'NO'} "
              f"| {r['file_bytes'] / 1e6:.0f} MB |")  # fmt: skip
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
