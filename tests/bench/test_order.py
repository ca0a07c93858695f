"""Episode order: inside a cell, the cache-aware order puts requests that share a prefix back to back;
across cells, a sweep runs each cell whole."""

from __future__ import annotations

import os
from pathlib import Path

from surfbench.bench.run.runner import CellSpec, _first_prefix, episode_order, resolve_cell
from tests.fixtures.openai_stub import OpenAIStub, chat_reply, run_surfbench, stub_model_config


def _shared(a: str, b: str) -> int:
    return len(os.path.commonprefix([a, b]))


def _cell(surface: str, order: str, repeats: int = 1):
    spec = CellSpec("forge", surface, "qwen2.5-coder-0.5b-instruct", split="dev", repeats=repeats, order=order)
    return resolve_cell(spec)


def test_cache_order_runs_shared_prefixes_back_to_back_on_a_request_dependent_surface():
    naive, cache = _cell("preselect", "naive", repeats=2), _cell("preselect", "cache", repeats=2)
    n, c = episode_order(naive), episode_order(cache)
    key = lambda pair: (pair[0].id, pair[1])  # noqa: E731
    assert sorted(map(key, n)) == sorted(map(key, c)), "both orders run every episode exactly once"
    assert [t.id for t, r in n if r == 0] == [t.id for t in naive.tasks], "naive: task order, repeat by repeat"
    assert all(c[i][0].id == c[i + 1][0].id for i in range(0, len(c), 2)), "cache: a task's repeats adjacent"

    firsts = [_first_prefix(cache, t) for t, _ in c]
    seen: list[str] = []
    for p in firsts:  # every distinct prefix forms one contiguous run
        if not seen or seen[-1] != p:
            assert p not in seen
            seen.append(p)
    shared_cache = sum(_shared(a, b) for a, b in zip(firsts, firsts[1:], strict=False))
    naive_firsts = [_first_prefix(naive, t) for t, _ in n]
    shared_naive = sum(_shared(a, b) for a, b in zip(naive_firsts, naive_firsts[1:], strict=False))
    assert shared_cache > 1.5 * shared_naive


def test_surfaces_whose_first_request_never_changes_keep_task_order():
    cell = _cell("full", "cache")
    assert [t.id for t, _ in episode_order(cell)] == [t.id for t in cell.tasks]


def test_a_sweep_sends_each_cells_requests_back_to_back(tmp_path: Path):
    """Across cells on one model: `full` then `dispatcher`, never interleaved, so full's tool block is
    prefilled once per sweep, not once per task (what the server saw, in arrival order)."""
    with OpenAIStub(lambda n, body, headers: (200, chat_reply(content="Done."))) as stub:
        configs = stub_model_config(tmp_path, stub.api_base)
        proc = run_surfbench(tmp_path, configs, "-m", "surface=full,dispatcher", "limit=4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    sizes = [len(body.get("tools", [])) for body, _ in stub.requests]
    assert len(sizes) == 8 and sorted(set(sizes)) == [2, 96]
    switches = sum(a != b for a, b in zip(sizes, sizes[1:], strict=False))
    assert switches == 1, f"cells interleaved on the server: tools per request {sizes}"
