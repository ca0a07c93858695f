"""API keys never reach results, transcripts, the response cache or the logs.

A hosted provider is stood in for by a local OpenAI-compatible stub that checks the key it is sent and,
like real providers do, quotes it back in an error message once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from bench.results import load_runs
from tests.conftest import ROOT

KEY = "sk-planted-7f3c9e1d2b4a6f8e0c1d3b5a7e9f1c3d"


class Stub(BaseHTTPRequestHandler):
    seen_keys: list[str] = []
    calls = 0

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen_keys.append(self.headers.get("Authorization", ""))
        Stub.calls += 1
        if Stub.calls == 1:  # providers quote the key back when they refuse it
            self._send(500, {"error": {"message": f"Internal error for key {KEY}; try again", "type": "server"}})
            return
        last = body["messages"][-1]
        if last["role"] == "user":
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "forge",
                            "arguments": json.dumps({"operation": "issue_get", "args": {"api_key": KEY}}),
                        },
                    }
                ],
            }
        else:
            message = {"role": "assistant", "content": "Done."}
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_a_planted_api_key_appears_in_no_output(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "stub.yaml").write_text(
        "provider: litellm\nmodel: openai/stub-model\n"
        f"api_base: http://127.0.0.1:{server.server_address[1]}/v1\n"
        "api_key_env: SURFBENCH_TEST_KEY\nmode: native\ntokenizer: o200k_base\nmax_tokens: 64\n"
    )
    env = {
        **os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_CACHE": str(tmp_path / "cache"),
        "SURFBENCH_TEST_KEY": KEY, "CI": "true",
    }  # fmt: skip
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.cli", "run", "suite=forge", "surface=dispatcher", "model=stub", "limit=2",
             f"results_dir={tmp_path / 'results'}", "run=s"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert Stub.seen_keys and all(h == f"Bearer {KEY}" for h in Stub.seen_keys), "the key was not used"
    assert len(load_runs([tmp_path / "results" / "s"])) == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file() and configs not in p.parents]
    assert any(p.suffix == ".jsonl" for p in written) and any("cache" in p.parts for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    leaks += [name for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)) if KEY in text]
    assert not leaks, f"the API key leaked into {leaks}"
