"""Benchmark: what code mode costs per program and per SDK call (issue 16).

- **start**: from the harness starting a ``run_code`` program (fresh sandbox: scratch disk, bubblewrap,
  limits, memory cgroup, Python) until the program's first SDK request arrives on the pipe. Also the
  whole run of a one-call program, for the record. Target: start at most 150 ms.
- **call**: one SDK call's round trip as the program sees it (send, harness dispatch and validation,
  recording, reply, decode), minus the backend's own time for it. A program makes ``--calls`` calls to
  ``issue_get`` on the forge backend in a loop and times the loop itself; the backend's time is measured
  around ``backend.call`` in the harness. Target: at most 2 ms.

Both run through the real episode loop (scripted model), so the path is exactly a user's.

    python scripts/bench_code.py [--runs 15] [--calls 300]

Prints the numbers and writes results/bench/code.json; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from surfbench.bench.contracts.program import Execute, ProgramDispatch, ProgramResult  # noqa: E402
from surfbench.bench.contracts.surface import Session, ToolCall  # noqa: E402
from surfbench.bench.models.scripted import ScriptedClient  # noqa: E402
from surfbench.bench.run.episode import LoopSettings, run_episode  # noqa: E402
from surfbench.bench.sandbox.box import MB, Limits, Sandbox, bwrap_path, describe  # noqa: E402
from surfbench.bench.suites.suite import load_suite  # noqa: E402
from surfbench.surfaces._code_calls import Program  # noqa: E402
from surfbench.surfaces.code import CodeSurface  # noqa: E402

START_TARGET_MS, CALL_TARGET_MS = 150.0, 2.0
ONE_CALL = 'issue_get(owner="acme", repo="web", index=3)'
LOOP = """
import time
started = time.perf_counter()
for _ in range({n}):
    issue_get(owner="acme", repo="web", index=3)
print("loop_s", time.perf_counter() - started)
"""


class TimedBackend:
    """The suite's backend, with the time spent inside ``call`` added up."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds, self.calls = inner, 0.0, 0

    def call(self, op: str, args: dict[str, Any]) -> Any:
        began = time.perf_counter()
        try:
            return self.inner.call(op, args)
        finally:
            self.seconds += time.perf_counter() - began
            self.calls += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Watched(Session):
    """Keeps the last Program the surface built (its channel statistics) and times its whole run."""

    program: Program | None = None
    program_s: float = 0.0

    def dispatch(self, call: ToolCall) -> Any:
        out = super().dispatch(call)
        if isinstance(out, ProgramDispatch) and out.run is not None:
            run = out.run
            self.program = getattr(run, "__self__", None)

            def timed(execute: Execute) -> ProgramResult:
                began = time.perf_counter()
                try:
                    return run(execute)
                finally:
                    self.program_s = time.perf_counter() - began

            return replace(out, run=timed)
        return out


def one_episode(code: str, scratch_mb: int | None = None) -> tuple[Any, TimedBackend, Watched, float]:
    suite = load_suite("forge")
    task = next(t for t in suite.tasks if t.id == "hot-issue-get")
    params: dict[str, Any] = {"timeout_s": 30, "max_calls": 10_000}
    surface = CodeSurface(suite.catalog, params=params if scratch_mb is None else {**params, "scratch_mb": scratch_mb})
    session = Watched(surface, task.turns[0])
    backend = TimedBackend(suite.new_backend(task))
    client = ScriptedClient([[("run_code", {"code": code})], "done"])
    began = time.perf_counter()
    trace = run_episode(
        task, session, backend, client, LoopSettings(), suite.system_prompt,  # type: ignore[arg-type]
        lambda n: suite.catalog[n].parameters,
    )  # fmt: skip
    return trace, backend, session, time.perf_counter() - began


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    opts = parser.parse_args()
    if bwrap_path() is None:
        print("bench_code: bubblewrap (bwrap) is not installed: apt-get install bubblewrap", file=sys.stderr)
        return 2
    one_episode(ONE_CALL)  # warm: imports, cgroup set-up, page cache
    default = CodeSurface(load_suite("forge").catalog).scratch_mb
    starts: dict[int, list[float]] = {default: [], 32 if default == 0 else 0: []}
    wholes: dict[int, list[float]] = {scratch: [] for scratch in starts}
    floor = []  # the sandbox alone: `true`, no scratch disk, on the same machine at the same time
    for _ in range(opts.runs):
        for scratch in starts:  # interleaved: load on a shared machine hits both alike
            trace, _, session, _ = one_episode(ONE_CALL, scratch)
            assert session.program and session.program.stats and trace.calls[0].backend_ok, trace.calls
            starts[scratch].append(session.program.setup_s + (session.program.stats.first_frame_s or 0.0))
            wholes[scratch].append(session.program_s)
        box = Sandbox(Limits(disk_quota_bytes=0, memory_cap_bytes=512 * MB))
        began = time.perf_counter()
        box.run(["true"])
        floor.append(time.perf_counter() - began)
        box.close()
    per_call = []
    for _ in range(max(3, opts.runs // 3)):
        trace, backend, _, _ = one_episode(LOOP.format(n=opts.calls))
        printed = trace.calls[-1].result
        loop_s = float(printed.split("loop_s", 1)[1].split()[0])
        assert backend.calls == opts.calls, printed
        per_call.append((loop_s - backend.seconds) / opts.calls)
    row = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.python_version()}",
        "sandbox": describe(CodeSurface(load_suite("forge").catalog).limits).replace("\n", "; "),
        "scratch": "scratch_mb 0: working directory read-only, /tmp in memory under the memory cap",
        "runs": opts.runs,
        "calls_per_program": opts.calls,
        "load_average": os.getloadavg()[0],
        "default_scratch_mb": default,
        "start_ms_median": ms(starts[default]),
        "start_ms_p90": round(sorted(starts[default])[int(0.9 * (len(starts[default]) - 1))] * 1000, 1),
        "sandbox_true_ms_median": ms(floor),
        "one_call_program_ms_median": ms(wholes[default]),
        **{f"start_ms_median_scratch_{k}": ms(v) for k, v in starts.items() if k != default},
        **{f"one_call_program_ms_median_scratch_{k}": ms(v) for k, v in wholes.items() if k != default},
        "call_overhead_ms_median": round(statistics.median(per_call) * 1000, 3),
        "call_overhead_ms_max": round(max(per_call) * 1000, 3),
        "targets": {"start_ms": START_TARGET_MS, "call_ms": CALL_TARGET_MS},
    }
    row["met"] = row["start_ms_median"] <= START_TARGET_MS and row["call_overhead_ms_median"] <= CALL_TARGET_MS
    out = ROOT / "results" / "bench" / "code.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(row, indent=2) + "\n")
    for key in [k for k in row if k not in ("when", "machine", "sandbox", "scratch", "runs", "targets", "met")]:
        print(f"{key:32} {row[key]}")
    print(f"targets: start <= {START_TARGET_MS} ms, call <= {CALL_TARGET_MS} ms: {'met' if row['met'] else 'MISSED'}")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if row["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
