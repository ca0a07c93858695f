"""What the viewer holds of its runs: the episodes table (read once), its cells, and what it reads on demand.

:class:`ViewIndex` reads the run folders with the typed reader (``surfbench.load``) when the viewer starts: the
episodes table and run.json, nothing else. The cells table is the report's (bench.report.report_data: the same
groups, metrics and intervals). The steps and calls tables are read the first time a page needs them (an
episode, a task, an operation filter), the tools table (the tool blocks' texts) when an episode is shown, and
a transcript (bench.store.transcripts) when its episode is shown, or when a search needs its task's request. A
cell's episodes page through :data:`PAGE_SIZE` rows at a time.

Pages are looked up by name in what was loaded (:meth:`ViewIndex.episode_key`, :meth:`ViewIndex.cell`): a
request never becomes a file path, so nothing outside the run folders can be read through the viewer.
"""

from __future__ import annotations

import json
import math
import threading
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.report.report_data import (
    CELL_KEYS,
    CellRow,
    ReportData,
    cell_head,
    cell_rows,
    cell_table,
    resolve_baseline,
)
from surfbench.bench.report.viewer_links import cell_id, page_name
from surfbench.bench.store.outcomes import typed_outcome
from surfbench.bench.store.reader import Runs, load
from surfbench.bench.store.results import ResultsError, key_stem
from surfbench.bench.store.transcripts import LOOSE, PACKED, SUFFIX, read_transcript

if TYPE_CHECKING:
    import pandas as pd

PAGE_SIZE = 100
"""Episodes per page of a cell's list."""
OUTCOMES = ("pass", "fail", "error")


@dataclass(frozen=True)
class ViewCell:
    """One cell of the loaded runs: the report's row for it, and where its episodes are in the episodes table."""

    id: str
    row: CellRow
    text: list[str]
    """Its row of the report's cells table (:attr:`ViewIndex.head`)."""
    positions: tuple[int, ...]
    """Its episodes' rows in :attr:`ViewIndex.frame`, by task and repeat."""

    @property
    def keys(self) -> dict[str, object]:
        return self.row.keys

    @property
    def label(self) -> str:
        k = self.keys
        return f"{k['surface']} / {k['model']} / {k['mode']} ({k['suite']})"


@dataclass(frozen=True)
class Filters:
    """What a cell's episode list is narrowed to (the page's query: ``?outcome=fail&op=repo_get&page=2``)."""

    outcome: str = ""
    error: str = ""
    tag: str = ""
    op: str = ""
    q: str = ""
    """Text to find in the task's request (the user turns), case-insensitive."""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, Sequence[str]]) -> Filters:
        def one(name: str) -> str:
            values = query.get(name) or [""]
            return str(values[0]).strip()[:200]

        try:
            page = max(1, int(one("page") or 1))
        except ValueError:
            page = 1
        outcome = one("outcome")
        return cls(outcome if outcome in OUTCOMES else "", one("error"), one("tag"), one("op"), one("q"), page)

    def query(self, **change: object) -> dict[str, str]:
        """The non-empty filters as a query (``page`` dropped unless changed)."""
        values = {"outcome": self.outcome, "error": self.error, "tag": self.tag, "op": self.op, "q": self.q}
        values.update({k: str(v) for k, v in change.items()})
        return {k: v for k, v in values.items() if v and not (k == "page" and v == "1")}


def listed(value: object) -> list[object]:
    """A JSON-encoded list column's value as a list (missing: empty)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    return list(value) if isinstance(value, list | tuple) else []


def missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or str(value) in ("<NA>", "nan", "None")


def outcome(row: Mapping[str, object] | pd.Series) -> str:
    """``error`` (it did not run to its end), ``pass`` (every check holds) or ``fail``.

    ``error``: its ``outcome`` column is not ``ran`` (a harness error, a context overflow, does not fit).

    ``row``: an episodes row (a dict, or a row of the frame).
    """
    recorded = row.get("outcome")
    ended = typed_outcome(None if missing(recorded) else recorded, row.get("error"))  # LEGACY rows: from the error
    if ended != EpisodeOutcome.RAN:
        return "error"
    return "pass" if bool(row.get("success")) else "fail"


def expected_ops(row: Mapping[str, object] | pd.Series) -> list[list[str]]:
    """The task's expected calls in order, each as its alternatives (from ``expected_ops``, else ``first_tries``)."""
    recorded = listed(row.get("expected_ops"))
    if recorded:
        return [[str(o) for o in op] if isinstance(op, list) else [str(op)] for op in recorded]
    return [[str(t.get("op"))] for t in listed(row.get("first_tries")) if isinstance(t, Mapping)]


