"""Benchmark: pure harness throughput with a scripted model, against inspect-ai on its mock model.

Both run the same task in the same run of this script, one after the other on the same cores: the
`notes_mcp` suite (8 MCP tools, canned results, 7 tasks repeated to N episodes); the model calls the
task's expected tool, then answers in text. surfbench runs its real loop, scorer and results store
(parquet parts + a transcript per episode) with the scripted oracle; inspect-ai runs `eval()` with
`use_tools` + `generate()` and its `includes()` scorer, writing its own log. Interpreter start and
imports are excluded on both sides. Target (issue 7): surfbench >= 5x inspect-ai's episodes per second.

inspect-ai lives in its own virtualenv (.venv-peer, created on first use from PyPI), so that its
dependencies never mix with surfbench's.

    python scripts/bench_throughput.py [N]
"""

from __future__ import annotations

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
PEER = ROOT / ".venv-peer"
INSPECT = "inspect-ai==0.3.285"


def surfbench_rate(n: int) -> dict:
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.run.execute import COMMIT_INTERVAL_S
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    tasks = 7
    repeats = max(1, n // tasks)
    cell = resolve_cell(CellSpec("notes_mcp", "full", "qwen2.5-coder-0.5b-instruct", split="all", repeats=repeats))
    oracle = OracleClient("notes_mcp")
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "run", commit_interval_s=COMMIT_INTERVAL_S)  # as `surfbench run` does
        store.prepare()
        store.write_run_info({"cells": []})
        start = time.perf_counter()
        run_cell(cell, ModelPool(None), store, "throughput", client=oracle)
        wall = time.perf_counter() - start
        episodes = load_runs([store.root])
        done = len(episodes)
        ok = round(float(episodes["success"].mean()), 3)
    return {"harness": "surfbench", "episodes": done, "wall_s": round(wall, 2), "per_s": round(done / wall, 1),
            "success": ok}  # fmt: skip


def peer_python() -> Path:
    python = PEER / "bin" / "python"
    if not python.exists():
        print(f"creating {PEER.name} with {INSPECT} (once)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(PEER)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", INSPECT, "pyyaml"], check=True)
    return python


def inspect_rate(n: int) -> dict:
    import litellm

    encodings = Path(litellm.__file__).parent / "litellm_core_utils" / "tokenizers"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "inspect.json"
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(encodings), "INSPECT_LOG_LEVEL": "error"}
        subprocess.run(
            [str(peer_python()), str(ROOT / "scripts" / "peer" / "inspect_notes.py"), str(n), str(out)],
            check=True, env=env, cwd=ROOT,
        )  # fmt: skip
        data = json.loads(out.read_text())
    return {"harness": "inspect-ai", "episodes": data["samples"], "wall_s": round(data["wall_s"], 2),
            "per_s": round(data["per_s"], 1), "success": data["accuracy"]}  # fmt: skip


def main() -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 700
    rows = [surfbench_rate(n), inspect_rate(n)]
    ratio = rows[0]["per_s"] / rows[1]["per_s"]
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    print(f"scripted-model throughput, notes_mcp x {n} episodes ({stamp}, {machine})")
    for r in rows:
        print(f"{r['harness']:<11} {r['episodes']:>5} episodes in {r['wall_s']:>7} s = {r['per_s']:>7} /s, "
              f"success {r['success']}")  # fmt: skip
    print(f"surfbench / inspect-ai: {ratio:.1f}x (target >= 5x): {'ok' if ratio >= 5 else 'MISSED'}")
    out = ROOT / "results" / "bench" / "throughput.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"date": stamp, "machine": machine, "rows": rows, "ratio": round(ratio, 2)}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if ratio >= 5 else 1


if __name__ == "__main__":
    raise SystemExit(main())
