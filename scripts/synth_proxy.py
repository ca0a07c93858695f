"""Are synthesized tasks a fair proxy for hand-written ones? The same surfaces on both, side by side.

    python scripts/synth_proxy.py                 # run the twins (resumes), then print and write the comparison
    python scripts/synth_proxy.py --dry-run       # the twins only: which synthesized task stands for which

Draws one synthesized twin per hand-written task of the suite's dev split (bench/synth/synth_twins.py: the
same operations, seeded), runs the surfaces on the twins into ``RESULTS_DIR/RUN`` (``surfbench.run``: resumable,
the response cache reused) and compares each surface's success and first-try argument accuracy, with 95% Wilson
intervals, against a run of the hand-written tasks (default: the 1.5B forge dev reference, on the default engine
with the same settings), on the hand-written tasks that have a twin. It reports whether the surfaces come in the
same order on both sets, and how far the levels differ. ``python scripts/references.py run
forge-synth-twins-qwen1.5b`` runs this script with the reference folder's name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import surfbench
from surfbench.bench.analysis.metrics import summarize_cell, wilson
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.synth.synth_twins import Twin, draw_twins


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", default="forge")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    parser.add_argument("--surfaces", default="full,preselect,dispatcher", help="comma-separated surface configs")
    parser.add_argument("--hand", default="results/reference/forge-dev-qwen1.5b", help="run of the hand-written tasks")
    parser.add_argument("--results-dir", default="results/reference")
    parser.add_argument("--run", default="forge-synth-twins-qwen1.5b")
    parser.add_argument("--seed", type=int, default=0, help="seed of the twins' draw")
    parser.add_argument("--dry-run", action="store_true", help="print the twins and stop")
    parser.add_argument("--out", help="markdown file for the table (default: RESULTS_DIR/RUN/proxy.md)")
    return parser.parse_args(argv)


def rate(hits: int, n: int) -> str:
    if n == 0:
        return "-"
    low, high = wilson(hits, n)
    return f"{hits / n:.0%} [{low:.0%}, {high:.0%}] ({hits}/{n})"


def summary(episodes: Any, surface: str, model: str, ids: set[str]) -> dict[str, Any]:
    rows = episodes[(episodes["surface"] == surface) & (episodes["model"] == model) & episodes["task_id"].isin(ids)]
    records = rows.to_dict("records")
    cell = summarize_cell(records)
    solved = sum(1 for r in records if r["success"])
    correct = sum(int(r["first_try_correct"]) for r in records)
    return {
        "episodes": len(records), "success": solved / len(records) if records else None,
        "success_text": rate(solved, len(records)), "first_try": cell.first_try_accuracy,
        "first_try_text": rate(correct, cell.expected_calls),
    }  # fmt: skip


def order(rows: dict[str, dict[str, Any]], key: str) -> list[str]:
    return sorted(rows, key=lambda s: -(rows[s][key] or 0.0))


def compare(twins: list[Twin], hand_run: Path, twin_run: Path, surfaces: list[str], model: str) -> str:
    paired = [t for t in twins if t.twin]
    hand_ids, twin_ids = {t.task for t in paired}, {str(t.twin) for t in paired}
    hand = surfbench.load(hand_run).episodes
    synth = surfbench.load(twin_run).episodes
    left = {s: summary(hand, s, model, hand_ids) for s in surfaces}
    right = {s: summary(synth, s, model, twin_ids) for s in surfaces}
    lines = [
        f"{len(paired)} hand-written {hand_run.name} tasks with a synthesized twin "
        f"({sum(t.match == 'same' for t in paired)} with the same operations, "
        f"{sum(t.match == 'first' for t in paired)} with the same first operation; "
        f"{len(twins) - len(paired)} without one), model {model}",
        "",
        "| surface | episodes (hand / synth) | success, hand-written | success, synthesized | "
        "first-try, hand-written | first-try, synthesized |",
        "|---|---|---|---|---|---|",
    ]
    for s in surfaces:
        a, b = left[s], right[s]
        lines.append(
            f"| {s} | {a['episodes']} / {b['episodes']} | {a['success_text']} | {b['success_text']} | "
            f"{a['first_try_text']} | {b['first_try_text']} |"
        )
    lines.append("")
    for key, what in (("success", "success"), ("first_try", "first-try accuracy")):
        hand_order, synth_order = order(left, key), order(right, key)
        same = "the same" if hand_order == synth_order else "NOT the same"
        gaps = ", ".join(f"{s} {((right[s][key] or 0) - (left[s][key] or 0)) * 100:+.0f} pts" for s in surfaces)
        lines.append(
            f"- {what}: order by hand-written {' > '.join(hand_order)}; by synthesized {' > '.join(synth_order)}: "
            f"{same}. Synthesized minus hand-written: {gaps}."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    suite = load_suite(args.suite)
    twins = draw_twins(suite, "dev", args.seed)
    for t in twins:
        print(f"{t.task:32} {t.match:5} {t.twin or '-':28} {' -> '.join(t.operations)}", file=sys.stderr)
    if args.dry_run:
        return 0
    surfaces = [s.strip() for s in args.surfaces.split(",") if s.strip()]
    ids = [str(t.twin) for t in twins if t.twin]
    surfbench.run(
        surfbench.RunSpec(
            suite=args.suite,
            surfaces=surfaces,
            models=[args.model],
            split="synth",
            tasks=ids,
            results_dir=args.results_dir,
            run=args.run,
        )  # fmt: skip
    )
    twin_run = Path(args.results_dir) / args.run
    text = compare(twins, Path(args.hand), twin_run, surfaces, args.model)
    out = Path(args.out) if args.out else twin_run / "proxy.md"
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"written: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
