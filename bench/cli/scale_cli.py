"""``surfbench retrieval`` (retrievers scored without a model) and ``surfbench pool`` (the distractor pool)."""

from __future__ import annotations

import argparse
import csv
import io
import json
from pathlib import Path

from surfbench.bench.base.argtypes import ParserT
from surfbench.bench.base.atomic import out_file, write_atomic


def comma_ints(text: str) -> list[int]:
    """An argparse type: ``1,3,5,10`` as whole numbers, each 1 or more (``retrieval --k``, ``diff --k``)."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected whole numbers separated by commas, e.g. 1,3,5,10"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: every value must be 1 or more")
    return values


def add_scale_commands(sub: argparse._SubParsersAction[ParserT]) -> None:
    """The ``retrieval`` and ``pool`` subcommands, on the ``surfbench`` parser's subparsers."""
    p = sub.add_parser("retrieval", help="recall@k, MRR, nDCG@10 of the retrievers on a suite's tasks (no model)")
    p.add_argument("--suite", required=True, help="suite name or folder (e.g. forge)")
    p.add_argument("--retriever", default="bm25,embedding", help="comma-separated: bm25, embedding (embed), hybrid")
    p.add_argument("--k", type=comma_ints, default=[1, 3, 5, 10], help="cut-offs for recall@k (default 1,3,5,10)")
    p.add_argument("--grow", type=int, default=None, metavar="N", help="grow the catalog to N operations first")
    p.add_argument("--seed", type=int, default=0, help="seed of the distractor draw (with --grow)")
    from surfbench.bench.suites.suite_model import SPLITS

    p.add_argument("--split", default="all", choices=[*SPLITS, "all"], help="tasks of this split (default all)")
    p.add_argument("--threshold", type=float, default=0.0, help="least score of a shown hit (as the surfaces)")
    p.add_argument("--min-k", type=int, default=0, help="show at least this many hits (as the surfaces' min_k)")
    p.add_argument("--out", type=out_file, default=None, help="also write the rows to FILE.csv or FILE.json")
    p.set_defaults(func=_retrieval)
    p = sub.add_parser("pool", help="the grow pool: build | fetch-github | fetch-directory | info")
    p.add_argument("action", choices=["build", "fetch-github", "fetch-directory", "info"])
    p.set_defaults(func=_pool)


def _retrieval(args: argparse.Namespace) -> int:
    from surfbench.bench.analysis.retrieval_eval import evaluate, flat, format_rows, zero_shown_lines
    from surfbench.bench.catalog.retrieval import retriever_kind
    from surfbench.bench.suites.grow import MAX_GROW, grow_suite
    from surfbench.bench.suites.suite import load_suite

    kinds = [retriever_kind(k.strip()) for k in args.retriever.split(",") if k.strip()]
    if args.grow is not None and not 1 <= args.grow <= MAX_GROW:
        raise ValueError(f"--grow {args.grow}: must be from 1 to {MAX_GROW:,}")
    if not 0.0 <= args.threshold <= 1.0 or args.min_k < 0:
        raise ValueError(f"--threshold {args.threshold} / --min-k {args.min_k}: threshold within [0, 1], min-k >= 0")
    out = Path(args.out) if args.out else None
    if out is not None and out.suffix not in (".csv", ".json"):
        raise ValueError(f"--out {out}: name a .csv or .json file")
    suite = load_suite(args.suite)
    if args.grow:
        suite = grow_suite(suite, args.grow, args.seed)
    tasks = suite.select(args.split)
    rows = evaluate(suite, kinds, args.k, tasks, args.threshold, args.min_k)
    print(f"{suite.name}, split {args.split}" + (f", grown to {args.grow:,} (seed {args.seed})" if args.grow else ""))
    print(format_rows(rows))
    for line in zero_shown_lines(rows):
        print(line)
    if out is not None:
        records = [flat(r) for r in rows]
        if out.suffix == ".json":
            text = json.dumps(records, indent=1)
        else:
            buf = io.StringIO(newline="")
            writer = csv.DictWriter(buf, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
            text = buf.getvalue()
        write_atomic(out, text)
        print(f"wrote {out}")
    return 0


def _pool(args: argparse.Namespace) -> int:
    from surfbench.bench.catalog.pool import PoolError, fetch_directory, fetch_github, load_pool

    try:
        if args.action == "fetch-github":
            print(f"fetched {fetch_github()}")
        if args.action == "fetch-directory":
            print(f"fetched {fetch_directory()}")
        pool = load_pool(build=args.action != "info")
    except PoolError as exc:
        raise ValueError(str(exc)) from None
    counts = ", ".join(f"{name} {n:,}" for name, n in pool.sources.items())
    print(f"pool {pool.content_hash}: {len(pool.operations):,} operations ({counts}) in {pool.path}")
    for name, why in pool.missing.items():
        print(f"  without {name}: {why}")
    return 0
