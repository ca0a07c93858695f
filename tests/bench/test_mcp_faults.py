"""Servers that cannot be used: one line naming the server and what went wrong, exit 2, nothing written."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main
from tests.bench.mcp_helpers import TINY, processes_with, tiny


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CASES = [
    (["--mcp", "no-such-server-xyz --stdio"], "command 'no-such-server-xyz' not found"),
    (["--mcp", tiny("garbage")], "wrote a line on stdout that is not JSON-RPC: b'Welcome to my server! v1.0'"),
    (["--mcp", tiny("silent"), "--startup-timeout", "1"], "no answer to initialize within 1 s"),
    (
        ["--mcp", tiny("crash")],
        "exited with status 3 before answering initialize; its stderr ends: crashing on purpose",
    ),
    (["--mcp", tiny("duplicate")], "its tool list is not a usable catalog: duplicate operation name (tool 'echo')"),
    (["--mcp", tiny("bad-schema")], "parameters must be a JSON Schema object (type: object) (tool 'echo')"),
]


@pytest.mark.parametrize(("server", "why"), CASES, ids=["missing", "garbage", "silent", "crash", "duplicate", "schema"])
def test_a_bad_server_is_one_line_exit_2_and_nothing_written(server: list[str], why: str, tmp_path: Path, capsys):
    out = tmp_path / "tools.json"
    assert main(["catalog", "dump", *server, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert err.startswith(f"surfbench: error: MCP server '{server[1]}': ")
    assert why in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
    assert processes_with(str(TINY)) == []


def test_a_refusing_http_endpoint_is_one_line(tmp_path: Path, capsys):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    assert main(["surfaces", "--mcp-url", url, "--out", str(tmp_path / "rows.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"surfbench: error: MCP server '{url}': cannot connect: ConnectError: All connection attempts failed"
    assert list(tmp_path.iterdir()) == []


def test_a_header_from_an_unset_variable_names_the_variable(capsys, monkeypatch):
    monkeypatch.delenv("SURFBENCH_TEST_TOKEN", raising=False)
    url = f"http://127.0.0.1:{free_port()}/mcp"
    assert main(["surfaces", "--mcp-url", url, "--mcp-header", "Authorization=SURFBENCH_TEST_TOKEN"]) == 2
    assert "reads environment variable 'SURFBENCH_TEST_TOKEN', which is not set" in capsys.readouterr().err


def test_catalog_and_server_together_are_refused(capsys):
    assert main(["surfaces", "--catalog", "x.json", "--mcp", "server"]) == 2
    assert "give exactly one of --catalog FILE, --mcp 'COMMAND ARGS' or --mcp-url URL" in capsys.readouterr().err
