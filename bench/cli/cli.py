"""The ``surfbench`` command line."""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

from surfbench.bench.authoring.authoring_cli import add_authoring_commands
from surfbench.bench.base.argtypes import positive_int
from surfbench.bench.base.atomic import out_file, out_folder, write_atomic
from surfbench.bench.base.config import ConfigError, group_names, surface_config
from surfbench.bench.base.secrets import redact
from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.embedding import EmbeddingModelMissing
from surfbench.bench.catalog.wire import TokenizerUnavailable
from surfbench.bench.cli.diff_cli import add_diff_command
from surfbench.bench.cli.mcp import add_commands as add_mcp_commands
from surfbench.bench.cli.mcp import add_server_options, server_spec, surface_catalog
from surfbench.bench.cli.scale_cli import add_scale_commands
from surfbench.bench.cli.view_cli import add_view_commands
from surfbench.bench.contracts.plugins import add_commands as add_plugin_commands
from surfbench.bench.sequential.sequential_cli import add_gate_options, add_plan_options, gate_command, plan_command
from surfbench.bench.synth.synth_cli import add_synth_command

EXIT_USAGE = 2
DEBUG_ENV = "SURFBENCH_DEBUG"
"""Set to 1: an error also prints its traceback (the message stays one line, the exit code 2)."""

T = TypeVar("T")


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class UnreadableRun(UsageError):
    """A report or gate failed while reading its runs with an error nothing named: the runs are named here."""


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (no usage block), exit code 2, like every other input error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _reading_runs(command: str, runs: Sequence[str], work: Callable[[], T]) -> T:
    """Run ``work`` (a report or gate over ``runs``); an unexpected exception becomes one line naming the runs.

    Errors that already name their file (criteria, run.json, a foreign part, duplicate keys) pass
    through. Anything else (a pyarrow error on a damaged part, a TypeError on a column of the wrong
    type) must not end as a traceback, nor, for the gate, as exit code 1 read as "revise".
    KeyboardInterrupt is not an Exception and passes through.
    """
    try:
        return work()
    except _named_errors():
        raise
    except Exception as exc:
        why = " ".join(str(exc).split()) or "no message"
        raise UnreadableRun(
            f"{command} over {', '.join(runs)} failed: {type(exc).__name__}: {why} (a damaged or foreign file in "
            f"the run folder? {DEBUG_ENV}=1 prints the traceback)"
        ) from exc


def _surfaces(args: argparse.Namespace) -> int:
    from surfbench.bench.contracts.registry import surface_class
    from surfbench.bench.report.surface_report import format_table, surface_table, write_rows

    started = time.perf_counter()
    catalog = surface_catalog(args)  # a file, or a live MCP server (--mcp / --mcp-url)
    shown, skipped = _default_surfaces()
    if args.surface:  # repeatable and comma-separated: --surface code,code_index --surface full
        args.surface = [n.strip() for value in args.surface for n in value.split(",") if n.strip()]
    if args.surface == ["all"]:
        names, skipped = shown + skipped, []
    elif args.surface:
        names, skipped = args.surface, []
    else:
        names = shown
    configs = [surface_config(n) for n in names]
    if not args.surface or args.surface == ["all"]:  # named explicitly: let its own error speak
        other = [c.name for c in configs if not surface_class(c.kind).applies_to(catalog)]
        configs = [c for c in configs if c.name not in other]
    else:
        other = []
    rows = surface_table(catalog, configs, budget=args.budget)
    print(format_table(rows, catalog, budget=args.budget))
    if other:
        print(f"not for this catalog: {', '.join(other)} (they need operations it lacks; see each surface's module)")
    if skipped:
        print(
            f"not shown: {', '.join(skipped)} (embedding retrieval: the first run on a catalog embeds every "
            "operation, about 10 ms each on 2 cores; add --surface all, or --surface NAME)"
        )
    if args.out:
        write_rows(rows, Path(args.out))
        print(f"wrote {args.out}")
    print(f"({time.perf_counter() - started:.2f} s)", file=sys.stderr)
    return 0


def _run(args: argparse.Namespace) -> int:
    from surfbench.bench.cli.sweep import main as sweep_main

    return sweep_main(args.overrides)


