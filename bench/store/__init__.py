"""The store stage: run folders, their tables, identity and the typed reader.

The results store: one schema per table (``tables``, ``schema``), run folders and their parts (``results``,
``parts``, ``transcripts``, ``compact``), claims for concurrent writers (``claims``), cell and episode
identity (``identity``), provenance and evidence checks (``provenance``, ``evidence``), what a run recorded
of its catalogs (``recorded``) and of its tool blocks' texts (``tool_texts``), and the typed reader (``reader``:
``surfbench.load``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from surfbench.bench.base.exports import lazy

if TYPE_CHECKING:
    from surfbench.bench.store.identity import CellIdentity as CellIdentity
    from surfbench.bench.store.identity import episode_key as episode_key
    from surfbench.bench.store.reader import RecordedCell as RecordedCell
    from surfbench.bench.store.reader import Runs as Runs
    from surfbench.bench.store.reader import load as load
    from surfbench.bench.store.results import ResultsError as ResultsError
    from surfbench.bench.store.results import RunStore as RunStore
    from surfbench.bench.store.results import load_runs as load_runs
    from surfbench.bench.store.tables import (
        CallRow as CallRow,
    )
    from surfbench.bench.store.tables import (
        CellSummary as CellSummary,
    )
    from surfbench.bench.store.tables import (
        EpisodeRow as EpisodeRow,
    )
    from surfbench.bench.store.tables import (
        StepRow as StepRow,
    )

EXPORTS = {
    "CallRow": "tables",
    "CellIdentity": "identity",
    "CellSummary": "tables",
    "EpisodeRow": "tables",
    "RecordedCell": "reader",
    "ResultsError": "results",
    "RunStore": "results",
    "Runs": "reader",
    "StepRow": "tables",
    "episode_key": "identity",
    "load": "reader",
    "load_runs": "results",
}
"""Each public name and the module of this package that defines it."""

__all__ = sorted(EXPORTS)
__getattr__ = lazy(__name__, EXPORTS)
