"""The LiteLLM model client against a local OpenAI-compatible stub: retries, clear errors, the response
cache, native and prompted calling; and the `models` / `cache` commands."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import pytest

from surfbench.bench.cli.cli import main
from surfbench.bench.contracts.surface import ToolSpec
from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.cache import ResponseCache
from surfbench.bench.models.client import EndpointRefused, LiteLLMClient, ModelError, RateLimited
from surfbench.bench.models.local import EMBEDDED
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.store.results import load_runs
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config, tool_call, usage

WEATHER = ToolSpec(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask(mode: str = "native", temperature: float = 0.0) -> ModelRequest:
    return ModelRequest(
        messages=({"role": "user", "content": "Weather in Paris?"},),
        tools=(WEATHER,),
        mode=mode,  # type: ignore[arg-type]
        temperature=temperature,
        max_tokens=32,
    )


def client(api_base: str, **kw) -> LiteLLMClient:  # noqa: ANN003
    return LiteLLMClient("openai/stub-model", api_base=api_base, api_key="sk-test", backoff_s=0.01, **kw)


def test_native_tool_calls_come_back_typed_with_usage_and_wire_bytes():
    with OpenAIStub(lambda n, b, h: (200, chat_reply(tool_calls=[tool_call("get_weather", {"city": "Paris"})]))) as s:
        turn = client(s.api_base).complete(ask())
    body = s.requests[0][0]
    assert body["tools"][0]["function"]["name"] == "get_weather"
    calls = [(c.name, c.arguments, c.source) for c in turn.tool_calls]
    assert calls == [("get_weather", {"city": "Paris"}, "tool_calls")]
    assert turn.usage.prompt_tokens == 10 and turn.usage.completion_tokens == 5
    assert turn.request_bytes_source == "wire" and turn.request_bytes > len(json.dumps(body["tools"]))
    assert not turn.cache_hit


@pytest.mark.parametrize(
    ("text", "source"),
    [
        ('Sure.\n```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```', "json_block"),
        ('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>', "tool_call_tag"),
        ('{"name": "get_weather", "arguments": {"city": "Paris"}}', "bare_json"),
    ],
)
def test_a_call_written_as_text_is_parsed_and_its_format_recorded(text: str, source: str):
    with OpenAIStub(lambda n, b, h: (200, chat_reply(content=text))) as s:
        turn = client(s.api_base).complete(ask())
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert turn.parse_format == source and turn.tool_calls[0].source == source


def test_prompted_mode_renders_the_tools_into_the_prompt_and_sends_no_tools_field():
    reply = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    with OpenAIStub(lambda n, b, h: (200, chat_reply(content=reply))) as s:
        turn = client(s.api_base).complete(ask(mode="prompted"))
    body = s.requests[0][0]
    assert "tools" not in body
    system = body["messages"][0]
    assert system["role"] == "system" and "get_weather" in system["content"] and '"city"' in system["content"]
    assert turn.tool_calls[0].name == "get_weather"


def test_transient_errors_are_retried_with_backoff_then_succeed():
    def flaky(n: int, body: dict, headers: dict) -> tuple[int, dict]:
        if n <= 2:
            return 503, {"error": {"message": "overloaded", "type": "server"}}
        return 200, chat_reply(content="It is sunny.")

    with OpenAIStub(flaky) as s:
        turn = client(s.api_base, retries=3).complete(ask())
    assert turn.text == "It is sunny." and len(s.requests) == 3


def test_a_server_that_keeps_failing_is_one_clear_error_after_the_retries():
    overloaded = (503, {"error": {"message": "overloaded", "type": "server"}})
    with OpenAIStub(lambda n, b, h: overloaded) as s, pytest.raises(ModelError) as err:
        client(s.api_base, retries=2).complete(ask())
    assert len(s.requests) == 3
    assert "after 3 attempt(s)" in str(err.value) and s.api_base in str(err.value)


def test_an_endpoint_that_never_answered_is_one_clear_error():
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(EndpointRefused) as err:
        client(f"http://127.0.0.1:{port}/v1", retries=1).complete(ask())
    message = str(err.value)
    assert "unreachable" in message and f"127.0.0.1:{port}" in message and "check api_base" in message
    assert "\n" not in message


def test_an_endpoint_that_went_away_mid_run_is_an_episode_error_not_a_stop():
    with OpenAIStub(lambda n, b, h: (200, chat_reply(content="ok"))) as s:
        c = client(s.api_base, retries=1)
        c.complete(ask())
    with pytest.raises(ModelError) as err:
        c.complete(ask(temperature=0.5))
    assert not isinstance(err.value, EndpointRefused) and "unreachable" in str(err.value)


def test_rejected_credentials_name_the_setting_and_are_not_retried():
    refused = (401, {"error": {"message": "bad key", "type": "invalid_request_error"}})
    with OpenAIStub(lambda n, b, h: refused) as s, pytest.raises(EndpointRefused, match="api_key_env"):
        client(s.api_base, retries=3).complete(ask())
    assert len(s.requests) == 1


def test_a_missing_key_is_named_before_any_request(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY"):
        ModelPool(cache=None).client(model_config("gpt-4o-mini"))


def test_an_own_server_without_a_key_setting_gets_a_placeholder_key(tmp_path: Path):
    with OpenAIStub(lambda n, b, h: (200, chat_reply(content="Done."))) as s:
        proc = run_surfbench(tmp_path, stub_model_config(tmp_path, s.api_base), "surface=dispatcher", "limit=2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert [h.get("authorization") for _, h in s.requests] == ["Bearer sk-no-key"] * 2


def test_refused_credentials_stop_each_cell_with_one_line_and_exit_2(tmp_path: Path):
    refused = (401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
    with OpenAIStub(lambda n, b, h: refused) as s:
        configs = stub_model_config(tmp_path, s.api_base)
        proc = run_surfbench(tmp_path, configs, "-m", "surface=full,dispatcher", "limit=3")
    assert proc.returncode == 2
    assert len(s.requests) == 2, "one request per cell, no retries, no further episodes"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("surfbench: error in cell")]
    assert len(errors) == 2 and all("api_key_env" in line for line in errors)
    assert "Traceback" not in proc.stderr


def test_response_cache_answers_a_repeated_request_and_marks_the_hit(tmp_path: Path):
    cache = ResponseCache(tmp_path / "responses")
    with OpenAIStub(lambda n, b, h: (200, chat_reply(tool_calls=[tool_call("get_weather", {"city": f"P{n}"})]))) as s:
        first = client(s.api_base, cache=cache).complete(ask())
        again = client(s.api_base, cache=cache).complete(ask())
        other = client(s.api_base, cache=cache).complete(ask(temperature=0.7))
    assert len(s.requests) == 2  # the repeat never reached the server; a new temperature did
    assert not first.cache_hit and again.cache_hit and not other.cache_hit
    assert again.tool_calls == first.tool_calls and again.request_hash == first.request_hash
    assert other.tool_calls[0].arguments == {"city": "P2"}
    assert cache.size() == 2


def test_cache_and_models_commands(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("SURFBENCH_CACHE", str(tmp_path))
    ResponseCache().put("ab" * 32, {"text": "x"})
    assert main(["cache"]) == 0 and "1 cached responses" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0 and "removed 1 cached responses" in capsys.readouterr().out
    assert ResponseCache().size() == 0
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    for model in EMBEDDED.values():
        line = next(row for row in listing.splitlines() if row.startswith(model.name))
        assert f"{model.size:,}" in line and model.sha256[:16] in line and line.rstrip().endswith("no")


def test_a_run_with_harness_errors_says_so_and_retry_errors_redoes_them(tmp_path: Path):
    def down_after_first(n: int, body: dict, headers: dict) -> tuple[int, dict]:
        if n == 1:
            return 200, chat_reply(content="Done.")
        return 503, {"error": {"message": "overloaded", "type": "server"}}

    args = ("surface=dispatcher", "limit=2", "episode_retries=0")
    with OpenAIStub(down_after_first) as s:
        configs = stub_model_config(tmp_path, s.api_base)
        first = run_surfbench(tmp_path, configs, *args)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "1 episode(s) of forge/dispatcher/stub ended in a harness error" in first.stderr
    assert "retry_errors=true" in first.stderr

    with OpenAIStub(lambda n, b, h: (200, chat_reply(content="Done."))) as s:  # the endpoint is back
        config = configs / "model" / "stub.yaml"
        config.write_text(re.sub(r"api_base: \S+", f"api_base: {s.api_base}", config.read_text()))
        again = run_surfbench(tmp_path, configs, *args, "retry_errors=true")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "running 1 episode(s) again" in again.stderr and len(s.requests) == 1
    episodes = load_runs([tmp_path / "results" / "x"])
    assert len(episodes) == 2 and episodes["episode_key"].is_unique and episodes["error"].isna().all()


def test_a_429_waits_as_long_as_retry_after_says_and_is_not_a_failure():
    import time

    def limited(n: int, body: dict, headers: dict) -> tuple:
        if n == 1:
            return 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, {"Retry-After": "0.4"}
        return 200, chat_reply(content="It is sunny.")

    with OpenAIStub(limited) as s:
        c = client(s.api_base, retries=0)  # no transient retries: the 429 is waited out on its own budget
        started = time.monotonic()
        turn = c.complete(ask())
        waited = time.monotonic() - started
    assert turn.text == "It is sunny." and len(s.requests) == 2
    assert 0.4 <= waited < 5 and c.rate_limit_waits == 1 and c.gate.rate_limited == 1


def test_an_endpoint_that_stays_rate_limited_is_one_clear_error_naming_the_settings():
    limited = (429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}, {"retry-after-ms": "10"})
    with OpenAIStub(lambda n, b, h: limited) as s, pytest.raises(RateLimited) as err:
        client(s.api_base, rate_limit_retries=3).complete(ask())
    assert len(s.requests) == 4 and "after 4 attempt(s)" in str(err.value)
    assert "concurrency=" in str(err.value) and "\n" not in str(err.value)


def test_openai_cached_tokens_are_recorded_and_priced_at_the_cached_rate():
    reply = chat_reply(content="ok", usage=usage(prompt=1000, completion=10, cached=800))
    with OpenAIStub(lambda n, b, h: (200, reply)) as s:
        turn = LiteLLMClient("openai/gpt-4o-mini", api_base=s.api_base, api_key="sk-test").complete(ask())
    assert turn.usage.prompt_tokens == 1000 and turn.usage.cached_prompt_tokens == 800
    assert turn.cost_usd == pytest.approx(200 * 1.5e-07 + 800 * 7.5e-08 + 10 * 6e-07)


def test_anthropic_cache_reads_and_writes_are_recorded_priced_and_the_breakpoint_follows_the_tools():
    from tests.fixtures.anthropic_stub import AnthropicStub, anthropic_usage, message_reply, overloaded

    def respond(n: int, body: dict, headers: dict) -> tuple:
        if n == 1:
            return overloaded("0.05")
        reply = message_reply(tool_uses=[("get_weather", {"city": "Paris"})], usage=anthropic_usage(100, 7, 600, 300))
        return 200, reply

    other = ToolSpec("get_time", "Get the time.", {"type": "object", "properties": {}})
    request = ModelRequest(messages=({"role": "user", "content": "Weather?"},), tools=(WEATHER, other), max_tokens=32)
    with AnthropicStub(respond) as s:
        c = LiteLLMClient(
            "anthropic/claude-haiku-4-5", api_base=s.api_base, api_key="sk-ant-test", cache_control="tools"
        )
        turn = c.complete(request)
    tools = s.requests[-1][0]["tools"]
    assert [t.get("cache_control") for t in tools] == [None, {"type": "ephemeral"}]  # after the whole tool block
    assert [(t.name, t.arguments) for t in turn.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert turn.usage.prompt_tokens == 1000 and turn.usage.cached_prompt_tokens == 600  # reads + writes + input
    assert turn.cost_usd == pytest.approx(100 * 1e-06 + 600 * 1e-07 + 300 * 1.25e-06 + 7 * 5e-06)
    assert c.rate_limit_waits == 1


def test_concurrency_and_budgets_are_checked_in_model_configs_and_not_part_of_the_cell():
    from surfbench.bench.base.config import ConfigError
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    assert (
        model_config("gpt-4o-mini").concurrency == 16 and model_config("qwen2.5-coder-0.5b-instruct").concurrency == 1
    )
    with pytest.raises(ConfigError, match="concurrency=0: must be a whole number"):
        model_config("x", {"provider": "litellm", "model": "openai/x", "concurrency": 0})
    with pytest.raises(ConfigError, match="cache_control='all'"):
        model_config("x", {"provider": "litellm", "model": "openai/x", "cache_control": "all"})
    one, many = (resolve_cell(CellSpec("notes_mcp", "full", "gpt-4o-mini", concurrency=n)) for n in (1, 32))
    assert one.cell_id == many.cell_id and one.episode_key(one.tasks[0], 0) == many.episode_key(many.tasks[0], 0)
