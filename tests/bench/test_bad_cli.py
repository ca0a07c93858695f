"""Bad command-line input and unreadable runs (issue 13): one error line naming the override, file or
field, exit code 2, never a traceback; a gate or a report never takes a crash or missing evidence for a
verdict. Scripted oracle model throughout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from surfbench.bench.cli.cli import main as cli_main
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"


def cli(configs: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"}
    full_env.pop("SURFBENCH_DEBUG", None)  # only where a test asks for tracebacks
    full_env.update(env or {})
    cmd = [sys.executable, "-m", "surfbench", *args]
    return subprocess.run(cmd, cwd=ROOT, env=full_env, capture_output=True, text=True, timeout=300)


def one_error_line(stderr: str) -> str:
    """The only line on stderr, which must be an error line (no traceback, no usage block)."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cfg") / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "notes-oracle.yaml").write_text(ORACLE)
    return folder


@pytest.fixture(scope="module")
def made(configs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished two-surface run (full, dispatcher) and a one-surface run without full, made once."""
    results = tmp_path_factory.mktemp("made")
    common = ("suite=notes_mcp", "model=notes-oracle", "limit=3", f"results_dir={results}")
    proc = cli(configs, "run", "-m", "surface=full,dispatcher", *common, "run=good")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = cli(configs, "run", "surface=dispatcher", *common, "run=nofull")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results


@pytest.fixture
def run(made: Path, tmp_path: Path) -> Path:
    """A private copy of the two-surface run, free to damage."""
    shutil.copytree(made / "good", tmp_path / "good")
    return tmp_path / "good"


@pytest.fixture
def in_process(configs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For tests that call the CLI in this process: the copied configs, no tracebacks asked for."""
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(configs))
    monkeypatch.delenv("SURFBENCH_DEBUG", raising=False)


GATE = ROOT / "configs" / "gate" / "dsh.yaml"


def gate_and_report(configs: Path, run: Path, *extra: str) -> list[subprocess.CompletedProcess[str]]:
    return [
        cli(configs, "gate", "--criteria", str(GATE), str(run), *extra),
        cli(configs, "report", str(run), *extra),
    ]


# -- surfbench run overrides ---------------------------------------------------------------------------
BAD_OVERRIDES = [
    ("limit=abc", ["limit=abc"]),
    ("limit=1.5", ["limit=1.5"]),
    ("mode=bogus", ["mode=bogus", "native", "prompted"]),
    ("order=bogus", ["order=bogus", "cache", "naive"]),
    ("split=bogus", ["split=bogus", "dev", "test", "all"]),
    ("progress=bogus", ["progress=bogus", "auto", "live", "plain"]),
    ("no_cache=maybe", ["no_cache=maybe", "true or false"]),
    ("+foo=1", ["+foo=1", "'foo'", "limit", "repeats", "no_cache", "backend_options"]),
    ("max_steps=0", ["max_steps=0"]),
    ("repeats=-1", ["repeats=-1"]),
]


