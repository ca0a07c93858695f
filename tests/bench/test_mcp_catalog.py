"""A live MCP server as a catalog: bytes counted on what the server sent; dump and read back; drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.cli.cli import main
from surfbench.bench.mcp.mcp_catalog import drift, live_catalog
from surfbench.bench.mcp.mcp_spec import from_command
from tests.bench.mcp_helpers import git_repo, processes_with, tiny

pytest.importorskip("mcp_server_git", reason="mcp-server-git is a dev dependency (pip install -e .[dev])")


def raw_tools_list(argv: list[str]) -> bytes:
    """The tools/list answer, talking JSON-RPC by hand (no SDK, no surfbench): the independent count."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    for msg in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
    proc.stdin.flush()
    try:
        while True:
            line = proc.stdout.readline()
            assert line, "the server closed stdout"
            if json.loads(line).get("id") == 2:
                return line.rstrip(b"\n")
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_surfaces_over_mcp_server_git_counts_full_bytes_on_the_raw_answer(tmp_path: Path, capsys):
    repo = git_repo(tmp_path / "repo")
    raw = raw_tools_list([sys.executable, "-m", "mcp_server_git", "--repository", str(repo)])
    tools = json.loads(raw)["result"]["tools"]
    independent = sum(
        len(json.dumps({"name": t["name"], "description": t.get("description", ""), "parameters": t["inputSchema"]},
                       separators=(",", ":"), ensure_ascii=False).encode())
        for t in tools
    )  # fmt: skip
    out = tmp_path / "rows.json"
    code = main(["surfaces", "--mcp", f"python -m mcp_server_git --repository {repo}", "--surface", "full,dispatcher",
                 "--out", str(out)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    rows = {r["surface"]: r for r in json.loads(out.read_text())}
    assert len(tools) == 12 and rows["full"]["tools"] == 12
    assert rows["full"]["tool_block_bytes"] == independent
    assert f"tools/list answer {len(raw):,} B as sent, 12 tools" in printed
    assert "dispatcher" in printed and "full" in printed
    assert processes_with(str(repo)) == []


def test_dump_writes_the_answer_as_sent_and_reads_back_to_the_same_catalog(tmp_path: Path, capsys):
    out = tmp_path / "pins" / "tools.json"
    assert main(["catalog", "dump", "--mcp", tiny("ok"), "--out", str(out)]) == 0
    live = live_catalog(from_command(tiny("ok")))
    assert out.read_bytes() == live.listing.raw  # byte for byte what the server sent
    pinned = load_catalog(out)
    assert pinned.content_hash == live.catalog.content_hash
    assert f"catalog hash {live.catalog.content_hash}" in capsys.readouterr().out


def test_drift_names_what_changed(tmp_path: Path):
    live = live_catalog(from_command(tiny("ok"))).catalog
    doc = json.loads(live_catalog(from_command(tiny("ok"))).listing.raw)
    doc["result"]["tools"][0]["description"] = "Echo it."
    doc["result"]["tools"].pop()
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    why = drift(live, load_catalog(path))
    assert why is not None and "added: pid" in why and "changed: echo" in why
    assert drift(live, live) is None


def test_a_suite_over_a_drifted_server_warns_and_names_the_change(tmp_path: Path, capsys):
    import yaml

    from surfbench.bench.suites.suite import load_suite

    doc = json.loads(live_catalog(from_command(tiny("ok"))).listing.raw)
    doc["result"]["tools"] = [t for t in doc["result"]["tools"] if t["name"] != "pid"]
    (tmp_path / "tools.json").write_text(json.dumps(doc))
    server = {"command": "python", "args": [tiny("ok").split()[1], "ok"]}
    suite = {"catalog": {"mcp": server, "pinned": "tools.json"}, "backend": "mcp", "tasks": ["tasks.yaml"]}
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump(suite))
    (tmp_path / "tasks.yaml").write_text(yaml.safe_dump([{"id": "t", "turns": ["hi"], "refuse": True}]))
    loaded = load_suite(str(tmp_path))
    err = capsys.readouterr().err
    assert "pid" in loaded.catalog.names
    assert "differs from the pinned" in err and "added: pid" in err and "re-pin with surfbench catalog dump" in err
