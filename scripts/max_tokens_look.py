"""How close the recorded reference steps come to ``max_tokens`` (issue 51's look at the cap), without a model.

    python scripts/max_tokens_look.py [results/reference]

Per run folder under the given root: steps, steps cut at the cap (``finish_reason == "length"``) and their share of
all model latency, and how many steps that ended by themselves generated more than 128, 192 and 256 tokens (a cap
at that size would have cut them), with the longest such step. Reads only each run's steps.parquet.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pyarrow.parquet as pq

CUTS = (128, 192, 256)


def look(steps_file: Path) -> list[str]:
    """One table row for a run's steps.parquet."""
    table = pq.read_table(steps_file, columns=["completion_tokens", "finish_reason", "latency_s"]).to_pylist()
    capped = [s for s in table if s["finish_reason"] == "length"]
    own = [int(s["completion_tokens"] or 0) for s in table if s["finish_reason"] != "length"]
    latency = sum(float(s["latency_s"] or 0.0) for s in table)
    share = sum(float(s["latency_s"] or 0.0) for s in capped) / latency if latency else 0.0
    over = [str(sum(1 for n in own if n > cut)) for cut in CUTS]
    return [
        steps_file.parent.name,
        f"{len(table):,}",
        f"{len(capped):,}",
        f"{100 * share:.0f}%",
        *over,
        str(max(own, default=0)),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default="results/reference", help="folder of run folders")
    args = parser.parse_args(argv)
    head = ["run", "steps", "cut at the cap", "their latency share", *(f"ended by itself, > {c}" for c in CUTS),
            "longest ended by itself"]  # fmt: skip
    rows = [look(f) for f in sorted(Path(args.root).glob("*/steps.parquet"))]
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