class ViewIndex:
    """The loaded runs, and what their pages need (see the module docstring)."""

    def __init__(self, runs: Sequence[str | Path], keep_newest: bool = False) -> None:
        self.folders = [Path(r) for r in runs]
        self.runs: Runs = load(*self.folders, keep_newest=keep_newest, suites=False)  # the run folders only
        self.frame: pd.DataFrame = self.runs.episodes.reset_index(drop=True)
        self.lock = threading.RLock()
        """Held while a page is built: the lazily read tables are read once, by one thread."""
        self._requests: dict[tuple[str, str], str] = {}

    # -- cells and episodes ------------------------------------------------------------------------------
    @cached_property
    def data(self) -> ReportData:
        """The report's cells (bench.report.report_data), without what only the report needs."""
        rows = cell_rows(self.frame)
        baseline, _ = resolve_baseline({str(s) for s in self.frame["surface"]}, None)
        return ReportData(runs=[], cells=rows, paired=[], per_op={}, op_order=[], hot_ops=set(), baseline=baseline)

    @cached_property
    def head(self) -> list[str]:
        """The head of the report's cells table (with the optional columns some cell has)."""
        return cell_head(self.data)

    @cached_property
    def cells(self) -> list[ViewCell]:
        """The report's cells, in its order, each with its episodes' rows."""
        frame, data = self.frame, self.data
        rows = data.cells
        order = frame.sort_values(["task_id", "repeat"], kind="stable").index
        positions: dict[str, list[int]] = {}
        for keys, index in frame.loc[order].groupby(CELL_KEYS, dropna=False, sort=False).indices.items():
            ident = cell_id(dict(zip(CELL_KEYS, keys, strict=True)))
            positions[ident] = [int(order[i]) for i in index]
        return [
            ViewCell(cell_id(r.keys), r, text, tuple(positions.get(cell_id(r.keys), ())))
            for r, text in zip(rows, cell_table(data, optional=True), strict=True)
        ]

    @cached_property
    def cell_at(self) -> dict[int, str]:
        """Row of the episodes table -> the id of its cell."""
        return {i: cell.id for cell in self.cells for i in cell.positions}

    def cell(self, ident: str) -> ViewCell | None:
        return next((c for c in self.cells if c.id == ident), None)

    def cell_of(self, position: int) -> ViewCell | None:
        """The cell an episode (its row in :attr:`frame`) belongs to."""
        return self.cell(self.cell_at.get(position, ""))

    @cached_property
    def _pages(self) -> dict[str, int]:
        return {page_name(str(key)): i for i, key in enumerate(self.frame["episode_key"])}

    def episode_position(self, name: str) -> int | None:
        """The row of the episode whose page is ``episode/<name>.html`` (None: no such episode was loaded)."""
        return self._pages.get(name)

    def row(self, position: int) -> dict[str, object]:
        return dict(self.frame.iloc[position].to_dict())

    @cached_property
    def tasks(self) -> dict[tuple[str, str], list[int]]:
        """(suite page name, task page name) -> the task's episodes (rows) on every cell."""
        out: dict[tuple[str, str], list[int]] = {}
        for i, (suite, task) in enumerate(zip(self.frame["suite"], self.frame["task_id"], strict=True)):
            out.setdefault((page_name(str(suite)), page_name(str(task))), []).append(i)
        return out

    # -- steps, calls, transcripts (read on first use) ------------------------------------------------------
    @cached_property
    def steps(self) -> pd.DataFrame:
        return self.runs.steps

    @cached_property
    def calls(self) -> pd.DataFrame:
        return self.runs.calls

    def episode_steps(self, key: str) -> list[dict[str, object]]:
        frame = self.steps
        if not len(frame):
            return []
        rows = frame[frame["episode_key"] == key].sort_values("step")
        return [dict(r) for r in rows.to_dict("records")]

    def episode_calls(self, key: str) -> list[dict[str, object]]:
        frame = self.calls
        if not len(frame):
            return []
        rows = frame[frame["episode_key"] == key].sort_values(["step", "index"])
        return [dict(r) for r in rows.to_dict("records")]

    @cached_property
    def called_ops(self) -> dict[str, set[str]]:
        """Episode key -> the operations its calls named (routed ones included)."""
        frame = self.calls
        out: dict[str, set[str]] = {}
        if not len(frame) or "operation" not in frame.columns:
            return out
        named = frame[frame["operation"].notna()]
        for key, op in zip(named["episode_key"], named["operation"], strict=True):
            out.setdefault(str(key), set()).add(str(op))
        return out

    def transcript(self, position: int) -> tuple[list[dict[str, object]], dict[str, object]] | None:
        """The episode's messages and the transcript's summary line (None: the run kept no transcript of it)."""
        key, run = str(self.frame.at[position, "episode_key"]), str(self.frame.at[position, "run"])
        for folder in sorted(self.folders, key=lambda f: f.name != run):  # its own run's folder first
            try:
                text = read_transcript(folder, key)
            except (OSError, ValueError, zipfile.BadZipFile) as exc:  # removed or damaged since the viewer started
                loose = folder / LOOSE / f"{key_stem(key)}{SUFFIX}"
                where = loose if loose.is_file() else folder / PACKED
                raise ResultsError(f"{where} cannot be read ({exc}); restore the run folder, or re-run it") from None
            if text is None:
                continue
            messages: list[dict[str, object]] = []
            summary: dict[str, object] = {}
            for line in text.splitlines():
                try:
                    item = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(item, dict) and isinstance(item.get("message"), dict):
                    messages.append(item["message"])
                elif isinstance(item, dict):
                    summary.update(item)
            return messages, summary
        return None

    def request_text(self, position: int) -> str:
        """The task's request: its user turns, from one transcript per task (cached)."""
        task = (str(self.frame.at[position, "suite"]), str(self.frame.at[position, "task_id"]))
        if task not in self._requests:
            found = self.transcript(position)
            turns = [str(m.get("content") or "") for m in (found[0] if found else []) if m.get("role") == "user"]
            self._requests[task] = "\n".join(turns)
        return self._requests[task]

    @cached_property
    def first_tries_by_op(self) -> dict[tuple[str, str], list[tuple[int, dict[str, object]]]]:
        """(suite, operation) -> each episode's first try at it: (row, {op, correct, error_type})."""
        out: dict[tuple[str, str], list[tuple[int, dict[str, object]]]] = {}
        parsed: dict[str, list[object]] = {}
        for i, (suite, text) in enumerate(zip(self.frame["suite"], self.frame["first_tries"], strict=True)):
            tries = parsed.setdefault(str(text), listed(text))
            for t in tries:
                if isinstance(t, dict):
                    out.setdefault((str(suite), str(t.get("op"))), []).append((i, t))
        return out

    # -- a cell's list -------------------------------------------------------------------------------------
    def select(self, cell: ViewCell, filters: Filters) -> list[int]:
        """The cell's episodes (rows) that pass ``filters``, in the list's order (all pages)."""
        chosen = list(cell.positions)
        frame = self.frame
        if filters.outcome:
            chosen = [i for i in chosen if outcome(frame.iloc[i]) == filters.outcome]
        if filters.error:
            chosen = [i for i in chosen if filters.error in map(str, listed(frame.at[i, "error_types"]))]
        if filters.tag:
            chosen = [i for i in chosen if filters.tag in map(str, listed(frame.at[i, "tags"]))]
        if filters.op:
            chosen = [i for i in chosen if filters.op in self.ops(i)]
        if filters.q:
            needle = filters.q.casefold()
            chosen = [i for i in chosen if needle in self.request_text(i).casefold()]
        return chosen

    def ops(self, position: int) -> set[str]:
        """The operations an episode expected or called."""
        row = self.frame.iloc[position]
        expected = {op for alternatives in expected_ops(row) for op in alternatives}
        return expected | self.called_ops.get(str(row["episode_key"]), set())

    def choices(self, cell: ViewCell) -> dict[str, list[str]]:
        """The values each filter can take in this cell: error types, tags, operations (expected ones)."""
        rows = self.frame.loc[list(cell.positions)]
        out: dict[str, list[str]] = {}
        for name, column in (("error", "error_types"), ("tag", "tags")):
            values = {str(v) for text in rows[column].dropna().unique() for v in listed(text)}
            out[name] = sorted(values)
        ops: set[str] = set()
        columns = [c for c in ("expected_ops", "first_tries") if c in rows.columns]
        for values in rows[columns].drop_duplicates().to_dict("records"):
            ops.update(op for alternatives in expected_ops(values) for op in alternatives)
        out["op"] = sorted(ops)
        return out
