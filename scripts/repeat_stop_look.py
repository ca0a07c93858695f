"""What a stop inside a step would save on the recorded reference runs: a first look for issue 51, without a model.

    python scripts/repeat_stop_look.py [results/reference] [--k 2,3]

For each step of each run, the text is read call by call (one JSON object per line, the embedded models' prompted
form); the step is cut right after the k-th occurrence of the same complete call (same name and arguments). Per run:
steps that would be cut, generated tokens and model seconds saved (each in proportion to the text cut away, so
prefill is counted as generation: an upper bound on the seconds), and the cut steps' median share of text kept.
Whether any verdict (first-try, selection, success) would change is not judged here: that needs the cut steps
re-parsed and the episodes re-scored (``surfbench whatif``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import pyarrow.parquet as pq


def cut_at(text: str, k: int) -> int | None:
    """The length of ``text`` kept by a stop after the k-th identical complete call, or None when it never repeats."""
    seen: dict[str, int] = {}
    pos = 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        try:
            call = json.loads(line)
        except ValueError:
            continue
        if not isinstance(call, dict) or "name" not in call:
            continue
        key = json.dumps(call, sort_keys=True)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] >= k:
            return pos
    return None


def look(steps_file: Path, k: int) -> list[str]:
    steps = pq.read_table(steps_file, columns=["text", "completion_tokens", "latency_s"]).to_pylist()
    cut = tokens = seconds = 0.0
    kept: list[float] = []
    all_tokens = sum(int(s["completion_tokens"] or 0) for s in steps)
    all_seconds = sum(float(s["latency_s"] or 0.0) for s in steps)
    for s in steps:
        text = s["text"] or ""
        at = cut_at(text, k)
        if at is None or at >= len(text.rstrip()):
            continue
        share = at / len(text)
        cut += 1
        kept.append(share)
        tokens += (1 - share) * int(s["completion_tokens"] or 0)
        seconds += (1 - share) * float(s["latency_s"] or 0.0)
    return [
        steps_file.parent.name, f"{len(steps):,}", f"{int(cut):,}",
        f"{tokens:,.0f} ({100 * tokens / all_tokens:.0f}%)" if all_tokens else "-",
        f"{seconds:,.0f} ({100 * seconds / all_seconds:.0f}%)" if all_seconds else "-",
        f"{100 * statistics.median(kept):.0f}%" if kept else "-",
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="results/reference", help="folder of run folders")
    parser.add_argument("--k", default="2,3", help="stop after the k-th identical call; several: 2,3")
    args = parser.parse_args(argv)
    head = ["run", "steps", "steps cut", "generated tokens saved", "model s saved (at most)", "median text kept"]
    for k in (int(v) for v in args.k.split(",")):
        print(f"\nstop at the identical call seen k={k} times\n\n| " + " | ".join(head) + " |\n|" + "---|" * len(head))
        for steps_file in sorted(Path(args.root).glob("*/steps.parquet")):
            print("| " + " | ".join(look(steps_file, k)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
