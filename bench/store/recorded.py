"""What a run folder records about its catalogs, so that readers never reload today's suites.

The report, the retrieval funnel and the gate interpret a run that may be old. Reloading its suite reads
today's files, not the run's, and fails once the suite folder is gone. So the runner records, beside the
episode tables (bench.store.results), two small tables of part files:

- ``catalogs.parquet/``: a part per cell, every catalog it ran on under its content hash (the cell's
  catalog, grown or not; the suite's own before ``catalog.grow``; each task's own): every operation with
  its position, category, read-only flag and traffic weight, so ``Catalog.by_weight`` is recomputed exactly.
  Cells over the same catalog repeat it (readers keep one copy per hash); the file count stays one per cell.
- ``help.parquet/``: one part per cell: the UTF-8 bytes of the help payload its surface returns for each
  operation it has one for (what the gate's ``help_bytes`` criteria judge).

run.json's cells add ``records_version`` (:data:`surfbench.bench.contracts.records.RECORDS_VERSION`),
``suite_catalog_hash`` (the suite's own catalog) and ``retrieves`` (whether the surface is a row of the
retrieval funnel); episodes add ``expected_ops``, steps ``operations_shown``, calls ``hits``. A cell without
``records_version`` predates these records: readers fall back to today's suite for it (the legacy path,
marked as such where it is taken).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.contracts.records import RECORDS_VERSION
from surfbench.bench.contracts.surface import Surface
from surfbench.bench.store.parts import table_parts
from surfbench.bench.store.tables import as_float, as_int

if TYPE_CHECKING:
    import pyarrow as pa

CATALOGS = "catalogs.parquet"
"""The run's catalogs table (a folder of parts, one per catalog hash)."""
HELP = "help.parquet"
"""The run's help-size table (a folder of parts, one per cell)."""


class RecordedOperation(NamedTuple):
    """One operation of a recorded catalog, as the report and the gate need it."""

    name: str
    category: str
    read_only: bool
    weight: float


def _write(path: Path, rows: list[dict[str, object]], schema: pa.Schema) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), tmp)
    os.replace(tmp, path)  # atomic: a reader sees the whole part or none


def record_catalogs(root: Path, cell_id: str, catalogs: Iterable[Catalog]) -> None:
    """Write the cell's part of the catalogs table into run folder ``root``.

    Named by the cell and its set of catalogs: a cell run again with more tasks (each with its own catalog)
    adds a part, one run again with the same ones finds its part there.
    """
    import pyarrow as pa

    distinct = {catalog.content_hash: catalog for catalog in catalogs}
    digest = hashlib.sha256("\n".join(sorted(distinct)).encode()).hexdigest()[:8]
    path = root / CATALOGS / f"part-{cell_id}-{digest}.parquet"
    if path.is_file():
        return
    schema = pa.schema([("catalog_hash", pa.string()), ("operation", pa.string()), ("position", pa.int64()),
                        ("category", pa.string()), ("read_only", pa.bool_()), ("weight", pa.float64())])  # fmt: skip
    rows = [
        {"catalog_hash": key, "operation": op.name, "position": i, "category": op.category,
         "read_only": op.read_only, "weight": float(op.weight)}
        for key, catalog in distinct.items() for i, op in enumerate(catalog.operations)
    ]  # fmt: skip
    _write(path, rows, schema)


def record_help(root: Path, cell_id: str, surface: Surface) -> None:
    """Write the help payload bytes of ``surface`` per operation (the cell's part), once per cell."""
    import pyarrow as pa

    path = root / HELP / f"part-{cell_id}.parquet"
    if path.is_file():
        return
    texts = {op.name: surface.help_payload(op) for op in surface.reachable()}
    rows = [
        {"cell_id": cell_id, "operation": name, "help_bytes": len(text.encode("utf-8"))}
        for name, text in texts.items()
        if text is not None
    ]
    schema = pa.schema([("cell_id", pa.string()), ("operation", pa.string()), ("help_bytes", pa.int64())])
    _write(path, rows, schema)


