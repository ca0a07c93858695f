"""The cache model's arithmetic, per profile: hand-computed sequences, recorded provider usage blocks, llama-server.

Each profile replays requests built here segment by segment (tokens chosen so that every number below can be
checked by hand), and the usage blocks are the providers' documented response shapes: OpenAI's
``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_creation_input_tokens`` / ``cache_read_input_tokens``,
Gemini's ``usageMetadata.cachedContentTokenCount`` and llama-server's ``timings.cache_n`` / ``timings.prompt_n``.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.models.cache_profiles import (
    PROFILES,
    ProfilePrices,
    check_overrides,
    profile,
    profile_prices,
    usage_split,
)
from surfbench.bench.models.cost import call_usage
from surfbench.bench.promptcache.prompt_cache_model import (
    Request,
    Segment,
    breakpoint_prefix,
    simulate,
    slot_cache_counts,
    summarize,
)
from surfbench.bench.serverbench.slot_check import compare_requests, compare_tokens

SYSTEM = ("system", "sys", 200)
TOOLS = ("tools", "block-1", 1500)
USER = ("user", "ask-1", 50)
ANSWER = ("assistant", "call-1", 30)
RESULT = ("tool", "result-1", 300)


def request(episode: str, step: int, at: float, *segments: tuple[str, str, int], completion: int = 10) -> Request:
    """A request whose estimated tokens are its prompt (scale 1): every position is a plain sum."""
    segs = tuple(Segment(part, digest, float(tokens)) for part, digest, tokens in segments)
    return Request(episode, step, at, segs, sum(t for *_, t in segments), completion)


def episode(name: str = "A", at: float = 0.0, tools: tuple[str, str, int] = TOOLS) -> list[Request]:
    """Two steps: the task, then the same request with the model's call and its result appended."""
    return [
        request(name, 0, at, SYSTEM, tools, USER),
        request(name, 1, at + 5, SYSTEM, tools, USER, ANSWER, RESULT),
    ]


def counts(requests: list[Request], name: str, **overrides: object) -> list[tuple[int, int, int]]:
    p = dataclasses.replace(PROFILES[name], **overrides) if overrides else PROFILES[name]
    return [(s.served, s.written, s.computed) for s in simulate(requests, p)]


# -- OpenAI: automatic, from 1,024 tokens, in blocks of 128, 5 minutes ---------------------------------------------
def test_openai_serves_the_shared_prefix_rounded_down_to_blocks_of_128():
    # step 1 shares 1,750 tokens with step 0: 13 blocks of 128 = 1,664 served, 2,080 - 1,664 computed
    assert counts(episode(), "openai") == [(0, 0, 1750), (1664, 0, 416)]


def test_openai_serves_another_episode_the_tools_and_system_it_shares():
    # a second task 10 s later: the same system text and tools (1,700 tokens), another question -> 13 blocks
    second = request("B", 0, 15.0, SYSTEM, TOOLS, ("user", "ask-2", 60))
    assert counts([*episode(), second], "openai")[-1] == (1664, 0, 96)


def test_openai_caches_nothing_under_1024_tokens_and_forgets_after_its_lifetime():
    small = ("tools", "small", 600)
    short = [request("A", 0, 0, SYSTEM, small, USER), request("A", 1, 1, SYSTEM, small, USER)]  # sent twice
    assert counts(short, "openai") == [(0, 0, 850), (0, 0, 850)]
    late = request("B", 0, 5 + 301.0, SYSTEM, TOOLS, ("user", "ask-2", 60))
    assert counts([*episode(), late], "openai")[-1] == (0, 0, 1760)  # 301 s after its last use: expired
    assert counts([*episode(), late], "openai", ttl_s=None)[-1] == (1664, 0, 96)


# -- Anthropic: breakpoints after the tool block and after the system text ---------------------------------------
def test_anthropic_writes_up_to_the_last_breakpoint_then_reads_it():
    # tools first (1,500), then the system text (1,700): step 0 writes 1,700 at 1.25x, step 1 reads them at 0.1x;
    # the history after the last breakpoint is never cached (no breakpoint there)
    assert counts(episode(), "anthropic") == [(0, 1700, 50), (1700, 0, 380)]


