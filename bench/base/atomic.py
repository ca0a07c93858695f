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


def output_problem(path: Path, folder: bool = False) -> str | None:
    """Why ``path`` cannot take the file (or, ``folder``, the folder) a command is about to write; None if it can.

    Asked before any work starts, so that an hour of synthesis or a gate's decision is not lost to a bad ``--out``.
    The parent is probed by creating and removing a hidden file in it: permission bits do not say it for root,
    nor for a file system such as /proc.
    """
    if folder:
        if path.exists() and not path.is_dir():
            return f"{path} is a file, not a folder: pass a new or existing folder"
        parent = path
        while not parent.exists():
            parent = parent.parent
    else:
        if path.is_dir():
            return f"{path} is a folder, not a file: pass a file name (e.g. {path / 'out.txt'})"
        if path.exists() and not path.is_file():
            return f"{path} is not a regular file: pass a file name in a folder you can write to"
        parent = path.parent
        while not parent.exists():
            parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, not a folder: {path} cannot be written under it"
    probe = parent / f".surfbench-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in {parent} ({exc.strerror or exc}): pass a path in a folder you can write to"
    if path.is_file() and not os.access(path, os.W_OK):
        return f"{path} cannot be overwritten (read-only): pass another file name"
    return None


def out_file(text: str) -> str:
    """An argparse type for an ``--out FILE``: refused at once, in one line, where the file cannot be written."""
    import argparse

    problem = output_problem(Path(text))
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def out_folder(text: str) -> str:
    """An argparse type for an ``--out FOLDER``: refused at once, in one line, where the folder cannot be written."""
    import argparse

    problem = output_problem(Path(text), folder=True)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text
