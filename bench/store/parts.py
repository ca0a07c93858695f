"""Which part files of a table folder count: all of them, except the ones a compaction has replaced.

``surfbench compact`` (:mod:`surfbench.bench.store.compact`) rewrites a table's parts as one. It writes a
journal first, ``<table>.parquet/.compacting.json`` (the new part's name; the name, size, mtime and inode
of every part it replaces), then the new part, then deletes the old parts, then the journal. A crash in
between leaves the new part beside old ones, so every reader lists parts through :func:`table_parts`:
while the new part exists, the parts it replaced are left out (nothing read twice); before it exists,
the journal changes nothing (nothing lost). A part rewritten since (``RunStore.discard``, a re-run
writing the same name) is another file, with another size, mtime or inode, and counts again.
:func:`finish` completes what a crash left: the next compaction does, and so does every run into the
folder (``RunStore.prepare`` calls :func:`recover`), before it reads what is done.

This module imports nothing of surfbench: the store (``bench/store/results.py``) and the compaction both use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from pathlib import Path

JOURNAL = ".compacting.json"
"""The compaction journal in a table folder (a dot name: pandas, pyarrow and DuckDB's ``*.parquet`` skip it)."""
LOCK = ".run.lock"
"""The run folder's lock (also taken by ``RunStore.discard`` and ``write_run_info``)."""
TABLE_FOLDERS = ("episodes.parquet", "steps.parquet", "calls.parquet", "tools.parquet")
"""The table folders a compaction rewrites (``tools.parquet``: the tool texts, bench.store.tool_texts)."""


def identity(path: Path) -> list[int] | None:
    """What tells one file from another written under the same name: size, mtime (ns), inode."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def replaced(folder: Path) -> dict[str, list[int]]:
    """The parts a compaction replaced (name -> identity), once its new part exists; else nothing."""
    try:
        doc = json.loads((folder / JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # no journal (written atomically: never half a one)
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("replaces"), dict):
        return {}
    if not (folder / str(doc.get("part"))).is_file():  # the crash came before the new part: nothing replaced
        return {}
    return {str(name): list(ident) for name, ident in doc["replaces"].items() if isinstance(ident, list)}


def table_parts(folder: Path) -> list[Path]:
    """The part files of a table folder that hold its rows, sorted by name (the order rows are read in)."""
    if not folder.is_dir():
        return []
    parts = sorted(folder.glob("part-*.parquet"))
    gone = replaced(folder)
    if not gone:
        return parts
    return [p for p in parts if p.name not in gone or gone[p.name] != identity(p)]


def finish(folder: Path) -> None:
    """Complete a compaction a crash interrupted: delete the parts it replaced, then its journal.

    The caller holds the run folder's lock (:data:`LOCK`).
    """
    journal = folder / JOURNAL
    if not journal.exists():
        return
    for name, ident in replaced(folder).items():
        if identity(folder / name) == ident:
            (folder / name).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def recover(root: Path) -> None:
    """Finish any interrupted compaction of the run folder ``root`` (under its lock; cheap when none)."""
    if not any((root / t / JOURNAL).exists() for t in TABLE_FOLDERS):
        return
    with open(root / LOCK, "a") as lock, contextlib.suppress(OSError):
        fcntl.flock(lock, fcntl.LOCK_EX)
        for table in TABLE_FOLDERS:
            finish(root / table)