def record_cell(root: Path, cell_id: str, surface: Surface, catalogs: Iterable[Catalog]) -> None:
    """Everything the run folder records about a cell before it runs: its catalogs, its surface's help sizes."""
    record_catalogs(root, cell_id, catalogs)
    record_help(root, cell_id, surface)


def cell_records(surface: Surface, own_catalog: Catalog) -> dict[str, object]:
    """What run.json's cell adds about these records: their version, the suite's own catalog, the funnel flag."""
    return {
        "records_version": RECORDS_VERSION,
        "suite_catalog_hash": own_catalog.content_hash,
        "retrieves": surface.retrieves,
    }


def is_recorded(cell: Mapping[str, object] | None) -> bool:
    """Whether a run.json cell was recorded with these records (else: the legacy path, today's suite)."""
    return cell is not None and as_int(cell.get("records_version") or 1) >= 2


def _read(folder: Path) -> list[dict[str, object]]:
    import pyarrow.parquet as pq

    parts = table_parts(folder) if folder.is_dir() else ([folder] if folder.is_file() else [])
    return [row for part in parts for row in pq.read_table(part).to_pylist()]


@dataclass
class RecordedCatalogs:
    """The catalogs and help sizes of some runs, read from their folders only."""

    operations: dict[str, list[RecordedOperation]] = field(default_factory=dict)
    """Catalog hash -> its operations in catalog order."""
    help: dict[str, dict[str, int]] = field(default_factory=dict)
    """Cell id -> operation -> help payload bytes (cells whose surface has help payloads)."""
    help_cells: set[str] = field(default_factory=set)
    """Cells whose help sizes were recorded (possibly none: a surface without help payloads)."""

    @classmethod
    def load(cls, runs: Sequence[str | Path]) -> RecordedCatalogs:
        out = cls()
        positions: dict[str, dict[str, tuple[int, RecordedOperation]]] = {}
        for run in runs:
            for row in _read(Path(run) / CATALOGS):
                op = RecordedOperation(
                    str(row["operation"]), str(row["category"]), bool(row["read_only"]), as_float(row["weight"])
                )
                positions.setdefault(str(row["catalog_hash"]), {})[op.name] = (as_int(row["position"]), op)
            for help_part in table_parts(Path(run) / HELP):
                out.help_cells.add(help_part.name[len("part-") : -len(".parquet")])
            for row in _read(Path(run) / HELP):
                out.help.setdefault(str(row["cell_id"]), {})[str(row["operation"])] = as_int(row["help_bytes"])
        for digest, ops in positions.items():
            out.operations[digest] = [op for _, op in sorted(ops.values())]
        return out

    def __contains__(self, catalog_hash: object) -> bool:
        return catalog_hash in self.operations

    def size(self, catalog_hash: str) -> int:
        return len(self.operations[catalog_hash])

    def names(self, catalog_hash: str) -> list[str]:
        return [op.name for op in self.operations[catalog_hash]]

    def by_weight(self, catalog_hash: str) -> list[str]:
        """Operation names hottest first, ties in catalog order (``Catalog.by_weight``)."""
        ops = self.operations[catalog_hash]
        return [op.name for _, op in sorted(enumerate(ops), key=lambda pair: (-pair[1].weight, pair[0]))]

    def read_only(self, catalog_hash: str) -> dict[str, bool]:
        return {op.name: op.read_only for op in self.operations[catalog_hash]}

    def suite_catalogs(self, cells: Iterable[Mapping[str, object]], suites: Iterable[str]) -> dict[str, str]:
        """Suite -> the recorded hash of its own catalog, for each suite all of whose ``cells`` recorded it.

        A suite left out has a cell from before records v2 (or one whose catalog part is missing): its
        readers take the legacy path for it.
        """
        wanted = set(suites)
        found: dict[str, set[object]] = {}
        for cell in cells:
            if str(cell.get("suite")) in wanted:
                digest = cell.get("suite_catalog_hash") if is_recorded(cell) else None
                found.setdefault(str(cell["suite"]), set()).add(digest if digest in self else None)
        return {s: str(next(iter(h))) for s, h in found.items() if len(h) == 1 and None not in h}
