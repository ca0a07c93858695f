"""Bounded reads (issue 27, items 5 and 8): every input file has a size limit and must be a regular file;
a task turn and an operation description have a length limit; token counting of pathological text is
bounded in time.

``/dev/zero`` as a catalog used to grow the process until the kernel killed it (a MemoryError traceback
under a memory limit), a FIFO blocked for ever, and a 50 MB unbroken string kept tiktoken busy for over
300 s. The command-line cases run as subprocesses under a memory limit and a timeout, so that a
regression fails the test instead of eating the machine.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.catalog.wire import LONG_RUN, RUN_PIECE, RUN_SAMPLES, _encoding, count_tokens, tool_wire_text
from surfbench.bench.store.results import ResultsError
from surfbench.bench.suites.suite import SuiteError, load_suite, load_tasks
from tests.conftest import ROOT

MEMORY_LIMIT = 3 << 30
"""Address space of each subprocess: the CLI needs well under 1 GB; reading /dev/zero whole would not stop."""
GITEA = ROOT / "bench" / "catalog" / "pool_data" / "gitea-1.15-swagger.json"
MB = 1 << 20


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def surfbench(tmp_path: Path, *args: str, timeout: float = 60, **env: str) -> subprocess.CompletedProcess[str]:
    """``surfbench ARGS`` in a fresh process, memory-limited, with its own cache."""
    full_env = {**os.environ, "SURFBENCH_CACHE": str(tmp_path / "cache"), **env}
    return subprocess.run(
        [sys.executable, "-m", "surfbench", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limit_memory,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The process exited 2 with exactly one line on stderr holding every needle; that line."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def suite_with_catalog(tmp_path: Path, catalog: str) -> Path:
    folder = tmp_path / "zsuite"
    folder.mkdir()
    (folder / "suite.yaml").write_text(f"name: zsuite\ncatalog: {catalog}\nbackend: none\ntasks: [tasks.yaml]\n")
    (folder / "tasks.yaml").write_text('- id: t1\n  turns: ["hello"]\n')
    return folder


# --- files that are not regular: /dev/zero, a FIFO ---------------------------------------------------------


def test_dev_zero_as_a_suite_catalog_is_one_line(tmp_path: Path) -> None:
    folder = suite_with_catalog(tmp_path, "/dev/zero")
    line = one_line_error(surfbench(tmp_path, "check", str(folder)), "/dev/zero", "not a regular file")
    assert "suite.yaml" in line


def test_dev_zero_as_surfaces_catalog_is_one_line(tmp_path: Path) -> None:
    one_line_error(surfbench(tmp_path, "surfaces", "--catalog", "/dev/zero"), "/dev/zero", "not a regular file")


def test_dev_zero_as_init_catalog_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "newsuite"
    proc = surfbench(tmp_path, "init", "--catalog", "/dev/zero", str(out))
    one_line_error(proc, "/dev/zero", "not a regular file")
    assert not out.exists()


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "tools.json"
    os.mkfifo(fifo)
    one_line_error(surfbench(tmp_path, "surfaces", "--catalog", str(fifo), timeout=30), str(fifo), "FIFO")


# --- size limits ---------------------------------------------------------------------------------------------


def sparse(path: Path, size: int) -> Path:
    """A regular file of ``size`` bytes that takes no disk (its size alone must refuse it)."""
    with open(path, "wb") as fh:
        fh.truncate(size)
    return path


def test_a_catalog_over_the_default_limit_is_refused_naming_it(tmp_path: Path) -> None:
    big = sparse(tmp_path / "huge.json", 65 * MB)
    with pytest.raises(CatalogError) as err:
        load_catalog(big)
    message = str(err.value)
    assert str(big) in message and "65 MB" in message and "64 MB limit for a catalog" in message
    assert "SURFBENCH_MAX_FILE_MB=66" in message  # how to raise it, with a value that reads this file


def test_the_limit_can_be_raised_and_lowered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = tmp_path / "tools.json"
    tools = [{"name": f"t{i}", "description": "d" * 1000, "inputSchema": {"type": "object"}} for i in range(2100)]
    catalog.write_text(json.dumps({"tools": tools}))  # about 2 MB
    monkeypatch.setenv("SURFBENCH_MAX_FILE_MB", "1")
    with pytest.raises(CatalogError, match=r"over the 1 MB limit for a catalog; .*SURFBENCH_MAX_FILE_MB=3"):
        load_catalog(catalog)
    monkeypatch.setenv("SURFBENCH_MAX_FILE_MB", "3")
    assert len(load_catalog(catalog)) == 2100
    monkeypatch.setenv("SURFBENCH_MAX_FILE_MB", "lots")
    with pytest.raises(CatalogError, match=r"SURFBENCH_MAX_FILE_MB='lots' is not a size in MB"):
        load_catalog(catalog)


def test_a_suite_file_over_its_limit_is_refused(tmp_path: Path) -> None:
    folder = suite_with_catalog(tmp_path, str(GITEA))
    with open(folder / "suite.yaml", "a") as fh:
        fh.write("# padding\n" * (5 * MB // 10))  # 5 MB of comments: valid YAML, over the 4 MB limit
    with pytest.raises(SuiteError, match=r"suite\.yaml: 5 MB, over the 4 MB limit for a suite file"):
        load_suite(str(folder))


def test_a_run_record_over_its_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from surfbench.bench.store.provenance import read_run_info

    (tmp_path / "run.json").write_text(json.dumps({"cells": [], "padding": "x" * (2 * MB)}))
    monkeypatch.setenv("SURFBENCH_MAX_FILE_MB", "1")
    with pytest.raises(ResultsError, match=r"run\.json: 2 MB, over the 1 MB limit for a run record"):
        read_run_info(tmp_path)


def test_a_criteria_file_over_its_limit_is_refused(tmp_path: Path) -> None:
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.report.gate import load_criteria

    path = tmp_path / "gate.yaml"
    path.write_text("criteria:\n  - {kind: help_bytes_max, value: 1536}\n" + "# padding\n" * (5 * MB // 10))
    with pytest.raises(ConfigError, match=r"gate\.yaml: 5 MB, over the 4 MB limit for a criteria file"):
        load_criteria(path)


SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "zeros", "version": "1"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    else:  # tools/list: /dev/zero on stdout, never a newline
        with open("/dev/zero", "rb") as zero:
            while True:
                sys.stdout.buffer.write(zero.read(1 << 16))
"""


