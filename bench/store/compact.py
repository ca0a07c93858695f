"""``surfbench compact RUN``: a run folder rewritten in place as one part per table, its transcripts packed.

A run writes a part per episode (or per group of quick episodes) in each table and a transcript per
episode: that is what lets it be killed and resumed, and what makes a finished run thousands of small
files (``results/reference`` held 11,977 before it was compacted). Compacted, a run folder is
``run.json``, one part in each of ``episodes.parquet/``, ``steps.parquet/`` and ``calls.parquet/`` (and
``tools.parquet/``, the tool texts since records v6: :mod:`surfbench.bench.store.tool_texts`), and
``transcripts.zip`` (:mod:`surfbench.bench.store.transcripts`).

What stays as it was:

- **The rows.** A table's new part holds the rows of all its parts in the order ``load_runs`` reads them
  (parts by name, rows in part order), values as stored: ``load_runs`` gives the same frame. Parts with
  other columns (an older part lacks a column added since) become one table with every column, the
  values an older part lacks null.
- **Resuming.** The part is named like a group part (``part-compacted+N-<hash>.parquet``), so
  ``RunStore.done_keys`` reads its keys and ``discard`` rewrites it without the episodes it takes out.
  A run resumed into the folder adds loose parts and transcripts beside it; compacting again folds them in.
- **A crash.** Each table goes journal, new part, old parts deleted, journal deleted
  (:mod:`surfbench.bench.store.parts`); readers leave out the old parts once the new one exists. Transcripts are
  packed before a loose one is deleted (:func:`~surfbench.bench.store.transcripts.pack_transcripts`). Compacting
  again, or any run into the folder, finishes what a crash left.

Refused while a live process holds claims on the folder: the episode in its hands would be committed
beside the new part while the old ones go. The run folder's lock is held meanwhile (``discard`` and
``write_run_info`` wait for it).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.store.parts import JOURNAL, LOCK, finish, identity, table_parts
from surfbench.bench.store.results import GROUP_MARK, TABLES, ResultsError, _atomic_write_bytes
from surfbench.bench.store.schema import SCHEMAS
from surfbench.bench.store.tool_texts import TOOLS
from surfbench.bench.store.transcripts import pack_transcripts

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Compacted:
    """What compacting one run folder did."""

    run: Path
    parts: dict[str, tuple[int, int]]
    """table -> (parts before, rows); a table already in one part: (1, rows)."""
    transcripts: int
    """Loose transcripts packed."""

    def line(self) -> str:
        before = sum(n for n, _ in self.parts.values())
        rows = ", ".join(f"{t} {r}" for t, (_, r) in self.parts.items())
        packed = f"{self.transcripts} transcript(s) packed"
        return f"{self.run}: {before} part file(s) -> {len(self.parts)} ({rows} rows), {packed}"


def live_claims(root: Path) -> list[str]:
    """Owners (``host:pid``) of the live claims on ``root``'s episodes; a dead owner's claims do not count."""
    from surfbench.bench.store.claims import LEASE_S, Owner

    owners: set[str] = set()
    folder = root / ".claims"
    for path in sorted(folder.glob("*.claim")) if folder.is_dir() else []:
        try:
            raw, mtime = path.read_bytes(), path.stat().st_mtime
        except FileNotFoundError:
            continue
        owner = Owner.parse(raw)
        if owner is not None and owner.local():
            if owner.alive():
                owners.add(owner.describe())
        elif time.time() - mtime <= LEASE_S:  # another host's (or a half-written) claim: its lease
            owners.add(owner.describe() if owner else "?")
    return sorted(owners)


def _concat(table: str, parts: list[Path]) -> pa.Table:
    """The rows of ``parts`` as one Arrow table, in order, with every column any part has.

    Parts of one schema (every part surfbench writes today) are concatenated as they are. Otherwise (a part
    written before a column was added) the columns are those of all parts, in the table's schema order
    (bench/store/schema.py) and then any it does not know; a value a part lacks is null.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = [pq.read_table(p) for p in parts]
    if all(d.schema.equals(data[0].schema, check_metadata=True) for d in data):
        return pa.concat_tables(data)
    seen = list(dict.fromkeys(n for d in data for n in d.column_names))
    declared = SCHEMAS[table].names if table in SCHEMAS else []
    order = [n for n in declared if n in seen] + [n for n in seen if n not in declared]
    types: dict[str, pa.DataType] = {}
    for field in (f for d in data for f in d.schema):
        if field.name not in types or pa.types.is_null(types[field.name]):
            types[field.name] = field.type
    schema = pa.schema([(n, types[n]) for n in order])
    try:
        return pa.concat_tables(
            [
                pa.Table.from_arrays(
                    [d.column(n).cast(types[n]) if n in d.column_names else pa.nulls(len(d), types[n]) for n in order],
                    schema=schema,
                )
                for d in data
            ]
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        why = " ".join(str(exc).split())
        raise ResultsError(
            f"{parts[0].parent}: the {table} parts have columns of types that do not convert ({why}); "
            f"`surfbench migrate {parts[0].parent.parent}` first"
        ) from None


def compact_table(root: Path, table: str) -> tuple[int, int]:
    """Rewrite ``table``'s parts as one (see the module docstring); return (parts before, rows).

    The caller holds the run folder's lock.
    """
    import pyarrow.parquet as pq

    folder = root / f"{table}.parquet"
    finish(folder)  # what an interrupted compaction left
    parts = table_parts(folder)
    if len(parts) <= 1:
        return len(parts), sum(pq.read_metadata(p).num_rows for p in parts)
    data = _concat(table, parts)
    rows = sum(pq.read_metadata(p).num_rows for p in parts)
    if data.num_rows != rows:
        raise ResultsError(f"{folder}: read {data.num_rows} rows of {rows}; nothing was changed")
    digest = hashlib.sha256("\n".join(p.name for p in parts).encode("utf-8")).hexdigest()[:8]
    if "episode_key" in data.column_names:
        episodes = len(set(data.column("episode_key").to_pylist()))  # named like a group part: first + n more
        name = f"part-compacted{GROUP_MARK}{max(episodes - 1, 0)}-{digest}.parquet"
    else:  # the tools table: no episodes
        name = f"part-compacted-{digest}.parquet"
    replaces = {p.name: identity(p) for p in parts if p.name != name}
    journal = json.dumps({"part": name, "replaces": replaces}, indent=1) + "\n"
    _atomic_write_bytes(folder / JOURNAL, lambda tmp: Path(tmp).write_text(journal, encoding="utf-8"))
    _atomic_write_bytes(folder / name, lambda tmp: pq.write_table(data, tmp))
    finish(folder)  # the old parts, then the journal
    return len(parts), rows


def _no_duplicates(root: Path) -> None:
    """Refuse a run with an episode committed twice: in one part, which row is the newest could not be told."""
    import pyarrow.parquet as pq

    parts = table_parts(root / "episodes.parquet")
    counts = Counter(k for p in parts for k in pq.read_table(p, columns=["episode_key"]).column(0).to_pylist())
    twice = sorted(str(k) for k, n in counts.items() if n > 1)
    if twice:
        raise ResultsError(
            f"{root}: {len(twice)} episode key(s) committed more than once ({', '.join(twice[:3])}): `surfbench "
            "report` names them; remove the extra part files, then compact"
        )


def compact(root: Path) -> Compacted:
    """Compact the run folder ``root``: one part per table, transcripts packed; refused while others run in it."""
    if not (root / "run.json").is_file():
        raise ResultsError(f"{root} is not a surfbench run (no run.json); give a run folder, e.g. results/RUN")
    busy = live_claims(root)
    if busy:
        raise ResultsError(
            f"{root}: episodes are claimed by running processes ({', '.join(busy)}); compact once they finish"
        )
    _no_duplicates(root)
    try:
        lock = open(root / LOCK, "a")  # noqa: SIM115 - held for the whole compaction
    except OSError as exc:
        raise ResultsError(f"cannot compact {root}: {exc.strerror or exc}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            parts = {table: compact_table(root, table) for table in ("steps", "calls", "episodes")}
            if (root / TOOLS).is_dir():  # the tool texts (records v6); older runs have none
                parts["tools"] = compact_table(root, "tools")
            packed = pack_transcripts(root)
        except OSError as exc:
            raise ResultsError(f"cannot compact {root}: {exc.strerror or exc}; re-run to finish") from None
    return Compacted(root, {t: parts[t] for t in (*TABLES, "tools") if t in parts}, packed)
