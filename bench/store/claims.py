"""Claims: several processes run the same cells into one run folder, each episode run once.

Two ``surfbench run`` processes on one machine, or Ray / joblib workers on several machines sharing
``results_dir``, may run the same cell into the same folder. Each episode is *claimed* before it runs:

- **A claim** is ``<run>/.claims/<key stem>.claim`` (:func:`surfbench.bench.store.results.key_stem`), created with
  ``O_CREAT | O_EXCL``: the file system decides atomically who gets it, locally and on NFS (v3 and
  later create exclusively on the server). It holds its owner as JSON: host name, pid namespace, pid,
  the process's start time (``/proc/<pid>/stat``), a random token per :class:`Claims` and the time.
- **Released** (deleted) only once the episode is committed, after its episodes part is written, also
  when a group commit writes it later (``RunStore.after_each_commit``): a claim never goes while its episode
  could still be lost. One never committed (an exception, a full disk) is released when the cell ends.
- **Owner gone.** Same host (host name and pid namespace: containers sharing a host name are not
  confused): the pid is not alive (``os.kill(pid, 0)``), a zombie, or a process with another start time
  (the pid was reused). That needs no clock and no waiting: a SIGKILLed run's claims are taken over by
  the next run at once. Another host's pid means nothing, so the owner keeps a **lease**: a thread
  touches its claims every ``lease_s / 4``; a claim untouched for ``lease_s`` (120 s) is expired. Ages
  are measured on the file system's clock (a file touched in ``.claims/``): hosts' clocks may differ.
- **Taking over** happens under an exclusive lock on ``.claims/.lock``: the claim is read again, deleted
  only if unchanged, and created anew with ``O_EXCL``; two processes that both judged an owner gone never
  both run its episode, and a live claim is never deleted.
- **Committed since the start.** ``run_cell`` reads the committed keys once; another process may have
  committed and released an episode since. So each claim is followed by a check
  (:class:`CommitIndex`): the episode's part file, or the keys of the group
  parts, each read once and listed again only when the folder changed (listing 10,000 parts takes
  ~6 ms, as long as a quick episode).
- **Held by a live process**: skipped; at the end of the cell :meth:`Claims.wait` polls every 0.5 s,
  saying how many episodes are in other processes' hands, until each is committed or its owner is gone
  (then this process runs it), so the cell's summary counts every episode. It gives up after ``stall_s``
  (30 min) in which none of them finished: nearly 3x the longest episode of the reference runs (11 min,
  a 0.5B model on forge), so only a hung process is given up on; its rows land when it finishes.

Limits: a host paused for longer than the lease (a suspended VM) can lose its claims to another host,
and both commit the episode (``report`` then names the duplicate key). On NFS, a part another machine
has just written must be visible to lookups here: mount with ``lookupcache=positive``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TextIO

from surfbench.bench.base.owned import HOST as HOST
from surfbench.bench.base.owned import PIDNS as PIDNS
from surfbench.bench.base.owned import pid_alive
from surfbench.bench.base.owned import proc_stat as _proc_stat
from surfbench.bench.store.results import GROUP_MARK, ResultsError, RunStore, key_stem


class CommitIndex:
    """Whether an episode is committed *now* (another process may have committed it since we looked)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "episodes.parquet"
        self._groups: dict[tuple[str, int], frozenset[str]] = {}
        self._trusted_mtime: int | None = None

    def committed(self, key: str, stamp: int) -> bool:
        """Whether ``key`` is committed; ``stamp``: the file-system time of a claim created just before.

        The group parts are listed again only when the folder's mtime changed. A part renamed in during
        the same clock tick as the last listing leaves the mtime as it was, so a listing is trusted only
        if that mtime is older than ``stamp`` (then any later change gets a newer mtime).
        """
        if (self.folder / f"part-{key_stem(key)}.parquet").exists():
            return True
        try:
            mtime = os.stat(self.folder).st_mtime_ns
        except FileNotFoundError:
            return False
        if mtime != self._trusted_mtime:
            groups: dict[tuple[str, int], frozenset[str]] = {}
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith("part-") and GROUP_MARK in name and name.endswith(".parquet"):
                        ident = (name, entry.inode())  # a group rewritten by discard() is a new file
                        groups[ident] = self._groups.get(ident) or _group_keys(Path(entry.path))
            self._groups = groups
            self._trusted_mtime = mtime if stamp > mtime else None
        return any(key in keys for keys in self._groups.values())


def _group_keys(path: Path) -> frozenset[str]:
    import pyarrow.parquet as pq

    try:
        return frozenset(str(k) for k in pq.read_table(path, columns=["episode_key"]).column(0).to_pylist())
    except FileNotFoundError:
        return frozenset()


