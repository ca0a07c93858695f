"""Agreement between BFCL's own checker and surfbench's scorer on the same model outputs.

    python scripts/bfcl_agreement.py RUN [RUN...] [--out FILE.md]

RUN: result folders with episodes of single-turn BFCL suites (suite=bfcl:<category>).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tasks.bfcl.agreement import summary, verdicts  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="result folders (results/<run>)")
    parser.add_argument("--out", help="also write the markdown summary here")
    args = parser.parse_args()
    missing = [r for r in args.runs if not (Path(r) / "run.json").is_file()]
    if missing:
        print(f"bfcl_agreement: {missing[0]}: not a surfbench run folder (no run.json)", file=sys.stderr)
        return 2
    items = verdicts(args.runs)
    if not items:
        print("bfcl_agreement: no single-turn BFCL episodes in these runs", file=sys.stderr)
        return 2
    text = summary(items)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
