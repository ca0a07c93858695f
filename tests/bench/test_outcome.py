"""How an episode ended is a typed column, written with the episode and read back as the same enum.

Runs recorded before the column (records v7 and older: ``results/reference/``, ``tests/fixtures/runs/``) get it
from their error text in one place, the reader (bench.store.outcomes); nothing else reads that text to decide it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from surfbench.bench.contracts.records import EpisodeOutcome, EpisodeTrace
from surfbench.bench.score.scorer import outcome_of
from surfbench.bench.store.outcomes import legacy_outcome
from surfbench.bench.store.parts import table_parts
from surfbench.bench.store.reader import load
from surfbench.bench.store.results import load_runs
from surfbench.bench.store.schema import SCHEMAS, conform
from tests.bench.test_scale_fit import run_tiny
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "runs" / "llama-server-forge-core"
ERRORS = {
    None: EpisodeOutcome.RAN,
    "does not fit: first request at least 9,400 prompt tokens ... not sent (context_overflow)": (
        EpisodeOutcome.DOES_NOT_FIT
    ),
    "context_overflow: openai/qwen: maximum context length is 16384 tokens": EpisodeOutcome.CONTEXT_OVERFLOW,
    "ModelError: openai/qwen at http://127.0.0.1:1/v1: ContextWindowExceededError: too long": (
        EpisodeOutcome.CONTEXT_OVERFLOW
    ),
    "KeyError: 'owner'": EpisodeOutcome.HARNESS_ERROR,
}
"""Error texts as runs before the column recorded them, and the outcome the legacy path gives each."""


def test_the_outcome_is_a_str_enum_whose_overflow_and_harness_values_are_the_error_types():
    assert [o.value for o in EpisodeOutcome] == ["ran", "does_not_fit", "context_overflow", "harness_error"]
    assert EpisodeOutcome.DOES_NOT_FIT.error_type == EpisodeOutcome.CONTEXT_OVERFLOW.error_type == "context_overflow"
    assert EpisodeOutcome.HARNESS_ERROR.error_type == "harness_error" and EpisodeOutcome.RAN.error_type is None


def test_the_scorer_reads_the_traces_outcome_never_its_error_text():
    text = "does not fit: but the loop says otherwise"
    assert outcome_of(EpisodeTrace()) is EpisodeOutcome.RAN
    assert outcome_of(EpisodeTrace(error=text, outcome=EpisodeOutcome.CONTEXT_OVERFLOW)) is (
        EpisodeOutcome.CONTEXT_OVERFLOW
    )
    assert outcome_of(EpisodeTrace(error=text)) is EpisodeOutcome.HARNESS_ERROR  # untyped error: the harness's


def test_a_does_not_fit_episode_is_recorded_as_such_and_read_back_as_the_enum(tmp_path: Path):
    run = run_tiny(tmp_path)  # forge's full does not fit a 4,000-token window; core runs
    stored = [
        (row["surface"], row["outcome"])
        for part in table_parts(run / "episodes.parquet")
        for row in pq.read_table(part).to_pylist()
    ]
    assert sorted(set(stored)) == [("core", "ran"), ("full", "does_not_fit")]  # the column holds the value
    frame = load(run, suites=False).episodes
    full = frame[frame["surface"] == "full"]["outcome"].tolist()
    assert full == [EpisodeOutcome.DOES_NOT_FIT] * 2 and all(type(o) is EpisodeOutcome for o in full)


@pytest.mark.parametrize(("error", "expected"), list(ERRORS.items()))
def test_the_legacy_rule(error: str | None, expected: EpisodeOutcome):
    assert legacy_outcome(error) is expected


def _old_run(tmp_path: Path) -> tuple[Path, pa.Table]:
    """A copy of the fixture run (records v7: no outcome column), its one episodes part and its rows."""
    run = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, run)
    (part,) = table_parts(run / "episodes.parquet")
    table = pq.read_table(part)
    assert "outcome" not in table.column_names, "the fixture is a run from before the column"
    return part, table


def test_a_run_recorded_before_the_column_reads_back_with_its_outcomes(tmp_path: Path):
    part, table = _old_run(tmp_path)
    run = part.parent.parent
    rows = table.to_pylist()
    errors = list(ERRORS)
    pq.write_table(  # one row per error text, keys of their own, in the old schema
        pa.Table.from_pylist(
            [{**rows[i % len(rows)], "episode_key": f"k{i}", "error": e} for i, e in enumerate(errors)],
            schema=table.schema,
        ),
        part,
    )
    frame = load_runs([run])
    assert dict(zip(frame["error"], frame["outcome"], strict=True)) == ERRORS
    assert all(type(o) is EpisodeOutcome for o in frame["outcome"])

    conformed = conform("episodes", pq.read_table(part))  # what `surfbench migrate` writes: the column null
    assert conformed.schema.equals(SCHEMAS["episodes"]) and conformed.column("outcome").null_count == len(errors)
    pq.write_table(conformed, part)
    assert load_runs([run])["outcome"].tolist() == list(ERRORS.values())


def test_the_fixture_run_reads_through_surfbench_load_with_typed_outcomes(tmp_path: Path):
    part, table = _old_run(tmp_path)
    rows = table.to_pylist()
    rows[0]["error"] = "context_overflow: openai/qwen: maximum context length is 16384 tokens"
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), part)
    episodes = load(part.parent.parent, suites=False).episodes.sort_values("episode_key")
    by_key = dict(zip(episodes["episode_key"], episodes["outcome"], strict=True))
    assert by_key == {
        rows[0]["episode_key"]: EpisodeOutcome.CONTEXT_OVERFLOW,
        rows[1]["episode_key"]: EpisodeOutcome.RAN,
    }
