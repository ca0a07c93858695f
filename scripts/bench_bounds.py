"""Benchmark: bounded inputs (issue 27, items 5 and 8): pathological text counts in seconds, bad files fail at once.

Targets: ``count_tokens`` (o200k_base) on a 50 MB string with no break (one letter repeated, random
letters, one symbol repeated, spaces) <= 10 s each (it took over 300 s: tiktoken's BPE is slower than
linear in the length of one pre-token; bench/catalog/wire.py counts such runs in sampled pieces); finding those
runs in 8 MB of ordinary tool text <= 0.5 s, with the count equal to tiktoken's own (reported next to
tiktoken's time); the static report (``surfbench surfaces``, fresh process, empty cache) on a catalog
whose one enum value is 50 MB of one letter <= 30 s; ``surfbench surfaces --catalog /dev/zero`` refused
with one line <= 5 s (it grew to 20 GB before). Prints a table and writes results/bench/bounds.json
(copy it to results/reference/bench/ to keep it).

    .venv/bin/python scripts/bench_bounds.py
"""

from __future__ import annotations

import json
import os
import platform
import random
import string
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SIZE = 50_000_000


def timed(work: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def token_rows() -> list[dict[str, Any]]:
    from surfbench.bench.catalog.importers import load_catalog
    from surfbench.bench.catalog.wire import _encoding, count_tokens, long_runs, tool_wire_text

    count_tokens("warm up")  # the encoding loads once (about 0.5 s), not inside the first case
    rng = random.Random(27)
    cases = {
        "one letter": "a" * SIZE,
        "random letters": "".join(rng.choices(string.ascii_letters, k=SIZE)),
        "one symbol": "{" * SIZE,
        "spaces": " " * SIZE,
    }
    rows = []
    for name, text in cases.items():
        s, tokens = timed(lambda text=text: count_tokens(text))
        rows.append({"case": f"count_tokens, 50 MB unbroken ({name}): {tokens:,} tokens", "s": s, "target_s": 10.0})
    block = "".join(
        tool_wire_text(op) for op in load_catalog(ROOT / "bench" / "catalog" / "pool_data" / "gitea-1.15-swagger.json")
    )
    ordinary = block * (8_000_000 // len(block))
    s, runs = timed(lambda: long_runs(ordinary))
    assert not runs, "ordinary text has no long run"
    rows.append({"case": "finding long runs in 8 MB of ordinary tool text", "s": s, "target_s": 0.5})
    ours, counted = timed(lambda: count_tokens(ordinary))
    theirs, exact = timed(lambda: len(_encoding("o200k_base").encode(ordinary, disallowed_special=())))
    assert counted == exact, f"ordinary text must count as tiktoken counts it: {counted} != {exact}"
    rows.append({"case": f"count_tokens, 8 MB ordinary tool text ({counted:,} tokens, = tiktoken's)", "s": ours,
                 "target_s": None})  # fmt: skip
    rows.append({"case": "tiktoken's own encode, the same 8 MB", "s": theirs, "target_s": None})
    return rows


def cli(*args: str, cache: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "SURFBENCH_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "surfbench", *args]
    return timed(lambda: subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900))


def cli_rows() -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="surfbench-bench-bounds-") as tmp:
        big = Path(tmp) / "big-enum.json"
        enum = {"type": "object", "properties": {"x": {"type": "string", "enum": ["a" * SIZE]}}}
        tools = [{"name": "big", "description": "A huge enum.", "inputSchema": enum},
                 {"name": "small", "description": "Small.", "inputSchema": {"type": "object"}}]  # fmt: skip
        big.write_text(json.dumps({"tools": tools}))
        s, proc = cli("surfaces", "--catalog", str(big), cache=Path(tmp) / "cache")
        assert proc.returncode == 0, proc.stderr[-1000:]
        rows.append({"case": "static report, catalog with a 50 MB unbroken enum value (CLI, cold)", "s": s,
                     "target_s": 30.0})  # fmt: skip
        s, proc = cli("surfaces", "--catalog", "/dev/zero", cache=Path(tmp) / "cache")
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-1000:]
        rows.append({"case": "surfaces --catalog /dev/zero: refused with one line (CLI)", "s": s, "target_s": 5.0})
    return rows


def main() -> int:
    rows = token_rows() + cli_rows()
    for r in rows:
        r["s"] = round(r["s"], 3)
        r["meets_target"] = None if r["target_s"] is None else r["s"] <= r["target_s"]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load = os.getloadavg()[0]
    print(f"bounded inputs, {stamp}, {machine}, load {load:.1f}")
    print(f"{'case':<80} {'s':>8} {'target':>7}  verdict")
    for r in rows:
        verdict = "-" if r["meets_target"] is None else "ok" if r["meets_target"] else "MISSED"
        target = "-" if r["target_s"] is None else r["target_s"]
        print(f"{r['case']:<80} {r['s']:>8} {target:>7}  {verdict}")
    out = ROOT / "results" / "bench" / "bounds.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"date": stamp, "machine": machine, "load_1min": round(load, 2), "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if all(r["meets_target"] is not False for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
