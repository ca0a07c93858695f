"""The typed rows are the tables' schemas, the report re-renders the committed reference reports, and the
gate takes its directions from the metric registry."""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from surfbench.bench.analysis import metrics
from surfbench.bench.analysis.compare import Paired
from surfbench.bench.analysis.metrics import METRICS, summarize_cell
from surfbench.bench.contracts.records import CallRecord, StepRecord
from surfbench.bench.report.gate import Criterion, _verdict, format_gate, judge
from surfbench.bench.report.report import markdown
from surfbench.bench.report.report_data import collect
from surfbench.bench.store.evidence import check_episode_parts
from surfbench.bench.store.schema import ROW_TYPES, SCHEMAS
from surfbench.bench.store.tables import CallRow, CellSummary, EpisodeRow, StepRow, columns
from tests.conftest import ROOT

REFERENCE = ROOT / "results" / "reference"

# The tables' columns as runs are written: a change here breaks every existing run folder (and `surfbench
# migrate`), so it must be deliberate. Records v2 (bench.contracts.records.RECORDS_VERSION) added expected_ops,
# shown_count, operations_shown and hits at the ends: the runs in results/reference lack them (read as null).
# Records v3 added the calls' policy verdict and the episodes' partial credit and policy counts, at the ends too.
# Records v4 added the steps' sent_at and segments (the cache model's input), at the end likewise.
# Records v5 added the episodes' instance_calls and instance_right (pass-through parameters), at the end.
# Records v6 added the steps' tool_hashes (the tool block as sent; the texts in the run's tools table), at the end.
# Records v7 added the steps' server_cache_n, server_prompt_n and slot (llama-server's own counts), at the end.
# Records v8 added the episodes' outcome (an EpisodeOutcome; older runs get it in bench.store.outcomes), at the end.
WRITTEN = {
    "episodes": "episode_key:string run:string suite:string task_id:string split:string tags:string surface:string "
    "surface_config:string surface_kind:string model:string model_config:string cell_id:string task_hash:string "
    "params_b:double mode:string repeat:int64 catalog_hash:string round_trips:int64 overhead_round_trips:int64 "
    "expected_calls:int64 first_try_correct:int64 first_try_accuracy:double first_tries:string "
    "selection_correct:bool success:bool calls_ok:bool state_ok:bool answer_ok:bool refuse_ok:bool "
    "recovered_after_error:int64 failed_first_tries:int64 boundary_violations:int64 protocol_violations:int64 "
    "parse_failures:int64 meta_calls:int64 operation_calls:int64 stable_prefix:bool stuck_repeats:int64 stuck:bool "
    "prompt_tokens_total:int64 prompt_tokens_per_step:double prompt_tokens_est_per_step:double "
    "cached_prompt_tokens_total:int64 completion_tokens_total:int64 request_bytes_per_step:double "
    "tool_block_bytes_first:int64 tools_shown_first:int64 latency_s:double wall_s:double cost_usd:double "
    "cache_hits:int64 error_types:string failures:string final_text:string error:string traceback:string "
    "attempts:int64 disk_peak_bytes:int64 memory_peak_bytes:int64 expected_ops:string call_share:double "
    "state_share:double min_round_trips:int64 efficiency:double policy_denials:int64 policy_asked:int64 "
    "policy_recovered:bool instance_calls:int64 instance_right:int64 outcome:string",
    "steps": "episode_key:string step:int64 request_bytes:int64 request_bytes_source:string prompt_tokens:int64 "
    "prompt_tokens_est:int64 cached_prompt_tokens:int64 completion_tokens:int64 latency_s:double tools_shown:int64 "
    "tool_block_bytes:int64 prefix_hash:string tool_calls:int64 overhead:bool parse_format:string "
    "parse_failures:int64 cache_hit:bool finish_reason:string cost_usd:double text:string shown_count:int64 "
    "operations_shown:string sent_at:double segments:string tool_hashes:string server_cache_n:int64 "
    "server_prompt_n:int64 slot:int64",
    "calls": "episode_key:string step:int64 index:int64 tool:string arguments:string kind:string operation:string "
    "meta:string error_type:string schema_valid:bool backend_ok:bool result:string hits:string policy:string "
    "first_try_for:string "
    "first_try_correct:bool",
}


