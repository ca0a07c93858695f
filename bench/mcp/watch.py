"""The user's own data, watched: a live server must never change what ``init`` copied from.

``catalog.mcp.watch`` (written by ``surfbench init --mcp``) lists the folders and files the server was given
on the command line before init pointed it at a copy. Before the first episode of a process every file under
them is hashed (sha256, with its size and modification time); after each episode they are looked at again
(size and modification time first, the hash where those changed) and any file changed, added or removed stops
the run with one line naming it: a server that writes outside its working copy (a path init did not see, a
hard-coded one) is caught at the episode that did it, not found later in the user's data.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from surfbench.bench.base.config import ConfigError

CHUNK = 1 << 20


class DataChanged(ConfigError):
    """A watched file of the user's changed during an episode: the run stops (one line, exit 2)."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(root: Path) -> list[Path]:
    if root.is_file() or root.is_symlink():
        return [root]
    if not root.is_dir():
        return []
    out = []
    for folder, dirs, names in os.walk(root):  # links are not followed: a link is a file of its own
        dirs.sort()
        out += [Path(folder) / n for n in sorted(names)]
        out += [Path(folder) / d for d in dirs if (Path(folder) / d).is_symlink()]
    return out


Entry = tuple[int, int, str]
"""(size, modification time in ns, sha256) of one file; a link: its target as the hash."""


def _entry(path: Path, hashed: str | None = None) -> Entry:
    info = path.lstat()
    if path.is_symlink():
        return info.st_size, info.st_mtime_ns, "link:" + os.readlink(path)
    return info.st_size, info.st_mtime_ns, hashed if hashed is not None else _sha256(path)


@dataclass
class DataWatch:
    """The watched paths of one suite and their state before its first episode in this process."""

    paths: tuple[str, ...]
    before: dict[str, Entry] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def snapshot(self) -> dict[str, Entry]:
        """Every watched file now (hashed)."""
        out: dict[str, Entry] = {}
        for root in self.paths:
            for path in _files(Path(root)):
                try:
                    out[str(path)] = _entry(path)
                except OSError:
                    continue
        return out

    def start(self) -> None:
        """Hash the watched files once, before the first episode (a later call does nothing)."""
        with self._lock:
            if self.before is None:
                self.before = self.snapshot()

    def changes(self) -> list[str]:
        """What differs from the state before the first episode: ``PATH (changed|new|removed)``."""
        if self.before is None:
            return []
        now: dict[str, Entry] = {}
        for root in self.paths:
            for path in _files(Path(root)):
                key = str(path)
                try:
                    info = path.lstat()
                    old = self.before.get(key)
                    same_stat = old is not None and (info.st_size, info.st_mtime_ns) == old[:2]
                    now[key] = _entry(path, old[2] if same_stat and old is not None else None)
                except OSError:
                    continue
        out = [f"{k} ({'new' if k not in self.before else 'changed'})" for k in now if self.before.get(k) != now[k]]
        return out + [f"{k} (removed)" for k in self.before if k not in now]

    def verify(self, server: str) -> None:
        """DataChanged naming what changed, if anything did."""
        changed = self.changes()
        if changed:
            more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
            raise DataChanged(
                f"MCP server {server!r} changed your data outside its working copy: {changed[0]}{more}; surfbench "
                "stopped. Give the server that path inside the fixture ({workdir}/...), or run it with --live-data "
                "if it may change your files"
            )