def test_anthropic_reads_the_tool_block_when_only_the_system_text_changed():
    other_system = request("B", 0, 10, ("system", "sys-2", 250), TOOLS, USER)
    assert counts([*episode(), other_system], "anthropic")[-1] == (1500, 250, 50)


def test_anthropic_caches_no_breakpoint_below_its_minimum():
    small = [request("A", 0, 0, ("system", "s", 300), ("tools", "t", 800), USER)]
    # the tool block alone (800) is under 1,024: only the prefix up to the system text (1,100) is written
    assert counts(small, "anthropic") == [(0, 1100, 50)]
    assert counts(small, "anthropic", min_tokens=2048) == [(0, 0, 1150)]


def test_a_rewritten_tool_block_is_a_cache_break_that_costs_each_profile_what_it_would_have_served():
    changed = ("tools", "block-2", 1600)  # lazy loaded an operation: the tool block grew by 100 tokens
    third = request("A", 2, 10, SYSTEM, changed, USER, ANSWER, RESULT)
    steps = {name: simulate([*episode(), third], p)[-1] for name, p in PROFILES.items()}
    assert {s.break_at for s in steps.values()} == {"tools"}
    # OpenAI and Anthropic put the tools first: nothing is shared; the whole previous request (2,080) is lost
    assert (steps["openai"].served, steps["openai"].lost_tokens, steps["openai"].break_tokens) == (0, 2080, 2048)
    assert (steps["anthropic"].written, steps["anthropic"].break_tokens) == (1800, 1800)
    # the local server renders the system text first: 200 tokens still shared, 1,880 lost
    assert (steps["local"].served, steps["local"].lost_tokens, steps["local"].break_tokens) == (200, 1880, 1880)
    unchanged = simulate(episode(), PROFILES["openai"])[-1]
    assert unchanged.break_at is None and unchanged.break_tokens == 0


# -- Gemini: implicit, from 2,048 tokens -------------------------------------------------------------------------
def test_gemini_serves_any_shared_prefix_from_2048_tokens():
    assert counts(episode(), "gemini") == [(0, 0, 1750), (0, 0, 2080)]  # 1,750 shared: under the minimum
    big = ("tools", "block-big", 2500)
    assert counts(episode(tools=big), "gemini") == [(0, 0, 2750), (2750, 0, 330)]


# -- the single-slot local server -----------------------------------------------------------------------------
def test_local_slot_reuses_the_previous_request_and_evaluates_at_least_one_token():
    again = request("A", 2, 20, SYSTEM, TOOLS, USER, ANSWER, RESULT)  # the same request once more
    assert counts([*episode(), again], "local") == [(0, 0, 1750), (1750, 0, 330), (2079, 0, 1)]
    # a second task on the slot shares the system text and tools (system first: 1,700 tokens)
    second = request("B", 0, 30, SYSTEM, TOOLS, ("user", "ask-2", 60))
    assert counts([*episode(), second], "local")[-1] == (1700, 0, 60)


def test_a_step_that_extends_the_previous_request_reuses_its_reported_length():
    # estimates differ from the reported prompt (the chat template adds tokens): the shared part is what the
    # provider reported for the previous request, not the estimate scaled
    first = dataclasses.replace(episode()[0], prompt_tokens=1800)
    second = dataclasses.replace(episode()[1], prompt_tokens=2140)
    assert counts([first, second], "local") == [(0, 0, 1800), (1800, 0, 340)]


