"""Processes and the temporary folders they own: who a process is, whether it still runs, and its folders' sweep.

A process is known by its host, its pid namespace, its pid and its start time (``/proc/<pid>/stat``): the
owner of an episode claim (:mod:`surfbench.bench.store.claims`) and of every temporary folder surfbench makes.
It is gone when its pid is not alive, is a zombie, or is a process that started at another time (the pid
was reused).

Every temporary folder surfbench makes (:data:`PREFIXES`: a run's Hydra and failure folders, an episode's
sandbox workspace and a command's output, the scaffold check's run) is made by :func:`owned_tempdir` or
:func:`owned_temporary`, its owner in its name (``PREFIX<tag>-<pid>-<start>-<random>``, the tag a hash of the
host and pid namespace), so that no kill can leave a folder without one. The process deletes its folders
when done; one killed with SIGKILL cannot, so every run first removes the folders whose owner is gone
(:func:`remove_stale`). A folder of a live process, of another host or pid namespace, of another user, or
named by an older surfbench (no owner in its name) is left alone.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIXES = ("surfbench-hydra-", "surfbench-failures-", "surfbench-ws-", "surfbench-out-", "surfbench-check-")
"""The temporary folders surfbench makes: a run's Hydra and failure folders (bench/cli/session.py), an
episode's sandbox workspace and a command's output (bench/sandbox/box.py), the scaffold check's run."""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


HOST = socket.gethostname()
PIDNS = _pid_namespace()
_TAG = hashlib.sha256(f"{HOST}\0{PIDNS}".encode()).hexdigest()[:8]
_KINDS = "|".join(re.escape(p.removeprefix("surfbench-").removesuffix("-")) for p in PREFIXES)
_OWNED = re.compile(rf"^surfbench-(?:{_KINDS})-([0-9a-f]{{8}})-([0-9]+)-([0-9]+)-[^-]+$")


def proc_stat(pid: int) -> tuple[str, int] | None:
    """A process's state letter and start time (clock ticks after boot), or None without /proc."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the command name may hold spaces and parentheses
    return fields[0], int(fields[19])


def pid_alive(pid: int, start: int | None) -> bool:
    """Whether process ``pid`` of this host and pid namespace runs, and is the one started at ``start`` (None: any)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    stat = proc_stat(pid)
    if stat is None:
        return True
    state, started = stat
    if state == "Z":  # exited, not yet reaped by its parent
        return False
    return start is None or started == start  # another start time: the pid was reused


@functools.cache
def _start(pid: int) -> int:
    stat = proc_stat(pid)
    return stat[1] if stat else 0  # 0: no /proc, only the pid is checked


def owned_tempdir(prefix: str, root: Path | None = None) -> Path:
    """A new private (0700) folder in ``root`` (the temporary directory), its owner (this process) in its name.

    ``prefix``: one of :data:`PREFIXES` (ValueError otherwise: a folder the sweep could not judge).
    """
    if prefix not in PREFIXES:
        raise ValueError(f"temporary folder prefix {prefix!r}: not one the sweep removes ({', '.join(PREFIXES)})")
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{prefix}{_TAG}-{pid}-{_start(pid)}-", dir=root))


@contextlib.contextmanager
def owned_temporary(prefix: str, root: Path | None = None) -> Iterator[Path]:
    """:func:`owned_tempdir` as a context: the folder, deleted when the block ends (as tempfile.TemporaryDirectory)."""
    folder = owned_tempdir(prefix, root)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale(root: Path | None = None) -> list[Path]:
    """Remove the folders of :data:`PREFIXES` in ``root`` (the temporary directory) whose owner is gone.

    Returns the folders removed. Never fails a run: a folder that cannot be read or removed stays.
    """
    try:
        entries = list(os.scandir(root or tempfile.gettempdir()))
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None or match.group(1) != _TAG:
            continue  # not ours to judge: another host or pid namespace, or an older surfbench's name
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
        except OSError:
            continue
        pid, start = int(match.group(2)), int(match.group(3))
        if pid == os.getpid() or pid_alive(pid, start or None):
            continue  # this process's own folders are its to delete
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed
