"""Start an MCP server so that nothing it starts outlives the harness (``python -S guard.py PID [--no-pidns] -- argv``).

The harness starts this file in a new session (its own process group). The guard asks Linux to send it
SIGTERM when the harness dies (``prctl(PR_SET_PDEATHSIG)``, which fires on SIGKILL of the harness too)
and becomes a child subreaper (``PR_SET_CHILD_SUBREAPER``: a process the server orphans, a ``setsid``
daemon included, is re-parented to the guard, not to the system's init, so it stays findable below it).

Where the kernel allows it, the server runs in its own **PID namespace**: the guard calls
``unshare(CLONE_NEWPID)`` (as root as is; otherwise inside a new user namespace that maps the user to
itself) and forks a tiny init (pid 1 of the namespace, this same file, no exec) that starts the server
as pid 2 and exits when the server does. When a namespace's init ends, the kernel SIGKILLs every
process in it: whatever the server started, in its group or in a session of its own, SIGTERM ignored
or not, dies with it. The init has a parent-death signal of SIGKILL on the guard, so this holds after
SIGKILL of the guard (or of the harness) too: it needs no cleanup code of ours to run. Only the PID
namespace and a **/proc of its own** are new: the init unshares the mount namespace (private, so
the host's mount table is untouched) and mounts the namespace's proc over ``/proc`` (``own_proc``):
the server sees only the init and itself there, not the harness (its ``/proc/PID/environ``, where
keys live, and its command line) nor any other process of the host; ``/proc/self`` is 2. Every other
mount is the host's: the same files, working directory, environment (the server's own, stripped by
the client), network and capabilities (it is not a sandbox: the git suite's mcp-server-git reads
its repository, HTTP clients reach the network as before). Where the kernel refuses that /proc (a
container whose /proc is partly masked) the host's stays, as it does without a namespace.

Without a namespace (a container that forbids ``unshare``, user namespaces turned off, or
``SURFBENCH_MCP_PIDNS=0`` in the harness's environment: ``--no-pidns``) the server is the guard's
direct child and the guard's sweep does the work: once the server exits, every process still in the
guard's group or below it (the subreaper keeps orphans there) gets SIGTERM, and SIGKILL after
``GRACE_S``. On SIGTERM, SIGINT or SIGHUP the guard SIGKILLs everything below it, then its group,
itself included. Left to the fallback's limits: a process that leaves the tree *and* the group while
the guard itself is SIGKILLed at the same moment (nothing then runs to find it).

Only the standard library: it starts with ``-S`` in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
NOT_FOUND = 127
GRACE_S = 1.0
"""How long what the server left behind may take to leave after SIGTERM, before SIGKILL."""
STOP = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_libc = ctypes.CDLL(None, use_errno=True)


def _procs() -> dict[int, tuple[int, int, str]]:
    """Every process: pid -> (parent pid, process group, state letter), read from /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        table[int(name)] = (int(fields[1]), int(fields[2]), fields[0].decode())
    return table


def leftovers(root: int) -> list[int]:
    """Live processes below ``root`` (by parent chain) or in its process group, ``root`` itself left out."""
    table, group = _procs(), os.getpgid(root)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    found |= {pid for pid, (_, pgrp, _) in table.items() if pgrp == group}
    return sorted(pid for pid in found - {root} if table.get(pid, (0, 0, "Z"))[2] not in "ZX")


