"""Start an MCP server so that it never outlives the harness (run as a script: ``python -S guard.py PID -- argv``).

The harness starts this file in a new session (its own process group). It asks Linux to send it SIGTERM
when its parent dies (``prctl(PR_SET_PDEATHSIG)``, which fires on SIGKILL of the harness too), then
starts the server in the same group with the same stdin, stdout and stderr. On SIGTERM, SIGINT or
SIGHUP it kills the whole group, the server's own children included; when the server exits it does
the same to whatever the server left behind and exits with the server's status. Only the standard
library: it starts with ``-S`` in a few milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
NOT_FOUND = 127


def _kill_group(signum: int = 0, frame: object = None) -> None:
    """Kill every process of this group, this one included."""
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    """Arm the parent-death signal, start the server, wait for it; its exit status is ours."""
    parent, command = int(argv[1]), argv[3:]
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _kill_group)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the harness died before the prctl above: nobody will read us
        return 0
    try:
        pid = os.posix_spawnp(command[0], command, os.environ)
    except OSError as exc:
        print(f"surfbench: cannot start {command[0]!r}: {exc.strerror}", file=sys.stderr, flush=True)
        return NOT_FOUND
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(os.getpgrp(), signal.SIGTERM)  # what the server left running in its group
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