def _report(args: argparse.Namespace) -> int:
    from surfbench.bench.report.report import compact_table, write_report

    runs = [Path(r) for r in args.runs]
    out = Path(args.out) if args.out else runs[0] / "report"
    md, page = _reading_runs(
        "report",
        args.runs,
        lambda: write_report(
            runs, out, baseline=args.baseline, keep_newest=args.keep_newest, viewer_url=args.viewer_url
        ),
    )
    table = compact_table(Path(md).read_text(encoding="utf-8"))
    if table:
        print(table, end="\n\n")
    print(f"wrote {md} and {page}")
    return 0


def _gate(args: argparse.Namespace) -> int:
    from surfbench.bench.report.gate import format_gate, judge

    if args.sequential:  # the criteria marked sequential, pair by pair: bench/sequential/sequential_cli.py
        return gate_command(args, _reading_runs)
    result = _reading_runs(
        "gate",
        args.runs,
        lambda: judge(Path(args.criteria), [Path(r) for r in args.runs], keep_newest=args.keep_newest),
    )
    if result.scripted and not args.allow_scripted:  # a script's numbers are no evidence: no decision
        from surfbench.bench.report.gate_exit import EXIT_REFUSED, scripted_warning

        print(scripted_warning(result.scripted, allowed=False), file=sys.stderr)
        return EXIT_REFUSED
    text = format_gate(result)
    if args.json:
        from surfbench.bench.report.gate_exit import gate_json

        text = gate_json(result.name, result.baseline, result.decisions, result.per_model, result.scripted)
    print(text)
    if args.out:
        write_atomic(Path(args.out), text + "\n")
    return result.exit_code


def _plan(args: argparse.Namespace) -> int:
    # the fixed-N requirement, then the sequential gate's (bench/sequential/sequential_cli.py)
    return plan_command(args)


def _migrate(args: argparse.Namespace) -> int:
    from surfbench.bench.store.provenance import read_run_info
    from surfbench.bench.store.results import migrate_run

    for run in args.runs:
        read_run_info(Path(run))  # a run folder, or one clear error
        rewritten = migrate_run(Path(run), dry_run=args.dry_run)
        would = "would be " if args.dry_run else ""
        print(f"{run}: {rewritten} part file(s) {would}rewritten in today's table schemas")
        if args.credit:
            _migrate_credit(Path(run), args.dry_run)
    return 0


def _migrate_credit(run: Path, dry_run: bool) -> None:
    """Recompute the run's credit columns (bench/analysis/recredit.py) and write the ones that changed."""
    from collections import Counter

    from surfbench.bench.analysis.recredit import recredit
    from surfbench.bench.store.results import rewrite_episode_values

    found = recredit(run)
    columns = Counter(name for change in found.changes.values() for name in change)
    said = ", ".join(f"{name} {n}" for name, n in sorted(columns.items())) or "none"
    print(f"{run}: credit of {len(found.changes)} of {found.episodes} episode(s) differs from today's ({said})")
    for why in found.skipped[:10]:
        print(f"  left as recorded: {why}")
    if len(found.skipped) > 10:
        print(f"  ... and {len(found.skipped) - 10} more episode(s) left as recorded")
    if dry_run:
        print(f"{run}: nothing written (--dry-run)")
    elif found.changes:
        print(f"{run}: {rewrite_episode_values(run, found.changes)} episodes part file(s) rewritten")


def _prune(args: argparse.Namespace) -> int:
    from surfbench.bench.store.provenance import prune

    for run in args.runs:
        removed = prune(Path(run))
        print(f"{run}: removed {removed} episode(s) of an older cell identity")
    return 0


def _compact(args: argparse.Namespace) -> int:
    from surfbench.bench.store.compact import compact

    for run in args.runs:
        print(compact(Path(run)).line())
    return 0


def _whatif(args: argparse.Namespace) -> int:
    from surfbench.bench.analysis.whatif import main as whatif_main

    return whatif_main(args.setting, args.runs, out=args.out, summary_only=args.summary_only)


def _models(args: argparse.Namespace) -> int:
    from surfbench.bench.models.local import EMBEDDED, is_pulled, model_path, pull

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
    from surfbench.bench.models.cache import ResponseCache

    cache = ResponseCache()
    if args.action == "clear":
        print(f"removed {cache.clear()} cached responses from {cache.root}")
    else:
        print(f"{cache.size()} cached responses in {cache.root}")
    return 0


