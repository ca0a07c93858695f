"""The memory cap of one sandboxed command: all its processes together, not each process alone.

Why a cgroup: the per-process limits (``prlimit``) hold each process alone, so a command that starts
``n`` processes may use ``n`` times the address space. A memory cgroup holds them together, also counts
the episode's files its commands wrote (they are in a tmpfs, so in memory), and tells the harness its
peak and whether the kernel killed one of its processes for memory.

Which mechanism, found once per process by :func:`memory_cap` (:func:`detect_memory_cap` reads
``/proc/self/cgroup`` and ``/proc/self/mountinfo``):

- ``cgroup2``: this process's cgroup v2 has the memory controller delegated, is writable and holds
  only this process and its descendants. They move to a leaf (``surfbench-harness``), since a cgroup
  v2 that holds processes cannot give controllers to its children; each command's cgroup goes beside it.
- ``cgroup1``: else this process's cgroup v1 memory controller, where it is writable.
- ``rlimit``: else no cgroup; the sandbox lowers the per-process limits so that processes x address
  space stays within the cap (at most :data:`FALLBACK_PROCS` processes, each with cap / FALLBACK_PROCS
  of address space).
  The detail says what was missing, and how to get a delegated cgroup where systemd-run exists.

:class:`Cgroup` is one command's cgroup, reused by the sandbox's next command (a new one costs more to
enter). bubblewrap holds the command (``--block-fd``) while :meth:`Cgroup.start` moves it in: the move
waits for an RCU grace period in the kernel (~10 ms), so it runs while bubblewrap sets the sandbox up.
Cgroups left by a harness that was killed are removed when the next one first calls :func:`memory_cap`.

This module knows nothing of the sandbox: :mod:`surfbench.bench.sandbox.box` imports it, never the reverse.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import re
import select
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

FALLBACK_PROCS = 16  # without a cgroup: this many processes at most, each with cap / 16 of address space
LEAF = "surfbench-harness"  # cgroup v2: where this process moves itself so that its cgroup may have children
CHILD_PID = re.compile(rb'"child-pid":\s*(\d+)\D')  # in what bubblewrap writes to --info-fd


@dataclass(frozen=True)
class MemoryCap:
    mechanism: str
    """``cgroup2`` or ``cgroup1`` (a memory cgroup per command), or ``rlimit`` (per-process limits lowered)."""
    parent: Path | None
    """The cgroup in which each command's cgroup is made (None for ``rlimit``)."""
    detail: str
    """What was found, or what was missing."""


@functools.cache
def memory_cap() -> MemoryCap:
    """How this machine holds one command's processes to the memory cap together (see :class:`MemoryCap`)."""
    cap = detect_memory_cap(Path("/proc/self/cgroup"), Path("/proc/self/mountinfo"))
    for stale in cap.parent.glob("surfbench-*-*") if cap.parent else ():  # left by a process that was killed
        if not Path(f"/proc/{stale.name.split('-')[1]}").exists():
            with contextlib.suppress(OSError):
                stale.rmdir()
    return cap


def detect_memory_cap(cgroup_file: Path, mountinfo: Path) -> MemoryCap:
    own: dict[str, str] = {}  # controller ("" for cgroup v2) -> this process's cgroup path
    for line in cgroup_file.read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        own.update((name, path) for name in (controllers.split(",") if controllers else [""]))
    mounts: dict[str, Path] = {}  # "" (cgroup2) or "memory" (v1) -> where this process's cgroup is
    for line in mountinfo.read_text().splitlines():
        pre, _, post = line.partition(" - ")
        fields, kind = pre.split(), [*post.split(), "", "", ""]
        v1_memory = kind[0] == "cgroup" and "memory" in kind[2].split(",")
        key = "" if kind[0] == "cgroup2" else "memory" if v1_memory else None
        if key is not None and key in own and len(fields) > 4 and key not in mounts:
            root, path = fields[3], own[key]  # a mount of a sub-tree (cgroup namespaces) starts at its root
            rel = path[len(root) :] if root != "/" and path.startswith(root) else path
            mounts[key] = Path(fields[4]) / rel.lstrip("/")
    why: list[str] = []
    found = _cgroup2(mounts[""], why) if "" in mounts else None
    if found:
        return found
    if "memory" in mounts:
        where = mounts["memory"]
        if (where / "memory.limit_in_bytes").exists() and os.access(where, os.W_OK):
            return MemoryCap(
                "cgroup1", where, f"cgroup v1 memory controller: a cgroup per running command under {where}"
            )
        why.append(f"cgroup v1: {where} is not writable")
    if shutil.which("systemd-run"):
        why.append("a delegated cgroup: run surfbench in systemd-run --user --scope -p Delegate=yes")
    lowered = f"{FALLBACK_PROCS} processes x cap/{FALLBACK_PROCS} address space"
    return MemoryCap("rlimit", None, f"{lowered}; {'; '.join(why) or 'no cgroup memory controller mounted'}")


