"""Benchmark: wall time of the static surface report (`surfbench surfaces`), as a user runs it.

Targets (issue 2): the MCP example of 96 tools in < 3 s; a synthetic 1,000-operation catalog in < 2 s.
Each case runs the real CLI in a fresh process with an empty cache directory (cold: the first run on a
catalog) and again with the cache reused (warm), best of 3. The target is checked on the default table
(every surface config but the embedding-retrieval ones, which the CLI names under the table); the
table with ``--surface all`` is measured too, because its cold run pays for embedding every operation.
Prints a table and writes results/bench/surfaces.json.
"""

from __future__ import annotations

import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATEGORIES = [
    "repositories", "branches", "contents", "commits", "issues", "comments",
    "labels", "milestones", "pulls", "reviews", "releases", "webhooks",
]  # fmt: skip
VERBS = ["list", "get", "create", "update", "delete", "search", "archive", "sync"]


def synthetic_catalog(n: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    ops = []
    for i in range(n):
        cat = CATEGORIES[i % len(CATEGORIES)]
        verb = VERBS[(i // len(CATEGORIES)) % len(VERBS)]
        props: dict = {"owner": {"type": "string", "description": "owner of the repository"}}
        for j in range(rng.randint(2, 7)):
            kind = rng.choice(["string", "integer", "boolean", "enum", "array"])
            if kind == "enum":
                props[f"mode{j}"] = {"type": "string", "enum": ["fast", "safe", "full"], "description": "how"}
            elif kind == "array":
                props[f"items{j}"] = {"type": "array", "items": {"type": "string"}, "description": "names"}
            else:
                props[f"field{j}"] = {"type": kind, "description": f"the {kind} setting number {j}"}
        ops.append(
            {
                "name": f"{cat}_{verb}_{i}",
                "description": f"{verb.capitalize()} {cat} items, variant {i}. Use it when you need {verb} on {cat}.",
                "parameters": {"type": "object", "properties": props, "required": ["owner"]},
                "category": cat,
                "weight": round(1000 / (i + 1), 3),
            }
        )
    return {"surfbench_catalog": 1, "name": "synthetic", "operations": ops}


def run_cli(catalog: Path, cache: Path, extra: list[str]) -> float:
    env = {**os.environ, "SURFBENCH_CACHE": str(cache)}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "surfbench", "surfaces", "--catalog", str(catalog), *extra],
        check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return time.perf_counter() - start


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        synth = Path(tmp) / "synthetic1000.json"
        synth.write_text(json.dumps(synthetic_catalog(1000)))
        cases = [
            ("MCP example, 96 tools", ROOT / "examples" / "gitea96.mcp.json", 3.0),
            ("synthetic, 1,000 ops", synth, 2.0),
        ]
        tables = [("default", []), ("all", ["--surface", "all"])]
        for label, path, target in cases:
            for table, extra in tables:
                key = f"{label[:3]}-{table}"
                cold = [run_cli(path, Path(tmp) / f"cold-{key}-{k}", extra) for k in range(3)]
                warm_cache = Path(tmp) / f"warm-{key}"
                run_cli(path, warm_cache, extra)
                warm = min(run_cli(path, warm_cache, extra) for _ in range(3))
                rows.append(
                    {"case": label, "table": table, "cold_s": round(min(cold), 2), "warm_s": round(warm, 2),
                     "target_s": target, "checked": table == "default",
                     "meets_target": max(min(cold), warm) < target}
                )  # fmt: skip
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"surfbench surfaces, {stamp}, {machine}")
    print(f"{'case':<24} {'table':<8} {'cold s':>7} {'warm s':>7} {'target':>7}  verdict")
    for r in rows:
        verdict = ("ok" if r["meets_target"] else "MISSED") if r["checked"] else "(not a target)"
        print(f"{r['case']:<24} {r['table']:<8} {r['cold_s']:>7} {r['warm_s']:>7} {r['target_s']:>7}  {verdict}")
    out = ROOT / "results" / "bench" / "surfaces.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, "rows": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if all(r["meets_target"] for r in rows if r["checked"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
