"""A live MCP server as a catalog: its ``tools/list`` exactly as sent, imported by the MCP importer.

The same bytes pinned to a file (``surfbench catalog dump``) load back into the same catalog, with the
same content hash; a run over a live server compares against a pinned file and warns on drift.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from surfbench.bench.base.atomic import write_atomic
from surfbench.bench.catalog.catalog import Catalog, CatalogError
from surfbench.bench.catalog.importers.common import check_descriptions
from surfbench.bench.catalog.importers.tools_json import import_mcp
from surfbench.bench.catalog.wire import compact_json
from surfbench.bench.mcp.mcp_client import McpClient, ToolList
from surfbench.bench.mcp.mcp_spec import McpError, ServerSpec, load_setup


@dataclass(frozen=True)
class LiveCatalog:
    """A catalog read from a running server, with the answer it came from."""

    catalog: Catalog
    """The operations, imported from the raw answer."""
    listing: ToolList
    """The raw ``tools/list`` answer."""

    @property
    def raw_bytes(self) -> int:
        """Bytes of the ``tools/list`` answer as the server sent it."""
        return len(self.listing.raw)

    def snapshot(self) -> bytes:
        """What ``catalog dump`` writes: the answer as sent (pages merged into one ``{"tools": [...]}``)."""
        if self.listing.pages == 1:
            return self.listing.raw
        return compact_json({"tools": self.listing.tools}).encode()


class Workdir:
    """A fresh working copy of a fixture folder (an empty folder without one), removed on close.

    The copy's path is the same for every episode (see :mod:`surfbench.bench.mcp.slots`): the lowest free
    slot of this fixture, emptied and filled again, so a server that echoes its paths answers identical
    calls identically and the response cache serves a rerun. ``setup`` (``path.py:function``, the
    server's ``setup``) is then called with its path, before any server starts on it; McpError naming
    the hook when it fails (the copy is removed).
    """

    def __init__(self, fixture: str | None, setup: str | None = None) -> None:
        from surfbench.bench.mcp.slots import Slot

        name = Path(fixture).name if fixture else "work"
        self._slot: Slot | None = Slot.claim(slot_key(fixture, setup))
        self.path: Path | None = self._slot.folder / name
        try:
            if fixture:
                shutil.copytree(fixture, self.path, symlinks=True)
            else:
                self.path.mkdir()
        except BaseException:
            self.close()
            raise
        if setup:
            try:
                load_setup(setup)(self.path)
            except Exception as exc:
                self.close()
                raise McpError(setup, f"setup failed: {type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        """Remove the copy (and give its slot back)."""
        if self._slot is not None:
            self._slot.release()
            self._slot = None
        self.path = None


def slot_key(fixture: str | None, setup: str | None) -> str:
    """The folder of a fixture's slots: a hash of the fixture's real path and the setup hook."""
    real = str(Path(fixture).resolve()) if fixture else ""
    return hashlib.sha256(f"{real}\0{setup or ''}".encode()).hexdigest()[:12]


def catalog_from_listing(listing: ToolList, source: str, name: str | None) -> Catalog:
    """The catalog of a listing, through the same importer a pinned file goes through."""
    try:
        ops = import_mcp({"tools": listing.tools}, source)
        check_descriptions(ops, source)
        return Catalog(name=name or "mcp", operations=tuple(ops), source=source)
    except CatalogError as exc:
        raise McpError(
            source.removeprefix("mcp:"),
            f"its tool list is not a usable catalog: {exc.reason}" + (f" (tool {exc.tool!r})" if exc.tool else ""),
        ) from None


def live_catalog(spec: ServerSpec, name: str | None = None) -> LiveCatalog:
    """Start the server (on a fresh copy of its fixture), list its tools, stop it."""
    workdir = Workdir(spec.fixture, spec.setup)
    try:
        with McpClient(spec, workdir.path) as client:
            listing = client.list_tools()
    finally:
        workdir.close()
    if not listing.tools:
        raise McpError(spec.label, "tools/list returned no tools")
    if spec.reset_tool:  # the declared reset is the harness's, never the model's
        if not any(t.get("name") == spec.reset_tool for t in listing.tools):
            raise McpError(spec.label, f"reset_tool {spec.reset_tool!r} is not in its tool list")
        shown = [t for t in listing.tools if t.get("name") != spec.reset_tool]
        listing = ToolList(raw=listing.raw, tools=shown, pages=listing.pages)
    return LiveCatalog(catalog_from_listing(listing, f"mcp:{spec.label}", name), listing)


def write_snapshot(live: LiveCatalog, out: Path) -> None:
    """Write the raw answer atomically: a reader never sees half a file, a failure leaves none."""
    write_atomic(out, live.snapshot())


def drift(live: Catalog, pinned: Catalog) -> str | None:
    """A one-line description of how the live catalog differs from a pinned one, or None when equal."""
    if live.content_hash == pinned.content_hash:
        return None
    names, old = set(live.names), set(pinned.names)
    added, gone = sorted(names - old), sorted(old - names)
    changed = sorted(
        n
        for n in names & old
        if json.dumps(live[n].to_record(), sort_keys=True) != json.dumps(pinned[n].to_record(), sort_keys=True)
    )
    parts = [
        f"{label}: {', '.join(items[:5])}{' ...' if len(items) > 5 else ''}"
        for label, items in (("added", added), ("removed", gone), ("changed", changed))
        if items
    ]
    return (
        f"the live catalog (hash {live.content_hash}) differs from the pinned {pinned.source} "
        f"(hash {pinned.content_hash}): {'; '.join(parts) or 'order'}"
    )
