"""Checks that reports and gates make before they count anything: is this a run, and whose rows are these.

:func:`surfbench.bench.provenance.load_current` reads a run's episodes as one DataFrame. A part file that is not
an episodes part (a ``steps`` part copied into ``episodes.parquet/``, a truncated file, a column of the
wrong type) would otherwise surface later as a TypeError or a NaN somewhere in the statistics, or
worse, as a number. :func:`check_episode_parts` reads each part's schema (the footer only, not the
rows) first and refuses with one line naming the part; ``load_current`` calls it for every run it reads.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from surfbench.bench.results import ResultsError
from surfbench.bench.schema import EPISODE_COLUMNS

REQUIRED_COLUMNS = ("episode_key", "suite", "task_id", "surface", "model", "mode", "success")


class ForeignPart(ResultsError):
    """A part in ``episodes.parquet/`` that cannot be an episodes part (unreadable, another table's, wrong types)."""


def _compatible(found: pa.DataType, wanted: pa.DataType) -> bool:
    """Whether a part's column type reads as the schema's (older parts: all-null columns, int for float)."""
    if found == wanted or pa.types.is_null(found):
        return True
    numeric = (pa.types.is_integer, pa.types.is_floating)
    if any(t(wanted) for t in numeric) and any(t(found) for t in numeric):
        return True
    return pa.types.is_string(wanted) and (pa.types.is_string(found) or pa.types.is_large_string(found))


def episode_parts(run: Path) -> list[Path]:
    """The part files of a run's episodes table (a folder of parts, or one compacted file)."""
    folder = run / "episodes.parquet"
    if folder.is_dir():
        return sorted(folder.glob("part-*.parquet"))
    return [folder] if folder.is_file() else []


def check_part(part: Path) -> None:
    """Refuse a part that is not an episodes part, naming it and what is wrong."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(part)
    except (pa.ArrowException, OSError) as exc:
        why = " ".join(str(exc).split())
        raise ForeignPart(f"{part}: not a readable parquet part ({why}); move it out of the run folder") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in schema.names]
    if missing:
        raise ForeignPart(
            f"{part}: not an episodes part: column(s) {', '.join(missing)} missing (a steps or calls part, or "
            "not written by surfbench); move it out of the run folder"
        )
    wrong = [
        f"{name} is {schema.field(name).type}, not {EPISODE_COLUMNS[name]}"
        for name in schema.names
        if name in EPISODE_COLUMNS and not _compatible(schema.field(name).type, EPISODE_COLUMNS[name])
    ]
    if wrong:
        raise ForeignPart(
            f"{part}: not an episodes part of bench/schema.py: {'; '.join(wrong)} (written by another tool? "
            "a run older than the typed schemas: `surfbench migrate RUN`)"
        )


def check_episode_parts(run: Path) -> None:
    """Only episodes parts in the run's episodes table, else one clear error naming the part."""
    for part in episode_parts(run):
        check_part(part)


def surface_label(name: str, labels: set[str]) -> str:
    """The run's label for a surface that a gate file or ``--baseline`` names.

    A gate file names a surface config (``preselect``); a run made with overrides labels it
    ``preselect[params.k=10]``: the one label of that config stands for it (two would be ambiguous, so
    the name is returned unchanged and the caller decides).
    """
    if name in labels:
        return name
    matches = [label for label in labels if label.startswith(name + "[")]
    return matches[0] if len(matches) == 1 else name


def config_labels(name: str, labels: set[str]) -> list[str]:
    """Every label of the runs that is the surface config ``name`` (itself, or with overrides)."""
    return sorted(label for label in labels if label == name or label.startswith(name + "["))
