"""The sandbox's process plumbing: feed a command its stdin, kill its session, read back its capped output.

Apart from :mod:`surfbench.bench.sandbox.box` so that the sandbox itself stays one readable module;
:mod:`surfbench.bench.sandbox.channel` kills a command the same way.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the sandbox's whole session; its PID namespace takes every child with it."""
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _read_capped(path: Path, cap: int) -> tuple[str, bool]:
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    cut = len(data) > cap
    return data[:cap].decode("utf-8", "replace"), cut
