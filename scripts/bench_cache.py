"""Benchmark: a fully cached re-run of the same requests vs the first run. Target: under 5%.

Runs one cell (forge dev split, `core` surface, the default local model, first N tasks) twice as a
user would, with `surfbench run` in a fresh process, into two fresh results folders but one fresh
response cache: the first run calls the model, the second is served from the cache (the local server
is not even started). Prints both wall times and the ratio; writes results/bench/cache.json.

    python scripts/bench_cache.py [N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "qwen2.5-coder-0.5b-instruct"


def run(results: Path, cache: Path, limit: int) -> float:
    env = {**os.environ, "SURFBENCH_CACHE": str(cache)}
    cmd = [
        sys.executable, "-m", "surfbench", "run", "suite=forge", "split=dev", "surface=core", f"model={MODEL}",
        f"limit={limit}", f"results_dir={results}", "run=cache-bench",
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str]) -> int:
    limit = int(argv[0]) if argv else 6
    from surfbench.bench.base.paths import cache_root

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir(parents=True)
        os.symlink(cache_root() / "models", cache / "models")  # the pulled weights, not a response cache
        first = run(Path(tmp) / "r1", cache, limit)
        second = run(Path(tmp) / "r2", cache, limit)
    ratio = second / first
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"response cache, {limit} forge tasks on `core` with {MODEL}, {stamp}")
    print(f"first run {first:.1f} s, cached re-run {second:.1f} s: {100 * ratio:.1f}% (target < 5%)")
    out = ROOT / "results" / "bench" / "cache.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps({"date": stamp, "tasks": limit, "first_s": first, "cached_s": second, "ratio": ratio}) + "\n"
    )
    return 0 if ratio < 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
