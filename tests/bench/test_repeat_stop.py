"""The stop inside a step (``stop_on_repeated_call``, issue 51): a streamed answer that repeats a call is cut.

A stand-in OpenAI-compatible server streams, token by token, an answer that writes the same call eight times
and then runs out of tokens, as the embedded models do; the client must close the connection at the second copy
(the server sees the client go away and sends nothing more), keep the text up to it, run the call once, and
carry the counts the server reported so far.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.repeats import cut_at, dedupe_calls
from surfbench.bench.models.types import ModelRequest, ParsedCall
from tests.conftest import ROOT

CALL = '{"name": "repo_commit_list", "arguments": {"owner": "acme", "repo": "web"}}\n'
OTHER = '{"name": "repo_get", "arguments": {"owner": "acme", "repo": "web"}}\n'
RUNAWAY = OTHER + CALL * 8 + '{"name": "repo_commit_list", "argum'


def pieces(text: str) -> list[str]:
    """The text as a server streams it: a few characters per chunk, a line's end in a chunk of its own."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\n")
        out += [body[i : i + 7] for i in range(0, len(body), 7)]
        if line.endswith("\n"):
            out.append("\n")
    return out


class StreamStub:
    """An OpenAI-compatible endpoint that streams ``text`` in chunks, ``delay_s`` apart, with llama-server's timings."""

    def __init__(self, text: str, delay_s: float = 0.01, prompt_n: int = 120, cache_n: int = 30) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.sent = 0
        """Chunks written before the client went away (or all of them)."""
        self.gone = threading.Event()
        """Set when a write found the client gone."""
        chunks = pieces(text)
        self.total = len(chunks)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:  # noqa: N802
                stub.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for n, piece in enumerate(chunks, 1):
                        timings = {"prompt_n": prompt_n, "cache_n": cache_n, "predicted_n": n}
                        event = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                        self.wfile.write(f"data: {json.dumps({**event, 'timings': timings})}\n\n".encode())
                        self.wfile.flush()
                        stub.sent = n
                        time.sleep(delay_s)
                    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
                    self.wfile.write(f"data: {json.dumps(end)}\n\n".encode())
                    usage = {"prompt_tokens": prompt_n + cache_n, "completion_tokens": len(chunks)}
                    last = json.dumps({"choices": [], "usage": usage})
                    self.wfile.write(f"data: {last}\n\ndata: [DONE]\n\n".encode())
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    stub.gone.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> StreamStub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def runaway() -> Iterator[StreamStub]:
    with StreamStub(RUNAWAY) as stub:
        yield stub


def request(stop: int | None) -> ModelRequest:
    return ModelRequest(
        messages=({"role": "user", "content": "list the commits of acme/web"},),
        mode="prompted",
        max_tokens=384,
        stop_on_repeated_call=stop,
    )


def test_a_streamed_answer_is_cut_at_the_second_copy_and_the_server_stops_sending(runaway: StreamStub) -> None:
    client = LiteLLMClient("openai/stand-in", api_base=runaway.api_base, is_local=True)
    turn = client.complete(request(2))
    assert turn.text == OTHER + CALL * 2  # up to the line that completed the second copy, nothing after
    assert turn.finish_reason == "repeated_call"
    assert [c.name for c in turn.tool_calls] == ["repo_get", "repo_commit_list"]  # the copy runs once
    # the client closed the connection: the server's next writes failed, most of the answer never sent
    assert runaway.gone.wait(5), "the stand-in server never saw the client go away"
    assert runaway.sent < runaway.total // 2, (runaway.sent, runaway.total)
    # the counts of what was generated up to the cut, from the timings of the last chunk read
    assert turn.usage.completion_tokens == len(pieces(OTHER + CALL * 2))
    assert (turn.usage.prompt_tokens, turn.usage.server_prompt_n, turn.usage.server_cache_n) == (150, 120, 30)
    assert turn.request_bytes_source == "wire" and turn.request_bytes > 0
    body = runaway.bodies[0]
    assert body["stream"] is True and body["timings_per_token"] is True and body["model"] == "stand-in"
    assert body["max_tokens"] == 384 and "stop_on_repeated_call" not in body  # the stop is ours, not sent


def test_an_answer_that_never_repeats_is_read_to_its_own_end() -> None:
    with StreamStub(OTHER + CALL) as stub:
        turn = LiteLLMClient("openai/stand-in", api_base=stub.api_base, is_local=True).complete(request(2))
    assert turn.text == OTHER + CALL and turn.finish_reason == "length"
    assert (turn.usage.prompt_tokens, turn.usage.completion_tokens) == (150, len(pieces(OTHER + CALL)))
    assert not stub.gone.is_set()


