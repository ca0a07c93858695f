"""Run a command inside one episode's directory and nowhere else: bubblewrap, limits, a timeout.

Why bubblewrap (not Landlock): it isolates more than the file system. Each command gets its own
mount namespace whose root holds only ``/usr`` (read-only), ``/proc``, a minimal ``/dev``, a private
``/tmp`` and the episode directory at ``/work``; its own PID namespace (killing the sandbox kills
every process the command started, so a fork bomb or a never-ending command dies with it); no
network. Landlock restricts only file access, needs a 5.13+ kernel and bindings, and leaves process
and network isolation to us. bubblewrap is one Debian package (``apt-get install bubblewrap``).

Per process, set with ``prlimit``: processes (the command runs as an unprivileged user, so the kernel
enforces it, also when surfbench runs as root), file size, address space and CPU seconds; a
wall-clock timeout kills the whole sandbox; stdout and stderr go to files outside the sandbox and
only the first ``output_cap`` bytes are read back.

Per episode, a disk quota: the episode directory is a size-limited tmpfs (``bwrap --size``, bubblewrap
0.8+) that lives as long as the episode. One idle process holds the namespace it is mounted in; each
command enters that namespace (``nsenter``: its user namespace first, so no root is needed) and
starts its own sandbox there, with the tmpfs at ``/work``. A write beyond the quota fails inside with
"No space left on device"; the host disk holds none of it (the files are in memory, at most the
quota per episode). Each command's ``/tmp`` is a tmpfs of the same size. The harness reads the files
through ``/proc/<holder>/root/work``, never following a symlink. Not chosen: a fresh tmpfs per
command with the folder copied in before and back after (two copies of the whole folder and a second
sandbox per command: +10 to +50 ms for ``true`` on the seed folder, +80 to +200 ms with 50 MB in it,
on a loaded 2-core machine, where entering the namespace is lost in the noise; see
scripts/bench_sandbox.py); a loop-mounted or quota-enabled file system on the host disk (needs root).

Per command, a memory cap for all its processes together (:mod:`surfbench.bench.sandbox.memcap`): a memory
cgroup (v2, else v1) where this process may make one, else the per-process limits lowered so that
processes x address space stays within the cap. bubblewrap holds the command (``--block-fd``) until
the harness has moved it into its cgroup; the move waits for an RCU grace period in the kernel (~10
ms), so it runs while bubblewrap sets the sandbox up, and each sandbox reuses its cgroups (a new one
costs more to enter). A cgroup also counts the episode's files its commands wrote (they are in memory).

Nothing of the harness's environment reaches a command: every process of the chain (``prlimit``,
``nsenter``, bubblewrap, the disk's holder) starts with the command's own environment (``--clearenv``
cleans only what bubblewrap starts, and bubblewrap is PID 1 of the command's namespace, its
``/proc/1/environ`` readable). ``/proc`` shows only that namespace's processes. The command's open file
descriptors: stdin, stdout, stderr, those the caller passes (code mode's pipes) and, with a disk quota,
the two namespaces it already runs in (left open by ``nsenter``; they read as nothing).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from surfbench.bench.base.owned import owned_tempdir, owned_temporary

# Limits, Result and MB: callers import them from here too
from surfbench.bench.sandbox.limits import DISK_QUOTA_EXCEEDED, MB, MEMORY_EXCEEDED, Limits, Result, limit_note
from surfbench.bench.sandbox.memcap import FALLBACK_PROCS, Cgroup, MemoryCap, memory_cap
from surfbench.bench.sandbox.memcap import (
    detect_memory_cap as detect_memory_cap,  # re-exported: callers import it from here
)
from surfbench.bench.sandbox.procs import _feed, _kill, _read_capped

NOBODY = 65534  # the user a root harness drops to inside the sandbox
MOUNT = "/work"  # where the episode directory appears inside the sandbox
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
NS_GET_USERNS = 0xB701  # ioctl (linux/nsfs.h): the user namespace that owns a namespace
HOLD = "cp -a /.seed/. /work/ && echo $$ && exec cat >/dev/null"  # copies the seed in, then idles
Serve = Callable[["subprocess.Popen[bytes]", float], tuple[int | None, bool]]  # see Sandbox.run
ENOSPC = ("No space left on device", "Disk quota exceeded")
NOMEM = ("MemoryError", "Cannot allocate memory", "memory exhausted", "out of memory", "bad_alloc")


class SandboxUnavailable(RuntimeError):
    """bubblewrap is missing or cannot create namespaces on this machine."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


@functools.cache
def _tool(name: str) -> str:
    """A util-linux program by its absolute path: it runs with the command's PATH, not the harness's."""
    return shutil.which(name) or name


