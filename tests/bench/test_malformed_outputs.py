"""Over 1,000 malformed model outputs through the parser, the loop, the scorer and the results store."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from surfbench.bench.base.taxonomy import CORE, check_declared
from surfbench.bench.models.parsing import turn_from_output
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.models.types import ModelRequest, ModelTurn
from surfbench.bench.run.episode import run_episode, transcript_lines
from surfbench.bench.run.rows import episode_rows
from surfbench.bench.run.runner import CellSpec, resolve_cell
from surfbench.bench.score.scorer import score_episode
from surfbench.bench.store.results import RunStore, load_runs
from tests.bench.malformed import Sample, corpus

CORPUS = corpus()


def turn_of(sample: Sample) -> ModelTurn:
    return turn_from_output(sample.text, sample.native)  # what the LiteLLM client does with a response


def test_the_corpus_covers_every_category_with_over_a_thousand_outputs():
    counts = Counter(s.category for s in CORPUS)
    assert len(CORPUS) >= 1000
    assert set(counts) == {
        "broken_json", "wrong_types", "huge_strings", "unknown_tool", "empty_name", "deep_nesting",
        "invalid_utf8", "call_in_prose", "plain_text", "native_malformed",
    }  # fmt: skip
    assert min(counts.values()) >= 20


@pytest.mark.parametrize("surface", ["full", "dispatcher"])
def test_every_malformed_output_is_classified_and_stored_without_a_crash(surface: str, tmp_path: Path):
    cell = resolve_cell(CellSpec("forge", surface, "qwen2.5-coder-0.5b-instruct", tasks=("hot-issue-get",)))
    task = cell.tasks[0]
    catalog = cell.suite.catalog
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"cells": []})
    classes: Counter[tuple[str, str]] = Counter()
    wrong = []
    for i, sample in enumerate(CORPUS):
        turn = turn_of(sample)

        def first(request: ModelRequest, turn: ModelTurn = turn) -> ModelTurn:
            return turn

        trace = run_episode(
            task, cell.surface.session(task.turns[0]), cell.suite.new_backend(task), ScriptedClient([first, "done"]),
            cell.settings, cell.suite.system_prompt, lambda n: (op.parameters if (op := catalog.get(n)) else None),
        )  # fmt: skip
        assert trace.error is None, f"sample {i} ({sample.category}): {trace.error}\n{trace.traceback}"
        step = trace.steps[0]
        got = "call" if step.tool_calls else "parse_failure" if step.parse_failures else "text"
        classes[(sample.category, got)] += 1
        if sample.expect not in ("any", got):
            wrong.append((i, sample.category, sample.expect, got, sample.text[:80], sample.native[:1]))
        for call in trace.calls:
            assert call.error_type is None or call.error_type in CORE
            assert call.kind in {"operation", "meta", "rejected", "parse_error"}, call.kind
        assert len(step.text) <= 2000
        score = score_episode(task, trace, catalog)
        check_declared(score.error_types, cell.declared_error_types, f"sample {i}")  # one taxonomy
        if surface == "full":  # the store once is enough (it is the slow part)
            episode, steps, calls = episode_rows(cell, task, i, trace, score, "malformed")
            store.write_episode(episode["episode_key"], episode, steps, calls, transcript_lines(trace))
    assert not wrong, "\n".join(map(str, wrong[:20]))
    if surface != "full":
        return
    episodes = load_runs([tmp_path / "run"])
    assert len(episodes) == len(CORPUS) and episodes["episode_key"].is_unique
    for path in (tmp_path / "run" / "transcripts").iterdir():  # every transcript is valid UTF-8 JSON lines
        for line in path.read_text(encoding="utf-8").splitlines():
            json.loads(line)
    print(sorted(classes.items()))
