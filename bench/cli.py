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


RUN_KEYS = {
    "suite", "surface", "model", "split", "tasks", "limit", "repeats", "mode", "max_steps", "run", "results_dir",
    "no_cache",
}  # fmt: skip


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """``key=value`` arguments (Hydra's override syntax for plain values)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {item!r} (keys: {', '.join(sorted(RUN_KEYS))})")
        if key not in RUN_KEYS:
            from bench.validation import closest

            near = closest(key, RUN_KEYS)
            tip = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"unknown setting {key!r}{tip} (known: {', '.join(sorted(RUN_KEYS))})")
        out[key] = value
    return out


def _run(args: argparse.Namespace) -> int:
    from bench.metrics import format_summary, summarize_cell
    from bench.models import ModelPool
    from bench.models.cache import ResponseCache
    from bench.models.server import install_signal_handlers
    from bench.results import RunStore, environment_info, results_root
    from bench.runner import CellSpec, plain_progress, resolve_cell, run_cell

    opts = parse_overrides(args.overrides)
    spec = CellSpec(
        suite=opts.get("suite", "forge"),
        surface=opts.get("surface", "dispatcher"),
        model=opts.get("model", "qwen2.5-coder-0.5b-instruct"),
        split=opts.get("split", "dev"),
        tasks=tuple(t for t in opts.get("tasks", "").split(",") if t),
        limit=int(opts["limit"]) if "limit" in opts else None,
        repeats=int(opts.get("repeats", 1)),
        mode=opts.get("mode"),
        max_steps=int(opts["max_steps"]) if "max_steps" in opts else None,
    )
    cell = resolve_cell(spec)
    run_name = opts.get("run") or f"{spec.suite}-{spec.split}-{spec.surface}-{spec.model}"
    root = Path(opts["results_dir"]) if "results_dir" in opts else results_root()
    store = RunStore(root / run_name)
    store.prepare()
    store.write_run_info(
        {
            **environment_info(),
            "catalog_hash": cell.suite.catalog.content_hash,
            "cells": [vars(spec) | {"tasks": list(spec.tasks)}],
        }
    )
    install_signal_handlers()
    cache = None if opts.get("no_cache", "false").lower() in ("1", "true", "yes") else ResponseCache()
    print(f"run {run_name}: {len(cell.tasks)} task(s) x {spec.repeats} -> {store.root}", file=sys.stderr)
    with ModelPool(cache) as pool:
        run_cell(cell, pool, store, run_name, progress=plain_progress())
    from bench.results import load_runs

    frame = load_runs([store.root])
    mine = frame[
        (frame["surface"] == spec.surface)
        & (frame["model"] == spec.model)
        & (frame["mode"] == cell.mode)  # frame.mode would be DataFrame.mode()
        & frame["task_id"].isin([t.id for t in cell.tasks])
    ]
    print(f"{cell.spec.label()} ({cell.mode}), {len(cell.tasks)} tasks, results in {store.root}")
    print(format_summary(summarize_cell(mine.to_dict("records"))))
    return 0


def _models(args: argparse.Namespace) -> int:
    from bench.models.local import EMBEDDED, is_pulled, model_path, pull

    if args.action == "pull":
        if not args.name:
            raise UsageError("surfbench models pull NAME (see `surfbench models`)")
        for name in args.name:
            path = pull(name, log=lambda m: print(m, file=sys.stderr))
            print(path)
        return 0
    print(f"{'name':<30} {'params':>7} {'size':>14}  {'sha256':<18} pulled")
    for m in EMBEDDED.values():
        mark = f"yes ({model_path(m.name)})" if is_pulled(m.name) else "no"
        print(f"{m.name:<30} {m.params_b:>6}B {m.size:>14,}  {m.sha256[:16]}… {mark}")
    return 0


def _cache(args: argparse.Namespace) -> int:
    from bench.models.cache import ResponseCache

    cache = ResponseCache()
    if args.action == "clear":
        print(f"removed {cache.clear()} cached responses from {cache.root}")
    else:
        print(f"{cache.size()} cached responses in {cache.root}")
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

    p = sub.add_parser("run", help="run one cell: suite=... surface=... model=... [split=dev limit=N repeats=N ...]")
    p.add_argument("overrides", nargs="*", help="key=value settings (Hydra override syntax)")
    p.set_defaults(func=_run)

    p = sub.add_parser("models", help="list embedded local models, or pull one: surfbench models pull NAME")
    p.add_argument("action", nargs="?", choices=["list", "pull"], default="list")
    p.add_argument("name", nargs="*")
    p.set_defaults(func=_models)

    p = sub.add_parser("cache", help="response cache: surfbench cache [info|clear]")
    p.add_argument("action", nargs="?", choices=["info", "clear"], default="info")
    p.set_defaults(func=_cache)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CatalogError, ConfigError, UsageError, EmbeddingModelMissing, TokenizerUnavailable) as exc:
        print(f"surfbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _runtime_errors() as exc:
        print(f"surfbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ValueError as exc:  # surface parameter errors and the like: still the user's input
        print(f"surfbench: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("surfbench: interrupted; finished episodes are saved, re-run the same command to resume", file=sys.stderr)
        return 130
    except BaseException as exc:
        from bench.models.server import Terminated

        if isinstance(exc, Terminated):
            print("surfbench: terminated; finished episodes are saved", file=sys.stderr)
            return 143
        raise


def _runtime_errors() -> tuple[type[BaseException], ...]:
    from bench.models import ModelError, ModelUnavailable, ServerError
    from bench.results import ResultsError

    return (ModelError, ModelUnavailable, ServerError, ResultsError)


if __name__ == "__main__":
    raise SystemExit(main())
