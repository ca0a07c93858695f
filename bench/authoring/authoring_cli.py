"""``surfbench init`` and ``surfbench check``: the command line of suite authoring.

``init`` writes a code-free suite for a catalog (bench/authoring/scaffold.py) or a suite over a live MCP server
(bench/authoring/scaffold_mcp.py, its data placed by bench/authoring/scaffold_data.py). ``check`` validates a
suite and replays its tasks with the oracle (``scaffold.check_suite``), says per task what a live server
returned (``scaffold_mcp.live_lines``) and, once the suite passes, chooses an init'd suite's preselect and
search on its tasks (bench/authoring/scaffold_retrieval.py). The live server's options (``--mcp``,
``--mcp-url``, ``--mcp-header``, ``--startup-timeout``) and the server they name are the front ends' own
(bench/cli/mcp.py, shared with ``surfaces``, ``catalog dump`` and ``diff``): :func:`add_authoring_commands`
is given them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.authoring.scaffold import check_suite, init_suite
from surfbench.bench.authoring.scaffold_mcp import init_mcp_suite, live_lines
from surfbench.bench.base.argtypes import ParserT
from surfbench.bench.base.config import group_names
from surfbench.bench.mcp.mcp_spec import McpError, ServerSpec

ServerOptions = Callable[[argparse.ArgumentParser], None]
"""Adds the live server's options to a parser (the front ends' ``add_server_options``, bench/cli/mcp.py)."""
ServerNamed = Callable[[argparse.Namespace], ServerSpec | None]
"""The server the parsed options name, None when they name none (the front ends' ``server_spec``)."""


def server_for_init(args: argparse.Namespace, server_spec: ServerNamed) -> ServerSpec | None:
    """The live server ``init`` names (None for ``--catalog``); McpError for a bad combination of options."""
    spec = server_spec(args)  # exactly one of --catalog, --mcp, --mcp-url
    if spec is None and args.mcp_header:
        raise McpError(args.catalog, "--mcp-header applies to --mcp-url only")
    if spec is not None and args.format:
        raise McpError(spec.label, "--format applies to --catalog only (a live server's list is MCP)")
    return spec


def _init(args: argparse.Namespace, server_spec: ServerNamed) -> int:
    folder = Path(args.dir)
    spec = server_for_init(args, server_spec)
    if spec is None:
        if args.fixture or args.live_data:
            raise McpError(args.catalog, "--fixture and --live-data apply to --mcp (a stdio server) only")
        name = init_suite(args.catalog, folder, fmt=args.format, name=args.name, force=args.force)
        print(f"wrote suite {name!r} in {folder} (see {folder / 'README.md'}); check it: surfbench check {folder}")
        return 0
    name, tools, placement, (files, size) = init_mcp_suite(
        spec, folder, name=args.name, force=args.force, fixture=args.fixture, live_data=args.live_data
    )
    print(f"wrote suite {name!r} over the live MCP server {placement.spec.label} ({tools} tools) in {folder}")
    if placement.data is not None:
        print(
            f"copied {placement.data} ({files} files, {size:,} bytes) into {folder / 'fixture'}: every episode, "
            f"check included, runs the server on a fresh copy; {placement.data} is only read"
        )
    if placement.live is not None:
        print(f"warning: --live-data: the server works on {placement.live} itself: check and every run change it")
    for given, written in placement.rewritten:
        print(f"argument {given} written as {written}")
    print(f"next (see {folder / 'README.md'}): edit {folder / 'tasks.yaml'}, then surfbench check {folder}")
    return 0


def _check(args: argparse.Namespace) -> int:
    live: dict[str, Any] = {}
    ran, solved, lines = check_suite(args.suite, live)
    for line in live_lines(live):
        print(line)
    for line in lines:
        print(f"surfbench: check: {line}", file=sys.stderr)
    name = Path(args.suite).name if Path(args.suite).is_dir() else args.suite.partition(":")[0]
    if Path(args.suite, "suite.yaml").is_file():  # a suite named apart from its folder (init --name)
        declared = yaml.safe_load(Path(args.suite, "suite.yaml").read_text(encoding="utf-8"))
        name = str(declared.get("name") or name) if isinstance(declared, dict) else name
    if name not in group_names("suite") and not (Path(args.suite) / "configs" / "suite" / f"{name}.yaml").is_file():
        print(f"note: no configs/suite/{name}.yaml in SURFBENCH_CONFIGS: `surfbench run suite={name}` needs one")
    flagged = sum(1 for why in (live.get("answers") or {}).values() if why)
    judged = sum(1 for why in (live.get("answers") or {}).values() if why is not None)
    answers = f"; answers found in the server's results {judged - flagged}/{judged}" if judged else ""
    if lines:
        print(f"{len(lines)} problem(s): {ran} tasks, oracle solves {solved}/{ran}{answers}")
        return 2
    from surfbench.bench.authoring.scaffold_retrieval import measured_surfaces

    for line in measured_surfaces(args.suite):  # an init'd suite: preselect and search chosen on its tasks
        print(line)
    print(f"ok: {ran} tasks, oracle solves {solved}/{ran}{answers}")
    return 0


def add_authoring_commands(
    sub: argparse._SubParsersAction[ParserT], add_server_options: ServerOptions, server_spec: ServerNamed
) -> None:
    """The ``init`` and ``check`` subcommands, on the ``surfbench`` parser's subparsers.

    ``add_server_options`` and ``server_spec``: the front ends' live-server options and the server they name.
    """
    p = sub.add_parser(
        "init", help="write a suite for a catalog (code-free) or a live MCP server: suite.yaml, tasks.yaml, README"
    )
    p.add_argument("dir", metavar="DIR", help="the new suite's folder (its name is the suite's unless --name)")
    p.add_argument(
        "--catalog", default=None, help="catalog file (OpenAI/Anthropic/MCP/OpenAPI/BFCL/native) or module:attr"
    )
    add_server_options(p)  # --mcp COMMAND / --mcp-url URL instead of --catalog: a suite over the live server
    p.add_argument(
        "--fixture",
        metavar="DATA_DIR",
        default=None,
        help="with --mcp: the folder the server serves, copied into the suite (default: the one folder its "
        "arguments name); each episode runs on a fresh copy",
    )
    p.add_argument(
        "--live-data",
        action="store_true",
        help="with --mcp: run the server on the folder its arguments name, not a copy (writes change it)",
    )
    p.add_argument("--format", default=None, help="catalog format when it cannot be guessed")
    p.add_argument("--name", default=None, help="suite name (default: DIR's name)")
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR, replacing the files init writes")
    p.set_defaults(func=partial(_init, server_spec=server_spec))
    p = sub.add_parser("check", help="validate a suite: schemas, expected calls, and an oracle replay of every task")
    p.add_argument("suite", metavar="DIR_OR_NAME", help="a suite folder, or a suite's name")
    p.set_defaults(func=_check)
