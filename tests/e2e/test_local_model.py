"""A real tool-calling request to the real 0.5b model through the real llama.cpp server and LiteLLM."""

from __future__ import annotations

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


@pytest.fixture(scope="module")
def server():
    require_local_model()
    with LocalServer(ServerSettings(model_path(DEFAULT_MODEL), "e2e-qwen", n_ctx=4096)) as srv:
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