# -- (a) one schema per table, from its row dataclass ----------------------------------------------------
@pytest.mark.parametrize("table", sorted(SCHEMAS))
def test_each_arrow_schema_is_its_row_dataclass_in_order(table: str):
    schema = SCHEMAS[table]
    assert schema.names == [c.name for c in columns(ROW_TYPES[table])]
    assert [f"{f.name}:{f.type}" for f in schema] == WRITTEN[table].split()


def test_steps_and_calls_are_the_key_then_their_records_fields():
    assert SCHEMAS["episodes"].names == [f.name for f in fields(EpisodeRow)]
    assert SCHEMAS["steps"].names == ["episode_key", *(f.name for f in fields(StepRecord))]
    extra = ["first_try_for", "first_try_correct"]
    assert SCHEMAS["calls"].names == ["episode_key", *(f.name for f in fields(CallRecord)), *extra]


def test_a_row_as_written_has_exactly_its_tables_columns():
    call = CallRecord(0, 0, "repo_get", {"owner": "a"}, "operation", "repo_get", result="ok")
    row = CallRow("k", call, "repo_get", True)
    assert list(row.as_dict()) == SCHEMAS["calls"].names
    assert row["arguments"] == {"owner": "a"} and row.get("first_try_correct") is True and row.get("nope") is None


@pytest.mark.parametrize("run", sorted(str(p.parent.relative_to(REFERENCE)) for p in REFERENCE.rglob("run.json")))
def test_reference_runs_still_pass_the_evidence_checks(run: str):
    check_episode_parts(REFERENCE / run)  # raises ForeignPart on a column of the wrong type