def test_an_mcp_answer_over_the_limit_ends_in_one_line(tmp_path: Path) -> None:
    server = tmp_path / "zeros_server.py"
    server.write_text(SERVER)
    proc = surfbench(tmp_path, "surfaces", "--mcp", f"{sys.executable} {server}", SURFBENCH_MAX_FILE_MB="1")
    one_line_error(
        proc, "zeros_server.py", "tools/list", "over the 1 MB limit for an MCP answer", "SURFBENCH_MAX_FILE_MB=2"
    )


def test_an_http_tools_list_answer_over_the_limit_is_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from surfbench.bench.mcp.mcp_catalog import live_catalog
    from surfbench.bench.mcp.mcp_spec import McpError, ServerSpec
    from tests.bench.test_mcp_http import SERVER as HTTP_SERVER
    from tests.bench.test_mcp_http import TOKEN, free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(HTTP_SERVER), str(port), TOKEN, "json"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        monkeypatch.setenv("MY_TOKEN", f"Bearer {TOKEN}")
        monkeypatch.setenv("SURFBENCH_MAX_FILE_MB", "0.0002")  # 209 bytes: initialize passes, tools/list does not
        spec = ServerSpec(url=f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "MY_TOKEN"})
        with pytest.raises(McpError, match=r"tools/list: an answer of more than 0\.0002 MB, over the 0\.0002 MB limit"):
            live_catalog(spec)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# --- a task turn, an operation's description -----------------------------------------------------------------


