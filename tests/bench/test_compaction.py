"""`surfbench compact RUN`: one part per table and one transcript pack, read as before, resumable, crash-safe."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.models.scripted import OracleClient
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store import compact as compact_module
from surfbench.bench.store.claims import Claims
from surfbench.bench.store.compact import compact
from surfbench.bench.store.parts import JOURNAL
from surfbench.bench.store.results import TABLES, ResultsError, RunStore, key_stem, load_runs
from surfbench.bench.store.schema import table_from_rows
from surfbench.bench.store.transcripts import drop_transcripts, iter_transcripts, read_transcript, transcript_stems

MODEL = "qwen2.5-coder-0.5b-instruct"


def run_into(root: Path, limit: int, interval: float = 0.0) -> list[str]:
    """notes_mcp on two surfaces into ``root`` (interval 0: a part per episode; > 0: group parts); keys run."""
    store = RunStore(root, commit_interval_s=interval)
    store.prepare()
    store.write_run_info({"cells": []})
    ran = []
    for surface in ("full", "dispatcher"):
        cell = resolve_cell(CellSpec("notes_mcp", surface, MODEL, split="all", limit=limit))
        rows = run_cell(cell, None, store, root.name, client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
        ran += [r.episode_key for r in rows]
    return ran


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A scripted run of 10 episodes: 6 parts of one episode, then two group parts (one per cell)."""
    root = tmp_path / "run"
    run_into(root, limit=3)  # a part per episode
    run_into(root, limit=5, interval=60.0)  # two more per cell, committed as a group when the cell ends
    return root


def frames(root: Path) -> dict[str, pd.DataFrame]:
    return {t: load_runs([root], t) for t in TABLES}


def assert_same(before: dict[str, pd.DataFrame], after: dict[str, pd.DataFrame]) -> None:
    for table in TABLES:
        assert list(after[table].dtypes) == list(before[table].dtypes), table
        pd.testing.assert_frame_equal(after[table], before[table], check_exact=True)


def parts(root: Path, table: str) -> list[str]:
    return sorted(p.name for p in (root / f"{table}.parquet").glob("part-*.parquet"))


def store_files(root: Path) -> int:
    """The files of the episode tables and the transcripts (catalogs/help parts: one per catalog or cell)."""
    folders = ("episodes.parquet", "steps.parquet", "calls.parquet", "transcripts")
    return sum(1 for p in root.rglob("*") if p.is_file() and (p.parent.name in folders or p.name == "transcripts.zip"))


def test_compacting_keeps_every_table_identical_and_packs_the_transcripts(run: Path):
    before = frames(run)
    texts = {p.stem: p.read_text(encoding="utf-8") for p in (run / "transcripts").glob("*.jsonl")}
    files = store_files(run)
    assert len(parts(run, "episodes")) > 3 and len(texts) == len(before["episodes"]) == 10

    result = compact(run)

    assert_same(before, frames(run))  # same rows, same order, same types
    assert all(len(parts(run, t)) == 1 for t in TABLES)
    assert result.parts["episodes"] == (6 + 2, 10)  # a part per episode, then two groups
    shown = {h for text in load_runs([run], "steps")["tool_hashes"] for h in json.loads(text)}
    assert len(parts(run, "tools")) == 1 and result.parts["tools"][1] == len(shown)  # each tool once, kept
    assert result.transcripts == 10 and not (run / "transcripts").exists() and (run / "transcripts.zip").is_file()
    assert dict(iter_transcripts(run)) == texts
    assert files == 8 * 3 + 10 and store_files(run) == 3 + 1
    assert compact(run).line().endswith("0 transcript(s) packed")  # again: nothing to do, nothing changes
    assert_same(before, frames(run))


def test_transcripts_read_the_same_loose_and_packed(run: Path):
    keys = list(load_runs([run])["episode_key"])
    loose = {k: read_transcript(run, k) for k in keys}
    assert all(loose.values()) and transcript_stems(run) == sorted(key_stem(k) for k in keys)
    compact(run)
    assert {k: read_transcript(run, k) for k in keys} == loose  # the one reader, either form
    assert transcript_stems(run) == sorted(key_stem(k) for k in keys)
    assert read_transcript(run, "no-such-episode") is None
    # an episode run again after compaction writes a loose transcript: it is the newer one
    (run / "transcripts").mkdir()
    (run / "transcripts" / f"{key_stem(keys[0])}.jsonl").write_text('{"again": true}\n', encoding="utf-8")
    assert read_transcript(run, keys[0]) == '{"again": true}\n'
    assert dict(iter_transcripts(run))[key_stem(keys[0])] == '{"again": true}\n'
    assert drop_transcripts(run, [keys[0], keys[1]]) == 2  # prune: loose and packed
    assert read_transcript(run, keys[0]) is None and read_transcript(run, keys[1]) is None
    assert read_transcript(run, keys[2]) == loose[keys[2]]


