"""The tool block as sent: each distinct tool's wire text, once per run folder, in ``tools.parquet/``.

A step records its tool block as the content hashes of its tools' wire texts, in order
(``StepRecord.tool_hashes``; the wire text is :func:`surfbench.bench.catalog.wire.tool_wire_text`, whose UTF-8
lengths add up to the step's ``tool_block_bytes``). The texts go in the run's tools table, each once: ``full``
repeats the same tools on every step of every episode and preselect's requests draw different sets from one
catalog, so a run grows by its distinct tools, not by tools x steps.

The store writes the table (``RunStore.flush``, bench/store/results.py): before a commit's steps part, one part
holding the tools of its episodes that the folder does not hold yet, named by their hashes (the same tools, the same
name, the same rows). So every hash a committed step names is in a part written before it: a killed run loses none,
and a resumed one reads the hashes already there and adds only new ones. Two processes running into one folder at
once may each write a tool the other wrote: readers keep one text per hash. Parts stay when episodes are taken out
(``discard``: an unused text is harmless); ``surfbench compact`` makes them one. Columns: ``tool_hash``, ``name``
(the tool's name), ``text`` (the wire text, redacted like every text the store writes).

A run recorded before records v6 has no tools table and its steps no ``tool_hashes``: readers say the tool block's
text was not recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.base.secrets import redact
from surfbench.bench.catalog.wire import valid_utf8
from surfbench.bench.store.parts import table_parts

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

TOOLS = "tools.parquet"
"""The run's tools table (a folder of parts)."""
COLUMNS = ("tool_hash", "name", "text")


def text_hash(text: str) -> str:
    """The hash a step records for a tool's wire text: 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, pa.string()) for name in COLUMNS])


def _name(text: str) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    name = value.get("name") if isinstance(value, dict) else None
    return None if name is None else str(name)


def tools_part(texts: Mapping[str, str]) -> tuple[str, pa.Table]:
    """The part holding ``texts`` (hash -> wire text): its file name, made of their hashes, and its rows by hash."""
    import pyarrow as pa

    hashes = sorted(texts)
    digest = hashlib.sha256("\n".join(hashes).encode("utf-8")).hexdigest()[:16]
    rows = [{"tool_hash": h, "name": _name(texts[h]), "text": redact(valid_utf8(texts[h]))} for h in hashes]
    return f"part-{digest}.parquet", pa.Table.from_pylist(rows, schema=_schema())


def recorded_hashes(root: Path) -> set[str]:
    """The tool hashes run folder ``root`` holds texts for (none: a run before records v6, or a new one)."""
    import pyarrow.parquet as pq

    return {
        str(h)
        for part in table_parts(root / TOOLS)
        for h in pq.read_table(part, columns=["tool_hash"]).column(0).to_pylist()
    }


def read_tools(runs: Iterable[str | Path]) -> pd.DataFrame:
    """The tools tables of some run folders: ``run``, ``tool_hash``, ``name``, ``text``, one row per run and hash."""
    import pandas as pd
    import pyarrow.parquet as pq

    frames = []
    for run in runs:
        root = Path(run)
        for part in table_parts(root / TOOLS):
            frame = pq.read_table(part).to_pandas()
            frame.insert(0, "run", root.name)
            frames.append(frame)
    if not frames:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in ("run", *COLUMNS)})
    tools = pd.concat(frames, ignore_index=True)[["run", *COLUMNS]].astype(object)
    return tools.drop_duplicates(["run", "tool_hash"]).reset_index(drop=True)


def block_texts(hashes: object, texts: Mapping[str, str]) -> list[str] | None:
    """A step's tool block as texts, in order, from its ``tool_hashes`` (None: not recorded, in full or in part)."""
    if isinstance(hashes, str):
        try:
            hashes = json.loads(hashes)
        except ValueError:
            return None
    if not isinstance(hashes, Sequence) or isinstance(hashes, str):
        return None
    found = [texts.get(str(h)) for h in hashes]
    return None if any(t is None for t in found) else [str(t) for t in found]
