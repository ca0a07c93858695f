"""One explicit Arrow schema per results table, so that every part of a run has the same column types.

A part whose rows all lack a value would otherwise be typed ``null`` by inference, and readers that
take a run folder as one dataset (``pandas.read_parquet``, DuckDB) refuse to merge it with a part that
has strings there. Each schema derives from its row dataclass in :mod:`surfbench.bench.store.tables`
(:class:`~surfbench.bench.store.tables.EpisodeRow`, :class:`~surfbench.bench.store.tables.StepRow`,
:class:`~surfbench.bench.store.tables.CallRow`): field order is column order, ``X | None`` is a nullable X,
lists, mappings and anything else are JSON text. A row with a column the schema does not declare is a
harness error (a test writes every suite's rows).
"""

from __future__ import annotations

import types
import typing

import pyarrow as pa

from surfbench.bench.store.tables import CallRow, EpisodeRow, StepRow, columns

S, INT, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

_SCALARS: dict[object, pa.DataType] = {int: INT, float: F, bool: B, str: S}

ROW_TYPES: dict[str, type] = {"episodes": EpisodeRow, "steps": StepRow, "calls": CallRow}
"""Each table's row dataclass."""


def arrow_type(hint: object) -> pa.DataType:
    """Arrow type of a field's annotation (``X | None`` is nullable X; anything else JSON text)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return arrow_type(args[0]) if len(args) == 1 else S
    return _SCALARS.get(hint, S)


def schema_of(row_type: type) -> pa.Schema:
    """The Arrow schema of a row dataclass: its columns in order."""
    return pa.schema([(c.name, arrow_type(c.hint)) for c in columns(row_type)])


SCHEMAS: dict[str, pa.Schema] = {table: schema_of(row_type) for table, row_type in ROW_TYPES.items()}

EPISODE_COLUMNS: dict[str, pa.DataType] = {f.name: f.type for f in SCHEMAS["episodes"]}
"""Episode column -> Arrow type (the checks of :mod:`surfbench.bench.store.evidence` read it)."""


class SchemaError(RuntimeError):
    """A row has a column its table's schema does not declare (a harness bug, not a user error)."""


def table_from_rows(table: str, rows: list[dict[str, object]]) -> pa.Table:
    """Rows (already flattened: JSON text for lists and mappings) as a table of ``table``'s schema."""
    schema = SCHEMAS[table]
    unknown = sorted({k for r in rows for k in r} - set(schema.names))
    if unknown:
        raise SchemaError(
            f"{table}: column(s) {unknown} are not in the {table} schema; declare them in bench/store/tables.py"
        )
    return pa.Table.from_pylist(rows, schema=schema)


RENAMED: dict[str, dict[str, str]] = {"episodes": {"peak_disk_bytes": "disk_peak_bytes"}}
"""Columns an older release wrote under another name (old -> new), per table."""


def conform(table: str, data: pa.Table) -> pa.Table:
    """A table read from an older part, with ``table``'s schema: columns renamed and cast, missing ones null."""
    schema = SCHEMAS[table]
    renames = RENAMED.get(table, {})
    if any(old in data.column_names and new not in data.column_names for old, new in renames.items()):
        data = data.rename_columns(
            [renames[n] if n in renames and renames[n] not in data.column_names else n for n in data.column_names]
        )
    unknown = sorted(set(data.column_names) - set(schema.names))
    if unknown:
        raise SchemaError(f"{table}: column(s) {unknown} are not in the {table} schema")
    arrays = [
        data.column(f.name).cast(f.type) if f.name in data.column_names else pa.nulls(len(data), f.type) for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)