@functools.cache
def bwrap_has_size(exe: str) -> bool:
    """Whether this bubblewrap can size a tmpfs (``--size``: bubblewrap 0.8 and later)."""
    run = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False)
    return "--size" in run.stdout + run.stderr


def _has_usr_python() -> bool:
    return Path("/usr/bin/python3").exists() or Path("/usr/local/bin/python3").exists()


def _system_binds() -> list[str]:
    """/usr and what makes it work; ``python3`` from this interpreter's prefix when /usr has none."""
    prefix = Path(sys.base_prefix).resolve()
    python = [] if _has_usr_python() or str(prefix).startswith("/usr/") else ["--ro-bind", str(prefix), str(prefix)]
    return [
        "--ro-bind", "/usr", "/usr",
        "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
        "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
        *python,
        "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
        "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
    ]  # fmt: skip


def _release(proc: subprocess.Popen[bytes] | None, fds: list[int], base: Path | None, groups: list[Cgroup]) -> None:
    """Free an episode's disk (the idle process reads EOF and exits, the tmpfs goes with its namespace), cgroups."""
    for group in groups:
        group.remove()
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    for stream in (proc.stdin, proc.stdout, proc.stderr) if proc else ():
        if stream is not None:
            stream.close()
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


class Sandbox:
    """One episode's directory (``root`` for the harness, /work inside), ``seed``'s copy; a sandbox per command."""

    def __init__(self, limits: Limits | None = None, seed: Path | None = None, cap: MemoryCap | None = None) -> None:
        self.limits = lim = limits or Limits()
        exe = bwrap_path()
        if exe is None:
            why = "the workspace suite and code mode run commands in a bubblewrap sandbox"
            raise SandboxUnavailable(f"{why}: {INSTALL_HINT}")
        self.bwrap = exe
        self.drop_root = os.geteuid() == 0
        self.uid: int | None = NOBODY if self.drop_root else None
        self.groups: list[int] | None = [] if self.drop_root else None
        self.cap = cap or (memory_cap() if lim.memory_cap_bytes else MemoryCap("rlimit", None, "no cap"))
        self.peak_disk_bytes: int | None = None
        """The most the episode directory held, sampled while commands ran (None without a quota)."""
        self.peak_memory_bytes: int | None = None
        self.groups_idle: list[Cgroup] = []
        self.groups_made: list[Cgroup] = []
        self.ns_fds: list[int] = []
        self.holder: subprocess.Popen[bytes] | None = None
        base = owned_tempdir("surfbench-ws-")  # its owner in its name: a killed run's is swept (base/owned.py)
        base.chmod(0o755)  # the sandbox user must reach work/ inside it
        self.root = base / "work"
        if seed is not None:
            shutil.copytree(seed, self.root, symlinks=False)
        else:
            self.root.mkdir()
        self._hand_over()
        if lim.disk_quota_bytes:
            try:
                self._hold_disk()  # the copy on the host disk seeds the tmpfs, then goes
            finally:
                shutil.rmtree(base, ignore_errors=True)
        self.close = weakref.finalize(
            self, _release, self.holder, self.ns_fds, None if self.holder else base, self.groups_made
        )
        """Free the episode's disk now (garbage collection does it otherwise)."""

    def _hand_over(self) -> None:
        """Hand the episode directory to the sandbox user (when surfbench runs as root)."""
        if not self.drop_root:
            return
        for dirpath, dirnames, filenames in os.walk(self.root):
            os.chown(dirpath, NOBODY, NOBODY)
            for name in dirnames + filenames:
                os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)

    def _hold_disk(self) -> None:
        if not bwrap_has_size(self.bwrap):
            raise SandboxUnavailable(
                f"the disk quota needs bubblewrap 0.8 or later (tmpfs --size), {self.bwrap} is older: upgrade "
                "it, or set the disk quota to 0 to run without one"
            )
        if shutil.which("nsenter") is None:
            raise SandboxUnavailable("the disk quota needs nsenter (util-linux)")
        exe = [] if self.bwrap.startswith("/usr/") else ["--ro-bind", self.bwrap, self.bwrap]
        argv = [
            self.bwrap, *_system_binds(), *exe,
            "--dev-bind", "/dev", "/dev",  # no new devpts: then one user namespace, which owns the mounts
            "--bind", "/proc", "/proc",  # so that /proc/self is right for the sandboxes started in here
            "--dir", "/tmp",  # bubblewrap builds each command's root there
            "--size", str(self.limits.disk_quota_bytes), "--tmpfs", MOUNT,
            "--ro-bind", str(self.root), "/.seed",
            "--unshare-user",
            "--", "sh", "-c", HOLD,  # holds the namespace until its stdin closes
        ]  # fmt: skip
        self.holder = holder = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.environment(),
            start_new_session=True, user=self.uid, group=self.uid, extra_groups=self.groups,
        )  # fmt: skip
        assert holder.stdout is not None and holder.stderr is not None
        line = holder.stdout.readline().strip()
        if not line.isdigit():
            why = holder.stderr.read().decode("utf-8", "replace").strip() or "no reason given"
            _release(holder, [], None, [])
            raise SandboxUnavailable(f"bubblewrap could not make the episode's disk ({self.limits}): {why}")
        mnt = os.open(f"/proc/{int(line)}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        self.ns_fds += [mnt, fcntl.ioctl(mnt, NS_GET_USERNS)]  # fds: never another process's, whatever pid reuse
        self.root = Path(f"/proc/{int(line)}/root{MOUNT}")

    def disk_used(self) -> int:
        """Bytes the episode directory holds now (the tmpfs's own count, or a walk of the host directory)."""
        if self.holder:
            st = os.statvfs(self.root)
            return (st.f_blocks - st.f_bfree) * st.f_frsize
        return sum(
            os.lstat(os.path.join(d, n)).st_blocks * 512 for d, dirs, files in os.walk(self.root) for n in dirs + files
        )

    def _sample_disk(self) -> int | None:
        if not self.holder:
            return None
        used = self.disk_used()
        self.peak_disk_bytes = max(self.peak_disk_bytes or 0, used)
        return used

    def process_limits(self) -> tuple[int, int]:
        """(processes, address space of each) for one command: lowered when no cgroup holds the cap."""
        lim = self.limits
        if self._capped() or not lim.memory_cap_bytes:
            return lim.max_procs, lim.max_memory_bytes
        procs = min(lim.max_procs, FALLBACK_PROCS)
        return procs, min(lim.max_memory_bytes, lim.memory_cap_bytes // procs)

    def _group(self) -> Cgroup:
        """An idle cgroup of this sandbox's, or a new one (commands of a parallel group run at once)."""
        try:
            return self.groups_idle.pop()
        except IndexError:
            self.groups_made.append(Cgroup(self.cap, self.limits.memory_cap_bytes))
            return self.groups_made[-1]

    def _capped(self) -> bool:
        return self.cap.mechanism != "rlimit" and bool(self.limits.memory_cap_bytes)

    def environment(self) -> dict[str, str]:
        """The command's whole environment; every process of the sandbox's chain starts with it too."""
        path = f"{'' if _has_usr_python() else str(Path(sys.base_prefix).resolve() / 'bin') + ':'}"
        path += f"{MOUNT}/tools:/usr/local/bin:/usr/bin:/bin"
        return {"PATH": path, "HOME": MOUNT, "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}

    def argv(self, command: list[str], readonly: bool = False, gate: tuple[int, int] | None = None) -> list[str]:
        """``gate``: (block fd, info fd) to hold the command until it is in its cgroup (bwrap --block-fd)."""
        lim = self.limits
        env = [arg for name, value in self.environment().items() for arg in ("--setenv", name, value)]
        inner = [
            self.bwrap, *_system_binds(),
            "--proc", "/proc",
            "--dev", "/dev",
            *(["--size", str(lim.disk_quota_bytes)] if self.holder else []), "--tmpfs", "/tmp",
            "--ro-bind" if readonly else "--bind", MOUNT if self.holder else str(self.root), MOUNT,
            "--chdir", MOUNT,
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--clearenv", *env,
            *(["--block-fd", str(gate[0]), "--info-fd", str(gate[1])] if gate else []),
            "--",
            *command,
        ]  # fmt: skip
        if self.holder:  # the user namespace first: it owns the mount namespace, and grants entering it
            mnt, user = self.ns_fds
            fds = [f"--user=/proc/self/fd/{user}", f"--mount=/proc/self/fd/{mnt}"]
            inner = [_tool("nsenter"), *fds, "--preserve-credentials", "--", *inner]
        procs, memory = self.process_limits()
        limits = [f"--nproc={procs}", f"--fsize={lim.max_file_bytes}", f"--as={memory}", f"--cpu={lim.cpu_s}"]
        return [_tool("prlimit"), *limits, "--", *inner]

    def run(
        self, command: list[str], stdin: str = "", readonly: bool = False, pass_fds: Sequence[int] = (),
        serve: Serve | None = None,
    ) -> Result:  # fmt: skip
        """Run ``command`` (argv) with ``stdin``; never raises for what the command does.

        ``pass_fds`` stay open in the command (same numbers); ``serve(proc, started)`` then talks to it over
        them instead of a plain wait, and returns (exit code, timed out) as the wait would (:mod:`.channel`).
        """
        started = time.perf_counter()
        before = self._sample_disk()
        group = self._group() if self._capped() else None
        fds: dict[str, int] = {}
        if group is not None:  # bubblewrap waits on "block" till "release" is written, tells its child on "told"
            fds.update(zip(("block", "release"), os.pipe(), strict=True))
            fds.update(zip(("info", "told"), os.pipe(), strict=True))
        peak, oom = None, False
        try:
            with owned_temporary("surfbench-out-") as tmp:
                out_path, err_path = Path(tmp) / "out", Path(tmp) / "err"
                with open(out_path, "wb") as out, open(err_path, "wb") as err:
                    gate = (fds["block"], fds["told"]) if fds else None
                    proc = subprocess.Popen(
                        self.argv(command, readonly, gate), stdin=subprocess.PIPE, stdout=out, stderr=err,
                        pass_fds=[*self.ns_fds, *(gate or ()), *pass_fds], start_new_session=True, user=self.uid,
                        group=self.uid, extra_groups=self.groups, env=self.environment(),
                    )  # fmt: skip
                    if group is not None:
                        self._enter(group, proc, fds)
                    feeder = threading.Thread(target=_feed, args=(proc, stdin.encode("utf-8", "replace")), daemon=True)
                    feeder.start()
                    code, timed_out = (serve or self._wait)(proc, started)
                    feeder.join(timeout=1)
                stdout, cut_out = _read_capped(out_path, self.limits.output_cap)
                stderr, cut_err = _read_capped(err_path, self.limits.output_cap // 4)
        finally:
            for fd in fds.values():  # the info pipe only now: bubblewrap dies of SIGPIPE writing to a closed one
                os.close(fd)
            if group is not None:
                peak, oom = group.finish()
                self.groups_idle.append(group)
        if peak is not None:
            self.peak_memory_bytes = max(self.peak_memory_bytes or 0, peak)
        error, note = self._limit_hit(stderr, oom, before, self._sample_disk())
        took = time.perf_counter() - started
        return Result(code, stdout, stderr, timed_out, cut_out or cut_err, took, error, note, peak)

    def _enter(self, group: Cgroup, proc: subprocess.Popen[bytes], fds: dict[str, int]) -> None:
        """Move the command into its cgroup while bubblewrap sets its sandbox up, then let the command start."""
        for name in ("block", "told"):  # bubblewrap's ends
            os.close(fds.pop(name))
        try:
            group.start(proc.pid, fds["info"])
        except OSError:
            if group.child is not None:  # it would run on, alone, once bubblewrap is killed
                with contextlib.suppress(OSError):
                    os.kill(group.child, 9)
            _kill(proc)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.write(fds["release"], b"1")

    def _wait(self, proc: subprocess.Popen[bytes], started: float) -> tuple[int | None, bool]:
        """The exit code, or (None, True) once the timeout killed the sandbox; samples the disk meanwhile."""
        deadline = started + self.limits.timeout_s
        while True:
            try:
                return proc.wait(timeout=max(0.0, min(0.1, deadline - time.perf_counter()))), False
            except subprocess.TimeoutExpired:
                self._sample_disk()
                if time.perf_counter() >= deadline:
                    _kill(proc)
                    return None, True

    def _limit_hit(self, stderr: str, oom: bool, before: int | None, used: int | None) -> tuple[str | None, str]:
        """Which limit the command ran into: the kernel's word for memory in a cgroup, else what it printed."""
        lim = self.limits
        said_nomem = not self._capped() and any(p in stderr for p in NOMEM)  # what a failed allocation prints
        if oom or (lim.memory_cap_bytes and said_nomem):
            return MEMORY_EXCEEDED, limit_note(lim, MEMORY_EXCEEDED)
        filled = before is not None and used is not None and before < used >= lim.disk_quota_bytes - 64 * 1024
        if self.holder and (filled or any(p in stderr for p in ENOSPC)):  # filled it, or was refused a write
            return DISK_QUOTA_EXCEEDED, limit_note(lim, DISK_QUOTA_EXCEEDED)
        return None, ""


def describe(limits: Limits | None = None) -> str:
    """Which mechanisms hold the disk quota and the memory cap on this machine (for the README and logs)."""
    lim = limits or Limits()
    exe = bwrap_path()
    if not lim.disk_quota_bytes:
        disk = "no quota (the episode directory is on the host disk)"
    elif exe and bwrap_has_size(exe):
        disk = f"{lim.disk_quota_bytes // MB} MB per episode: a tmpfs held in its own namespace (bwrap --size)"
    else:
        disk = "unavailable: bubblewrap 0.8 or later is needed (tmpfs --size)"
    cap = memory_cap()
    memory = f"{lim.memory_cap_bytes // MB} MB per command by {cap.mechanism}: {cap.detail}"
    return f"disk: {disk}\nmemory: {memory if lim.memory_cap_bytes else 'no cap per command'}"


if __name__ == "__main__":
    print(describe())
