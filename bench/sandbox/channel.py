"""A sandboxed command that talks back: a pipe pair of JSON lines between it and the harness.

The command gets two extra file descriptors (same numbers inside the sandbox): it writes one request
per line to ``requests`` and reads one reply per line from ``replies``. The harness answers each line
with ``handle(line) -> reply`` (bytes, no newline; ``None``: no reply) while the command runs, and stops
at the sandbox's wall-clock timeout, killing everything. The command is untrusted: a line longer than
:data:`MAX_FRAME` is cut off and handed over as the bytes ``b"<oversize>"`` (never partially), a command
that stops reading its replies cannot block the harness (replies are written without blocking and
buffered, at most :data:`MAX_PENDING` bytes; past that the channel closes), and a failure in ``handle``
kills the command before it propagates.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from surfbench.bench.sandbox.box import Sandbox
from surfbench.bench.sandbox.limits import Result
from surfbench.bench.sandbox.procs import _kill

MAX_FRAME = 1024 * 1024
"""Longest request line accepted (bytes); a longer one is replaced by :data:`OVERSIZE`."""
MAX_PENDING = 8 * 1024 * 1024
"""Reply bytes the command may leave unread before the harness stops answering it."""
OVERSIZE = b"<oversize>"

Handler = Callable[[bytes], bytes | None]


@dataclass
class ChannelStats:
    """What went over the channel during one run."""

    frames: int = 0
    """Request lines received (oversize ones included)."""
    serve_s: float = 0.0
    """Time spent in ``handle`` (the harness's own work: dispatch, backend)."""
    first_frame_s: float | None = None
    """Seconds from the start of the run to the first request line (sandbox and interpreter start)."""
    closed_early: bool = False
    """The command left more than MAX_PENDING reply bytes unread; the channel was closed."""
    notes: list[str] = field(default_factory=list)


def run_with_channel(
    sandbox: Sandbox,
    command: Callable[[int, int], list[str]],
    handle: Handler,
    stdin: str = "",
    readonly: bool = False,
) -> tuple[Result, ChannelStats]:
    """Run ``command(requests_fd, replies_fd)`` in ``sandbox``, answering its request lines with ``handle``.

    ``readonly``: the episode directory is read-only for the command (its ``/tmp`` stays writable).
    """
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    stats = ChannelStats()
    ours = [req_r, rep_w]
    theirs = [req_w, rep_r]
    for fd in theirs:
        os.set_inheritable(fd, True)

    def serve(proc: subprocess.Popen[bytes], started: float) -> tuple[int | None, bool]:
        for fd in theirs:  # the command holds its ends now; EOF comes when it (and its children) let go
            os.close(fd)
        theirs.clear()
        try:
            if _pump(req_r, rep_w, handle, stats, started, started + sandbox.limits.timeout_s, ours):
                return sandbox._wait(proc, started)
            _kill(proc)
            return None, True
        except BaseException:
            _kill(proc)
            raise

    try:
        result = sandbox.run(command(req_w, rep_r), stdin=stdin, readonly=readonly, pass_fds=theirs, serve=serve)
    finally:
        for fd in ours + theirs:  # each closed once: a number closed twice may be another thread's file by then
            with contextlib.suppress(OSError):
                os.close(fd)
    return result, stats


def _pump(
    req_r: int, rep_w: int, handle: Handler, stats: ChannelStats, started: float, deadline: float, ours: list[int]
) -> bool:
    """Answer request lines until the command closes its end (True) or the deadline passes (False).

    Closing the reply pipe early (the command stopped reading) removes it from ``ours``.
    """
    flags = fcntl.fcntl(rep_w, fcntl.F_GETFL)
    fcntl.fcntl(rep_w, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    buffer, pending, skipping = b"", b"", False
    open_out = True
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            return False
        out = [rep_w] if pending and open_out else []
        readable, writable, _ = select.select([req_r], out, [], min(left, 0.5))
        if writable:
            try:
                pending = pending[os.write(rep_w, pending) :]
            except (BrokenPipeError, BlockingIOError):
                open_out, pending = False, b""  # nobody reads the replies any more
        if not readable:
            continue
        chunk = os.read(req_r, 65536)
        if not chunk:
            return True
        buffer += chunk
        lines = buffer.split(b"\n")
        buffer = lines.pop()
        if skipping and lines:  # the rest of an oversize line
            lines.pop(0)
            skipping = False
        if len(buffer) > MAX_FRAME and not skipping:  # answer now, drop the rest up to its newline
            lines.append(OVERSIZE)
            buffer, skipping = b"", True
        elif skipping:
            buffer = b""
        for line in lines:
            stats.frames += 1
            if stats.first_frame_s is None:
                stats.first_frame_s = time.perf_counter() - started
            began = time.perf_counter()
            reply = handle(line if len(line) <= MAX_FRAME else OVERSIZE)
            stats.serve_s += time.perf_counter() - began
            if reply is not None and open_out:
                pending += reply + b"\n"
        if len(pending) > MAX_PENDING:
            stats.closed_early, open_out, pending = True, False, b""
            stats.notes.append("the command left its replies unread; the channel was closed")
        if not open_out and rep_w in ours:  # the command reads EOF instead of waiting for a reply
            ours.remove(rep_w)
            os.close(rep_w)
        if pending and open_out:  # most replies fit the pipe at once: no extra select round
            try:
                pending = pending[os.write(rep_w, pending) :]
            except BlockingIOError:
                pass
            except BrokenPipeError:
                open_out, pending = False, b""