# -- recorded usage blocks: the model's counts are the providers' fields ------------------------------------------
OPENAI_USAGE = [  # Chat Completions, gpt-4o-mini: the 2-step episode above
    {"prompt_tokens": 1750, "completion_tokens": 10, "total_tokens": 1760,
     "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}},
    {"prompt_tokens": 2080, "completion_tokens": 10, "total_tokens": 2090,
     "prompt_tokens_details": {"cached_tokens": 1664, "audio_tokens": 0},
     "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}},
]  # fmt: skip
ANTHROPIC_USAGE = [  # Messages API: input_tokens counts neither the cache write nor the read
    {"input_tokens": 50, "cache_creation_input_tokens": 1700, "cache_read_input_tokens": 0, "output_tokens": 10,
     "service_tier": "standard"},
    {"input_tokens": 380, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1700, "output_tokens": 10,
     "service_tier": "standard"},
]  # fmt: skip
GEMINI_BIG = ("tools", "block-big", 2500)
GEMINI_USAGE = [  # generateContent's usageMetadata, gemini-2.5-flash
    {"usageMetadata": {"promptTokenCount": 2750, "candidatesTokenCount": 10, "totalTokenCount": 2760,
                       "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 2750}]}},
    {"usageMetadata": {"promptTokenCount": 3080, "cachedContentTokenCount": 2750, "candidatesTokenCount": 10,
                       "totalTokenCount": 3090, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 3080}],
                       "cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 2750}]}},
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "usage", "tools"),
    [("openai", OPENAI_USAGE, TOOLS), ("anthropic", ANTHROPIC_USAGE, TOOLS), ("gemini", GEMINI_USAGE, GEMINI_BIG)],
)
def test_each_profile_gives_what_its_providers_usage_block_reports(name, usage, tools):
    assert counts(episode(tools=tools), name) == [usage_split(u) for u in usage]


def test_the_usage_split_agrees_with_the_clients_reading_of_each_block():
    """bench.models.cost.call_usage (LiteLLM's shape) reads the same reads and writes off the same blocks."""
    for block in OPENAI_USAGE:
        assert usage_split(block)[0] == call_usage(block).cache_read_tokens
    for block in ANTHROPIC_USAGE:
        read, write, _ = usage_split(block)
        assert (read, write) == (call_usage(block).cache_read_tokens, call_usage(block).cache_write_tokens)
    assert usage_split({"timings": {"cache_n": 1750, "prompt_n": 330}}) == (1750, 0, 330)
    with pytest.raises(ValueError, match="none of"):
        usage_split({"tokens": 3})


def test_effective_tokens_and_cost_are_the_priced_parts_of_each_step():
    p = PROFILES["anthropic"]
    prices = ProfilePrices(input=3e-6, output=15e-6, read=0.3e-6, write=3.75e-6)  # claude-sonnet-4-5's map entry
    cell = summarize(simulate(episode(), p), p, prices)
    # step 0: 50 + 1,700 x 1.25 = 2,175; step 1: 380 + 1,700 x 0.1 = 550; mean 1,362.5 per step
    assert cell.effective_input_tokens_per_step == pytest.approx(1362.5)
    expected = (50 + 380) * 3e-6 + 1700 * 3.75e-6 + 1700 * 0.3e-6 + 20 * 15e-6
    assert cell.effective_cost_per_episode == pytest.approx(expected)
    assert cell.cached_share == pytest.approx(1700 / 3830)


def test_the_bundled_price_map_prices_the_built_in_profiles():
    anthropic = profile_prices(PROFILES["anthropic"])
    assert anthropic is not None and anthropic.read_ratio == pytest.approx(0.1)
    assert anthropic.write_ratio == pytest.approx(1.25)
    assert profile_prices(PROFILES["local"]) is None  # nothing billed: tokens only
    assert all(profile_prices(PROFILES[n]) is not None for n in ("openai", "gemini"))


def test_overrides_change_a_profile_and_wrong_ones_are_one_line_errors():
    assert profile("anthropic", {"anthropic": {"min_tokens": 2048, "breakpoints": ["tools"]}}).min_tokens == 2048
    for bad, says in [
        ({"openai": {"block": 0}}, "openai.block=0 must be"),
        ({"nobody": {}}, "'nobody' must be a cache profile"),
        ({"gemini": {"colour": 1}}, "gemini.colour must be one of the fields"),
        ({"anthropic": {"breakpoints": ["end"]}}, "must be a list of tools, system, last"),
    ]:
        with pytest.raises(ConfigError, match=re.escape(says)):
            check_overrides(bad, "configs/model/m.yaml: cache_profiles")


# -- llama-server's own counts ---------------------------------------------------------------------------------
def server(prompt: list[int], cache_n: int, generated: list[int] | None = None, slot: int = 0) -> dict[str, object]:
    """A request as recorded: its prompt's token ids, what was generated, and llama-server's response timings."""
    return {"prompt_ids": prompt, "generated_ids": generated, "id_slot": slot,
            "timings": {"cache_n": cache_n, "prompt_n": len(prompt) - cache_n, "prompt_ms": 12.5,
                        "predicted_n": len(generated or []), "predicted_ms": 40.0}}  # fmt: skip


SYS = list(range(100, 140))  # 40 tokens of system text and tools


def test_the_slot_model_equals_llama_servers_cache_counts():
    step0 = [*SYS, 1, 2, 3]
    made0 = [7, 8, 9, 2]  # the slot keeps all but the last generated token (sampled, never decoded)
    step1 = [*step0, 7, 8, 5, 6]  # the re-rendered answer repeats 7, 8 of what was generated, then differs
    records = [
        server(step0, 0, made0),
        server(step1, 45, [4, 2]),  # 43 prompt tokens + 2 of the generated ones
        server([*SYS, 9, 9], 40),  # the next task: shares the system text and tools
        server([*SYS, 9, 9], 41),  # the same prompt again: all but the one token evaluated for logits
        server([*SYS, 1], 0, slot=1),  # another slot starts empty
    ]
    assert slot_cache_counts([r["prompt_ids"] for r in records[:4]], [r["generated_ids"] for r in records[:4]]) == [
        0, 45, 40, 41
    ]  # fmt: skip
    result = compare_tokens(records)
    assert result.exact and result.summary().startswith("5 of 5 requests")


def test_a_count_the_model_does_not_reproduce_is_named():
    records = [server([*SYS, 1], 0), server([*SYS, 1, 2], 30)]
    result = compare_tokens(records)
    assert not result.exact and [s.index for s in result.mismatches] == [1]
    assert "predicted 41, cache_n 30" in result.summary()
    wrong_ids = [{**server([*SYS, 1], 0), "prompt_ids": SYS}]  # ids that are not the server's tokenization
    assert "prompt has 40 ids" in compare_tokens(wrong_ids).summary()


def test_the_local_profile_on_recorded_requests_against_per_step_timings():
    requests = [*episode(), request("B", 0, 30, SYSTEM, TOOLS, ("user", "ask-2", 60))]
    reported = {("A", 0): {"timings": {"cache_n": 0, "prompt_n": 1750}},
                ("A", 1): {"timings.cache_n": 1750, "timings.prompt_n": 330},
                ("B", 0): {"timings": {"cache_n": 1700, "prompt_n": 60}}}  # fmt: skip
    assert compare_requests(requests, reported).exact
    reported[("A", 1)] = {"timings": {"cache_n": 1790, "prompt_n": 290}}  # the server reused 40 generated tokens
    result = compare_requests(requests, reported)
    assert [s.where for s in result.mismatches] == ["A step 1"]
    with pytest.raises(ValueError, match="B step 0: no llama-server timings"):
        compare_requests(requests, {k: v for k, v in reported.items() if k[0] == "A"})


def test_a_breakpoint_prefix_ends_after_the_tool_block_or_the_system_text_whichever_is_longer():
    """Anthropic's order is tools, system, messages: its breakpoints sit at 1,500 and 1,700 tokens here."""
    anthropic = profile("anthropic")
    assert breakpoint_prefix(request("A", 0, 0.0, SYSTEM, TOOLS, USER), anthropic) == 1700
    assert breakpoint_prefix(request("A", 0, 0.0, SYSTEM, USER), anthropic) == 200  # no tools: after the system text
    assert breakpoint_prefix(request("A", 0, 0.0, USER), anthropic) == 0  # neither: nothing to cache
