"""check chooses a suite's pre-selection on its tasks: the fewest tasks with nothing relevant shown, then the
smallest k, then BM25 before the retrievers that need an embedding model (issue 50, point 5)."""

from __future__ import annotations

from surfbench.bench.analysis.retrieval_eval import RetrievalRow, TaskRanking, choose_retrieval, missed_at

KS = (5, 8, 10)


def row(retriever: str, ranks: list[int | None]) -> RetrievalRow:
    """One retriever over tasks of one expected operation each, at the given ranks (None: not shown)."""
    per_task = [TaskRanking(f"t{i}", ("op",), (r,), 10 if r else 0) for i, r in enumerate(ranks)]
    recall = {k: sum(1 for r in ranks if r is not None and r <= k) / len(ranks) for k in KS}
    return RetrievalRow(retriever, 9, len(ranks), recall, 0.5, 0.5, 0, 0.0, 0.0, per_task)


def test_a_task_is_missed_when_none_of_its_expected_operations_is_shown_within_k():
    assert missed_at(row("bm25", [1, None, 7]), 5) == ("t1", "t2")
    assert missed_at(row("bm25", [1, None, 7]), 8) == ("t1",)


def test_the_retriever_that_reaches_every_task_wins_over_the_shipped_bm25_that_shows_nothing_on_some():
    choice = choose_retrieval([row("bm25", [1, None, None, 2]), row("hybrid", [1, 3, 4, 2])], KS)
    assert (choice.retriever, choice.k, choice.missed) == ("hybrid", 5, ())


def test_a_tie_goes_to_the_smaller_k_then_the_cheaper_retriever():
    both = choose_retrieval([row("bm25", [1, 2, 3]), row("hybrid", [1, 2, 3])], KS)
    assert (both.retriever, both.k) == ("bm25", 5)  # the same reach and recall: no embedding model needed
    smaller = choose_retrieval([row("bm25", [1, 2, 7]), row("hybrid", [1, 2, 3])], KS)
    assert (smaller.retriever, smaller.k) == ("hybrid", 5)  # bm25 reaches every task only at 8


def test_k_grows_only_to_reach_a_task_and_a_task_no_pair_reaches_is_named():
    assert choose_retrieval([row("bm25", [1, 9])], KS).k == 10
    choice = choose_retrieval([row("bm25", [1, None]), row("embedding", [2, None])], KS)
    assert choice.missed == ("t1",) and choice.k == 5 and choice.retriever == "bm25"
