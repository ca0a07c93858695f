"""How fast ``surfbench view`` opens a large run: a synthetic 10,000-episode run folder, built through the real store.

The run is a reference run's episodes (results/reference/llama-cpp-python/git-dev-qwen0.5b: 4 cells x 21 tasks,
with their steps, calls and transcripts) written again as repeats until there are ``--episodes`` of them, through
``RunStore.write_episode`` (group commits of 1,000) and then ``surfbench compact`` (one part per table,
the transcripts in transcripts.zip), as a finished run leaves them. Then it starts ``surfbench view RUN`` as
a user would and times, from the process start: the first page (runs and cells); then a cell's list (its first
page and its last), the first episode page (which reads the steps and calls tables), and a task across cells.

Not a timed test: ``python scripts/bench_view.py [--episodes 10000] [--keep DIR]``. Target: the first page in
under 2 s (issue 33).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "results" / "reference" / "llama-cpp-python" / "git-dev-qwen0.5b"


def rows(run: Path, table: str) -> list[dict[str, object]]:
    import pyarrow.parquet as pq

    from surfbench.bench.store.parts import table_parts

    out: list[dict[str, object]] = []
    for part in table_parts(run / f"{table}.parquet"):
        out += pq.read_table(part).to_pylist()
    return out


def build(target: Path, episodes: int) -> float:
    """Write ``episodes`` episodes into ``target`` through the store; return the seconds it took."""
    from surfbench.bench.store.compact import compact
    from surfbench.bench.store.results import RunStore
    from surfbench.bench.store.transcripts import read_transcript

    started = time.perf_counter()
    source_episodes = rows(SOURCE, "episodes")
    steps: dict[str, list[dict[str, object]]] = {}
    calls: dict[str, list[dict[str, object]]] = {}
    for row in rows(SOURCE, "steps"):
        steps.setdefault(str(row["episode_key"]), []).append(row)
    for row in rows(SOURCE, "calls"):
        calls.setdefault(str(row["episode_key"]), []).append(row)
    texts = {str(e["episode_key"]): read_transcript(SOURCE, str(e["episode_key"])) or "" for e in source_episodes}
    store = RunStore(target, commit_interval_s=3600.0)  # group commits: 1,000 episodes a part
    store.prepare()
    shutil.copy(SOURCE / "run.json", target / "run.json")
    written = 0
    repeat = 0
    while written < episodes:
        for episode in source_episodes:
            if written == episodes:
                break
            old = str(episode["episode_key"])
            key = re.sub(r"__r0(__|$)", rf"__r{repeat}\1", old) if repeat else old
            row = {**episode, "episode_key": key, "repeat": repeat}
            step_rows = [{**s, "episode_key": key} for s in steps.get(old, [])]
            call_rows = [{**c, "episode_key": key} for c in calls.get(old, [])]
            store.write_episode(key, row, step_rows, call_rows, texts[old].splitlines(), took_s=0.0)
            written += 1
            if written % 2000 == 0:
                print(f"  built {written:,} of {episodes:,} episodes", file=sys.stderr)
        repeat += 1
    store.flush()
    print(f"  compacting: {compact(target).line()}", file=sys.stderr)
    return time.perf_counter() - started


def fetch(url: str) -> tuple[float, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        size = len(response.read())
    return time.perf_counter() - started, size


def measure(run: Path) -> list[tuple[str, float]]:
    """Start ``surfbench view RUN`` and time its pages (seconds from the process start, then per page)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "surfbench", "view", str(run), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://[\d.]+:\d+/", line)
        if not match:
            raise SystemExit(f"surfbench view printed no address: {line!r}")
        base = match.group(0)
        took, _ = fetch(base)
        out = [("first page (runs and cells), from the process start", time.perf_counter() - started)]
        out.append(("  of which the page itself", took))
        page = urllib.request.urlopen(base, timeout=60).read().decode()
        cell = re.findall(r'href="(cell/[^"]+)"', page)[0]
        took, body = fetch(base + cell)
        out.append(("a cell's list, first page of 100", took))
        last = urllib.request.urlopen(base + cell, timeout=60).read().decode()
        pages = re.search(r"page 1 of (\d+)", last)
        if pages:
            took, _ = fetch(f"{base}{cell}?page={pages.group(1)}")
            out.append((f"the same list, last page ({pages.group(1)})", took))
        took, _ = fetch(f"{base}{cell}?outcome=fail&op=git_add")
        out.append(("the same list filtered (outcome and operation: reads the calls table)", took))
        episode = re.findall(r'href="\.\./(episode/[^"]+)"', last)[0]
        took, _ = fetch(base + episode)
        out.append(("first episode page (reads the steps table)", took))
        took, _ = fetch(base + episode)
        out.append(("an episode page after that", took))
        task = re.findall(r'href="\.\./(task/[^"]+)"', last)[0]
        took, _ = fetch(base + task)
        out.append(("a task across cells", took))
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--keep", default=None, help="build the run in this folder and keep it (reused if there)")
    args = parser.parse_args()
    tmp = None if args.keep else tempfile.mkdtemp(prefix="bench-view-")
    run = Path(args.keep) if args.keep else Path(tmp or ".") / "run"
    try:
        if not (run / "run.json").is_file():
            print(f"building {args.episodes:,} episodes into {run}", file=sys.stderr)
            print(f"built in {build(run, args.episodes):.1f} s", file=sys.stderr)
        load = os.getloadavg()[0]
        timings = measure(run)
        print(f"surfbench view on {args.episodes:,} episodes ({run}); load average {load:.1f}")
        for name, seconds in timings:
            print(f"  {name:<72} {seconds:6.2f} s")
        first = timings[0][1]
        print(f"first page in {first:.2f} s: {'met' if first < 2 else 'NOT met'} (target < 2 s)")
        print(json.dumps({"episodes": args.episodes, "load": load, "timings": dict(timings)}))
        return 0
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
