"""API keys never reach results, transcripts, the response cache or the logs.

A hosted provider is stood in for by a local OpenAI-compatible stub that checks the key it is sent and,
like real providers do, quotes it back in an error message once.
"""

from __future__ import annotations

from pathlib import Path

from bench.results import load_runs
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config, tool_call

KEY = "sk-planted-7f3c9e1d2b4a6f8e0c1d3b5a7e9f1c3d"


def respond(n: int, body: dict, headers: dict) -> tuple[int, dict]:
    if n == 1:  # providers quote the key back when they refuse it
        return 500, {"error": {"message": f"Internal error for key {KEY}; try again", "type": "server"}}
    if body["messages"][-1]["role"] == "user":
        return 200, chat_reply(tool_calls=[tool_call("forge", {"operation": "issue_get", "args": {"api_key": KEY}})])
    return 200, chat_reply(content="Done.")


def test_a_planted_api_key_appears_in_no_output(tmp_path: Path):
    with OpenAIStub(respond) as stub:
        configs = stub_model_config(tmp_path, stub.api_base, extra="api_key_env: SURFBENCH_TEST_KEY\n")
        proc = run_surfbench(
            tmp_path, configs, "suite=forge", "surface=dispatcher", "limit=2", env={"SURFBENCH_TEST_KEY": KEY}
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen_keys = [headers.get("authorization") for _, headers in stub.requests]
    assert seen_keys and all(h == f"Bearer {KEY}" for h in seen_keys), "the key was not used"
    assert len(load_runs([tmp_path / "results" / "x"])) == 2
    written = [p for p in tmp_path.rglob("*") if p.is_file() and configs not in p.parents]
    assert any(p.suffix == ".jsonl" for p in written) and any("cache" in p.parts for p in written)
    leaks = [str(p) for p in written if KEY.encode() in p.read_bytes()]
    leaks += [name for name, text in (("stdout", proc.stdout), ("stderr", proc.stderr)) if KEY in text]
    assert not leaks, f"the API key leaked into {leaks}"
