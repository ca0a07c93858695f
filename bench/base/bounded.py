"""Bounded reads: every input file surfbench reads has a size limit, and only regular files are read.

A catalog named ``/dev/zero`` grew the process to 20 GB; a FIFO would block for ever; a 2 GB file
would be read whole before its first syntax error. Each input is read through :func:`read_text`
or :func:`read_bytes`, which refuse anything but a regular file (after ``os.stat``, before opening,
and again on the open descriptor) and read at most the limit plus one byte, so a file that grows
while it is read is bounded too. A refusal is one :class:`ReadRefused` line naming the file, the
limit and how to raise it (``SURFBENCH_MAX_FILE_MB``).

The defaults leave room far above real inputs: GitHub's REST description, the largest catalog we
know, is 13 MB; a 10,000-operation tool list about 10 MB; the reference runs' ``run.json`` 130 KB;
a suite.yaml or criteria file a few KB. The same module bounds the two texts a model is given
verbatim: one user turn of a task and one operation's description.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_FILE_ENV = "SURFBENCH_MAX_FILE_MB"
"""Environment variable: the size limit in MB for every kind of input file (the defaults below otherwise)."""
MB = 1 << 20
LIMITS_MB: dict[str, float] = {
    "catalog": 64,
    "task file": 64,
    "run record": 64,
    "MCP answer": 64,
    "suite file": 4,
    "criteria file": 4,
}
"""Default size limit per kind of input, in MB (``SURFBENCH_MAX_FILE_MB`` replaces all of them)."""
MAX_TURN_CHARS = 1 << 20
"""Longest user turn of a task (1 MB of text is some 250,000 tokens: beyond any model's window)."""
MAX_DESCRIPTION_CHARS = 64 << 10
"""Longest description of one operation (64 KB; the longest in the shipped catalogs and BFCL's is 640 characters)."""
_CHUNK = 1 << 20


class ReadRefused(ValueError):
    """An input file that is not read: not a regular file, or over its size limit. One line."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        """What is wrong, without the file's name (callers that name the file their own way use it)."""
        super().__init__(f"{path}: {problem}")


def limit_bytes(kind: str) -> int:
    """The size limit in bytes of a kind of input (see LIMITS_MB), ``SURFBENCH_MAX_FILE_MB`` applied.

    Raises:
        ReadRefused: the variable is set to something that is not a positive number of MB.
    """
    raw = os.environ.get(MAX_FILE_ENV, "").strip()
    if not raw:
        return int(LIMITS_MB[kind] * MB)
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise ReadRefused(MAX_FILE_ENV, f"{MAX_FILE_ENV}={raw!r} is not a size in MB (a number above 0, e.g. 200)")
    return int(value * MB)


def _mb(size: int) -> str:
    value = size / MB
    return f"{value:,.1f}".removesuffix(".0") if value >= 0.1 else f"{value:.2g}"


def too_large(kind: str, limit: int, size: int | None = None) -> str:
    """The one-line problem of an input over its limit: its size (when known), the limit, how to raise it."""
    what = f"{_mb(size)} MB" if size is not None else f"more than {_mb(limit)} MB"
    need = size // MB + 1 if size is not None else max(1, 2 * limit // MB)
    article = "an" if kind.startswith(("MCP", "a", "e", "i", "o", "u")) else "a"
    return (
        f"{what}, over the {_mb(limit)} MB limit for {article} {kind}; to read it, raise the limit: "
        f"{MAX_FILE_ENV}={need}"
    )


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse_special(path: str | Path, mode: int, kind: str) -> None:
    if not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise ReadRefused(path, "is a directory, not a file")
        raise ReadRefused(path, f"is {_file_kind(mode)}, not a regular file; name a {kind} file")


def read_bytes(path: str | Path, kind: str) -> bytes:
    """The bytes of a regular file of at most the limit for ``kind`` (see LIMITS_MB).

    Raises:
        ReadRefused: not a regular file (a directory, ``/dev/zero``, a FIFO), or over the limit.
        OSError: the file cannot be opened (FileNotFoundError, PermissionError, ...), as ``open`` raises it.
        ValueError: a NUL byte in the path.
    """
    limit = limit_bytes(kind)
    _refuse_special(path, os.stat(path).st_mode, kind)  # before opening: opening a FIFO would block
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # replaced by a FIFO meanwhile: no block
    try:
        info = os.fstat(fd)
        _refuse_special(path, info.st_mode, kind)
        if info.st_size > limit:
            raise ReadRefused(path, too_large(kind, limit, info.st_size))
        chunks: list[bytes] = []
        got = 0
        while got <= limit:  # a file that grows while it is read (or /proc, which says size 0) stops here
            chunk = os.read(fd, min(_CHUNK, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > limit:
        raise ReadRefused(path, too_large(kind, limit))
    return b"".join(chunks)


def read_text(path: str | Path, kind: str) -> str:
    """:func:`read_bytes` decoded as UTF-8 with universal newlines, exactly as ``Path.read_text`` reads it.

    Raises:
        UnicodeDecodeError: the bytes are not UTF-8 (``start`` is the offending byte's offset).
        ReadRefused, OSError, ValueError: as :func:`read_bytes`.
    """
    text = read_bytes(path, kind).decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def turn_problem(turn: str) -> str | None:
    """Why one user turn of a task is too long to send (None when it is not)."""
    if len(turn) > MAX_TURN_CHARS:
        return (
            f"a user turn of {len(turn):,} characters, over the limit of {MAX_TURN_CHARS:,} (1 MB, some "
            "250,000 tokens: beyond any model's context window); shorten it"
        )
    return None


def description_problem(description: str) -> str | None:
    """Why one operation's description is too long to show a model (None when it is not)."""
    if len(description) > MAX_DESCRIPTION_CHARS:
        return (
            f"a description of {len(description):,} characters, over the limit of {MAX_DESCRIPTION_CHARS:,} "
            "(64 KB) for one operation; shorten it"
        )
    return None
