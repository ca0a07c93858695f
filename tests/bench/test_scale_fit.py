"""A cell that cannot fit the model's context window is "does not fit", never a harness error.

The scripted model with a 4,000-token window: forge's ``full`` (about 9,400 tokens of tools) is
predicted not to fit and recorded without a model call; ``core`` fits and runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from surfbench.bench.catalog.provider_limits import ProviderLimits, predict_fit
from surfbench.bench.contracts.records import EpisodeOutcome
from surfbench.bench.store.outcomes import LEGACY_DOES_NOT_FIT, legacy_outcome

TINY = {"provider": "scripted", "script_suite": "forge", "params_b": 0.0, "mode": "native",
        "limits": {"context_window": 4000}}  # fmt: skip


def run_tiny(tmp_path: Path) -> Path:
    from surfbench.bench.models import ModelPool
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore

    store = RunStore(tmp_path / "run", commit_interval_s=0.5)
    store.prepare()
    cells = [
        resolve_cell(CellSpec("forge", surface, "tiny", limit=2), None, dict(TINY)) for surface in ("full", "core")
    ]
    store.write_run_info({"cells": [{"suite": c.suite.name, **c.provenance()} for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "run")
    return store.root


def test_the_recorded_error_names_its_type_and_older_runs_are_typed_by_it():
    why = predict_fit(["word " * 3000], 512, ProviderLimits(context_window=1024)).why()
    assert why.startswith(LEGACY_DOES_NOT_FIT) and "context_overflow" in why
    assert legacy_outcome(why) is EpisodeOutcome.DOES_NOT_FIT  # the legacy path keeps reading it


def test_does_not_fit_is_counted_as_such_not_as_a_harness_error(tmp_path: Path):
    from surfbench.bench.analysis.metrics import format_summary, summarize_cell
    from surfbench.bench.report.report import markdown
    from surfbench.bench.report.report_data import CELL_HEAD, cell_table, collect
    from surfbench.bench.store.results import load_runs

    run = run_tiny(tmp_path)
    frame = load_runs([run])
    full = frame[frame["surface"] == "full"]
    core = frame[frame["surface"] == "core"]
    assert len(full) == 2 and full["error"].str.startswith(LEGACY_DOES_NOT_FIT).all()
    assert all(type(o) is EpisodeOutcome for o in frame["outcome"])  # written with the episode, read back typed
    assert list(full["outcome"]) == [EpisodeOutcome.DOES_NOT_FIT] * 2
    assert list(frame[frame["surface"] == "core"]["outcome"]) == [EpisodeOutcome.RAN] * 2
    types = [json.loads(t) for t in full["error_types"]]
    assert all("context_overflow" in t and "harness_error" not in t for t in types), types
    assert len(core) == 2 and core["error"].isna().all() and (core["round_trips"] > 0).all()

    summary = summarize_cell(full.to_dict("records"))
    assert (summary.harness_errors, summary.context_overflows) == (0, 0)
    assert summary.does_not_fit == 2
    text = format_summary(summary)  # the summary `surfbench run` prints
    assert "harness error" not in text and "does not fit           2" in text, text

    from surfbench.bench.run.progress import outcome

    assert outcome(full.to_dict("records")[0]).startswith("failed (does not fit:")

    from surfbench.bench.store.results import RunStore

    assert RunStore(run).errored_keys() == set()  # retry_errors=true would not run them again

    data = collect([run])
    rows = {r[CELL_HEAD.index("surface")]: r for r in cell_table(data)}
    episodes = CELL_HEAD.index("episodes")
    assert rows["full"][episodes] == "2 (does not fit: 2)"
    assert rows["core"][episodes] == "2"
    assert "2 (does not fit: 2)" in markdown(data, {})
