"""Agreement between BFCL's own checker and surfbench's scorer on the same model outputs.

    python scripts/bfcl_agreement.py RUN [RUN...] [--out FILE.md]
    python scripts/bfcl_agreement.py --oracle [--out FILE.md]

RUN: result folders with episodes of single-turn BFCL suites (suite=bfcl:<category>).
--oracle: replay BFCL's own ground truth (the scripted oracle, every entry of the seven single-turn
categories and multi_turn_base) through the loop into a temporary run; print how many entries it
solves, then the agreement on its single-turn outputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from surfbench.tasks.bfcl.agreement import summary, verdicts  # noqa: E402

CATEGORIES = (
    "simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple", "irrelevance",
)  # fmt: skip


def oracle_runs(root: Path) -> list[Path]:
    """BFCL's ground truth replayed on `full`, one run folder per category; prints the entries solved."""
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    folders, solved, total = [], 0, 0
    for category in (*CATEGORIES, "multi_turn_base"):
        suite = f"bfcl:{category}"
        folder = root / category
        store = RunStore(folder, commit_interval_s=0.5)
        store.prepare()
        store.write_run_info({"cells": [{"provider": "scripted"}]})
        cell = resolve_cell(CellSpec(suite, "full", "qwen2.5-coder-0.5b-instruct", split="all"))
        run_cell(cell, ModelPool(None), store, "oracle", client=OracleClient(suite))
        ok = load_runs([folder])["success"].astype(bool)
        print(f"{suite}: ground truth solves {int(ok.sum())} of {len(ok)}", file=sys.stderr)
        solved, total = solved + int(ok.sum()), total + len(ok)
        if category != "multi_turn_base":
            folders.append(folder)
    print(f"all: ground truth solves {solved} of {total}", file=sys.stderr)
    return folders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*", help="result folders (results/<run>)")
    parser.add_argument("--oracle", action="store_true", help="replay BFCL's ground truth instead of RUNs")
    parser.add_argument("--out", help="also write the markdown summary here")
    args = parser.parse_args()
    if args.oracle == bool(args.runs):
        parser.error("give result folders or --oracle (one of the two)")
    if args.oracle:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="surfbench-bfcl-oracle-") as tmp:
            return report(verdicts(oracle_runs(Path(tmp))), args.out)
    missing = [r for r in args.runs if not (Path(r) / "run.json").is_file()]
    if missing:
        print(f"bfcl_agreement: {missing[0]}: not a surfbench run folder (no run.json)", file=sys.stderr)
        return 2
    return report(verdicts(args.runs), args.out)


def report(items: list, out: str | None) -> int:
    if not items:
        print("bfcl_agreement: no single-turn BFCL episodes in these runs", file=sys.stderr)
        return 2
    text = summary(items)
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
