"""A live server over streamable HTTP: headers from the environment, bytes as sent, a clear 401."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main
from surfbench.bench.mcp.mcp_catalog import live_catalog
from surfbench.bench.mcp.mcp_spec import ServerSpec

pytest.importorskip("uvicorn", reason="n/a: the HTTP test server needs uvicorn (installed with mcp)")
SERVER = Path(__file__).resolve().parent.parent / "fixtures" / "mcp_servers" / "http_server.py"
TOKEN = "s3cret-token-value"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(params=["sse", "json"])
def url(request: pytest.FixtureRequest) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SERVER), str(port), TOKEN, request.param], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_surfaces_over_http_count_the_answer_as_sent(url: str, tmp_path: Path, capsys, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", f"Bearer {TOKEN}")
    live = live_catalog(ServerSpec(url=url, headers={"Authorization": "MY_TOKEN"}))
    tools = json.loads(live.listing.raw)["result"]["tools"]
    independent = sum(
        len(json.dumps({"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]},
                       separators=(",", ":"), ensure_ascii=False).encode())
        for t in tools
    )  # fmt: skip
    out = tmp_path / "rows.json"
    args = ["surfaces", "--mcp-url", url, "--mcp-header", "Authorization=MY_TOKEN", "--surface", "full"]
    assert main([*args, "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert json.loads(out.read_text())[0]["tool_block_bytes"] == independent
    assert f"tools/list answer {len(live.listing.raw):,} B as sent, 2 tools" in printed.out
    assert TOKEN not in printed.out + printed.err + out.read_text()


def test_a_missing_header_is_one_line_naming_the_status(url: str, capsys):
    assert main(["surfaces", "--mcp-url", url]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"surfbench: error: MCP server '{url}': the endpoint answered HTTP 401 Unauthorized "
        "(check the headers: mcp.headers / --mcp-header)"
    )