LEASE_S = 120.0
"""A claim from another host that nobody touched for this long is expired (its owner refreshes it every
quarter of that)."""
POLL_S = 0.5
STALL_S = 1800.0
NOTE_EVERY_S = 30.0

Taken = Literal["mine", "busy", "done"]

_LIVE_TOKENS: set[str] = set()  # this process's open Claims: its own pid is alive, but a closed one's claim is not


@dataclass(frozen=True)
class Owner:
    """Who holds a claim."""

    host: str
    pidns: str
    pid: int
    start: int | None
    token: str
    time: str

    @classmethod
    def parse(cls, raw: bytes) -> Owner | None:
        """The owner recorded in a claim; None for an empty or unreadable one."""
        try:
            data = json.loads(raw)
            return cls(
                str(data["host"]), str(data["pidns"]), int(data["pid"]),
                None if data.get("start") is None else int(data["start"]), str(data["token"]), str(data["time"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError):
            return None

    def local(self) -> bool:
        """Whether the owner runs on this host, in this pid namespace (its pid means something here)."""
        return self.host == HOST and self.pidns == PIDNS

    def alive(self) -> bool:
        """Whether the owning process still runs (only meaningful for a local owner)."""
        if self.pid == os.getpid():
            return self.token in _LIVE_TOKENS
        return pid_alive(self.pid, self.start)  # not a zombie, nor a reused pid (bench/base/owned.py)

    def describe(self) -> str:
        """``host:pid``, for messages."""
        return f"{self.host}:{self.pid}"


class Claims:
    """This process's claims on the episodes of one run folder (see the module docstring)."""

    def __init__(self, root: Path, lease_s: float = LEASE_S, stall_s: float = STALL_S) -> None:
        self.folder = root / ".claims"
        self.lease_s = lease_s
        self.stall_s = stall_s
        self.token = uuid.uuid4().hex
        stat = _proc_stat(os.getpid())
        self._owner = Owner(HOST, PIDNS, os.getpid(), stat[1] if stat else None, self.token, "")
        self._index = CommitIndex(root)
        self._held: dict[str, Path] = {}
        self._guard = threading.Lock()  # _held is read by the lease thread
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self.by_others = 0
        """Episodes found committed by another process after this one had read the committed keys."""
        self.reclaimed: set[str] = set()
        """Owners (``host:pid``) that were gone and whose claims this process took over."""
        self.given_up: list[str] = []
        """Episodes :meth:`wait` stopped waiting for (their owners live but none finished in ``stall_s``)."""
        _LIVE_TOKENS.add(self.token)

    def take(self, key: str, check: bool = True) -> Taken:
        """Claim ``key`` to run it.

        Returns ``mine`` (this process holds the claim and the episode is not committed), ``busy`` (a
        live process holds it) or ``done`` (it got committed meanwhile; the claim is released again).
        ``check=False``: skip the commit check (to redo a committed episode, ``retry_errors``).
        """
        with self._guard:
            if key in self._held:
                return "mine"
        path = self.folder / f"{key_stem(key)}.claim"
        stamp = self._create(path)
        if stamp is None:
            stamp = self._take_over(path)
            if stamp is None:
                return "busy"
        with self._guard:
            self._held[key] = path
        if self._beat is None:
            self._beat = threading.Thread(target=self._refresh, name="surfbench-claims", daemon=True)
            self._beat.start()
        if check and self._index.committed(key, stamp):
            self.release([key])
            self.by_others += 1
            return "done"
        return "mine"

    def release(self, keys: Iterable[str]) -> None:
        """Delete the claims on ``keys`` that this object holds (call once their episodes are committed)."""
        for key in keys:
            with self._guard:
                path = self._held.pop(key, None)
            if path is None:
                continue
            try:
                owner = Owner.parse(path.read_bytes())
            except FileNotFoundError:
                continue
            if owner is not None and owner.token == self.token:  # not one taken over after our lease expired
                path.unlink(missing_ok=True)

    def close(self) -> None:
        """Release every claim still held (episodes never committed: others may run them) and stop."""
        with self._guard:
            keys = list(self._held)
        self.release(keys)
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        (self.folder / f".clock-{self.token}").unlink(missing_ok=True)
        _LIVE_TOKENS.discard(self.token)

    def wait(self, keys: Sequence[str], label: str, out: TextIO | None = None) -> Iterator[str]:
        """Wait for episodes other processes hold; yield each one whose owner is gone, to run it here.

        Returns when every one is committed or run here, or after ``stall_s`` in which none of them
        finished (then it says so: those rows land in the folder when their owners finish).
        """
        stream = out or sys.stderr
        pending = list(keys)
        progress_at = noted_at = time.monotonic()
        noted = -1
        while pending:
            left = []
            for key in pending:
                state = self.take(key)
                if state == "busy":
                    left.append(key)
                    continue
                if state == "mine":
                    yield key
                progress_at = time.monotonic()
            pending = left
            if not pending:
                return
            now = time.monotonic()
            if now - progress_at > self.stall_s:
                print(
                    f"surfbench: {label}: stopped waiting after {self.stall_s / 60:.0f} min in which none of "
                    f"{len(pending)} episode(s) held by {self._holders(pending)} finished; they are committed "
                    "when those processes finish, and this summary leaves them out",
                    file=stream, flush=True,
                )  # fmt: skip
                self.given_up = pending
                return
            if len(pending) != noted or now - noted_at >= NOTE_EVERY_S:
                print(
                    f"surfbench: {label}: waiting for {len(pending)} episode(s) in other processes' hands "
                    f"({self._holders(pending)})",
                    file=stream, flush=True,
                )  # fmt: skip
                noted, noted_at = len(pending), now
            time.sleep(POLL_S)

    def report(self, label: str, ran: int, out: TextIO | None = None) -> None:
        """Say what sharing the folder changed: owners taken over, episodes other processes ran."""
        stream = out or sys.stderr
        if self.reclaimed:
            gone = ", ".join(sorted(self.reclaimed))
            print(f"surfbench: {label}: took over the claims of processes that are gone: {gone}", file=stream)
        if self.by_others:
            print(
                f"surfbench: {label}: {ran} episode(s) run here, {self.by_others} by other processes sharing "
                "the run folder",
                file=stream, flush=True,
            )  # fmt: skip

    def _create(self, path: Path) -> int | None:
        """Create the claim; its file-system mtime, or None when one exists."""
        owner = {**asdict(self._owner), "time": datetime.now(UTC).isoformat(timespec="milliseconds")}
        for _ in range(2):
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                return None
            except FileNotFoundError:
                self.folder.mkdir(parents=True, exist_ok=True)
                continue
            try:
                os.write(fd, json.dumps(owner).encode("utf-8"))
                return os.fstat(fd).st_mtime_ns
            except OSError as exc:
                path.unlink(missing_ok=True)
                raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None
            finally:
                os.close(fd)
        raise ResultsError(f"cannot create {path}: its folder keeps disappearing")

    def _take_over(self, path: Path) -> int | None:
        """Take the claim at ``path`` if its owner is gone; the new claim's mtime, or None if it is busy."""
        try:
            raw, mtime = path.read_bytes(), path.stat().st_mtime_ns
        except FileNotFoundError:  # released meanwhile
            return self._create(path)
        owner = Owner.parse(raw)
        if owner is not None and owner.local():
            gone = not owner.alive()
        else:  # another host, or a claim still being written (or whose writer died at once): the lease
            gone = self._fs_now() - mtime > self.lease_s * 1e9
        if not gone:
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                unchanged = path.read_bytes() == raw and path.stat().st_mtime_ns == mtime
            except FileNotFoundError:
                return self._create(path)
            if not unchanged:  # refreshed, released or taken over meanwhile: judged again on the next try
                return None
            path.unlink()
            stamp = self._create(path)
        if stamp is not None:
            self.reclaimed.add(owner.describe() if owner else "a process that died while claiming")
        return stamp

    def _fs_now(self) -> int:
        """The file system's current time (a file's mtime), not this host's clock."""
        clock = self.folder / f".clock-{self.token}"
        clock.touch()  # created, or os.utime with no times: the server sets its own time (NFS)
        return clock.stat().st_mtime_ns

    def _holders(self, keys: Sequence[str]) -> str:
        owners: set[str] = set()
        for key in keys:
            with contextlib.suppress(OSError):
                owner = Owner.parse((self.folder / f"{key_stem(key)}.claim").read_bytes())
                owners.add(owner.describe() if owner else "?")
        return ", ".join(sorted(owners)) or "?"

    def _refresh(self) -> None:
        """Touch every held claim while this process works: the lease other hosts judge it by."""
        while not self._stop.wait(self.lease_s / 4):
            with self._guard:
                paths = list(self._held.values())
            for path in paths:
                with contextlib.suppress(OSError):
                    os.utime(path)

    def __enter__(self) -> Claims:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def retake_errored(claims: Claims, store: RunStore, keys: set[str]) -> set[str]:
    """Claim the errored episodes among ``keys`` and take them out of the store to run again; return them.

    For ``retry_errors``: the committed episodes that ended in a harness error. Those another process
    holds are left to it (it is running them again). The errors are read again once claimed: another
    process may have run some again meanwhile.
    """
    errored = store.errored_keys() & keys
    held = {k for k in errored if claims.take(k, check=False) == "mine"}
    again = store.errored_keys() & held if held else set()
    claims.release(held - again)
    store.discard(again)
    return again
