"""Whole files or none: every file surfbench writes for a user goes through here.

A file is written beside its final path under a hidden temporary name, flushed to disk and renamed over
the path, so a reader (a report, a second process, a user's editor) never sees half a file and a crash
leaves none. The temporary file is created the way ``open()`` creates one (0666 less the umask, a default
ACL applies), not the way ``tempfile.mkstemp`` does (always 0600): a table, a snapshot or a task file
that a team shares must be as readable as any other file the user writes.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path


def staged(path: Path, data: bytes | str | Callable[[str], object]) -> str:
    """``data`` in a new temporary file beside ``path``; returns its name, to rename over ``path``.

    ``data`` is the file's bytes, its text (UTF-8, newlines as given), or a function that writes the file
    whose name it is given (a Parquet writer). On any failure the temporary file is removed and the error
    raised.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = str(path.parent / f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        if callable(data):
            data(tmp)
        else:
            with open(tmp, "wb") as fh:
                fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic(path: Path, data: bytes | str | Callable[[str], object]) -> None:
    """Write ``path`` whole (see :func:`staged`): the old file, or none, stays in place on any failure."""
    tmp = staged(path, data)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