def test_a_fresh_runs_parts_are_written_with_the_declared_schemas(tmp_path: Path):
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import TABLES, RunStore

    store = RunStore(tmp_path / "run", commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": []})
    cell = resolve_cell(CellSpec("notes_mcp", "dispatcher", "qwen2.5-coder-0.5b-instruct", split="all", limit=2))
    rows = run_cell(cell, None, store, "fresh", client=OracleClient("notes_mcp"))  # type: ignore[arg-type]
    assert len(rows) == 2 and all(isinstance(r, EpisodeRow) and r.attempts == 1 for r in rows)
    for table in TABLES:
        parts = sorted((store.root / f"{table}.parquet").glob("part-*.parquet"))
        assert parts and all(pq.read_schema(p).remove_metadata().equals(SCHEMAS[table]) for p in parts)


# -- (b) every column and summary field documents itself ---------------------------------------------------
@pytest.mark.parametrize("row_type", [EpisodeRow, StepRow, CallRow, CellSummary], ids=lambda t: t.__name__)
def test_every_field_has_a_one_line_doc(row_type: type):
    missing = [c.name for c in columns(row_type) if not c.doc.strip()]
    assert missing == []
    assert all("\n" not in c.doc for c in columns(row_type))


def test_every_per_cell_metric_is_a_cell_summary_field_with_a_direction_and_format():
    summary_fields = {f.name for f in fields(CellSummary)}
    for metric in METRICS.values():
        assert not metric.per_cell or metric.name in summary_fields, metric.name
        assert metric.kind in ("pct", "num", "count", "usd") and metric.label and metric.description
    assert METRICS["success_rate"].format(0.425) == "42%" and METRICS["latency_s"].format(None) == "-"


# -- (c) the committed reference reports re-render with identical tables ----------------------------------
def _report_body(text: str) -> list[str]:
    """The report without its timestamp and its figure links (figures are images, drawn apart)."""
    body = text.split("## Figures")[0].rstrip("\n")
    return [re.sub(r"Made \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", "Made (time).", line) for line in body.splitlines()]


COMMITTED_REPORTS = sorted(p.relative_to(REFERENCE).as_posix() for p in REFERENCE.rglob("report.md"))
"""Every committed reference report (``results/reference/**/report.md``): each names its runs and baseline."""


@pytest.mark.parametrize("committed", COMMITTED_REPORTS)
def test_every_reference_report_re_renders_identically(committed: str, monkeypatch: pytest.MonkeyPatch):
    """`surfbench report RUNS [--baseline B]` (the runs and baseline its own third line names, from the repository
    root) with today's code gives the committed report, number for number."""
    monkeypatch.chdir(ROOT)
    text = (REFERENCE / committed).read_text(encoding="utf-8")
    named = re.search(r"^Runs: (.+?)\. Made .*?Baseline surface: `([^`]+)`", text, re.MULTILINE)
    assert named, f"{committed}: no 'Runs: ... Baseline surface: ...' line"
    runs, baseline = named.group(1).split(", "), named.group(2)
    got = _report_body(markdown(collect(runs, baseline=baseline), {}))
    assert sum(line.startswith("| ") for line in got) > 10
    assert got == _report_body(text)


def test_every_committed_report_is_re_rendered():
    assert len(COMMITTED_REPORTS) >= 14 and "forge-dev-qwen0.5b/report/report.md" in COMMITTED_REPORTS


_LEGACY = "llama-cpp-python/"  # the runs of the old engine, kept beside their re-measures
COMMITTED_GATES = {
    "forge-dev-qwen0.5b/report/gate-dsh.txt": ("dsh.yaml", ["forge-dev-qwen0.5b"]),
    "forge-dev-qwen0.5b-llama-server/report/gate-dsh.txt": ("dsh.yaml", ["forge-dev-qwen0.5b-llama-server"]),
    "forge-dev-qwen0.5b-stop/report/gate-dsh.txt": ("dsh.yaml", ["forge-dev-qwen0.5b-stop"]),
    "dsh-sequential-synth-hot-qwen1.5b/gate-sequential.txt": (
        "dsh-sequential.yaml", ["dsh-sequential-synth-hot-qwen1.5b"]),
    f"{_LEGACY}dsh-sequential-synth-hot-qwen1.5b/gate-sequential.txt": (
        "dsh-sequential.yaml", [f"{_LEGACY}dsh-sequential-synth-hot-qwen1.5b"]),
    f"{_LEGACY}dsh-sequential-synth-hot-qwen1.5b/gate-sequential-with-instances.txt": (
        "dsh-sequential.yaml", [f"{_LEGACY}dsh-sequential-synth-hot-qwen1.5b", f"{_LEGACY}forge-instances-dev"]),
    f"{_LEGACY}report-code-dev-two-sizes/gate.txt": (
        "code-mode.yaml",
        ["forge-dev-qwen0.5b", f"{_LEGACY}code-dev-qwen0.5b",
         f"{_LEGACY}forge-dev-qwen1.5b", f"{_LEGACY}code-dev-qwen1.5b"]),
    "report-forge-dev-two-sizes/gate-dsh.txt": ("dsh.yaml", ["forge-dev-qwen0.5b", f"{_LEGACY}forge-dev-qwen1.5b"]),
    f"{_LEGACY}workspace-all/report/gate-four-tools.txt": ("four-tools.yaml", [f"{_LEGACY}workspace-all"]),
    f"{_LEGACY}workspace-all/report/gate-ollie-split.txt": ("ollie-split.yaml", [f"{_LEGACY}workspace-all"]),
    "workspace-all/report/gate-four-tools.txt": ("four-tools.yaml", ["workspace-all"]),
    "workspace-all/report/gate-ollie-split.txt": ("ollie-split.yaml", ["workspace-all"]),
}  # fmt: skip
"""Every committed gate output: its criteria file and runs (a sequential criteria file is judged sequentially)."""


@pytest.mark.parametrize("committed", sorted(COMMITTED_GATES))
def test_every_reference_gate_re_renders_identically(committed: str, monkeypatch: pytest.MonkeyPatch):
    from surfbench.bench.sequential.sequential_gate import format_sequential, judge_sequential

    monkeypatch.chdir(ROOT)
    criteria, runs = COMMITTED_GATES[committed]
    folders = [Path("results/reference") / r for r in runs]
    gate_file = ROOT / "configs" / "gate" / criteria
    text = (
        format_sequential(judge_sequential(gate_file, folders))
        if "sequential" in criteria
        else format_gate(judge(gate_file, folders))
    )
    assert text + "\n" == (REFERENCE / committed).read_text()


def test_every_committed_gate_output_is_re_rendered():
    found = {p.relative_to(REFERENCE).as_posix() for p in REFERENCE.rglob("gate*.txt")}
    assert found == set(COMMITTED_GATES)


# -- (d) the gate's directions come from the registry ------------------------------------------------------
def _pair(**changes: float) -> Paired:
    base = dict(
        candidate="dispatcher", baseline="full", model="m", pairs=40, only_baseline_ok=12, only_candidate_ok=0,
        mcnemar_p=0.001, first_try_delta=None, first_try_delta_low=None, first_try_delta_high=None,
        baseline_first_try=None, candidate_first_try=None, success_delta=-0.3, success_delta_low=-0.45,
        success_delta_high=-0.15, baseline_success=0.6, success_mde=0.1,
    )  # fmt: skip
    return Paired(**{**base, **changes})  # type: ignore[arg-type]


def _summary(tokens: float) -> CellSummary:
    row = {
        "expected_calls": 0, "first_try_correct": 0, "success": True, "round_trips": 2, "overhead_round_trips": 0,
        "prompt_tokens_per_step": tokens, "request_bytes_per_step": 10.0, "recovered_after_error": 0,
        "failed_first_tries": 0, "boundary_violations": 0, "protocol_violations": 0, "parse_failures": 0,
        "stable_prefix": True, "latency_s": 1.0, "stuck": False, "error": None,
    }  # fmt: skip
    return summarize_cell([row])


def _flip(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    metric = METRICS[name]
    monkeypatch.setitem(metrics.METRICS, name, replace(metric, higher_is_better=not metric.higher_is_better))


def test_flipping_a_drop_metrics_direction_in_the_registry_flips_the_gate(monkeypatch: pytest.MonkeyPatch):
    crit = Criterion("success_drop_max", 0.05, "close")
    same = _summary(100.0)
    before = _verdict(crit, "dispatcher", "m", same, same, _pair(), {})
    assert before.outcome == "fail" and before.observed.startswith("drop +30.0 pts")
    _flip(monkeypatch, "success_rate")  # success 30 points lower is now an improvement
    after = _verdict(crit, "dispatcher", "m", same, same, _pair(), {})
    assert after.outcome == "pass" and after.observed.startswith("rise -30.0 pts")


def test_flipping_a_ratio_metrics_direction_in_the_registry_flips_the_gate(monkeypatch: pytest.MonkeyPatch):
    crit = Criterion("prompt_tokens_ratio_max", 1.0, "revise")
    base, mine = _summary(1000.0), _summary(500.0)
    before = _verdict(crit, "dispatcher", "m", base, mine, None, {})
    assert before.outcome == "pass" and "= 0.50x" in before.observed
    _flip(monkeypatch, "prompt_tokens_per_step")  # fewer tokens is now worse: base / mine = 2x
    after = _verdict(crit, "dispatcher", "m", base, mine, None, {})
    # the text says which way the ratio goes: the baseline's value over the candidate's
    assert after.outcome == "fail" and "500.00 vs 1,000.00: baseline over candidate 2.00x" in after.observed


def test_flipping_help_size_direction_in_the_registry_flips_the_gate(monkeypatch: pytest.MonkeyPatch):
    crit = Criterion("help_bytes_max", 1000, "revise")
    helps = {"repo_get": 400, "release_create": 900}
    empty = summarize_cell([])
    assert _verdict(crit, "dispatcher", "m", empty, empty, None, helps).outcome == "pass"
    _flip(monkeypatch, "help_bytes")
    flipped = _verdict(crit, "dispatcher", "m", empty, empty, None, helps)
    assert flipped.outcome == "fail" and flipped.observed == "smallest 400 B (repo_get); 2 of 2 under"


def test_a_part_written_before_a_column_was_renamed_reads_under_the_new_name():
    import pyarrow as pa

    from surfbench.bench.store.schema import conform

    old = pa.table({"episode_key": ["k"], "peak_disk_bytes": [4096]})
    new = conform("episodes", old)
    assert new.column("disk_peak_bytes").to_pylist() == [4096]
    assert "peak_disk_bytes" not in new.column_names


def test_the_reference_viewer_export_re_renders_identically(tmp_path: Path):
    # `surfbench view results/reference/llama-cpp-python/forge-instances-dev --export ...` (docs/viewer.md), every
    # file byte for byte
    import subprocess
    import sys

    committed = REFERENCE / "llama-cpp-python" / "forge-instances-dev" / "view"
    out = tmp_path / "view"
    subprocess.run(
        [sys.executable, "-m", "surfbench", "view", f"results/reference/{_LEGACY}forge-instances-dev",
         "--export", str(out)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    want = {p.relative_to(committed).as_posix(): p.read_bytes() for p in committed.rglob("*") if p.is_file()}
    got = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(want) > 50 and sorted(got) == sorted(want)
    assert [name for name in want if got[name] != want[name]] == []
