"""``tags=hot``: a run selects the tasks that carry every tag named (the synthesized hot-operation tasks the
sequential dsh gate runs on), refuses a tag no task has with the tags there are, and the selection changes
no cell. Scripted oracle model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import surfbench
from surfbench.bench.suites.suite import load_suite


def test_tags_select_the_tasks_that_carry_every_one(tmp_path: Path):
    forge = load_suite("forge")
    hot = [t.id for t in forge.select("synth", tags=["hot"])]
    hot_single = [t.id for t in forge.select("synth", tags=["hot", "single"])]
    assert 0 < len(hot_single) < len(hot) < len(forge.select("synth"))
    assert all("hot" in t.tags for t in forge.select("synth", tags=["hot"]))
    results = tmp_path / "results"
    tagged = surfbench.run(
        surfbench.RunSpec(
            suite="forge",
            surfaces=["core"],
            models=["oracle"],
            split="synth",
            tags=["hot", "single"],
            limit=4,
            results_dir=results,
            run="tagged",
        )  # fmt: skip
    )
    episodes = tagged.runs.episodes
    assert sorted(episodes["task_id"]) == sorted(hot_single[:4])
    assert all({"hot", "single"} <= set(json.loads(tags)) for tags in episodes["tags"])  # list columns stay JSON
    plain = surfbench.run(
        surfbench.RunSpec(
            suite="forge",
            surfaces=["core"],
            models=["oracle"],
            split="synth",
            limit=1,
            results_dir=results,
            run="plain",
        )
    )
    assert plain.cells[0].cell_id == tagged.cells[0].cell_id, "a selection of tasks is not part of the cell"


def test_a_tag_no_task_has_is_refused_with_the_tags_there_are(tmp_path: Path):
    spec = surfbench.RunSpec(
        suite="forge", surfaces=["core"], models=["oracle"], split="synth", tags=["hott"],
        results_dir=tmp_path / "results", run="none",
    )  # fmt: skip
    with pytest.raises(surfbench.RunFailed) as caught:
        surfbench.run(spec)
    message = caught.value.failures[0]
    assert "tags=['hott']" in message and "the tags of split synth are" in message and "hot" in message


def test_a_tag_of_the_wrong_type_is_refused_before_anything_is_written(tmp_path: Path):
    spec = surfbench.RunSpec(
        suite="forge", surfaces=["core"], models=["oracle"], results_dir=tmp_path / "results", overrides=["tags=1.5"]
    )
    with pytest.raises(surfbench.RunFailed) as caught:
        surfbench.run(spec)
    assert caught.value.failures[0].endswith("tags=1.5: must be a task tag or a list of them, e.g. tags=[hot,single]")
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("run.json"))
