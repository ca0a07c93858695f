"""``surfbench view RUN [RUN ...]``: the local results viewer (bench/view/), or ``--export DIR`` its static pages."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from surfbench.bench.base.argtypes import ParserT


def add_view_commands(sub: argparse._SubParsersAction[ParserT]) -> None:
    """Add ``view`` to the ``surfbench`` subcommands."""
    p = sub.add_parser(
        "view",
        help="local read-only web viewer over run folders (127.0.0.1): cells, episodes, a task across cells",
    )
    p.add_argument("runs", nargs="+", help="run folders (results/<run>)")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)")
    p.add_argument("--export", metavar="DIR", default=None, help="write every page as static files into DIR instead")
    p.add_argument("--keep-newest", action="store_true", help="count the newest row of a duplicated episode key")
    p.set_defaults(func=_view)


def _view(args: argparse.Namespace) -> int:
    from surfbench.bench.view.index import ViewIndex
    from surfbench.bench.view.view_server import Site, export, serve

    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: a port is 0 (any free one) to 65535")
    for run in args.runs:
        if not (Path(run) / "run.json").is_file():
            raise ValueError(f"{run} is not a run folder (no run.json): pass results/<run>")
    if args.export and Path(args.export).exists() and not Path(args.export).is_dir():
        raise ValueError(f"--export {args.export}: a file, not a folder; pass a new or existing folder")
    started = time.perf_counter()
    site = Site(ViewIndex(args.runs, keep_newest=args.keep_newest))
    print(f"read {len(site.index.frame):,} episodes in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.export:
        out = Path(args.export)
        count = export(site, out)
        print(f"wrote {count:,} files into {out}; open {out / 'index.html'}")
        return 0
    serve(site, args.port, log=lambda m: print(m, flush=True))
    return 0
