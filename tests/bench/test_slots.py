"""A local model with ``n_parallel`` servers: each call in flight goes to a free server, never two to one;
a server that died is replaced and its port followed; configs that cannot work are refused."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from surfbench.bench.base.concurrency import EndpointGate, EndpointRing
from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import model_config
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.server import ServerGroup, ServerSettings
from surfbench.bench.models.types import ModelRequest
from tests.fixtures.openai_stub import OpenAIStub, chat_reply

QWEN = "qwen2.5-coder-0.5b-instruct"


def ask(i: int) -> ModelRequest:
    return ModelRequest(messages=({"role": "user", "content": f"question {i}"},), max_tokens=8)


def reply(n: int, body: dict, headers: dict) -> tuple:
    return 200, chat_reply(content="ok")


def test_calls_in_flight_spread_over_the_servers_one_call_per_server_at_a_time():
    with OpenAIStub(reply, latency_s=0.2) as a, OpenAIStub(reply, latency_s=0.2) as b:
        client = LiteLLMClient(
            "openai/local", api_key="sk-local", is_local=True, start=lambda: [a.api_base, b.api_base],
            gate=EndpointGate(4),
        )  # fmt: skip
        threads = [threading.Thread(target=client.complete, args=(ask(i),)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(a.requests) + len(b.requests) == 6
    assert a.requests and b.requests  # both servers worked
    assert a.most_in_flight == 1 and b.most_in_flight == 1  # llama-cpp-python's server takes one at a time


def test_a_revived_server_s_new_port_replaces_the_old_one_in_the_ring_even_while_a_call_holds_it():
    for held in ("http://x:1", "http://y:2"):
        ring = EndpointRing(["http://x:1", "http://y:2"])
        first, second = ring.take(), ring.take()
        taken = held  # a call holds the endpoint whose server dies; the other one is free
        ring.give(second if first == held else first)
        ring.replace(["http://x:1", "http://y:2"], ["http://x:1", "http://y:3"])
        ring.give(taken)
        assert sorted([ring.take(), ring.take()]) == ["http://x:1", "http://y:3"]


def test_group_splits_the_threads_and_gives_each_server_its_own_log(tmp_path: Path):
    group = ServerGroup(ServerSettings(tmp_path / "m.gguf", "m", n_threads=4), 2)
    assert [m.settings.n_threads for m in group.members] == [2, 2]
    assert len({m.log_path for m in group.members}) == 2


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (
            {"provider": "local", "embedded": QWEN, "threads": 2, "n_parallel": 4},
            "at most threads=2",
        ),
        ({"provider": "litellm", "model": "openai/x", "n_parallel": 2}, "local models only"),
        ({"provider": "local", "embedded": QWEN, "n_parallel": 0}, "1 or more"),
    ],
)
def test_slots_that_cannot_work_are_refused_with_the_reason(data: dict, words: str):
    with pytest.raises(ConfigError, match=words):
        model_config("m", data)
