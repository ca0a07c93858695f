"""A real tool-calling request to the real 0.5b model through each real llama.cpp server engine and LiteLLM."""

from __future__ import annotations

from pathlib import Path

import pytest

from surfbench.bench.contracts.surface import ToolSpec
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.local import DEFAULT_MODEL, model_path
from surfbench.bench.models.server import LocalServer, ServerSettings
from surfbench.bench.models.types import ModelRequest
from tests.e2e.conftest import require_local_model

pytestmark = pytest.mark.e2e

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string", "description": "city name"}}, "required": ["city"]},
)


@pytest.fixture(scope="module", params=["llama-server", "llama-cpp-python"])
def server(request: pytest.FixtureRequest):
    """Each engine in turn: llama.cpp's own server (the default) and llama-cpp-python's (older reference runs)."""
    require_local_model(engine=request.param)
    settings = ServerSettings(model_path(DEFAULT_MODEL), "e2e-qwen", n_ctx=4096, engine=request.param)
    with LocalServer(settings) as srv:
        yield srv
    assert not srv.alive()


@pytest.mark.parametrize("mode", ["native", "prompted"])
def test_tool_call_parsed_from_real_model(server: LocalServer, mode: str):
    client = LiteLLMClient("openai/e2e-qwen", api_base=server.api_base, api_key="sk-local", is_local=True)
    request = ModelRequest(
        messages=(
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What's the weather in Paris right now?"},
        ),
        tools=(WEATHER,),
        mode=mode,  # type: ignore[arg-type]
        max_tokens=64,
    )
    turn = client.complete(request)
    assert turn.tool_calls, f"no tool call parsed from {turn.text!r}"
    call = turn.tool_calls[0]
    assert call.name == "get_weather"
    assert str(call.arguments.get("city", "")).lower().startswith("paris")
    assert turn.request_bytes_source == "wire" and turn.request_bytes > 200
    assert turn.usage.prompt_tokens and turn.usage.completion_tokens


@pytest.mark.parametrize("mode", ["native", "prompted"])
def test_a_second_user_turn_after_an_empty_answer_is_accepted_by_the_real_template(server: LocalServer, mode: str):
    """Multi-turn tasks send the previous answer back; an empty one once reached llama.cpp without a
    content field and its chat template failed (HTTP 500) on every later request of the episode."""
    from surfbench.bench.models.types import ModelTurn
    from surfbench.bench.run.episode import _assistant_message

    client = LiteLLMClient("openai/e2e-qwen", api_base=server.api_base, api_key="sk-local", is_local=True, retries=0)
    request = ModelRequest(
        messages=(
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Say nothing."},
            _assistant_message(ModelTurn(text="")),
            {"role": "user", "content": "What's the weather in Paris right now?"},
        ),
        tools=(WEATHER,),
        mode=mode,  # type: ignore[arg-type]
        max_tokens=48,
    )
    turn = client.complete(request)
    assert turn.usage.prompt_tokens


def test_each_engine_reports_its_kv_cache_reuse_or_says_nothing(server: LocalServer):
    """On llama-server the second of two requests sharing their start is served partly from the slot's KV cache,
    and its own counts (records v7: server_cache_n, server_prompt_n) add up to the prompt it read; llama-cpp-python
    reports none, and the counts stay None rather than 0."""
    client = LiteLLMClient("openai/e2e-qwen", api_base=server.api_base, api_key="sk-local", is_local=True)
    system = {"role": "system", "content": "Answer with exactly one lowercase word. " * 30}
    turns = [
        client.complete(ModelRequest(messages=(system, {"role": "user", "content": ask}), max_tokens=8))
        for ask in ("Name a colour.", "Name a fruit.")
    ]
    counts = [(t.usage.server_cache_n, t.usage.server_prompt_n, t.usage.prompt_tokens) for t in turns]
    if server.settings.engine == "llama-cpp-python":
        assert all(c[0] is None and c[1] is None and c[2] for c in counts), counts
        return
    for cache_n, prompt_n, prompt in counts:
        assert cache_n is not None and prompt_n is not None, counts
        assert cache_n + prompt_n == prompt, counts
    # the shared system text is not recomputed (the first may reuse the chat template's opening tokens)
    assert counts[1][0] > counts[0][0] + 200, counts


def test_llama_cpp_python_does_not_keep_every_prompt_tokens_logits():
    """Its server's default (logits_all) keeps an n_ctx x n_vocab float32 array: 10 GB resident for Qwen at 16k
    once the context fills, two such servers in one sweep exhausted 24 GB. surfbench starts it without."""
    require_local_model(engine="llama-cpp-python")
    settings = ServerSettings(model_path(DEFAULT_MODEL), "e2e-rss", n_ctx=8192, engine="llama-cpp-python")
    long_text = " ".join(f"item{i}" for i in range(1000))  # ~4,500 tokens of prompt
    with LocalServer(settings) as srv:
        client = LiteLLMClient("openai/e2e-rss", api_base=srv.api_base, api_key="sk-local", is_local=True)
        turn = client.complete(
            ModelRequest(messages=({"role": "user", "content": long_text + "\nSay ok."},), max_tokens=4)
        )
        assert turn.usage.prompt_tokens > 3000
        status = Path(f"/proc/{srv.pid}/status").read_text(encoding="ascii")
        rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    # with logits_all the prompt alone touches 3,000 x 151,936 x 4 B = 1.8 GB of logits, and more with its length
    assert rss_kb < 1_500_000, f"server resident {rss_kb / 1e6:.1f} GB after a {turn.usage.prompt_tokens}-token prompt"