def _cgroup2(own: Path, why: list[str]) -> MemoryCap | None:
    """Commands' cgroups go under ``own`` once this process (and its children) moved to a leaf of it."""
    if own.name == LEAF and "memory" in _words(own.parent / "cgroup.subtree_control"):
        own = own.parent  # moved there before, by this process or the one that started it
    elif "memory" not in _words(own / "cgroup.controllers"):
        why.append(f"cgroup v2: no memory controller delegated to {own}")
        return None
    if not os.access(own, os.W_OK):
        why.append(f"cgroup v2: {own} is not writable")
        return None
    procs = [int(p) for p in _words(own / "cgroup.procs")]
    if any(not _descends_from_me(p) for p in procs):  # a cgroup with processes cannot give its children
        why.append(f"cgroup v2: {own} holds other processes")  # controllers; we move only our own
        return None
    try:
        (own / LEAF).mkdir(exist_ok=True)
        for pid in procs:
            with contextlib.suppress(ProcessLookupError):
                (own / LEAF / "cgroup.procs").write_text(str(pid))
        if "memory" not in _words(own / "cgroup.subtree_control"):
            (own / "cgroup.subtree_control").write_text("+memory")
    except OSError as exc:
        why.append(f"cgroup v2: {own}: {exc.strerror or exc}")
        return None
    return MemoryCap("cgroup2", own, f"cgroup v2 memory controller: a cgroup per running command under {own}")


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _descends_from_me(pid: int) -> bool:
    while pid > 1 and pid != os.getpid():
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return pid == os.getpid()


class Cgroup:
    """A memory cgroup for one command at a time, reused by the next (a new one is slower to enter)."""

    _ids = itertools.count()

    def __init__(self, cap: MemoryCap, limit: int) -> None:
        assert cap.parent is not None
        self.v2 = cap.mechanism == "cgroup2"
        self.dir = cap.parent / f"surfbench-{os.getpid()}-{next(self._ids)}"
        self.dir.mkdir()
        (self.dir / ("memory.max" if self.v2 else "memory.limit_in_bytes")).write_text(str(limit))
        with contextlib.suppress(OSError):  # without swap accounting there is no swap to close
            swap = "memory.swap.max" if self.v2 else "memory.memsw.limit_in_bytes"
            (self.dir / swap).write_text("0" if self.v2 else str(limit))
        self.peak_fd: int | None = None
        self.ooms = 0
        self.child: int | None = None

    def _ooms(self) -> int:
        words = _words(self.dir / ("memory.events" if self.v2 else "memory.oom_control"))
        counts = dict(zip(words[::2], words[1::2], strict=False))
        if "oom_kill" not in counts:  # cgroup v1 before kernel 4.13: hitting the limit is the best sign
            counts["oom_kill"] = (_words(self.dir / "memory.failcnt") or ["0"])[0]
        return int(counts["oom_kill"])

    def start(self, pid: int, info_fd: int) -> None:
        """Move bubblewrap in while it sets the sandbox up, blocked before the command; its peak starts now."""
        self.ooms, self.child = self._ooms(), None
        with contextlib.suppress(OSError):  # v2 has memory.peak from kernel 5.19, resettable per open file from 6.12
            self.peak_fd = os.open(self.dir / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes"), os.O_RDWR)
            os.write(self.peak_fd, b"reset" if self.v2 else b"0")  # else: the peak of every command it ran
        (self.dir / "cgroup.procs").write_text(str(pid))  # the slow part (~10 ms), while bubblewrap works
        data = b""  # its sandbox process, made before the line above perhaps; later ones are born inside
        while select.select([info_fd], [], [], 10)[0] and (chunk := os.read(info_fd, 4096)):
            data += chunk
            if found := CHILD_PID.search(data):
                self.child = int(found[1])  # the first process of the sandbox's PID namespace
                with contextlib.suppress(ProcessLookupError):
                    (self.dir / "cgroup.procs").write_text(str(self.child))
                return

    def finish(self) -> tuple[int | None, bool]:
        """(peak bytes, whether the kernel killed one of its processes for memory)."""
        peak = os.pread(self.peak_fd, 32, 0).split() if self.peak_fd is not None else []
        if self.peak_fd is not None:
            os.close(self.peak_fd)
            self.peak_fd = None
        return (int(peak[0]) if peak and peak[0].isdigit() else None), self._ooms() > self.ooms

    def remove(self) -> None:
        for _ in range(400):  # the last processes may still be exiting
            try:
                self.dir.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.0025)
