"""The CLI's MCP parts: ``--mcp`` / ``--mcp-url`` for ``surfbench surfaces``, and ``surfbench catalog dump``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from surfbench.bench.base.argtypes import ParserT
from surfbench.bench.base.atomic import out_file
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.mcp.mcp_spec import STARTUP_TIMEOUT_S, McpError, ServerSpec, from_command


def add_server_options(p: argparse.ArgumentParser) -> None:
    """``--mcp COMMAND``, ``--mcp-url URL``, ``--mcp-header NAME=ENV_VAR``, ``--startup-timeout S``."""
    p.add_argument("--mcp", metavar="COMMAND", default=None, help="a live stdio MCP server: its command line, quoted")
    p.add_argument("--mcp-url", metavar="URL", default=None, help="a live streamable-HTTP MCP server")
    p.add_argument(
        "--mcp-header",
        action="append",
        default=[],
        metavar="NAME=ENV_VAR",
        help="an HTTP header whose value is read from the environment variable ENV_VAR (repeatable)",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=STARTUP_TIMEOUT_S,
        metavar="S",
        help=f"seconds to wait for the server to answer initialize (default {STARTUP_TIMEOUT_S:g})",
    )


def server_spec(args: argparse.Namespace) -> ServerSpec | None:
    """The server the arguments name, or None when they name none; ValueError for a bad combination."""
    given = [o for o, v in (("--catalog", getattr(args, "catalog", None)), ("--mcp", args.mcp),
                            ("--mcp-url", args.mcp_url)) if v]  # fmt: skip
    choices = "--catalog FILE, --mcp 'COMMAND ARGS' or --mcp-url URL" if hasattr(args, "catalog") else \
        "--mcp 'COMMAND ARGS' or --mcp-url URL"  # fmt: skip
    if len(given) != 1:
        raise McpError("(none)" if not given else " and ".join(given), f"give exactly one of {choices}")
    if args.startup_timeout <= 0:
        raise McpError(
            args.mcp or args.mcp_url or "", f"--startup-timeout must be positive, got {args.startup_timeout}"
        )
    headers = {}
    for item in args.mcp_header:
        name, sep, var = item.partition("=")
        if not sep or not name.strip() or not var.strip():
            raise McpError(
                args.mcp_url or "", f"--mcp-header {item!r}: write NAME=ENV_VAR (the value is read from ENV_VAR)"
            )
        headers[name.strip()] = var.strip()
    if args.mcp:
        if headers:
            raise McpError(args.mcp, "--mcp-header applies to --mcp-url only")
        return from_command(args.mcp, startup_timeout_s=args.startup_timeout)
    if args.mcp_url:
        if not args.mcp_url.startswith(("http://", "https://")):
            raise McpError(args.mcp_url, "--mcp-url must start with http:// or https://")
        return ServerSpec(url=args.mcp_url, headers=headers, startup_timeout_s=args.startup_timeout)
    return None


def surface_catalog(args: argparse.Namespace) -> Catalog:
    """The catalog ``surfbench surfaces`` measures: a file, or a live server (its raw size printed first)."""
    spec = server_spec(args)
    if spec is None:
        from surfbench.bench.catalog.importers import load_catalog

        return load_catalog(args.catalog, fmt=args.format, name=args.name)
    from surfbench.bench.mcp.mcp_catalog import live_catalog

    live = live_catalog(spec, name=args.name)
    print(f"live MCP server {spec.label}: tools/list answer {live.raw_bytes:,} B as sent, {len(live.catalog)} tools")
    return live.catalog


def _dump(args: argparse.Namespace) -> int:
    from surfbench.bench.mcp.mcp_catalog import live_catalog, write_snapshot

    started = time.perf_counter()
    spec = server_spec(args)
    assert spec is not None
    out = Path(args.out)
    if out.is_dir():
        raise McpError(spec.label, f"--out {out} is a folder; name the file to write, e.g. {out / 'tools.json'}")
    live = live_catalog(spec)  # every check before anything is written
    write_snapshot(live, out)
    print(
        f"wrote {out}: {len(live.catalog)} tools, {live.raw_bytes:,} B as sent, "
        f"catalog hash {live.catalog.content_hash}"
    )
    print(f"({time.perf_counter() - started:.2f} s)", file=sys.stderr)
    return 0


def add_commands(sub: argparse._SubParsersAction[ParserT]) -> None:
    """``surfbench catalog dump``: pin a live server's tool list to a file the MCP importer reads back."""
    p = sub.add_parser("catalog", help="catalog tools: surfbench catalog dump --mcp 'COMMAND' --out tools.json")
    inner = p.add_subparsers(dest="catalog_command", required=True)
    d = inner.add_parser("dump", help="write a live MCP server's tools/list answer, exactly as sent, to a file")
    add_server_options(d)
    d.add_argument(
        "--out", type=out_file, required=True, help="the file to write (e.g. tools.json); suite.yaml can pin it"
    )
    d.set_defaults(func=_dump)
