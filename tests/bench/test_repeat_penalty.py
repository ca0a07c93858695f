"""``repeat_penalty`` in a local model's config: sent with every request, part of the cache key and the cell
identity when set, and nothing changes when it is not (older runs keep their keys and cache entries)."""

from __future__ import annotations

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models import model_config
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.types import ModelRequest
from surfbench.bench.store.identity import model_identity

MESSAGES = ({"role": "user", "content": "hi"},)


def test_a_set_penalty_is_in_the_body_and_the_key_and_an_unset_one_is_nowhere():
    client = LiteLLMClient("openai/local", api_base="http://127.0.0.1:1/v1", api_key="sk-local", is_local=True)
    plain = client.wire_payload(ModelRequest(messages=MESSAGES))
    assert "repeat_penalty" not in plain
    assert client.wire_payload(ModelRequest(messages=MESSAGES, repeat_penalty=1.0))["repeat_penalty"] == 1.0


def test_the_penalty_is_part_of_a_cells_identity_only_when_set():
    unset = {k: v for k, v in _shipped().items() if k != "repeat_penalty"}
    plain = model_config("qwen2.5-coder-0.5b-instruct", unset)
    assert plain.repeat_penalty is None and "repeat_penalty" not in model_identity(plain, "prompted")
    set_ = model_config("qwen2.5-coder-0.5b-instruct", {**unset, "repeat_penalty": 1.1})
    assert model_identity(set_, "prompted")["repeat_penalty"] == 1.1


def test_the_shipped_local_configs_send_no_penalty_explicitly_on_llama_server():
    """Both engines then sample alike (llama-cpp-python's server would otherwise apply a hidden 1.1)."""
    for name in ("qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"):
        cfg = model_config(name)
        assert (cfg.server, cfg.repeat_penalty) == ("llama-server", 1.0)
        assert model_identity(cfg, "prompted")["repeat_penalty"] == 1.0


def test_a_hosted_model_with_a_repeat_penalty_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="repeat_penalty.*local models only"):
        model_config("gpt-4o-mini", {**_shipped("gpt-4o-mini"), "repeat_penalty": 1.1})


def _shipped(name: str = "qwen2.5-coder-0.5b-instruct") -> dict:
    from surfbench.bench.base.config import read_group_config

    return dict(read_group_config("model", name))
