"""Benchmark: what the MCP path adds to each call over stdio, beyond the backend's own time (issue 15).

Runs the same forge read (``issue_get`` on acme/web #1) on the in-process forge backend and through
``backend: mcp`` to the forge MCP server (tasks/forge/mcp_server.py), interleaved round by round so
that load on a shared machine hits both alike. The added cost per call is the median of the per-round
differences (MCP - in-process); it covers the SDK client, JSON-RPC over the pipes, the SDK server and
the thread hop from the synchronous harness to the client's event loop. Target: at most 5 ms.

    python scripts/bench_mcp.py [--calls 300]

Prints the numbers and writes results/bench/mcp.json; exits 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from surfbench.bench.mcp.mcp_backend import McpBackend
from surfbench.bench.mcp.mcp_spec import ServerSpec
from surfbench.tasks.forge.backend import ForgeBackend

TARGET_MS = 5.0
OP, ARGS = "issue_get", {"owner": "acme", "repo": "web", "index": 1}
OUT = Path(__file__).resolve().parent.parent / "results" / "bench" / "mcp.json"


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) of process ``pid`` so far, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def child_of(parent: int) -> int:
    """The process whose parent is ``parent`` (the server under its guard)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    return int(entry.name)
            except OSError:
                continue
    raise RuntimeError(f"no child of {parent}")


def main() -> int:
    """Time both paths, print, write results/bench/mcp.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    local = ForgeBackend()
    local.reset("default")
    server = ServerSpec(command="python", args=("-m", "surfbench.tasks.forge.mcp_server", "--scenario", "default"))
    started = time.perf_counter()
    remote = McpBackend(server)
    remote.reset("default")
    startup_s = time.perf_counter() - started
    try:
        assert remote.call(OP, ARGS) == json.dumps(local.call(OP, ARGS), separators=(",", ":"), ensure_ascii=False)
        for _ in range(20):  # warm both paths
            local.call(OP, ARGS)
            remote.call(OP, ARGS)
        server_pid = child_of(int(remote._client.log.pid))  # type: ignore[union-attr,arg-type]
        own, mcp, added = [], [], []
        server_cpu, harness_cpu = cpu_ms(server_pid), time.process_time()
        for _ in range(args.calls):
            t0 = time.perf_counter()
            local.call(OP, ARGS)
            t1 = time.perf_counter()
            remote.call(OP, ARGS)
            t2 = time.perf_counter()
            own.append((t1 - t0) * 1000)
            mcp.append((t2 - t1) * 1000)
            added.append(mcp[-1] - own[-1])
        server_cpu = (cpu_ms(server_pid) - server_cpu) / args.calls
        harness_cpu = (time.process_time() - harness_cpu) * 1000 / args.calls - statistics.median(own)
    finally:
        remote.close()
    added.sort()
    result = {
        "calls": args.calls,
        "operation": OP,
        "backend_median_ms": round(statistics.median(own), 3),
        "mcp_median_ms": round(statistics.median(mcp), 3),
        "added_median_ms": round(statistics.median(added), 3),
        "added_p90_ms": round(added[int(0.9 * (len(added) - 1))], 3),
        "added_cpu_ms": round(server_cpu + harness_cpu, 3),
        "added_cpu_note": "CPU per call of the harness (client) and the server process: what load cannot inflate",
        "load_average_1m": os.getloadavg()[0],
        "server_startup_s": round(startup_s, 2),
        "target_ms": TARGET_MS,
        "meets_target": statistics.median(added) <= TARGET_MS,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"{OP}: backend {result['backend_median_ms']} ms, over MCP {result['mcp_median_ms']} ms per call")
    print(f"added by MCP over stdio: median {result['added_median_ms']} ms, p90 {result['added_p90_ms']} ms "
          f"(target <= {TARGET_MS} ms); CPU {result['added_cpu_ms']} ms per call; "
          f"load {result['load_average_1m']:.1f}; "
          f"server start {result['server_startup_s']} s; wrote {OUT}")  # fmt: skip
    return 0 if result["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
