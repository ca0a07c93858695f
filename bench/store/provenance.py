"""Reading a run as it was made: its recorded cells, the rows of their current identity, and drift.

Reports and gates read a run through :func:`load_current`, never through today's config files:

- each cell's resolved surface and model config, catalog hash and suite file hashes come from the
  run's ``run.json`` (written by the run itself);
- rows of an older identity (the same cell label run before a task, the catalog or a config changed)
  are left out and counted; ``surfbench prune RUN`` deletes them;
- an episode key that appears twice (a part copied, two writers) is an error naming the key, unless
  the caller asks to keep the newest row;
- a suite whose files changed since the run is named in a note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.values import missing as _missing
from surfbench.bench.store.evidence import CellInfo, RunInfo, check_cells, check_episode_parts, check_rows_recorded
from surfbench.bench.store.results import ResultsError, RunStore, load_runs
from surfbench.bench.store.transcripts import drop_transcripts

if TYPE_CHECKING:
    import pandas as pd

LABEL_COLUMNS = ("suite", "surface", "model", "mode")


class DuplicateEpisodes(ResultsError):
    """The same episode key is committed more than once in the runs read."""


def read_run_info(run: Path) -> RunInfo:
    """``run.json`` of a run folder, checked: a mapping with a list of cells, each the object a run writes.

    Else one clear error naming the file (bench.store.evidence.check_cells): reports and gates refuse the same runs.
    """
    path = run / "run.json"
    if not path.is_file():
        raise ResultsError(f"{run} is not a surfbench run (no run.json)")
    try:
        info = json.loads(read_text(path, "run record"))
    except ReadRefused as exc:  # a FIFO or /dev/zero linked in as run.json, a 10 GB file
        raise ResultsError(f"{path}: {exc.problem}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc}); the run folder is damaged") from None
    if not isinstance(info, dict) or not isinstance(info.get("cells"), list):
        raise ResultsError(f"{path}: no 'cells' list; the file is empty or was not written by surfbench")
    check_cells(path, info)
    return cast(RunInfo, info)  # checked: a mapping with a list of cells, each the object a run writes


def latest_cells(info: RunInfo) -> dict[tuple[str, ...], CellInfo]:
    """Per cell label (suite, surface, model, mode): the identity recorded last."""
    out: dict[tuple[str, ...], CellInfo] = {}
    for cell in info["cells"]:
        if isinstance(cell, dict) and cell.get("cell_id"):
            label = (str(cell["suite"]), str(cell["surface_label"]), str(cell["model_label"]), str(cell["mode"]))
            if label not in out or str(cell.get("updated", "")) >= str(out[label].get("updated", "")):
                out[label] = cell
    return out


def cell_by_id(info: RunInfo) -> dict[str, CellInfo]:
    """The run's recorded cells by cell id (cells recorded before ids are left out)."""
    return {str(c["cell_id"]): c for c in info["cells"] if isinstance(c, dict) and c.get("cell_id")}


def stale_mask(frame: pd.DataFrame, info: RunInfo) -> pd.Series:
    """True for rows of an older identity than the one their cell label ran with last.

    Rows written before cells had identities (no ``cell_id``), and rows whose label run.json records no
    identity for, are never stale: there is nothing to compare them with.
    """
    import pandas as pd

    if "cell_id" not in frame.columns or not len(frame):
        return pd.Series(False, index=frame.index)
    latest = latest_cells(info)
    by_id = cell_by_id(info)

    def stale(row: Mapping[str, object]) -> bool:
        if _missing(row["cell_id"]):
            return False
        cell = latest.get(tuple(str(row[c]) for c in LABEL_COLUMNS))
        if cell is None:  # run.json records no identity for this label: nothing newer to prefer
            return False
        if str(cell["cell_id"]) != str(row["cell_id"]):
            return True
        current = by_id[str(row["cell_id"])].get("task_hashes", {}).get(str(row["task_id"]))
        return current is not None and current != row.get("task_hash")

    # over plain column lists, not frame.apply (a Series per row): 10,000 rows in milliseconds, not a second
    names = [c for c in ("cell_id", *LABEL_COLUMNS, "task_id", "task_hash") if c in frame.columns]
    columns = (frame[c].tolist() for c in names)
    rows = (dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True))
    return pd.Series([stale(row) for row in rows], index=frame.index, dtype=bool)