def test_a_run_resumed_into_a_compacted_folder_runs_only_new_episodes(tmp_path: Path):
    root = tmp_path / "run"
    first = run_into(root, limit=2)
    compact(root)
    second = run_into(root, limit=4)  # two more tasks per cell

    assert len(second) == 4 and not set(second) & set(first)  # none of the compacted episodes again
    episodes = load_runs([root])
    assert episodes["episode_key"].is_unique and set(episodes["episode_key"]) == set(first) | set(second)
    assert len(parts(root, "episodes")) == 1 + 4  # the compacted part and the new loose ones
    assert all(read_transcript(root, k) for k in first + second)
    before = frames(root)
    compact(root)
    assert_same(before, frames(root))
    assert all(len(parts(root, t)) == 1 for t in TABLES) and run_into(root, limit=4) == []


def test_an_interrupted_compaction_loses_and_doubles_nothing(run: Path, monkeypatch: pytest.MonkeyPatch):
    before = frames(run)
    done = RunStore(run).done_keys()
    texts = dict(iter_transcripts(run))
    loose_copies = run.parent / "loose"
    shutil.copytree(run / "transcripts", loose_copies)
    real = compact_module.finish

    class Crash(BaseException):
        pass

    def crash_after_the_new_part(folder: Path) -> None:
        if folder.name == "episodes.parquet" and (folder / JOURNAL).exists():
            raise Crash  # the new part written, the old ones not yet removed
        real(folder)

    monkeypatch.setattr(compact_module, "finish", crash_after_the_new_part)
    with pytest.raises(Crash):
        compact(run)
    monkeypatch.setattr(compact_module, "finish", real)
    assert len(parts(run, "episodes")) > 2 and (run / "episodes.parquet" / JOURNAL).is_file()
    assert_same(before, frames(run))  # read: the old parts left out, the new one counted once
    assert RunStore(run).done_keys() == done

    assert run_into(run, limit=3) == []  # re-run: nothing runs again; the run finished the compaction
    assert not (run / "episodes.parquet" / JOURNAL).exists() and len(parts(run, "episodes")) == 1
    assert_same(before, frames(run))

    # the transcripts: packed, and a crash before the loose files were deleted (all of them still there)
    compact(run)
    assert dict(iter_transcripts(run)) == texts and not (run / "transcripts").exists()
    shutil.copytree(loose_copies, run / "transcripts")
    assert dict(iter_transcripts(run)) == texts
    compact(run)
    assert dict(iter_transcripts(run)) == texts and not (run / "transcripts").exists()
    assert_same(before, frames(run))


def test_a_crash_before_the_new_part_changes_nothing(run: Path, monkeypatch: pytest.MonkeyPatch):
    before = frames(run)

    def crash(path: Path, writer: object) -> None:
        if path.name.startswith("part-compacted"):
            raise OSError(28, "No space left on device")
        real(path, writer)

    real = compact_module._atomic_write_bytes
    monkeypatch.setattr(compact_module, "_atomic_write_bytes", crash)
    with pytest.raises(ResultsError, match="No space left"):
        compact(run)
    assert (run / "steps.parquet" / JOURNAL).is_file()  # the journal, no new part
    assert_same(before, frames(run))
    monkeypatch.undo()
    compact(run)
    assert_same(before, frames(run))
    assert not (run / "steps.parquet" / JOURNAL).exists()


def test_compaction_is_refused_while_a_live_process_holds_claims(run: Path):
    key = str(load_runs([run])["episode_key"][0])
    with Claims(run) as claims:
        assert claims.take(key, check=False) == "mine"
        with pytest.raises(ResultsError, match=rf"claimed by running processes \(.+:{os.getpid()}\)"):
            compact(run)
        assert len(parts(run, "episodes")) > 1
    compact(run)  # released: compacted
    assert len(parts(run, "episodes")) == 1


def test_parts_with_other_columns_are_compacted_with_every_column(tmp_path: Path):
    root = tmp_path / "run"
    store = RunStore(root)
    store.prepare()
    store.write_run_info({"cells": []})
    folder = root / "steps.parquet"
    folder.mkdir()
    new = table_from_rows("steps", [{"episode_key": "b", "step": 0, "text": "new"}])
    pq.write_table(new.drop_columns(["text"]), folder / "part-a.parquet")  # an older part, a column fewer
    pq.write_table(new, folder / "part-b.parquet")
    compact(root)
    steps = load_runs([root], "steps")
    assert list(steps.columns) == ["run", *new.column_names] and list(steps["text"]) == [None, "new"]


def test_the_command_compacts_and_refuses_what_is_not_a_run(run: Path, tmp_path: Path, capsys):
    assert cli_main(["compact", str(run)]) == 0
    out = capsys.readouterr().out
    assert "part file(s) -> 4 (" in out and ", tools " in out  # the three tables and the tool texts (records v6)
    assert cli_main(["compact", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "is not a surfbench run" in err and len(err.strip().splitlines()) == 1
