"""One explicit Arrow schema per results table, so that every part of a run has the same column types.

A part whose rows all lack a value would otherwise be typed ``null`` by inference, and readers that
take a run folder as one dataset (``pandas.read_parquet``, DuckDB) refuse to merge it with a part that
has strings there. Steps and calls derive their columns from their record dataclasses
(:class:`surfbench.bench.records.StepRecord`, :class:`surfbench.bench.records.CallRecord`); episodes list theirs here. A
row with a column the schema does not declare is a harness error (a test writes every suite's rows).
"""

from __future__ import annotations

import types
import typing
from dataclasses import fields
from typing import Any

import pyarrow as pa

from surfbench.bench.records import CallRecord, StepRecord

S, INT, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

EPISODE_COLUMNS: dict[str, pa.DataType] = {
    "episode_key": S, "run": S, "suite": S, "task_id": S, "split": S, "tags": S,
    "surface": S, "surface_config": S, "surface_kind": S, "model": S, "model_config": S, "cell_id": S, "task_hash": S,
    "params_b": F, "mode": S, "repeat": INT, "catalog_hash": S,
    "round_trips": INT, "overhead_round_trips": INT, "expected_calls": INT, "first_try_correct": INT,
    "first_try_accuracy": F,
    "first_tries": S, "selection_correct": B, "success": B, "calls_ok": B, "state_ok": B, "answer_ok": B,
    "refuse_ok": B, "recovered_after_error": INT, "failed_first_tries": INT, "boundary_violations": INT,
    "protocol_violations": INT, "parse_failures": INT, "meta_calls": INT, "operation_calls": INT, "stable_prefix": B,
    "stuck_repeats": INT, "stuck": B,
    "prompt_tokens_total": INT, "prompt_tokens_per_step": F, "prompt_tokens_est_per_step": F,
    "cached_prompt_tokens_total": INT, "completion_tokens_total": INT, "request_bytes_per_step": F,
    "tool_block_bytes_first": INT, "tools_shown_first": INT, "latency_s": F, "wall_s": F, "cost_usd": F,
    "cache_hits": INT, "error_types": S, "failures": S, "final_text": S, "error": S, "traceback": S, "attempts": INT,
    "disk_peak_bytes": INT, "memory_peak_bytes": INT,
}  # fmt: skip
"""Episode columns; lists and mappings are stored as JSON text."""

EXTRA_CALL_COLUMNS: dict[str, pa.DataType] = {"first_try_for": S, "first_try_correct": B}


def _arrow_type(hint: Any) -> pa.DataType:
    """Arrow type of a dataclass field's annotation (``X | None`` is nullable X; anything else JSON text)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return _arrow_type(args[0]) if len(args) == 1 else S
    return {int: INT, float: F, bool: B, str: S}.get(hint, S)


def _record_columns(cls: type) -> dict[str, pa.DataType]:
    hints = typing.get_type_hints(cls)
    return {"episode_key": S, **{f.name: _arrow_type(hints[f.name]) for f in fields(cls)}}


SCHEMAS: dict[str, pa.Schema] = {
    "episodes": pa.schema(list(EPISODE_COLUMNS.items())),
    "steps": pa.schema(list(_record_columns(StepRecord).items())),
    "calls": pa.schema(list({**_record_columns(CallRecord), **EXTRA_CALL_COLUMNS}.items())),
}


class SchemaError(RuntimeError):
    """A row has a column its table's schema does not declare (a harness bug, not a user error)."""


def table_from_rows(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (already flattened: JSON text for lists and mappings) as a table of ``table``'s schema."""
    schema = SCHEMAS[table]
    unknown = sorted({k for r in rows for k in r} - set(schema.names))
    if unknown:
        raise SchemaError(f"{table}: column(s) {unknown} are not in bench/schema.py's {table} schema; declare them")
    return pa.Table.from_pylist(rows, schema=schema)


def conform(table: str, data: pa.Table) -> pa.Table:
    """A table read from an older part, with ``table``'s schema: columns cast, missing ones null."""
    schema = SCHEMAS[table]
    unknown = sorted(set(data.column_names) - set(schema.names))
    if unknown:
        raise SchemaError(f"{table}: column(s) {unknown} are not in the {table} schema")
    columns = [
        data.column(f.name).cast(f.type) if f.name in data.column_names else pa.nulls(len(data), f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)
