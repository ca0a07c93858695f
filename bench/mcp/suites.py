"""What a suite over a live MCP server needs: its catalog (with the drift check) and its backend.

suite.yaml::

    catalog:
      mcp: {command: python, args: [-m, mcp_server_git, --repository, "{workdir}"], setup: fixture.py:build}
      pinned: tools.json                # optional: `surfbench catalog dump` output; a run warns on drift
    # mcp also takes fixture: FOLDER (copied to a fresh {workdir} per episode) and setup: file.py:function
    # (called with that working copy's path before the server starts: builds what a folder cannot ship,
    # such as a .git); both run for the live catalog listing and for every episode.
    backend: mcp                        # calls go to the live server (a fresh one per episode)
    backend_options: {state: state.py:read_state, call_timeout_s: 10}
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surfbench.bench.catalog.catalog import Catalog, CatalogError
from surfbench.bench.mcp.mcp_spec import ServerSpec, from_mapping


@dataclass(frozen=True)
class McpCatalogSpec:
    """A suite's ``catalog: {mcp: ..., pinned: ...}``, resolved against its folder."""

    server: ServerSpec
    """The live server."""
    pinned: Path | None = None
    """A ``tools/list`` dump the live catalog is compared with."""
    pool: Any = field(default=None, compare=False, repr=False)
    """Servers kept between episodes (bench.mcp.mcp_pool.ServerPool), when the server declares a reset."""
    watch: Any = field(default=None, compare=False, repr=False)
    """The user's data the server must not change (bench.mcp.watch.DataWatch), when ``mcp.watch`` lists any."""


def resolve(value: Mapping[str, Any] | None, folder: Path, where: str) -> McpCatalogSpec | None:
    """The suite's MCP catalog spec (None when its catalog is a file or a class)."""
    if value is None:
        return None
    pinned = value.get("pinned")
    if pinned is not None and not (folder / pinned).is_file():
        raise ValueError(f"{where}: catalog.pinned: no file {folder / pinned} (write one with surfbench catalog dump)")
    from surfbench.bench.mcp.mcp_pool import ServerPool
    from surfbench.bench.mcp.watch import DataWatch

    server = from_mapping(value["mcp"], where, folder)
    pool = ServerPool() if server.reset_tool else None
    watch = DataWatch(server.watch) if server.watch else None
    return McpCatalogSpec(server, folder / pinned if pinned else None, pool, watch)


def live_suite_catalog(spec: McpCatalogSpec, name: str) -> Catalog:
    """The live server's catalog; a warning on stderr when it differs from the pinned dump."""
    from surfbench.bench.catalog.importers import load_catalog
    from surfbench.bench.mcp.mcp_catalog import drift, live_catalog

    live = live_catalog(spec.server, name=name).catalog
    if spec.pinned is not None:
        try:
            pinned = load_catalog(spec.pinned, fmt="mcp", name=name)
            if spec.server.reset_tool:
                ops = tuple(op for op in pinned.operations if op.name != spec.server.reset_tool)
                pinned = Catalog(name=pinned.name, operations=ops, source=pinned.source)
        except CatalogError as exc:
            print(f"surfbench: warning: pinned catalog unreadable: {exc}", file=sys.stderr)
            return live
        why = drift(live, pinned)
        if why:
            print(f"surfbench: warning: suite {name!r}: {why}; re-pin with surfbench catalog dump", file=sys.stderr)
    return live


def mcp_backend_class() -> type:
    """The class behind ``backend: mcp`` (imported only when a suite uses it)."""
    from surfbench.bench.mcp.mcp_backend import McpBackend

    return McpBackend


def new_mcp_backend(
    spec: McpCatalogSpec | None, folder: Path, settings: Mapping[str, Any], scenario: str | None
) -> Any:
    """A fresh backend for one episode: a fresh working copy and server, reset to the scenario."""
    from surfbench.bench.mcp.mcp_backend import McpBackend
    from surfbench.bench.mcp.mcp_spec import McpError

    if spec is None:
        raise McpError(str(folder), "backend: mcp needs a live server: catalog: {mcp: {command: ..., args: [...]}}")
    options = dict(settings)
    state = options.pop("state", None)
    if isinstance(state, str):
        from surfbench.bench.suites.hooks import load_hook

        state = load_hook(
            str(folder / state) if ":" in state else state, folder / "suite.yaml", "backend_options.state"
        )
    if spec.watch is not None:  # hashed once, before the first episode's server starts
        spec.watch.start()
    backend = McpBackend(spec.server, state=state, pool=spec.pool, watch=spec.watch, **options)
    backend.reset(scenario)
    return backend
