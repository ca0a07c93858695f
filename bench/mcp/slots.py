"""Working folders at a stable path: one slot per episode in flight, emptied and reused.

A server that echoes its paths (``wrote /tmp/.../fixture/notes/todo.md``) answers identical calls
identically only when every episode's working copy has the same absolute path; otherwise the next
request differs, the response cache misses and a rerun is not the same run. So a fixture's copies live
in numbered slots, ``<temporary folder>/surfbench-mcp-<uid>/<key>/<n>/``, ``key`` a hash of the
fixture's path and setup hook (:func:`surfbench.bench.mcp.mcp_catalog.slot_key`). An episode takes the
lowest slot nobody holds (an exclusive ``flock`` on the slot's folder, which the kernel drops when the
holder dies, SIGKILL included), empties it and fills it: every episode of a cell run one at a time works
in slot 0, at the same path, in every run; a cell with N episodes in flight uses slots 0 to N-1, so
which slot an episode gets, and so an echoed path, then depends on timing. A slot's folder is removed
when its episode ends (the slots root too, once empty); one left behind by a killed run is emptied by
the next episode that takes it.

The root is private (mode 0700) and must be the user's own; where it is not (a shared temporary folder
where someone else made that name), each copy gets a fresh random folder instead, as before slots.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

PREFIX = "surfbench-mcp-"
ATTEMPTS = 100
"""Times a claim starts over when another process removes a folder under it (a race, not a loop)."""


def slots_root() -> Path | None:
    """``<temporary folder>/surfbench-mcp-<uid>``, made private; None when it is not safely ours."""
    root = Path(tempfile.gettempdir()) / f"{PREFIX}{os.getuid()}"
    try:
        root.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(root)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return root


def _take(folder: Path) -> int | None | bool:
    """The locked folder's descriptor; None when another episode holds it; False when it vanished (retry)."""
    try:
        folder.parent.mkdir(mode=0o700, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:  # the slots root or key folder was removed by another process just now
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    try:
        here, held = os.stat(folder), os.fstat(fd)
        same = (here.st_ino, here.st_dev) == (held.st_ino, held.st_dev)
    except FileNotFoundError:
        same = False
    if not same:  # its holder removed it between our open and our lock: take the new one
        os.close(fd)
        return False
    return fd


def _empty(folder: Path) -> bool:
    """Remove what is in ``folder`` (a killed run's leftovers); whether it is empty now."""
    for child in list(folder.iterdir()):
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                child.unlink()
    return not any(folder.iterdir())


@dataclass
class Slot:
    """A working folder held by one episode: ``folder`` is empty when claimed."""

    folder: Path
    fd: int | None = None
    """The lock on ``folder`` (None: a random folder of its own, the fallback)."""

    @classmethod
    def claim(cls, key: str) -> Slot:
        """The lowest free slot of ``key``, emptied (a fresh random folder when the root is not usable)."""
        for _ in range(ATTEMPTS):
            root = slots_root()
            if root is None:
                break
            n = 0
            while True:
                folder = root / key / str(n)
                got = _take(folder)
                if got is False:
                    break  # start over from the root
                if got is None:
                    n += 1
                    continue
                assert isinstance(got, int)
                if _empty(folder):
                    return cls(folder, got)
                os.close(got)  # leftovers it cannot remove (no permission): leave that slot alone
                n += 1
        return cls(Path(tempfile.mkdtemp(prefix=PREFIX)))

    def release(self) -> None:
        """Empty and remove the folder, drop the lock, and remove the key folder and root once empty."""
        if self.fd is None:
            shutil.rmtree(self.folder, ignore_errors=True)
            return
        _empty(self.folder)
        with contextlib.suppress(OSError):
            self.folder.rmdir()
        os.close(self.fd)
        self.fd = None
        for parent in (self.folder.parent, self.folder.parent.parent):
            with contextlib.suppress(OSError):
                parent.rmdir()  # only when empty: another episode's slot keeps it
