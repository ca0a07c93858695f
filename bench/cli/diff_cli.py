"""``surfbench diff OLD NEW``: what a change to a tool catalog does, and a static gate over it (issue 54).

Each side is a catalog in any format the importers read (a file, or ``module:attr``: what ``surfbench surfaces
--catalog`` takes), a file at a git revision (``REV:path``, read with ``git show`` into a temporary file of the same
name), or a live MCP server (``--old-mcp`` / ``--new-mcp`` COMMAND, ``--old-mcp-url`` / ``--new-mcp-url`` URL: its
``tools/list``, as ``surfbench surfaces --mcp`` reads it). Both sides take one catalog name (``--name``, default
OLD's): a dispatcher's tool names derive from it, and two file names must not read as a change.

What it reports: per operation (bench/catalog/catalog_diff.py), per surface and cached prefix
(bench/report/diff_report.py), for ``--suite`` the tasks and the retrieval funnel (bench/cli/diff_suite.py); then
the gate (bench/report/diff_gate.py; ``configs/gate/diff.yaml`` unless ``--criteria``). Exit code as ``surfbench
gate``: 0 ship, 1 revise, 2 close or error; ``--no-gate``: the report only, exit 0.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.base.argtypes import ParserT, positive_int
from surfbench.bench.base.atomic import out_file, write_atomic
from surfbench.bench.base.config import (
    SHIPPED_CONFIGS,
    ConfigError,
    SurfaceConfig,
    find_config,
    group_names,
    surface_config,
)
from surfbench.bench.catalog.catalog import Catalog, CatalogError
from surfbench.bench.cli.scale_cli import comma_ints
from surfbench.bench.mcp.mcp_spec import STARTUP_TIMEOUT_S

if TYPE_CHECKING:
    from surfbench.bench.report.diff_gate import DiffCriteria

DEFAULT_CRITERIA = "gate/diff.yaml"
"""The criteria file used without ``--criteria``, found like every config (``SURFBENCH_CONFIGS`` first)."""
CATALOG_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
GIT_TIMEOUT_S = 60.0


class DiffError(ValueError):
    """A side of ``surfbench diff`` that cannot be read: one line, exit code 2."""


# ---- the two sides ----------------------------------------------------------------------------------------------


def _git(args: Sequence[str]) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise DiffError("REV:path needs git, and git is not on PATH") from None
    except subprocess.TimeoutExpired:
        raise DiffError(f"git {' '.join(args)} took over {GIT_TIMEOUT_S:g} s") from None


def git_revision(text: str) -> tuple[str, str] | None:
    """``(REV, path)`` when ``text`` names a file at a git revision of the repository here; None otherwise.

    A path that exists is a file, whatever its colons; ``module:attr`` and ``file.py:Class`` fall through to the
    importers. ``REV:file.json`` whose REV git does not know is one error rather than "file not found".
    """
    if Path(text).exists() or ":" not in text:
        return None
    rev, _, path = text.partition(":")
    if not rev or not path:
        return None
    looks_like_file = path.lower().endswith(CATALOG_SUFFIXES)
    if not looks_like_file and (re.fullmatch(r"[\w.]+", rev) and re.fullmatch(r"\w+", path) or ".py" in rev):
        return None  # module:attr, file.py:Class
    found = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"])
    if found.returncode == 0:
        return rev, path
    if looks_like_file:
        raise DiffError(
            f"{text}: no such file, and {rev!r} is not a git revision of the repository here (REV:path reads the "
            "file at a revision: run from inside the repository, e.g. main:catalog.json)"
        )
    return None


def load_at_revision(rev: str, path: str, fmt: str | None, name: str | None) -> Catalog:
    """The catalog in ``path`` at ``rev``: ``git show REV:path`` into a temporary file of the same name."""
    from surfbench.bench.base.owned import owned_temporary
    from surfbench.bench.catalog.importers import load_catalog

    shown = _git(["show", f"{rev}:{path}"])
    if shown.returncode != 0:
        why = (shown.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"])[0]
        raise DiffError(f"{rev}:{path}: git show failed: {why} (the path is from the repository's root, or ./path)")
    with owned_temporary("surfbench-out-") as folder:
        copy = folder / Path(path).name  # the same name: the same catalog name and format guess
        copy.write_bytes(shown.stdout)
        try:
            catalog = load_catalog(copy, fmt=fmt, name=name)
        except CatalogError as exc:
            raise CatalogError(f"{rev}:{path}", exc.reason, tool=exc.tool) from None
    return replace(catalog, source=f"{rev}:{path}")


def _live(command: str | None, url: str | None, args: argparse.Namespace, name: str | None) -> Catalog:
    from surfbench.bench.cli.mcp import server_spec
    from surfbench.bench.mcp.mcp_catalog import live_catalog

    options = argparse.Namespace(
        mcp=command, mcp_url=url, mcp_header=args.mcp_header if url else [], startup_timeout=args.startup_timeout
    )
    spec = server_spec(options)
    assert spec is not None
    live = live_catalog(spec, name=name)
    print(f"live MCP server {spec.label}: tools/list answer {live.raw_bytes:,} B, {len(live.catalog)} tools",
          file=sys.stderr)  # fmt: skip
    return live.catalog


def load_side(text: str | None, command: str | None, url: str | None, args: argparse.Namespace,
              name: str | None) -> Catalog:  # fmt: skip
    """One side: a live server, a file at a git revision, or what the importers read."""
    if command or url:
        return _live(command, url, args, name)
    assert text is not None
    at = git_revision(text)
    if at is not None:
        return load_at_revision(*at, args.catalog_format, name)
    from surfbench.bench.catalog.importers import load_catalog

    return load_catalog(text, fmt=args.catalog_format, name=name)


def _sides(args: argparse.Namespace) -> tuple[Catalog, Catalog]:
    """OLD and NEW: the positional arguments fill the sides no server option gives, OLD first."""
    live = {"old": (args.old_mcp, args.old_mcp_url), "new": (args.new_mcp, args.new_mcp_url)}
    for side, (command, url) in live.items():
        if command and url:
            raise DiffError(f"--{side}-mcp and --{side}-mcp-url: give one server for the {side} side")
    need = [side for side, (command, url) in live.items() if not command and not url]
    if len(args.sides) != len(need):
        given = f"{len(args.sides)} catalog argument(s)"
        raise DiffError(
            f"{given} for {len(need)} side(s) without a server: give OLD and NEW (files, module:attr or REV:path), "
            "a side's server option in place of its argument (e.g. OLD --new-mcp 'COMMAND')"
        )
    texts = dict(zip(need, args.sides, strict=True))
    old = load_side(texts.get("old"), *live["old"], args, args.name)
    new = load_side(texts.get("new"), *live["new"], args, args.name or old.name)
    return old, new


# ---- surfaces ---------------------------------------------------------------------------------------------------


def _configs(args: argparse.Namespace, extra: Sequence[str], old: Catalog, new: Catalog) -> tuple[
    list[SurfaceConfig], dict[str, tuple[bool, bool]], list[str]
]:  # fmt: skip
    """The surfaces to measure (``surfbench surfaces``' default set, or ``--surface``), and on which sides."""
    from surfbench.bench.contracts.registry import surface_class

    asked = [n.strip() for value in args.surface or [] for n in value.split(",") if n.strip()]
    names = sorted(group_names("surface"), key=lambda n: (n != "full", n))
    if not asked:  # as `surfbench surfaces`: no embedding model on a default run
        names = [n for n in names if surface_config(n).params.get("retriever") != "embedding"]
    elif asked != ["all"]:
        names = asked
    names = list(dict.fromkeys([*names, *extra]))  # the criteria's surfaces are always measured
    configs = [surface_config(n) for n in names]
    applies = {c.name: (surface_class(c.kind).applies_to(old), surface_class(c.kind).applies_to(new)) for c in configs}
    named = set(asked) | set(extra)
    other = [c.name for c in configs if not any(applies[c.name]) and c.name not in named]
    for c in configs:
        if not any(applies[c.name]) and c.name in named:
            raise DiffError(f"surface {c.name!r} applies to neither catalog (it needs operations they lack)")
    return [c for c in configs if c.name not in other], applies, other


def _criteria(args: argparse.Namespace) -> DiffCriteria | None:
    from surfbench.bench.report.diff_gate import load_diff_criteria

    if args.no_gate:
        return None
    path = Path(args.criteria) if args.criteria else find_config(DEFAULT_CRITERIA)
    if path is None:
        raise ConfigError(f"no {DEFAULT_CRITERIA} in the config folders: pass --criteria FILE (see docs/ci.md)")
    criteria = load_diff_criteria(path)
    if args.criteria is None and path.resolve().is_relative_to(SHIPPED_CONFIGS.resolve()):  # named as in the docs
        criteria = replace(criteria, path=f"configs/{DEFAULT_CRITERIA}")
    return criteria


def _diff(args: argparse.Namespace) -> int:
    from surfbench.bench.catalog.catalog_diff import diff_catalogs
    from surfbench.bench.cli.diff_followup import check_followup_args
    from surfbench.bench.report.diff_format import diff_json, format_diff
    from surfbench.bench.report.diff_gate import judge_diff
    from surfbench.bench.report.diff_report import ChangeReport, SuiteChange, prefix_changes, surface_changes
    from surfbench.bench.report.surface_report import HELP_BUDGET_BYTES

    started = time.perf_counter()
    check_followup_args(args)  # a follow-up that cannot run fails before any catalog is read
    if not args.rename_threshold >= 0.0:  # NaN too
        raise DiffError(
            f"--rename-threshold {args.rename_threshold}: give 0 or more (0.6 by default; above 1: no renames)"
        )
    criteria = _criteria(args)  # a bad criteria file fails before any catalog is read
    old, new = _sides(args)
    diff = diff_catalogs(old, new, rename_threshold=args.rename_threshold)
    budget = args.help_budget or (criteria.help_budget if criteria else None) or HELP_BUDGET_BYTES
    configs, applies, other = _configs(args, criteria.surfaces if criteria else (), old, new)
    notes = [f"not for these catalogs: {', '.join(other)}"] if other else []
    surfaces = surface_changes(old, new, configs, diff, budget, applies)
    prefixes = prefix_changes(old, new, configs, applies)
    suite: SuiteChange | None = None
    if args.suite:
        from surfbench.bench.cli.diff_suite import suite_change

        ks = sorted({*args.k, *(criteria.ks if criteria else ())})
        suite = suite_change(args.suite, old, new, diff, args.retriever.split(","), ks, args.split)
    report = ChangeReport(old, new, diff, tuple(surfaces), tuple(prefixes), budget, suite, tuple(notes))
    gate = judge_diff(criteria, report, allow_breaking=args.allow_breaking) if criteria else None
    fmt = "json" if args.json else args.format
    text = diff_json(report, gate) + "\n" if fmt == "json" else format_diff(report, gate, markdown=fmt == "markdown")
    code = gate.exit_code if gate is not None else 0
    if fmt != "json":
        print(text, end="", flush=True)  # the static report first: it costs nothing, the follow-up takes a while
    if args.against:  # the paired follow-up with a model
        from surfbench.bench.cli.diff_followup import run_followup

        followup = run_followup(args, old, new, diff)
        code = max(code, followup.exit_code)
        if fmt == "json":
            merged = {**json.loads(text), "followup": followup.data, "exit_code": code}
            text = json.dumps(merged, indent=1) + "\n"
        else:
            print("\n" + followup.markdown, end="")
            text += "\n" + followup.markdown
    if fmt == "json":
        print(text, end="")
    if args.out:
        write_atomic(Path(args.out), text)
        print(f"wrote {args.out}", file=sys.stderr)
    print(f"({time.perf_counter() - started:.2f} s)", file=sys.stderr)
    return code


def add_diff_command(sub: argparse._SubParsersAction[ParserT]) -> None:
    """``surfbench diff``, on the ``surfbench`` parser's subparsers."""
    from surfbench.bench.report.diff_format import FORMATS
    from surfbench.bench.suites.suite_model import SPLITS

    p = sub.add_parser(
        "diff",
        help="what a catalog change does (per operation, per surface, the cached prefix, a suite) and a static "
        "gate over it: exit 0 ship, 1 revise, 2 close/error",
    )
    p.add_argument(
        "sides",
        nargs="*",
        metavar="OLD NEW",
        help="catalog files (OpenAI/Anthropic/MCP/OpenAPI/BFCL/native), module:attr, or REV:path (a file at a git "
        "revision, e.g. origin/main:tools.json); leave out a side given by a server option",
    )
    for side in ("old", "new"):
        p.add_argument(
            f"--{side}-mcp", metavar="COMMAND", default=None, help=f"the {side} side: a live stdio MCP server"
        )
        p.add_argument(f"--{side}-mcp-url", metavar="URL", default=None, help=f"the {side} side: a streamable-HTTP one")
    p.add_argument(
        "--mcp-header", action="append", default=[], metavar="NAME=ENV_VAR",
        help="an HTTP header of the --*-mcp-url servers, its value read from ENV_VAR (repeatable)",
    )  # fmt: skip
    p.add_argument(
        "--startup-timeout", type=float, default=STARTUP_TIMEOUT_S, metavar="S",
        help=f"seconds a live server may take to answer initialize (default {STARTUP_TIMEOUT_S:g})",
    )  # fmt: skip
    p.add_argument("--catalog-format", default=None, help="catalog format of both files, when it cannot be guessed")
    p.add_argument("--name", default=None, help="catalog name of both sides (dispatcher tool names); default: OLD's")
    p.add_argument("--surface", action="append", metavar="NAME",
                   help="surface configs to measure (repeatable or comma-separated; 'all' for every one; default: "
                   "those of `surfbench surfaces`)")  # fmt: skip
    p.add_argument("--criteria", default=None, help=f"the gate's criteria file (default: configs/{DEFAULT_CRITERIA})")
    p.add_argument("--no-gate", action="store_true", help="report only, exit 0")
    p.add_argument("--allow-breaking", action="store_true", help="breaking operation changes pass the gate (listed)")
    p.add_argument("--help-budget", type=positive_int, default=None, metavar="BYTES",
                   help="help payload budget (default: the criteria's help_bytes_max, else 1536)")  # fmt: skip
    p.add_argument("--rename-threshold", type=float, default=0.6, metavar="SCORE",
                   help="lowest similarity guessed a rename (default 0.6; above 1: no renames)")  # fmt: skip
    p.add_argument("--suite", default=None, help="a suite name or folder: its tasks' expected calls and retrieval")
    p.add_argument("--split", default="all", choices=[*SPLITS, "all"], help="the suite's tasks of this split")
    p.add_argument("--retriever", default="bm25,embedding", help="retrievers of the funnel (default bm25,embedding)")
    p.add_argument("--k", type=comma_ints, default=[1, 3, 5, 10], help="cut-offs for recall@k (default 1,3,5,10)")
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown (a PR comment), json")
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.add_argument("--out", type=out_file, default=None, help="also write the output to this file")
    from surfbench.bench.cli.diff_followup import add_followup_options

    add_followup_options(p)
    p.set_defaults(func=_diff)
