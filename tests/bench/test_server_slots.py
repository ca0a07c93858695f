"""Slot affinity (bench/models/server_slots.py): episodes in flight hold distinct slots of one server, the rest run
unpinned, a freed slot goes to the episode whose prefix it holds, and llama-server's counts are read from a response.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import pytest

from surfbench.bench.models.client import LiteLLMClient, llama_server_counts
from surfbench.bench.models.server_slots import PinnedClient, SlotPool, episode_slot
from surfbench.bench.models.types import ModelRequest, ModelTurn


def test_each_slot_is_held_by_one_episode_at_a_time_and_the_rest_run_unpinned():
    pool = SlotPool(2)
    assert (pool.take(), pool.take(), pool.take()) == (0, 1, None)
    pool.give(0)
    assert pool.take() == 0
    pool.give(1)
    with pytest.raises(ValueError, match="slot 1 was not taken"):
        pool.give(1)  # given back twice


def test_a_free_slot_goes_to_the_episode_whose_prefix_it_holds():
    pool = SlotPool(3)
    taken = [pool.take() for _ in range(3)]
    assert taken == [0, 1, 2]
    pool.give(0, lambda: "system A|tools: issue_get, issue_list")
    pool.give(1, lambda: "system A|tools: repo_get, branch_list")
    pool.give(2, lambda: "system B")
    assert pool.take(lambda: "system A|tools: repo_get, commit_list") == 1  # the longest shared start
    assert pool.take(lambda: "system B|tools: x") == 2


def test_prefixes_are_computed_only_when_there_is_a_choice():
    def never() -> str:
        raise AssertionError("computed without a choice")

    pool = SlotPool(2)
    assert pool.take(never) == 0  # no slot has a history yet
    assert pool.take(never) == 1  # the only free slot
    pool.give(1, never)  # kept, not computed
    assert pool.take(never) == 1


class Recorder:
    """A client with slots, as LiteLLMClient exposes them: records the slot of each call."""

    def __init__(self, n: int) -> None:
        self.slots = SlotPool(n)
        self.seen: list[int | None] = []

    def pinned(self, slot: int) -> PinnedClient:
        return PinnedClient(self, slot)

    def complete(self, request: ModelRequest, slot: int | None = None) -> ModelTurn:
        self.seen.append(slot)
        return ModelTurn(text="ok", slot=slot)


def test_an_episode_runs_pinned_and_its_slot_comes_back_even_when_it_fails():
    client = Recorder(2)
    request = ModelRequest(messages=({"role": "user", "content": "hi"},))
    with episode_slot(client) as pinned:
        assert pinned.complete(request).slot == 0
        assert pinned.slots is client.slots  # everything but complete is the client's own
    with pytest.raises(RuntimeError), episode_slot(client) as pinned:
        pinned.complete(request)
        raise RuntimeError("the episode failed")
    assert client.slots.free == 2 and client.seen == [0, 0]


def test_a_client_without_slots_is_used_as_it_is():
    plain = LiteLLMClient("openai/x", api_base="http://127.0.0.1:9/v1", is_local=True)
    assert plain.slots is None
    with episode_slot(plain) as client:
        assert client is plain
    with pytest.raises(ValueError, match="no slot 2"):
        LiteLLMClient("openai/x", is_local=True, slots=2).pinned(2)


def test_many_threads_never_share_a_slot():
    client = Recorder(3)
    holders: dict[int, int] = {}
    clash: list[int] = []
    unpinned = 0
    lock = threading.Lock()
    request = ModelRequest(messages=({"role": "user", "content": "hi"},))

    def episode(i: int) -> None:
        nonlocal unpinned
        rng = random.Random(i)
        with episode_slot(client, lambda: f"prefix {i % 4}") as pinned:
            slot = getattr(pinned, "slot", None)
            with lock:
                if slot is None:
                    unpinned += 1
                elif slot in holders:
                    clash.append(slot)
                else:
                    holders[slot] = i
            time.sleep(rng.uniform(0, 0.003))
            pinned.complete(request)
            with lock:
                if slot is not None:
                    del holders[slot]

    threads = [threading.Thread(target=lambda k=k: [episode(k * 50 + j) for j in range(50)]) for k in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not clash and client.slots.free == 3
    assert unpinned > 0  # five in flight on three slots: two ran unpinned at times
    assert set(client.seen) == {None, 0, 1, 2}


def test_the_servers_counts_are_read_from_timings_and_a_named_slot_wins():
    class Response:
        timings: Any = {"cache_n": 120, "prompt_n": 8, "predicted_n": 3}

    assert llama_server_counts(Response()) == (120, 8, None)
    assert llama_server_counts({"timings": {"cache_n": 5, "prompt_n": 1}, "id_slot": 2}) == (5, 1, 2)
    assert llama_server_counts({"usage": {}}) == (None, None, None)  # another engine says nothing
    assert llama_server_counts({"timings": {"cache_n": -1, "prompt_n": True}}) == (None, None, None)
