"""Whether an episode of a run folder is committed *now*: another process may have committed it since.

Used by :mod:`surfbench.bench.claims` after each claim: the episode's own part file, or the keys of the
group parts, each group read once and the folder listed again only when it changed.
"""

from __future__ import annotations

import os
from pathlib import Path

from surfbench.bench.results import GROUP_MARK, key_stem


class CommitIndex:
    """Whether an episode is committed *now* (another process may have committed it since we looked)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / "episodes.parquet"
        self._groups: dict[tuple[str, int], frozenset[str]] = {}
        self._trusted_mtime: int | None = None

    def committed(self, key: str, stamp: int) -> bool:
        """Whether ``key`` is committed; ``stamp``: the file-system time of a claim created just before.

        The group parts are listed again only when the folder's mtime changed. A part renamed in during
        the same clock tick as the last listing leaves the mtime as it was, so a listing is trusted only
        if that mtime is older than ``stamp`` (then any later change gets a newer mtime).
        """
        if (self.folder / f"part-{key_stem(key)}.parquet").exists():
            return True
        try:
            mtime = os.stat(self.folder).st_mtime_ns
        except FileNotFoundError:
            return False
        if mtime != self._trusted_mtime:
            groups: dict[tuple[str, int], frozenset[str]] = {}
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name.startswith("part-") and GROUP_MARK in name and name.endswith(".parquet"):
                        ident = (name, entry.inode())  # a group rewritten by discard() is a new file
                        groups[ident] = self._groups.get(ident) or _group_keys(Path(entry.path))
            self._groups = groups
            self._trusted_mtime = mtime if stamp > mtime else None
        return any(key in keys for keys in self._groups.values())


def _group_keys(path: Path) -> frozenset[str]:
    import pyarrow.parquet as pq

    try:
        return frozenset(str(k) for k in pq.read_table(path, columns=["episode_key"]).column(0).to_pylist())
    except FileNotFoundError:
        return frozenset()