def test_the_setting_is_in_the_cache_key_only_when_on(runaway: StreamStub, tmp_path: Path) -> None:
    from surfbench.bench.models.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache")
    client = LiteLLMClient("openai/stand-in", api_base=runaway.api_base, is_local=True, cache=cache)
    cut = client.complete(request(2))
    again = client.complete(request(2))
    assert again.cache_hit and again.text == cut.text and again.request_hash == cut.request_hash
    three = client.complete(request(3))
    assert not three.cache_hit and three.text == OTHER + CALL * 3 and three.request_hash != cut.request_hash
    assert len(runaway.bodies) == 2


def test_cut_at_counts_complete_lines_only() -> None:
    assert cut_at(CALL + OTHER + CALL, 2) == len(CALL + OTHER + CALL)
    assert cut_at(CALL + CALL.rstrip("\n"), 2) is None  # the second copy's line is not finished yet
    assert cut_at(CALL + '{"arguments": {"repo": "web", "owner": "acme"}, "name": "repo_commit_list"}\n', 2)
    assert cut_at("<tool_call>" + CALL.rstrip("\n") + "</tool_call>\n" + CALL, 2) is not None
    assert cut_at('```json\n{"name": "a",\n "arguments": {}}\n```\n' * 3, 2) is None  # never half a call
    assert cut_at(CALL * 2, 3) is None


def test_dedupe_keeps_the_first_copy_in_order() -> None:
    calls = [ParsedCall("a", {"x": 1}, "c0"), ParsedCall("b", {}, "c1"), ParsedCall("a", {"x": 1}, "c2")]
    assert [c.id for c in dedupe_calls(calls)] == ["c0", "c1"]
    assert len(dedupe_calls([ParsedCall("a", {"x": 1}), ParsedCall("a", {"x": 2})])) == 2


def test_the_setting_is_refused_where_it_cannot_work() -> None:
    from surfbench.bench.models import model_config

    base = {"provider": "local", "embedded": "qwen2.5-coder-0.5b-instruct", "mode": "prompted", "tokenizer": "gguf"}
    assert model_config("x", {**base, "stop_on_repeated_call": 2}).stop_on_repeated_call == 2
    with pytest.raises(ConfigError, match="prompted mode only"):
        model_config("x", {**base, "mode": "native", "stop_on_repeated_call": 2})
    with pytest.raises(ConfigError, match="stop_on_repeated_call"):
        model_config("x", {**base, "stop_on_repeated_call": 1})  # a call seen once is no repeat
    hosted = {"provider": "litellm", "model": "anthropic/claude-3-5-haiku", "mode": "prompted"}
    with pytest.raises(ConfigError, match="OpenAI-compatible endpoint"):
        model_config("x", {**hosted, "stop_on_repeated_call": 2})


def test_the_setting_is_part_of_the_cells_identity_only_when_on() -> None:
    from surfbench.bench.models import model_config
    from surfbench.bench.store.identity import model_identity

    base = {"provider": "local", "embedded": "qwen2.5-coder-0.5b-instruct", "mode": "prompted", "tokenizer": "gguf"}
    off = model_identity(model_config("x", base), "prompted")
    on = model_identity(model_config("x", {**base, "stop_on_repeated_call": 2}), "prompted")
    assert "stop_on_repeated_call" not in off  # every cell run before the setting keeps its id
    assert on == {**off, "stop_on_repeated_call": 2}


def test_the_shipped_stop_is_off_where_it_cannot_work_and_refused_where_asked_for() -> None:
    """The embedded configs ship the stop on (prompted mode on llama-server); a run in native mode or on
    llama-cpp-python gets it off (settings, identity, label), and one that asks for it there is refused."""
    from surfbench.bench.base.config import read_group_config
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    name = "qwen2.5-coder-0.5b-instruct"
    shipped = read_group_config("model", name)
    on = resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1))
    assert on.settings.request.stop_on_repeated_call == 2 and on.identity.model["stop_on_repeated_call"] == 2
    native = resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1, mode="native"))  # the run's mode=
    assert native.settings.request.stop_on_repeated_call is None
    assert "stop_on_repeated_call" not in native.identity.model
    assert native.model_label == name  # the shipped config, nothing overridden
    other = resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1), model_data={**shipped,
                         "server": "llama-cpp-python"})  # fmt: skip
    assert other.settings.request.stop_on_repeated_call is None and "stop_on_repeated_call" not in other.identity.model
    assert "server=llama-cpp-python" in other.model_label and other.identity != on.identity
    off = resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1), model_data={**shipped,
                       "stop_on_repeated_call": None})  # fmt: skip
    assert "stop_on_repeated_call=" in off.model_label  # two stop settings in one folder: two labels
    with pytest.raises(ConfigError, match="prompted mode only"):  # asked for with the run's mode=native
        resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1, mode="native"),
                     model_data={**shipped, "stop_on_repeated_call": 3})  # fmt: skip
    with pytest.raises(ConfigError, match="prompted mode only"):  # with the model's mode=native
        resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1),
                     model_data={**shipped, "mode": "native", "stop_on_repeated_call": 3})  # fmt: skip
    with pytest.raises(ConfigError, match="server: llama-server"):  # on the other engine
        resolve_cell(CellSpec("forge", "core", name, split="dev", limit=1),
                     model_data={**shipped, "server": "llama-cpp-python", "stop_on_repeated_call": 3})  # fmt: skip