@dataclass
class RunView:
    """The episodes of some runs that reports and gates may count, and what was left out."""

    frame: pd.DataFrame
    """Episode rows of each cell's current identity."""
    infos: dict[str, RunInfo]
    """run folder -> its run.json."""
    ignored: int = 0
    """Rows of an older identity left out."""
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[CellInfo]:
        """Every recorded cell of every run, latest identity per label."""
        return [c for info in self.infos.values() for c in latest_cells(info).values()]

    def legacy_cells(self) -> list[CellInfo]:
        """Cells of runs recorded before cells kept their resolved config (no ``cell_id``)."""
        return [
            c for info in self.infos.values() for c in info["cells"] if isinstance(c, dict) and not c.get("cell_id")
        ]


def _check_duplicates(frame: pd.DataFrame, keep_newest: bool) -> pd.DataFrame:
    if "episode_key" not in frame.columns:
        return frame
    dup = frame["episode_key"].duplicated(keep=False)
    if not dup.any():
        return frame
    if keep_newest:
        order = frame.sort_values("_part_mtime", kind="stable")
        return order.drop_duplicates("episode_key", keep="last").sort_index()
    keys = sorted(set(frame.loc[dup, "episode_key"]))
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    raise DuplicateEpisodes(
        f"{len(keys)} episode key(s) committed more than once ({shown}): counting them would count an episode "
        "twice; remove the extra part files, or pass --keep-newest to count the newest row of each"
    )


def load_current(runs: Sequence[str | Path], keep_newest: bool = False, suites: bool = True) -> RunView:
    """The episodes of ``runs`` that belong to each cell's current identity (see the module docstring).

    ``suites``: note the suite files changed since the run (:func:`suite_drift`; False: read nothing but the runs).
    """
    import pandas as pd

    if not runs:
        raise ResultsError("no run folders given")
    frames, infos, ignored, notes = [], {}, 0, []
    for run in runs:
        root = Path(run)
        info = read_run_info(root)
        infos[str(root)] = info
        check_episode_parts(root)  # a foreign or unreadable part is an error naming it, never a number
        frame = load_runs([root], source=True)
        if not len(frame):
            continue
        check_rows_recorded(root, info, frame)  # run.json copied from another run: its cells are not these
        frame = _check_duplicates(frame, keep_newest)
        stale = stale_mask(frame, info)
        if stale.any():
            ignored += int(stale.sum())
            notes.append(
                f"{root}: {int(stale.sum())} episode(s) of an older cell identity left out (a task, the catalog "
                f"or a config changed since they ran); `surfbench prune {root}` deletes them"
            )
        frames.append(frame[~stale])
        notes += suite_drift(info) if suites else []
    if not frames or not sum(len(f) for f in frames):
        raise ResultsError(f"no episodes in {', '.join(map(str, runs))}: nothing to report")
    frame = pd.concat(frames, ignore_index=True).drop(columns=["_part_mtime"], errors="ignore")
    return RunView(frame, infos, ignored, notes)


def suite_drift(info: RunInfo) -> list[str]:
    """Notes naming suite files that changed since the run (the report still reads what the run recorded)."""
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.suites.suite import load_suite

    notes = []
    seen: set[str] = set()
    for cell in latest_cells(info).values():
        suite_name, recorded = str(cell["suite"]), cell.get("suite_files") or {}
        if suite_name in seen or not recorded:
            continue
        seen.add(suite_name)
        try:
            today = load_suite(suite_name).file_hashes()
        except ConfigError:
            notes.append(f"suite {suite_name!r} no longer loads here; numbers are as recorded")
            continue
        changed = sorted(n for n in set(recorded) | set(today) if recorded.get(n) != today.get(n))
        if changed:
            notes.append(f"suite {suite_name!r}: {', '.join(changed)} changed since the run")
    return notes


def prune(run: Path) -> int:
    """Delete the rows of older identities from a run (and their transcripts); return how many."""
    info = read_run_info(run)
    frame = load_runs([run])
    if not len(frame):
        return 0
    check_rows_recorded(run, info, frame)  # another run's run.json would have its rows taken for older ones
    stale = stale_mask(frame, info)
    keys = {str(k) for k in frame.loc[stale, "episode_key"]}
    RunStore(run).discard(keys)
    drop_transcripts(run, keys)  # loose and packed (bench/store/transcripts.py)
    return len(keys)
