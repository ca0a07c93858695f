"""keep_prefix: a local server's computed prompt prefix saved and restored across sessions (bench.models.prefix_store).

The server is a stand-in here (what it is posted, and the file it would write); scripts/bench_prefix.py measures
the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models.prefix_store import KEEP_FILES, MIN_PROMPT, PrefixStore, prefix_key
from surfbench.bench.models.provider_settings import LocalSettings, view
from surfbench.bench.models.providers import _prefix_store
from surfbench.bench.models.server import LocalServer, ServerSettings
from surfbench.bench.models.spec import ModelConfig

TOOLS = [{"type": "function", "function": {"name": "repo_get", "parameters": {"type": "object"}}}]


def payload(task: str, tools: list[dict[str, Any]] = TOOLS, system: str = "You are a forge agent.") -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": task}], "tools": tools}


class StandIn:
    """What the server is asked, and the file a save writes (as llama-server does under --slot-save-path)."""

    def __init__(self, folder: Path, fail: str | None = None) -> None:
        self.folder, self.fail, self.posts = folder, fail, []  # type: list[tuple[str, str]]

    def __call__(self, url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        action = url.rsplit("action=", 1)[1]
        self.posts.append((url, action))
        if action == self.fail:
            raise OSError("connection reset")
        if action == "save":
            (self.folder / body["filename"]).write_bytes(b"kv")
            return {"n_saved": 10184}
        return {"n_restored": 10184}


def test_the_file_is_named_by_the_model_tools_and_system_message_not_by_the_task():
    assert prefix_key("m", payload("list the branches")) == prefix_key("m", payload("close issue 7"))
    assert prefix_key("m", payload("x")) != prefix_key("other weights", payload("x"))
    assert prefix_key("m", payload("x")) != prefix_key("m", payload("x", tools=[]))
    assert prefix_key("m", payload("x")) != prefix_key("m", payload("x", system="Another prompt."))


def test_a_long_prefix_two_tasks_share_is_saved_once_and_a_new_server_restores_it(tmp_path: Path):
    server, lines = StandIn(tmp_path), []
    store = PrefixStore(tmp_path, "m", post=server, log=lines.append)
    base = "http://127.0.0.1:8001/v1"
    store.before(base, payload("a"))  # nothing saved yet: nothing to restore
    store.after(base, payload("a"), 10184)
    store.after(base, payload("a"), 10300)  # the same task's next step: not yet shared by two tasks
    store.after(base, payload("b"), MIN_PROMPT - 1)  # shared, but too short to be worth a file
    store.after(base, payload("c", tools=[]), 10184)  # another tool block (preselect's: the task's own)
    assert server.posts == []
    store.after(base, payload("b"), 10184)
    assert server.posts == [("http://127.0.0.1:8001/slots/0?action=save", "save")]
    store.after(base, payload("d"), 10184)  # saved already
    assert len(server.posts) == 1

    later = PrefixStore(tmp_path, "m", post=server, log=lines.append)  # another session, another server
    other = "http://127.0.0.1:8002/v1"
    later.before(other, payload("e"))
    later.before(other, payload("f"))  # once per server: its own cache holds the prefix from now on
    assert server.posts[1:] == [("http://127.0.0.1:8002/slots/0?action=restore", "restore")]
    assert "restored a saved prompt prefix (10184 tokens)" in lines[0]
    later.before("http://127.0.0.1:8003/v1", payload("g"))  # a revived server starts empty: offered again
    assert [a for _, a in server.posts].count("restore") == 2


def test_a_restore_that_fails_deletes_the_file_warns_once_and_the_run_goes_on(tmp_path: Path):
    server, lines = StandIn(tmp_path, fail="restore"), []
    (tmp_path / prefix_key("m", payload("a"))).write_bytes(b"cut short")
    store = PrefixStore(tmp_path, "m", post=server, log=lines.append)
    store.before("http://h:1/v1", payload("a"))
    assert not list(tmp_path.iterdir())
    assert len(lines) == 1 and "could not restore" in lines[0] and "keep_prefix is off" in lines[0]
    store.after("http://h:1/v1", payload("a"), 10184)
    store.after("http://h:1/v1", payload("b"), 10184)
    store.before("http://h:2/v1", payload("a"))
    assert len(server.posts) == 1  # off for the rest of the run


def test_keep_prefix_takes_one_llama_server_slot_and_gives_the_server_its_folder(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SURFBENCH_CACHE", str(tmp_path))
    local = dict(name="m", provider="local", embedded="qwen2.5-coder-0.5b-instruct", server="llama-server")

    def own(**fields: object) -> LocalSettings:  # the local provider's view of a config, as _local makes it
        return view(LocalSettings, ModelConfig(**{**local, **fields}))  # type: ignore[arg-type]

    assert _prefix_store(own(), "id") is None  # off by default
    store = _prefix_store(own(keep_prefix=True), "id")
    assert store is not None and store.folder.parent == tmp_path / "slots"
    assert _prefix_store(own(keep_prefix=True, slots=2), "id") is None
    assert _prefix_store(own(server="llama-cpp-python", keep_prefix=True), "id") is None
    settings = ServerSettings(Path("/m.gguf"), "m", slot_save_path=store.folder)
    command = LocalServer(settings).command
    monkeypatch.setattr("surfbench.bench.models.server.upstream_binary", lambda: Path("/bin/llama-server"))
    assert command()[-2:] == ["--slot-save-path", str(store.folder)]
    assert "--slot-save-path" not in LocalServer(ServerSettings(Path("/m.gguf"), "m")).command()


def test_keep_prefix_is_true_or_false_in_a_model_config():
    from surfbench.bench.models import model_config

    data = {"provider": "local", "embedded": "qwen2.5-coder-0.5b-instruct", "keep_prefix": "yes"}
    with pytest.raises(ConfigError, match="keep_prefix.*true or false"):
        model_config("mine", data)
    assert model_config("mine", {**data, "keep_prefix": True}).keep_prefix is True


def test_the_client_offers_the_prefix_before_its_first_request_and_saves_once_two_tasks_share_it(tmp_path: Path):
    from surfbench.bench.models.client import LiteLLMClient
    from surfbench.bench.models.types import ModelRequest
    from tests.bench.test_repeat_stop import CALL, StreamStub

    def task(text: str) -> ModelRequest:
        messages = ({"role": "system", "content": "tools"}, {"role": "user", "content": text})
        return ModelRequest(messages=messages, mode="prompted", max_tokens=384, stop_on_repeated_call=2)

    server, lines = StandIn(tmp_path), []
    with StreamStub(CALL, prompt_n=2000, cache_n=0) as stub:
        store = PrefixStore(tmp_path, "m", post=server, log=lines.append)
        client = LiteLLMClient("openai/stand-in", api_base=stub.api_base, is_local=True, prefix_store=store)
        client.complete(task("list the branches"))
        assert server.posts == []
        client.complete(task("close issue 7"))  # 2,000 prompt tokens, a second task: worth a file
    root = stub.api_base.removesuffix("/v1")
    assert server.posts == [(f"{root}/slots/0?action=save", "save")]
    assert len(list(tmp_path.iterdir())) == 1

    with StreamStub(CALL, prompt_n=40, cache_n=1960) as again:  # the next session's server
        store = PrefixStore(tmp_path, "m", post=server, log=lines.append)
        LiteLLMClient("openai/stand-in", api_base=again.api_base, is_local=True, prefix_store=store).complete(
            task("list the branches")
        )
    assert server.posts[1:] == [(f"{again.api_base.removesuffix('/v1')}/slots/0?action=restore", "restore")]


def test_the_folder_keeps_the_most_recently_used_files_only(tmp_path: Path):
    import os

    server = StandIn(tmp_path)
    store = PrefixStore(tmp_path, "m", post=server, log=lambda line: None)
    base = "http://127.0.0.1:8001/v1"
    blocks = [[{"type": "function", "function": {"name": f"op_{i}"}}] for i in range(KEEP_FILES + 2)]
    names = [prefix_key("m", payload("x", tools=b)) for b in blocks]

    def save(i: int) -> None:
        store.after(base, payload("a", tools=blocks[i]), 10184)
        store.after(base, payload("b", tools=blocks[i]), 10184)  # shared by two tasks: saved

    for i in range(KEEP_FILES):
        save(i)
        os.utime(tmp_path / names[i], (1000.0 + i, 1000.0 + i))  # saved in this order, a second apart
    assert len(list(tmp_path.glob("*.slot"))) == KEEP_FILES  # nothing deleted up to the bound
    os.utime(tmp_path / names[0], (5000.0, 5000.0))  # the first file was used since (restored)
    save(KEEP_FILES)
    save(KEEP_FILES + 1)  # two saves past the bound: the two least recently used files go
    kept = {p.name for p in tmp_path.glob("*.slot")}
    assert len(kept) == KEEP_FILES
    assert names[1] not in kept and names[2] not in kept
    assert {names[0], names[KEEP_FILES], names[KEEP_FILES + 1]} <= kept


def test_a_restore_marks_the_file_used(tmp_path: Path):
    import os

    server = StandIn(tmp_path)
    name = prefix_key("m", payload("a"))
    (tmp_path / name).write_bytes(b"kv")
    os.utime(tmp_path / name, (1000.0, 1000.0))
    PrefixStore(tmp_path, "m", post=server, log=lambda line: None).before("http://127.0.0.1:8001/v1", payload("a"))
    assert (tmp_path / name).stat().st_mtime > 1000.0
