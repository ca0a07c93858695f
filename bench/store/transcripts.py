"""A run's transcripts, loose or packed: one reader for both.

A run writes one transcript per episode, ``transcripts/<key stem>.jsonl`` (its messages, then the trace's
summary, as JSON lines; :func:`surfbench.bench.run.episode.transcript_lines`). ``surfbench compact`` packs them
into ``transcripts.zip`` in the run folder: one member per episode under the same name,
``<key stem>.jsonl``, holding the loose file's bytes (``unzip -p RUN/transcripts.zip STEM.jsonl`` reads one).
An episode run after compaction (a resumed run, ``retry_errors``) writes a loose file again; a loose
transcript is always the newer one, so it shadows a packed member of the same name.
"""

from __future__ import annotations

import contextlib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from surfbench.bench.store.results import _atomic_write_bytes, key_stem

LOOSE = "transcripts"
"""The folder of loose transcripts in a run folder."""
PACKED = "transcripts.zip"
"""The packed transcripts of a run folder."""
SUFFIX = ".jsonl"


def _stem(key_or_stem: str) -> str:
    return key_or_stem[: -len(SUFFIX)] if key_or_stem.endswith(SUFFIX) else key_stem(key_or_stem)


def packed_names(run: Path) -> list[str]:
    """The members of ``run``'s packed transcripts (none without ``transcripts.zip``)."""
    path = run / PACKED
    if not path.is_file():
        return []
    with zipfile.ZipFile(path) as pack:
        return [n for n in pack.namelist() if n.endswith(SUFFIX) and "/" not in n]


def transcript_stems(run: Path) -> list[str]:
    """The file stems (:func:`~surfbench.bench.store.results.key_stem` of the keys) of every transcript of ``run``."""
    loose = {p.stem for p in (run / LOOSE).glob(f"*{SUFFIX}")} if (run / LOOSE).is_dir() else set()
    return sorted(loose | {n[: -len(SUFFIX)] for n in packed_names(run)})


def read_transcript(run: Path, key: str) -> str | None:
    """The transcript of episode ``key`` (an episode key, or a stem ending in ``.jsonl``); None if it has none."""
    stem = _stem(key)
    loose = run / LOOSE / f"{stem}{SUFFIX}"
    if loose.is_file():
        return loose.read_text(encoding="utf-8")
    path = run / PACKED
    if not path.is_file():
        return None
    with zipfile.ZipFile(path) as pack:
        try:
            return pack.read(f"{stem}{SUFFIX}").decode("utf-8")
        except KeyError:
            return None


def iter_transcripts(run: Path) -> Iterator[tuple[str, str]]:
    """``(stem, text)`` for every transcript of ``run``, by stem; a loose one instead of a packed one."""
    path = run / PACKED
    pack = zipfile.ZipFile(path) if path.is_file() else None
    try:
        members = set(pack.namelist()) if pack else set()
        for stem in transcript_stems(run):
            loose = run / LOOSE / f"{stem}{SUFFIX}"
            if loose.is_file():
                yield stem, loose.read_text(encoding="utf-8")
            elif pack is not None and f"{stem}{SUFFIX}" in members:
                yield stem, pack.read(f"{stem}{SUFFIX}").decode("utf-8")
    finally:
        if pack is not None:
            pack.close()


def write_pack(run: Path, members: dict[str, bytes]) -> None:
    """Write ``run``'s packed transcripts as ``members`` (name -> bytes), atomically; none: no pack.

    Members sorted by name, with a fixed date: the same transcripts always give the same file.
    """
    path = run / PACKED
    if not members:
        path.unlink(missing_ok=True)
        return

    def write(tmp: str) -> None:
        with zipfile.ZipFile(tmp, "w") as pack:
            for name in sorted(members):
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                pack.writestr(info, members[name], compresslevel=9)

    _atomic_write_bytes(path, write)


def pack_transcripts(run: Path) -> int:
    """Pack ``run``'s loose transcripts into ``transcripts.zip`` (with those packed before); return how many.

    The pack is written (atomically) before any loose file goes, and a loose file is deleted only if it
    still holds what was packed: a crash in between leaves loose files that are the same as their
    members, and a reader takes the loose one (:func:`read_transcript`), so nothing is lost or doubled.
    """
    folder = run / LOOSE
    loose = sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []
    if not loose:
        return 0
    members: dict[str, bytes] = {}
    if (run / PACKED).is_file():
        with zipfile.ZipFile(run / PACKED) as pack:
            members = {n: pack.read(n) for n in pack.namelist()}
    packed = {p.name: p.read_bytes() for p in loose}
    write_pack(run, {**members, **packed})  # a loose transcript is newer than a member of its name
    for path in loose:
        if path.read_bytes() == packed[path.name]:
            path.unlink()
    with contextlib.suppress(OSError):  # not empty: a transcript written meanwhile stays loose
        folder.rmdir()
    return len(packed)


def drop_transcripts(run: Path, keys: Iterable[str]) -> int:
    """Delete the transcripts of ``keys``, loose and packed; return how many episodes had one."""
    stems = {_stem(k) for k in keys}
    dropped: set[str] = set()
    for stem in stems:
        loose = run / LOOSE / f"{stem}{SUFFIX}"
        if loose.is_file():
            loose.unlink(missing_ok=True)
            dropped.add(stem)
    names = packed_names(run)
    gone = {n[: -len(SUFFIX)] for n in names} & stems
    if gone:
        with zipfile.ZipFile(run / PACKED) as pack:
            members = {n: pack.read(n) for n in pack.namelist() if n[: -len(SUFFIX)] not in gone}
        write_pack(run, members)
    return len(dropped | gone)
