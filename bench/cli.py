"""The ``surfbench`` command line."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.catalog import CatalogError
from bench.config import ConfigError, group_names, surface_config
from bench.embedding import EmbeddingModelMissing
from bench.wire import TokenizerUnavailable

EXIT_USAGE = 2


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _surfaces(args: argparse.Namespace) -> int:
    from bench.importers import load_catalog
    from bench.surface_report import format_table, surface_table, write_rows

    started = time.perf_counter()
    catalog = load_catalog(args.catalog, fmt=args.format, name=args.name)
    names = args.surface or _default_surfaces()
    configs = [surface_config(n) for n in names]
    rows = surface_table(catalog, configs, budget=args.budget)
    print(format_table(rows, catalog, budget=args.budget))
    if args.out:
        write_rows(rows, Path(args.out))
        print(f"wrote {args.out}")
    print(f"({time.perf_counter() - started:.2f} s)", file=sys.stderr)
    return 0


def _default_surfaces() -> list[str]:
    names = group_names("surface")
    return sorted(names, key=lambda n: (n != "full", n))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="surfbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("surfaces", help="static surface report: tools, wire bytes, tokens, help sizes")
    p.add_argument(
        "--catalog",
        required=True,
        help="catalog file (OpenAI/Anthropic/MCP/OpenAPI/BFCL/native) or module:attr",
    )
    p.add_argument("--format", default=None, help="catalog format when it cannot be guessed")
    p.add_argument("--name", default=None, help="catalog name (dispatcher tool names derive from it)")
    p.add_argument(
        "--surface",
        action="append",
        metavar="NAME",
        help="surface config from configs/surface/ (repeatable; default: all)",
    )
    p.add_argument("--out", default=None, help="also write the rows to FILE.csv or FILE.json")
    p.add_argument("--budget", type=int, default=1536, help="help payload budget in bytes (default 1536)")
    p.set_defaults(func=_surfaces)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CatalogError, ConfigError, UsageError, EmbeddingModelMissing, TokenizerUnavailable) as exc:
        print(f"surfbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # surface parameter errors and the like: still the user's input
        print(f"surfbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("surfbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