@pytest.mark.parametrize(("override", "named"), BAD_OVERRIDES, ids=[o for o, _ in BAD_OVERRIDES])
def test_a_bad_run_override_is_one_line_and_writes_nothing(configs: Path, tmp_path: Path, override, named):
    results = tmp_path / "results"
    proc = cli(
        configs, "run", "suite=notes_mcp", "surface=full", "model=notes-oracle", "limit=2", override,
        f"results_dir={results}", "run=bad",
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_error_line(proc.stderr)
    assert all(n in line for n in named), line
    assert not (results / "bad").exists() and not list(results.rglob("run.json"))


def test_a_single_task_id_on_the_command_line_is_one_task(configs: Path, tmp_path: Path):
    proc = cli(
        configs, "run", "suite=notes_mcp", "surface=full", "model=notes-oracle", "tasks=read-note",
        f"results_dir={tmp_path}", "run=one",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = pd.read_parquet(tmp_path / "one" / "episodes.parquet")
    assert list(episodes["task_id"]) == ["read-note"]


# -- reading runs: report and gate ---------------------------------------------------------------------
def test_another_tables_part_in_the_episodes_folder_is_an_error_naming_it(configs: Path, run: Path):
    steps = sorted((run / "steps.parquet").glob("part-*.parquet"))[0]
    shutil.copy(steps, run / "episodes.parquet" / "part-zz-steps.parquet")
    for extra in ((), ("--keep-newest",)):  # --keep-newest used to crash the gate into exit 1, "revise"
        for proc in gate_and_report(configs, run, *extra):
            assert proc.returncode == 2, proc.stderr[-3000:]
            line = one_error_line(proc.stderr)
            assert "part-zz-steps.parquet" in line and "not an episodes part" in line, line
    assert not (run / "report").exists()


@pytest.mark.parametrize("damage", ["garbage", "overwritten"])
def test_a_corrupt_part_is_an_error_naming_it(configs: Path, run: Path, damage: str):
    if damage == "garbage":
        part = run / "episodes.parquet" / "part-zz.parquet"
        part.write_bytes(b"PAR1 not really parquet")
    else:  # a real part with its first half overwritten: pyarrow's OSError used to escape as a traceback
        part = sorted((run / "episodes.parquet").glob("part-*.parquet"))[0]
        data = bytearray(part.read_bytes())
        data[8 : len(data) // 2] = b"\xab" * (len(data) // 2 - 8)
        part.write_bytes(bytes(data))
    for proc in gate_and_report(configs, run):
        assert proc.returncode == 2, proc.stderr[-3000:]
        line = one_error_line(proc.stderr)
        assert str(run) in line and part.name in line, line


def test_a_column_of_the_wrong_type_is_an_error_naming_the_part(configs: Path, run: Path):
    part = sorted((run / "episodes.parquet").glob("part-*.parquet"))[0]
    frame = pd.read_parquet(part)
    frame["surface"] = range(len(frame))  # numbers where the schema has text
    frame.to_parquet(part, index=False)
    for proc in gate_and_report(configs, run):
        assert proc.returncode == 2, proc.stderr[-3000:]
        line = one_error_line(proc.stderr)
        assert part.name in line and "surface" in line, line


@pytest.mark.parametrize("text", ["", "[]", "{}", "{not json"])
def test_a_bad_run_json_is_one_line_naming_the_file(configs: Path, run: Path, text: str):
    (run / "run.json").write_text(text)
    for proc in gate_and_report(configs, run):
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert str(run / "run.json") in one_error_line(proc.stderr)


def test_a_run_json_with_damaged_cells_is_one_line_naming_the_file_and_field(configs: Path, run: Path):
    (run / "run.json").write_text('{"cells": [{"cell_id": "x"}]}')  # cells without their fields
    for proc in gate_and_report(configs, run):  # checked before use (bench.store.evidence), not a KeyError later
        assert proc.returncode == 2, proc.stderr[-3000:]
        line = one_error_line(proc.stderr)
        assert str(run / "run.json") in line and "cells[0] has no suite" in line, line


def test_a_run_without_episodes_is_one_line(configs: Path, run: Path):
    for part in (run / "episodes.parquet").glob("part-*.parquet"):
        part.unlink()
    for proc in gate_and_report(configs, run):
        assert proc.returncode == 2, proc.stderr[-3000:]
        assert "no episodes" in one_error_line(proc.stderr)


def test_an_exception_escaping_report_or_gate_is_one_line_naming_the_run(
    run: Path, tmp_path: Path, in_process: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    import surfbench.bench.report.gate
    import surfbench.bench.report.report_data

    def broken(*args, **kwargs):
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr(surfbench.bench.report.gate, "summarize_cell", broken)
    monkeypatch.setattr(surfbench.bench.report.report_data, "cell_rows", broken)
    gate_out = run / "gate.txt"
    assert cli_main(["gate", "--criteria", str(gate_file(tmp_path)), str(run), "--out", str(gate_out)]) == 2
    assert cli_main(["report", str(run)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all(str(run) in line and "TypeError" in line for line in lines), lines
    assert not gate_out.exists() and not (run / "report").exists()

    monkeypatch.setenv("SURFBENCH_DEBUG", "1")  # a genuine bug stays findable
    assert cli_main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "in broken" in err

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(surfbench.bench.report.report_data, "cell_rows", interrupted)
    assert cli_main(["report", str(run)]) == 130, "Ctrl-C is an interruption, not a damaged run"
    assert "interrupted" in capsys.readouterr().err


# -- gate files ------------------------------------------------------------------------------------------
def gate_file(tmp_path: Path, **changes: object) -> Path:
    criterion: dict[str, object] = {"kind": "round_trips_ratio_max", "value": 1.5}
    edit = changes.pop("criterion", None)
    if isinstance(edit, dict):
        criterion.update(edit)
    spec: dict[str, object] = {"name": "t", "baseline": "full", "candidates": ["dispatcher"], "criteria": [criterion]}
    spec.update(changes)
    path = tmp_path / "gate.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


BAD_GATES = [
    ({"hot_operations": -4}, ["hot_operations", "-4"]),
    ({"hot_operations": True}, ["hot_operations"]),
    ({"criterion": {"value": "abc"}}, ["criteria[0].value", "abc"]),
    ({"criterion": {"value": None}}, ["criteria[0].value"]),
    ({"criterion": {"kind": "bogus"}}, ["criteria[0].kind", "bogus", "round_trips_ratio_max"]),
    ({"criterion": {"kind": "first_try_drop_max", "value": 5}}, ["criteria[0].value", "0.05"]),
]


@pytest.mark.parametrize(("changes", "named"), BAD_GATES, ids=[str(c) for c, _ in BAD_GATES])
def test_a_bad_gate_file_is_one_line_naming_the_file_and_field(
    run: Path, tmp_path: Path, in_process: None, capsys: pytest.CaptureFixture[str], changes, named
):
    path = gate_file(tmp_path, **dict(changes))
    assert cli_main(["gate", "--criteria", str(path), str(run)]) == 2
    captured = capsys.readouterr()
    line = one_error_line(captured.err)
    assert str(path) in line and all(n in line for n in named), line
    assert "decision" not in captured.out


def test_a_criterion_without_evidence_is_no_evidence_and_revises(
    run: Path, tmp_path: Path, in_process: None, capsys: pytest.CaptureFixture[str]
):
    # `full` has no help payloads: a help-size criterion has nothing to measure there
    path = gate_file(
        tmp_path, baseline="dispatcher", candidates=["full"], criteria=[{"kind": "help_bytes_max", "value": 1536}]
    )
    assert cli_main(["gate", "--criteria", str(path), str(run), "--allow-scripted"]) == 1
    out = capsys.readouterr().out
    assert "| surface has no help payloads | no evidence |" in out, out
    assert "full on notes-oracle: revise" in out
    assert "decision for full: REVISE" in out and "counts as inconclusive" in out


def test_the_reference_gate_says_no_evidence_for_help_size_on_core():
    from surfbench.bench.report.gate import judge

    result = judge(GATE, [ROOT / "results" / "reference" / "forge-dev-qwen0.5b"])
    helps = {v.candidate: v.outcome for v in result.verdicts if v.criterion == "help_bytes_max"}
    assert helps == {"dispatcher": "pass", "core": "no evidence"}


# -- report baseline, surfaces budget -------------------------------------------------------------------
def test_an_unknown_report_baseline_is_an_error_naming_the_surfaces(
    made: Path, run: Path, tmp_path: Path, in_process: None, capsys: pytest.CaptureFixture[str]
):
    assert cli_main(["report", str(run), "--baseline", "nosuch", "--out", str(tmp_path / "r1")]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "nosuch" in line and "dispatcher, full" in line, line
    assert not (tmp_path / "r1").exists()
    # the default baseline, `full`, absent (a workspace run): still a report, without the paired section
    assert cli_main(["report", str(made / "nofull"), "--out", str(tmp_path / "r2")]) == 0
    assert "Paired against" not in (tmp_path / "r2" / "report.md").read_text()
    # an explicit baseline the run has: paired against it
    assert cli_main(["report", str(run), "--baseline", "dispatcher", "--out", str(tmp_path / "r3")]) == 0
    assert "Paired against `dispatcher`" in (tmp_path / "r3" / "report.md").read_text()


def test_a_negative_help_budget_is_one_line(configs: Path):
    proc = cli(configs, "surfaces", "--catalog", str(ROOT / "tasks" / "notes_mcp" / "catalog.json"), "--budget", "-5")
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc.stderr)
    assert "--budget" in line and "-5" in line, line


def test_a_sweep_naming_a_model_not_pulled_stops_before_any_cell(configs: Path, tmp_path: Path):
    """The guidance sweep's 1.5B cells once failed after its 0.5B cells had run for an hour: now nothing runs."""
    results, cache = tmp_path / "results", tmp_path / "empty-cache"  # a model cache with no model in it
    proc = cli(
        configs, "run", "-m", "suite=notes_mcp", "surface=full", "model=notes-oracle,qwen2.5-coder-1.5b-instruct",
        "limit=1", f"results_dir={results}", "run=pre", env={"SURFBENCH_CACHE": str(cache)},
    )  # fmt: skip
    assert proc.returncode == 2
    line = one_error_line(proc.stderr)
    assert (
        "qwen2.5-coder-1.5b-instruct (1 cell)" in line and "surfbench models pull qwen2.5-coder-1.5b-instruct" in line
    )
    assert not list(results.rglob("run.json")) and not list(results.rglob("*.parquet"))  # the oracle cell did not run


# -- round four (issue 49, findings 11 and 12): --out paths checked before any work, bounded plans, backend
# options checked before anything is written, a web server where an MCP endpoint was expected ----------------
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["catalog", "dump", "--mcp", "never-started", "--out", "/proc/version"], "cannot write in /proc"),
        (["gate", "--criteria", str(GATE), "RUN", "--out", "FOLDER"], "is a folder, not a file"),
        (["whatif", "stop_on_repeat=2", "RUN", "--out", "FOLDER"], "is a folder, not a file"),
        (["report", "RUN", "--out", "FILE"], "is a file, not a folder"),
        (
            ["surfaces", "--catalog", str(ROOT / "examples" / "gitea96.mcp.json"), "--out", "/proc/x/t.csv"],
            "cannot write",
        ),
    ],
    ids=["dump-proc", "gate-folder", "whatif-folder", "report-file", "surfaces-proc"],
)
def test_an_out_path_that_cannot_be_written_is_one_line_before_any_work(
    configs: Path, made: Path, tmp_path: Path, args: list[str], said: str
):
    """The gate printed its decision, then crashed on --out DIR (exit code lost); dump and whatif gave tracebacks;
    report blamed "a damaged or foreign file in the run folder"."""
    (tmp_path / "FOLDER").mkdir()
    (tmp_path / "FILE").write_text("mine\n")
    subs = {"RUN": str(made / "good"), "FOLDER": str(tmp_path / "FOLDER"), "FILE": str(tmp_path / "FILE")}
    proc = cli(configs, *[subs.get(a, a) for a in args])
    assert proc.returncode == 2 and said in one_error_line(proc.stderr)
    assert "decision for" not in proc.stdout  # nothing judged before the refusal
    assert (tmp_path / "FILE").read_text() == "mine\n" and not any((tmp_path / "FOLDER").iterdir())


def test_a_plan_for_a_vanishing_drop_is_bounded_and_says_what_is_feasible(configs: Path):
    """numpy tried to allocate 5.35 PiB in paired_draws for --drop 0.0000001."""
    proc = cli(configs, "plan", "--baseline", "0.6", "--drop", "0.0000001")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sequential gate: not simulated" in proc.stdout and "pass --budget N" in proc.stdout
    too_big = cli(configs, "plan", "--baseline", "0.6", "--drop", "0.05", "--budget", "1000000")
    assert too_big.returncode == 2 and "at most 20,000 pairs" in one_error_line(too_big.stderr)


@pytest.mark.parametrize(("value", "said"), [("abc", "valid integer"), ("-5", "greater than or equal to 0")])
def test_a_bad_backend_option_is_one_line_and_writes_nothing(configs: Path, tmp_path: Path, value: str, said: str):
    """`+backend_options.disk_quota_mb=abc` (and -5) wrote run.json and two tables before the error."""
    results = tmp_path / "results"
    proc = cli(
        configs, "run", "suite=workspace", "surface=bash", "model=oracle", "limit=1",
        f"+backend_options.disk_quota_mb={value}", f"results_dir={results}", "run=q",
    )  # fmt: skip
    line = one_error_line(proc.stderr)
    assert "backend_options.disk_quota_mb=" in line and said in line
    assert not results.exists()


def test_an_oracle_cell_is_labelled_oracle(configs: Path, tmp_path: Path):
    """Every `model=oracle` cell was labelled `oracle[script_suite=null]`."""
    proc = cli(configs, "run", "suite=notes_mcp", "surface=full", "model=oracle", "limit=1", f"results_dir={tmp_path}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "notes_mcp/full/oracle:" in proc.stderr and "script_suite" not in proc.stderr


@pytest.mark.parametrize(
    ("status", "content_type", "body", "said"),
    [
        (200, "text/html", b"<html>" + b"x" * 2000 + b"</html>", "200 text/html"),
        (200, "application/json", b'{"detail": "' + b"x" * 2000 + b'"}', "200 JSON that is not JSON-RPC"),
        (404, "text/html", b"<html>" + b"x" * 2000 + b"</html>", "HTTP 404 Not Found"),
    ],
)
def test_an_mcp_url_at_a_web_server_is_one_short_line(
    configs: Path, tmp_path: Path, status: int, content_type: str, body: bytes, said: str
):
    """A 34-line SDK traceback and a 2 KB line, for an address that answers but is not an MCP endpoint."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_DELETE = do_POST  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        for command in (["surfaces", "--mcp-url", url], ["init", "--mcp-url", url, str(tmp_path / "suite")]):
            proc = cli(configs, *command)
            line = one_error_line(proc.stderr)
            assert proc.returncode == 2 and said in line and "often /mcp" in line and len(line) < 300, command
        assert not (tmp_path / "suite").exists()
    finally:
        server.shutdown()
