"""Synthesized twins of the forge's hand-written dev tasks (bench/synth/synth_twins.py): each twin asks for the
same operations, none is drawn twice, and the draw is the seed's."""

from __future__ import annotations

from surfbench.bench.suites.suite import load_suite
from surfbench.bench.synth.synth_twins import REFUSE, draw_twins, signature


def test_each_dev_task_gets_a_synthesized_twin_asking_for_the_same_operations():
    forge = load_suite("forge")
    by_id = {t.id: t for t in forge.tasks}
    twins = draw_twins(forge, "dev", seed=0)
    assert [t.task for t in twins] == [t.id for t in forge.select("dev")]
    drawn = [t.twin for t in twins if t.twin]
    assert len(drawn) == len(set(drawn)), "a synthesized task stands for one hand-written task at most"
    assert all(by_id[t].split == "synth" for t in drawn)
    for twin in twins:
        if twin.match == "same":
            assert signature(by_id[str(twin.twin)]) == signature(by_id[twin.task])
        elif twin.match == "first":
            mine, theirs = signature(by_id[twin.task]), signature(by_id[str(twin.twin)])
            assert mine[0] == theirs[0] and len(mine) == len(theirs) and mine != REFUSE
        else:
            assert twin.twin is None
    # the forge's synthesized set covers every operation: most dev tasks have an exact twin
    assert sum(t.match == "same" for t in twins) >= 0.6 * len(twins)
    refusals = [t for t in twins if t.operations == REFUSE]
    assert refusals and all(by_id[str(t.twin)].refuse for t in refusals if t.twin)


def test_the_draw_is_the_seeds():
    forge = load_suite("forge")
    first = draw_twins(forge, "dev", seed=0)
    assert draw_twins(forge, "dev", seed=0) == first
    assert [t.twin for t in draw_twins(forge, "dev", seed=1)] != [t.twin for t in first]