def _reap() -> None:
    """Collect the exit status of ended children (orphans re-parented to the guard end here too)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def _signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def kill_below(root: int, rounds: int = 50) -> None:
    """SIGKILL everything below ``root`` and in its group until a scan finds nothing (a forking process too)."""
    for _ in range(rounds):
        pids = leftovers(root)
        if not pids:
            return
        _signal_all(pids, signal.SIGKILL)
        _reap()


def sweep(root: int, grace_s: float = GRACE_S) -> None:
    """SIGTERM what the server left below ``root`` or in its group; SIGKILL what is still there after ``grace_s``."""
    pids = leftovers(root)
    if not pids:
        return
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while leftovers(root) and time.monotonic() < deadline:
        _reap()
        time.sleep(0.02)
    kill_below(root)


def _stop(signum: int = 0, frame: object = None) -> None:
    """The harness is gone or asks us to stop: kill every process below the guard, then its group, itself too."""
    kill_below(os.getpid())
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _enter_user_namespace() -> bool:
    """A new user namespace mapping this user and group to themselves (for a user without CAP_SYS_ADMIN)."""
    uid, gid = os.geteuid(), os.getegid()
    if _libc.unshare(CLONE_NEWUSER) != 0:
        return False
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError:
        return False
    return True


def _can_enter_user_namespace() -> bool:
    """Try it in a throwaway child first: a half-made user namespace (maps refused) would leave us unmapped."""
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _enter_user_namespace() else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def new_pid_namespace() -> bool:
    """Make our next child the init of a new PID namespace; False when the kernel refuses (the fallback)."""
    if _libc.unshare(CLONE_NEWPID) == 0:
        return True
    if os.geteuid() == 0 or not _can_enter_user_namespace() or not _enter_user_namespace():
        return False
    return _libc.unshare(CLONE_NEWPID) == 0


def own_proc() -> bool:
    """Mount a /proc of our PID namespace over the host's, in a mount namespace of our own; False if refused.

    Called by the namespace's init before it starts the server: the server then sees only the init and
    itself there, not the harness's environment or command line. The mount stays private (the host's mount
    table is not touched); every other mount is the host's, as it was. Refused (the host's /proc stays) where
    the kernel will not mount a proc file system for an unprivileged user: a container whose /proc is
    partly masked.
    """
    if _libc.unshare(CLONE_NEWNS) != 0 or _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    return _libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0


def _status_code(status: int) -> int:
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code


def _exec(command: list[str]) -> None:
    """Become the server, with the signal dispositions a shell would give it (Python ignores SIGPIPE)."""
    for signum in (*STOP, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_DFL)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"surfbench: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr, flush=True)
    os._exit(NOT_FOUND)


def _init(command: list[str]) -> None:
    """Pid 1 of the namespace: mount its own /proc, start the server as pid 2, reap orphans, end when the server ends.

    The kernel then SIGKILLs every other process of the namespace.
    """
    for signum in STOP:  # pid 1 ignores a signal it has no handler for: these end the namespace
        signal.signal(signum, lambda signum, frame: os._exit(128 + signum))
    own_proc()
    server = os.fork()
    if server == 0:
        _exec(command)
    while True:
        try:
            pid, status = os.wait()
        except InterruptedError:
            continue
        if pid == server:
            os._exit(_status_code(status))


def _child(command: list[str], isolated: bool, lifeline: int) -> None:
    """The guard's child: SIGKILL when the guard dies (checked after arming it: no gap); then init or server."""
    for signum in STOP:
        signal.signal(signum, signal.SIG_DFL)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if select.select([lifeline], [], [], 0)[0]:  # end of file: the guard died before the prctl above
        os._exit(1)
    os.close(lifeline)
    if isolated:
        _init(command)
    _exec(command)


def main(argv: list[str]) -> int:
    """Arm the parent-death signal, start the server, wait for it, sweep; its exit status is ours."""
    parent, options, command = int(argv[1]), argv[2 : argv.index("--")], argv[argv.index("--") + 1 :]
    for signum in STOP:
        signal.signal(signum, _stop)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the harness died before the prctl above: nobody will read us
        return 0
    if os.getpgrp() != os.getpid():  # started by hand: a group of our own, so that killing it spares the caller's
        os.setsid()
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
    isolated = "--no-pidns" not in options and new_pid_namespace()
    lifeline, hold = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(hold)
        _child(command, isolated, lifeline)
    os.close(lifeline)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    sweep(os.getpid())  # what the server left running (with a namespace, the kernel has ended it already)
    return _status_code(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