def test_a_60_mb_task_turn_is_refused_naming_the_task(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "huge-turn", "turns": ["x" * (60 * MB)]}) + "\n")
    with pytest.raises(SuiteError) as err:
        load_tasks(path)
    message = str(err.value)
    assert "tasks.jsonl" in message and "'huge-turn'" in message and "turns[0]" in message
    assert "62,914,560 characters, over the limit of 1,048,576" in message
    assert len(message) < 400  # the turn itself is not echoed


def test_a_40_mb_description_is_refused_naming_the_operation(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    tool = {"name": "talkative", "description": "y" * (40 * MB), "inputSchema": {"type": "object"}}
    path.write_text(json.dumps({"tools": [tool]}))
    with pytest.raises(CatalogError) as err:
        load_catalog(path)
    message = str(err.value)
    assert "tools.json" in message and "'talkative'" in message and "over the limit of 65,536" in message
    assert len(message) < 400


# --- token counting -------------------------------------------------------------------------------------------


def exact(text: str, encoding: str = "o200k_base") -> int:
    return len(_encoding(encoding).encode(text, disallowed_special=()))


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_a_long_run_is_counted_in_pieces_and_the_rest_exactly(encoding: str) -> None:
    """Real text around a run of 3 pieces: the text exactly as tiktoken counts it, the run piece by piece.

    The run repeats a 5-letter word, so that the pieces' ends cut words: counted whole it is fewer tokens.
    """
    block = "".join(tool_wire_text(op) for op in load_catalog(GITEA).operations[:40])  # 16 KB, ends in "}"
    assert count_tokens(block, encoding) == exact(block, encoding)  # real text: tiktoken's own count
    run = ("hello" * RUN_PIECE)[: 3 * RUN_PIECE]
    pieces = [run[i : i + RUN_PIECE] for i in range(0, len(run), RUN_PIECE)]
    expected = 2 * exact(block, encoding) + sum(exact(p, encoding) for p in pieces)
    assert count_tokens(block + run + block, encoding) == expected


def test_real_catalogs_count_exactly_as_tiktoken() -> None:
    """Every tool text of the shipped catalogs, and their whole tool block, counts as tiktoken counts it."""
    for path in (GITEA, ROOT / "examples" / "gitea96.mcp.json"):
        texts = [tool_wire_text(op) for op in load_catalog(path).operations]
        for text in [*texts[:50], "".join(texts)]:
            assert count_tokens(text) == exact(text)
    # and a run one character short of LONG_RUN is real text too: counted whole
    short = ("hello" * LONG_RUN)[: LONG_RUN - 1]
    assert count_tokens(short) == exact(short) and count_tokens(short + "!") == exact(short + "!")
    assert count_tokens(short + "o") != exact(short + "o")


def test_a_very_long_run_is_sampled_and_scaled() -> None:
    """A 2 MB unbroken run (977 pieces) costs RUN_SAMPLES evenly spaced pieces' counting, scaled to its length.

    Counted whole (as before: slower than linear in the length) it is one token per word; the pieces' ends
    cut words, so the estimate is a little higher.
    """
    run = "hello" * 400_000
    pieces = -(-len(run) // RUN_PIECE)
    assert pieces == 977 > RUN_SAMPLES
    chosen = [k * pieces // RUN_SAMPLES for k in range(RUN_SAMPLES)]
    sampled = [run[i * RUN_PIECE : (i + 1) * RUN_PIECE] for i in chosen]
    estimate = round(sum(exact(p) for p in sampled) * pieces / RUN_SAMPLES)
    assert count_tokens(run) == estimate
    assert 400_000 < estimate < 400_000 * 1.01  # within 1% of the exact count
