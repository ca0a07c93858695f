from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from surfbench.bench.base.config import SurfaceConfig, surface_config
from surfbench.bench.catalog.wire import count_tokens
from surfbench.bench.report.surface_report import surface_table
from tests.conftest import EXAMPLE_MCP


def independent_full_bytes() -> int:
    """The dsh method computed straight from the file, without the importer or any surface."""
    tools = json.loads(EXAMPLE_MCP.read_text())["result"]["tools"]
    total = 0
    for t in tools:
        obj = {"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}
        total += len(json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode(obj).encode("utf-8"))
    return total


@pytest.fixture(scope="module")
def rows(gitea96):
    names = ["full", "core", "dispatcher", "dispatcher_grouped", "lazy", "search", "preselect"]
    names += ["lazy_append", "search_append"]  # the append-only variants (configs/surface/*_append.yaml)
    return {r.surface: r for r in surface_table(gitea96, [surface_config(n) for n in names])}


def test_full_bytes_equal_independent_computation(rows):
    assert rows["full"].tool_block_bytes == independent_full_bytes()
    assert rows["full"].tools == 96


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed: JSON.stringify cross-check skipped")
def test_full_bytes_equal_json_stringify(rows):
    script = (
        "const d=require(process.argv[1]);let n=0;for(const t of d.result.tools)"
        "{n+=Buffer.byteLength(JSON.stringify({name:t.name,description:t.description,parameters:t.inputSchema}))}"
        "console.log(n)"
    )
    out = subprocess.run(["node", "-e", script, str(EXAMPLE_MCP)], capture_output=True, text=True, check=True)
    assert rows["full"].tool_block_bytes == int(out.stdout)


def test_dispatcher_with_one_line_catalog_is_6x_smaller(rows):
    assert rows["dispatcher"].tools == 2
    assert rows["dispatcher"].x_smaller_than_full >= 6
    assert rows["dispatcher_grouped"].total_bytes < rows["dispatcher"].total_bytes


def test_help_sizes_cover_every_operation_and_flag_budget(rows, gitea96):
    row = rows["dispatcher"]
    assert row.help_max_operation == "repoEdit"
    assert row.help_max_bytes > 1536 and "repoEdit" in row.help_over_budget
    assert rows["full"].help_mean_bytes is None


def test_tokens_are_counted_with_both_encodings(rows):
    full = rows["full"]
    assert 0 < full.tokens_o200k < full.tool_block_bytes
    assert full.tokens_cl100k > 0 and full.tokens_cl100k != full.tokens_o200k


def test_append_variants_show_their_siblings_one_tool_and_say_how_they_deliver(rows):
    for kind in ("lazy", "search"):
        append, rewrite = rows[f"{kind}_append"], rows[kind]
        assert append.tools == rewrite.tools == 1 and append.kind == kind
        assert abs(append.tool_block_bytes - rewrite.tool_block_bytes) < 100  # only the tool's description differs
        assert "append delivery" in append.note and "append" not in rewrite.note


def test_request_dependent_surface_is_a_mean_over_probes(rows):
    assert rows["preselect"].note.startswith("mean over")
    assert 0 < rows["preselect"].tools <= 5


def test_ratio_needs_full_even_when_not_asked(gitea96):
    [row] = surface_table(gitea96, [SurfaceConfig("dispatcher", "dispatcher", {"catalog": "oneline"})])
    assert row.x_smaller_than_full >= 6


def test_count_tokens_is_offline():
    assert count_tokens("hello world", "o200k_base") == 2