# -- surfbench whatif stop_on_repeated_call=K: the same rule on recorded steps ---------------------------------

CLOSE_ARGS = {"owner": "acme", "repo": "web", "index": 3, "state": "closed"}
CLOSE_CALL = json.dumps({"name": "issue_edit", "arguments": CLOSE_ARGS})
GET_CALL = json.dumps({"name": "issue_get", "arguments": {"owner": "acme", "repo": "web", "index": 3}})
TAIL = '{"name": "issue_edit", "argu'


def recorded(text: str) -> Any:
    """hot-issue-close (expects issue_edit) on ``full``, the model answering ``text`` then "done", as recorded."""
    from dataclasses import replace

    from surfbench.bench.analysis.replay import RecordedEpisode
    from surfbench.bench.models.scripted import ScriptedClient, text_turn
    from surfbench.bench.models.types import ModelRequest, Usage
    from surfbench.bench.run.episode import LoopSettings, run_episode
    from surfbench.surfaces import build_surface
    from tests.bench.test_scoring import FORGE

    task = next(t for t in FORGE.tasks if t.id == "hot-issue-close")
    turn = replace(text_turn(text), usage=Usage(500, 100, None), latency_s=10.0)
    trace = run_episode(
        task, build_surface(FORGE.catalog, "full").session(task.turns[0]), FORGE.new_backend(task),
        ScriptedClient([turn]), LoopSettings(max_steps=4, request=ModelRequest(messages=(), mode="prompted")),
        FORGE.system_prompt,
        lambda n: FORGE.catalog[n].parameters,
    )  # fmt: skip
    return RecordedEpisode("ep", {"suite": "forge", "task_id": task.id}, trace.steps, trace.calls)


def test_whatif_cuts_a_recorded_step_as_the_stream_would_and_proves_the_first_try_unchanged() -> None:
    from surfbench.bench.analysis.whatif_step import episode_cut

    text = (CLOSE_CALL + "\n") * 3 + TAIL
    effect = episode_cut(recorded(text), {"issue_edit"}, 2)
    kept = len((CLOSE_CALL + "\n") * 2)
    assert (effect.changed_at, effect.steps_cut) == (0, 1)
    assert effect.tokens_saved == pytest.approx(100 * (1 - kept / len(text)))
    assert effect.seconds_saved == pytest.approx(10.0 * (1 - kept / len(text)))
    assert not effect.first_try_open and not effect.selection_open  # the first issue_edit is kept
    at_three = episode_cut(recorded(text), {"issue_edit"}, 3)
    assert at_three.tokens_saved == pytest.approx(100 * len(TAIL) / len(text))  # only the unfinished tail goes
    unchanged = episode_cut(recorded(CLOSE_CALL + "\n"), {"issue_edit"}, 2)
    assert (unchanged.changed_at, unchanged.steps_cut, unchanged.tokens_saved) == (None, 0, 0.0)


def test_whatif_leaves_the_first_try_open_when_the_cut_drops_an_expected_operations_first_call() -> None:
    from surfbench.bench.analysis.whatif_step import episode_cut

    text = (GET_CALL + "\n") * 2 + CLOSE_CALL + "\n" + TAIL  # the stop ends it before issue_edit
    effect = episode_cut(recorded(text), {"issue_edit"}, 2)
    assert effect.changed_at == 0 and effect.first_try_open
    assert not effect.selection_open  # the first call naming an operation (issue_get) is kept: selection decided
    dedupe_only = episode_cut(recorded(CLOSE_CALL + "\n" + GET_CALL + "\n" + CLOSE_CALL), {"issue_edit"}, 3)
    assert dedupe_only.changed_at == 0 and dedupe_only.steps_cut == 0  # no cut; the copy is not run again
    assert not dedupe_only.first_try_open


def test_whatif_on_a_run_folder_and_its_setting_errors(tmp_path: Path) -> None:
    from surfbench.bench.analysis.whatif import main
    from surfbench.bench.analysis.whatif_step import parse_step_setting

    assert parse_step_setting("stop_on_repeated_call=3,2") == [2, 3]
    for bad in ("stop_on_repeated_call=1", "stop_on_repeated_call=x", "stop_on_repeated_call="):
        with pytest.raises(ConfigError, match="stop_on_repeated_call"):
            parse_step_setting(bad)
    reference = ROOT / "results" / "reference" / "forge-dev-qwen0.5b-llama-server"
    out = tmp_path / "w.md"
    assert main("stop_on_repeated_call=2", [str(reference)], out=str(out)) == 0
    text = out.read_text()
    assert "| forge-dev-qwen0.5b-llama-server | forge/full/" in text and "first-try open" in text