def _default_surfaces() -> tuple[list[str], list[str]]:
    """Every surface config, ``full`` first; those that need an embedding model are split off.

    The default table stays fast on any catalog (no model forward pass); the embedding variants are
    one flag away and named under the table, never silently dropped.
    """
    names = sorted(group_names("surface"), key=lambda n: (n != "full", n))
    needs_model = [n for n in names if surface_config(n).params.get("retriever") == "embedding"]
    return [n for n in names if n not in needs_model], needs_model


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="surfbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("surfaces", help="static surface report: tools, wire bytes, tokens, help sizes")
    p.add_argument(
        "--catalog",
        default=None,
        help="catalog file (OpenAI/Anthropic/MCP/OpenAPI/BFCL/native) or module:attr",
    )
    p.add_argument("--format", default=None, help="catalog format when it cannot be guessed")
    p.add_argument("--name", default=None, help="catalog name (dispatcher tool names derive from it)")
    p.add_argument(
        "--surface",
        action="append",
        metavar="NAME",
        help="surface config from configs/surface/ (repeatable or comma-separated; 'all' for every config; "
        "default: all but the embedding-retrieval ones, which are named under the table)",
    )
    add_server_options(p)  # --mcp COMMAND / --mcp-url URL instead of --catalog (bench/cli/mcp.py)
    p.add_argument("--out", type=out_file, default=None, help="also write the rows to FILE.csv or FILE.json")
    p.add_argument("--budget", type=positive_int, default=1536, help="help payload budget in bytes (default 1536)")
    p.set_defaults(func=_surfaces)

    p = sub.add_parser(
        "run",
        help="run one cell, or a sweep with -m: suite=... surface=... model=... [split=dev limit=N repeats=N ...]",
        prefix_chars="\0",  # every argument (-m, --cfg job, key=value) belongs to Hydra
    )
    p.add_argument("overrides", nargs="*", help="Hydra overrides: key=value, -m for a sweep, +sweep=NAME presets")
    p.set_defaults(func=_run)

    p = sub.add_parser("report", help="markdown + self-contained HTML report over one or more runs")
    p.add_argument("runs", nargs="+", help="run folders (results/<run>)")
    p.add_argument("--out", type=out_folder, default=None, help="output folder (default: <first run>/report)")
    p.add_argument(
        "--baseline",
        default=None,
        help="surface to compare against; must be in the runs (default: full, when the runs have it)",
    )
    p.add_argument("--keep-newest", action="store_true", help="count the newest row of a duplicated episode key")
    p.add_argument("--viewer-url", default=None, help="link the tables to `surfbench view` pages at this address")
    p.set_defaults(func=_report)

    p = sub.add_parser(
        "gate", help="ship / revise / close per candidate surface; exit 0 all ship, 1 worst revise, 2 any close"
    )
    p.add_argument("--criteria", required=True, help="criteria file, e.g. configs/gate/dsh.yaml")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", type=out_file, default=None, help="also write the decision table to this file")
    p.add_argument("--keep-newest", action="store_true", help="count the newest row of a duplicated episode key")
    p.add_argument("--json", action="store_true", help="print the decisions as JSON: one per candidate, its exit code")
    p.add_argument(
        "--allow-scripted", action="store_true", help="judge runs of a scripted model (a plumbing check; else exit 2)"
    )
    add_gate_options(p)  # --sequential, --batch, --budget, --seed (bench/sequential/sequential_cli.py)
    p.set_defaults(func=_gate)

    p = sub.add_parser("plan", help="tasks x repeats a paired comparison needs to detect a given drop")
    p.add_argument("--baseline", type=float, required=True, help="baseline success or accuracy, e.g. 0.6")
    p.add_argument("--drop", type=float, required=True, help="the drop to detect, e.g. 0.05")
    p.add_argument(
        "--paired-discordance",
        type=float,
        default=None,
        help="share of tasks where exactly one surface succeeds (from an earlier run's report); "
        "default: as if the surfaces' outcomes were independent (conservative)",
    )
    add_plan_options(p)  # --threshold, --batch, --budget: the sequential estimate (bench/sequential/sequential_cli.py)
    p.set_defaults(func=_plan)

    p = sub.add_parser("migrate", help="rewrite an older run's parquet parts in today's table schemas")
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument(
        "--credit",
        action="store_true",
        help="also recompute the episodes' partial and efficient credit (call_share, efficiency, ...) with today's "
        "definitions, by replaying the recorded calls (no model); episodes whose replay differs are left as recorded",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")
    p.set_defaults(func=_migrate)

    p = sub.add_parser("prune", help="delete a run's episodes of an older cell identity (edited task or config)")
    p.add_argument("runs", nargs="+", help="run folders")
    p.set_defaults(func=_prune)

    p = sub.add_parser("compact", help="rewrite finished runs as one part per table, their transcripts packed")
    p.add_argument("runs", nargs="+", help="run folders")
    p.set_defaults(func=_compact)

    p = sub.add_parser(
        "whatif", help="effect of stop_on_repeat=K or stop_on_repeated_call=K on recorded runs, without a model"
    )
    p.add_argument(
        "setting",
        help="stop_on_repeat=K (end an episode stuck on a failing step) or stop_on_repeated_call=K (end an answer at "
        "the K-th copy of one call); K1,K2,... for several",
    )
    p.add_argument("runs", nargs="+", help="run folders")
    p.add_argument("--out", type=out_file, default=None, help="also write the markdown to this file")
    p.add_argument("--summary-only", action="store_true", help="only the self-check and the summary table")
    p.set_defaults(func=_whatif)

    p = sub.add_parser("models", help="list embedded local models, or pull one: surfbench models pull NAME")
    p.add_argument("action", nargs="?", choices=["list", "pull"], default="list")
    p.add_argument("name", nargs="*")
    p.set_defaults(func=_models)

    p = sub.add_parser("cache", help="response cache: surfbench cache [info|clear]")
    p.add_argument("action", nargs="?", choices=["info", "clear"], default="info")
    p.set_defaults(func=_cache)
    add_authoring_commands(sub, add_server_options, server_spec)  # init, check (bench/authoring/authoring_cli.py)
    add_synth_command(sub)  # synth: verified tasks from the catalog and world (bench/synth/synth_cli.py)
    add_scale_commands(sub)  # retrieval, pool (bench/cli/scale_cli.py)
    add_mcp_commands(sub)  # catalog dump (bench/cli/mcp.py)
    add_plugin_commands(sub)  # plugins: every registered name (bench/contracts/plugins.py)
    add_view_commands(sub)  # view: the local results viewer (bench/cli/view_cli.py, bench/view/)
    add_diff_command(sub)  # diff: a catalog change and its static gate (bench/cli/diff_cli.py, issue 54)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or one error line (2), already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.func(args))
    except (CatalogError, ConfigError, UsageError, EmbeddingModelMissing, TokenizerUnavailable) as exc:
        return _error(exc)
    except _runtime_errors() as exc:
        return _error(exc)
    except ValueError as exc:  # surface parameter errors and the like: still the user's input
        return _error(exc)
    except KeyboardInterrupt:
        print("surfbench: interrupted; finished episodes are saved, re-run the same command to resume", file=sys.stderr)
        return 130
    except BaseException as exc:
        from surfbench.bench.models.server import Terminated

        if isinstance(exc, Terminated):
            print("surfbench: terminated; finished episodes are saved", file=sys.stderr)
            return 143
        raise


def _error(exc: BaseException) -> int:
    """One line on stderr, exit code 2; with SURFBENCH_DEBUG=1 the traceback first (a bug stays findable)."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        print(redact(traceback.format_exc()), file=sys.stderr, end="")
    print(f"surfbench: error: {redact(str(exc))}", file=sys.stderr)
    return EXIT_USAGE


def _named_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message already names the file or field at fault (printed as they are)."""
    return (CatalogError, ConfigError, UsageError, *_runtime_errors())


def _runtime_errors() -> tuple[type[BaseException], ...]:
    from surfbench.bench.models import ModelError, ModelUnavailable, ServerError
    from surfbench.bench.store.results import ResultsError

    return (ModelError, ModelUnavailable, ServerError, ResultsError)


if __name__ == "__main__":
    raise SystemExit(main())
