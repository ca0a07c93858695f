"""Benchmark: what the episode disk quota and the per-command memory cap add to each sandboxed command (issue 19).

Times ``Sandbox.run(["true"])`` end to end (as the workspace backend calls it) on the old path (the
episode folder bound from the host disk, per-process limits only: ``disk_quota_mb: 0, memory_mb: 0``)
and on the new one (the folder on a size-limited tmpfs held in its own namespace, entered per command;
a memory cgroup per command, or the lowered per-process limits where there is none), plus each
mechanism alone. The runs are interleaved (one of each mode in turn) so that load on a shared machine
hits every mode alike; medians over ``--runs``, and the added cost as the median of the per-round
differences new - old. Target: at most 20 ms per command.

For the record it also times the design not taken (a fresh tmpfs per command, the folder copied in
before and back after, the command in a second sandbox inside), on the seed folder and on the seed
plus ``--big-mb`` of files, and what each sandbox costs to set up once per episode.

    python scripts/bench_sandbox.py [--runs 30] [--big-mb 50]

Prints a table and writes results/bench/sandbox.json; exits 1 when the target is missed.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from surfbench.bench.sandbox.box import MB, NOBODY, Limits, Sandbox, bwrap_path, describe  # noqa: E402
from surfbench.tasks.workspace.backend import FILES  # noqa: E402

TARGET_MS = 20.0
# the rejected design, run inside an outer sandbox that has the host folder at /.h and a fresh tmpfs at /work
COPY_SCRIPT = (
    "cp -a /.h/. /work/ && bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib "
    "--symlink usr/lib64 /lib64 --proc /proc --dev /dev --tmpfs /tmp --bind /work /work --chdir /work "
    '--unshare-all --die-with-parent --new-session -- "$@"; rc=$?; '
    "find /.h -mindepth 1 -delete && cp -a /work/. /.h/; exit $rc"
)


def copy_design(folder: Path, quota: int) -> Callable[[], None]:
    """One command the rejected way: copy the folder into a fresh tmpfs, run, copy it back."""
    bwrap = bwrap_path()
    assert bwrap is not None
    argv = [
        bwrap, "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
        "--bind", str(folder), "/.h", "--size", str(quota), "--tmpfs", "/work", "--unshare-all",
        "--die-with-parent", "--new-session", "--", "sh", "-c", COPY_SCRIPT, "sh", "true",
    ]  # fmt: skip
    user = NOBODY if os.geteuid() == 0 else None

    def run() -> None:
        subprocess.run(argv, check=True, user=user, group=user, extra_groups=[] if user else None)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--big-mb", type=int, default=50, help="extra data in the folder for the copy design")
    args = parser.parse_args()
    if bwrap_path() is None:
        print("bench_sandbox: bubblewrap (bwrap) is not installed", file=sys.stderr)
        return 2
    old, new = Limits(disk_quota_bytes=0, memory_cap_bytes=0), Limits()
    setups: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(10):  # once per episode: make the folder (and hold its disk), seeded with files/
        for name, limits in (("old", old), ("new", new)):
            start = time.perf_counter()
            Sandbox(limits, seed=FILES).close()
            setups[name].append(time.perf_counter() - start)
    boxes = {
        "old": Sandbox(old, seed=FILES),
        "new": Sandbox(new, seed=FILES),
        "disk quota only": Sandbox(Limits(memory_cap_bytes=0), seed=FILES),
        "memory cap only": Sandbox(Limits(disk_quota_bytes=0), seed=FILES),
    }
    modes: dict[str, Callable[[], object]] = {name: functools.partial(box.run, ["true"]) for name, box in boxes.items()}
    with tempfile.TemporaryDirectory(prefix="surfbench-bench-") as tmp:
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        for folder in (small, big):
            shutil.copytree(FILES, folder)
        for i in range(0, args.big_mb, 16):  # files of 16 MB (under the 32 MB file-size cap)
            (big / f"data{i}.bin").write_bytes(os.urandom(min(16, args.big_mb - i) * MB))
        Path(tmp).chmod(0o755)
        if os.geteuid() == 0:
            for d, dirs, files in os.walk(tmp):
                for n in [".", *dirs, *files]:
                    os.chown(Path(d) / n, NOBODY, NOBODY)
        modes["copy design, seed folder"] = copy_design(small, new.disk_quota_bytes)
        modes[f"copy design, seed + {args.big_mb} MB"] = copy_design(big, new.disk_quota_bytes)
        times: dict[str, list[float]] = {name: [] for name in modes}
        for i in range(args.runs + 3):
            for name, fn in modes.items():
                start = time.perf_counter()
                fn()
                if i >= 3:  # the first rounds warm the page cache and the interpreter up
                    times[name].append(time.perf_counter() - start)
    for box in boxes.values():
        box.close()

    med = {name: round(statistics.median(ts) * 1000, 2) for name, ts in times.items()}
    p90 = {name: round(sorted(ts)[int(0.9 * (len(ts) - 1))] * 1000, 2) for name, ts in times.items()}
    # each round ran every mode once, back to back: the median of the per-round differences is the least
    # moved by load that comes and goes on a shared machine
    added = round(statistics.median(n - o for n, o in zip(times["new"], times["old"], strict=True)) * 1000, 2)
    parts = {
        name: round(statistics.median(n - o for n, o in zip(times[name], times["old"], strict=True)) * 1000, 2)
        for name in modes
        if name != "old"
    }
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    mechanisms = describe(new)
    print(f"sandbox cost per command: `true`, median of {args.runs} interleaved runs ({stamp}, {machine})")
    print("\n".join(f"  {line}" for line in mechanisms.splitlines()))
    print(f"  {'mode':<32} {'median ms':>10} {'p90 ms':>8} {'vs old ms':>10}")
    for name in modes:
        vs = f"{parts[name]:+10.2f}" if name in parts else ""
        print(f"  {name:<32} {med[name]:>10.2f} {p90[name]:>8.2f} {vs}")
    setup = {name: round(statistics.median(ts) * 1000, 2) for name, ts in setups.items()}
    print(f"  episode setup (once per episode): old {setup['old']} ms, new {setup['new']} ms")
    ok = added <= TARGET_MS
    print(f"added per command {added:.2f} ms (target <= {TARGET_MS:.0f} ms): {'ok' if ok else 'MISSED'}")
    out = ROOT / "results" / "bench" / "sandbox.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    row = {
        "date": stamp, "machine": machine, "runs": args.runs, "mechanisms": mechanisms.splitlines(),
        "median_ms": med, "p90_ms": p90, "added_vs_old_ms": parts, "setup_median_ms": setup, "added_ms": added,
        "target_ms": TARGET_MS, "ok": ok,
    }  # fmt: skip
    out.write_text(json.dumps(row, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
