"""Retrieval without a model: rank each task's text against its catalog, score against its expected operations.

``surfbench retrieval --suite forge --retriever bm25,embed --k 1,3,5,10 [--grow N]`` prints recall@k,
MRR and nDCG@10 per retriever, in seconds, so that ``k`` and ``threshold`` of ``preselect`` and
``search`` are tuned before any model time is spent. The query is the task's first user turn (what
``preselect`` ranks); the relevant operations are the task's expected ones. Tasks without expected
calls (should-refuse) are left out. A hit counts only when it would be shown: score above 0 and at
least ``threshold`` (``min_k`` shows the best anyway, as the surfaces do).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from surfbench.bench.catalog.retrieval import make_retriever, retriever_kind, select_hits
from surfbench.bench.suites.suite_model import Suite, Task


@dataclass(frozen=True)
class TaskRanking:
    """Where one task's expected operations landed."""

    task: str
    """Task id."""
    expected: tuple[str, ...]
    """The task's expected operations (distinct, in order)."""
    ranks: tuple[int | None, ...]
    """Each expected operation's 1-based rank among the shown hits (None: not shown)."""
    shown: int
    """Operations shown at the largest cut-off (0: the retriever found nothing)."""


@dataclass(frozen=True)
class RetrievalRow:
    """One retriever's scores over a suite's tasks."""

    retriever: str
    """``bm25``, ``embedding`` or ``hybrid``."""
    operations: int
    """Operations in the (largest) catalog ranked."""
    tasks: int
    """Tasks scored (those with expected calls)."""
    recall: dict[int, float]
    """recall@k: mean share of a task's expected operations among its top k shown."""
    mrr: float
    """Mean reciprocal rank of a task's first expected operation found (0 when none is shown)."""
    ndcg10: float
    """Mean nDCG@10 with binary relevance."""
    zero_shown: int
    """Tasks for which nothing at all would be shown."""
    index_s: float
    """Seconds to build the index (embeddings: from the on-disk cache when there)."""
    query_ms: float
    """Mean milliseconds per query."""
    per_task: list[TaskRanking] = field(default_factory=list, repr=False)


def expected_ops(task: Task) -> tuple[str, ...]:
    """The task's expected operations, distinct, in order."""
    return tuple(dict.fromkeys(call.op for call in task.expected))


def task_ranking(task: Task, hits: Sequence[str]) -> TaskRanking:
    """Ranks of the task's expected operations among ``hits`` (the shown names, best first)."""
    position = {name: i + 1 for i, name in enumerate(hits)}
    expected = expected_ops(task)
    return TaskRanking(task.id, expected, tuple(position.get(op) for op in expected), len(hits))


def recall_at(ranking: TaskRanking, k: int) -> float:
    """Share of the expected operations ranked within the top ``k``."""
    return sum(1 for r in ranking.ranks if r is not None and r <= k) / len(ranking.expected)


def reciprocal_rank(ranking: TaskRanking) -> float:
    """1 / rank of the best-ranked expected operation; 0 when none is shown."""
    found = [r for r in ranking.ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def ndcg_at(ranking: TaskRanking, k: int = 10) -> float:
    """nDCG@k with binary relevance: sum of 1/log2(rank+1) over expected operations within k, normalised."""
    dcg = sum(1.0 / math.log2(r + 1) for r in ranking.ranks if r is not None and r <= k)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(ranking.expected), k)))
    return dcg / ideal if ideal else 0.0


def evaluate(
    suite: Suite,
    kinds: Sequence[str],
    ks: Sequence[int],
    tasks: Sequence[Task] | None = None,
    threshold: float = 0.0,
    min_k: int = 0,
    progress: bool = True,
) -> list[RetrievalRow]:
    """One row per retriever over the suite's tasks (default: every task with expected calls)."""
    chosen = [t for t in (tasks if tasks is not None else suite.tasks) if t.expected and t.turns]
    if not chosen:
        raise ValueError(f"suite {suite.name!r}: no task with expected calls to score retrieval against")
    depth = max(max(ks), 10)
    rows = []
    for kind in kinds:
        kind = retriever_kind(kind)
        started = time.perf_counter()
        catalogs = {id(suite.catalog_for(t)): suite.catalog_for(t) for t in chosen}
        if progress:
            size = max(len(c) for c in catalogs.values())
            print(f"retrieval: {kind} over {size:,} operations, {len(chosen)} tasks...", file=sys.stderr, flush=True)
        retrievers = {key: make_retriever(kind, c.operations) for key, c in catalogs.items()}
        index_s = time.perf_counter() - started
        queries = [t.turns[0] for t in chosen]
        for r in retrievers.values():
            r.prefetch(queries)
        started = time.perf_counter()
        rankings = []
        for task, query in zip(chosen, queries, strict=True):
            top = retrievers[id(suite.catalog_for(task))].top(query, depth)
            shown = select_hits(top, depth, threshold, min_k)
            rankings.append(task_ranking(task, [h.operation for h in shown]))
        query_ms = (time.perf_counter() - started) * 1000 / len(chosen)
        n = len(rankings)
        rows.append(
            RetrievalRow(
                retriever=kind,
                operations=max(len(c) for c in catalogs.values()),
                tasks=n,
                recall={k: sum(recall_at(r, k) for r in rankings) / n for k in ks},
                mrr=sum(reciprocal_rank(r) for r in rankings) / n,
                ndcg10=sum(ndcg_at(r, 10) for r in rankings) / n,
                zero_shown=sum(1 for r in rankings if r.shown == 0),
                index_s=index_s,
                query_ms=query_ms,
                per_task=rankings,
            )
        )
    return rows


def flat(row: RetrievalRow) -> dict[str, object]:
    """A row as flat columns (``recall@5``...), for csv and json."""
    out: dict[str, object] = {k: v for k, v in asdict(row).items() if k not in ("recall", "per_task")}
    out.update({f"recall@{k}": round(v, 4) for k, v in row.recall.items()})
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}


def format_rows(rows: Sequence[RetrievalRow]) -> str:
    """A plain-text table: one line per retriever."""
    ks = list(rows[0].recall) if rows else []
    head = ["retriever", "ops", "tasks", *[f"R@{k}" for k in ks], "MRR", "nDCG@10", "zero shown", "index s", "ms/query"]
    body = [
        [
            r.retriever,
            f"{r.operations:,}",
            str(r.tasks),
            *[f"{r.recall[k]:.3f}" for k in ks],
            f"{r.mrr:.3f}",
            f"{r.ndcg10:.3f}",
            str(r.zero_shown),
            f"{r.index_s:.2f}",
            f"{r.query_ms:.2f}",
        ]  # fmt: skip
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in [head, *body])


def zero_shown_lines(rows: Sequence[RetrievalRow], limit: int = 10) -> list[str]:
    """One line per retriever that would show nothing for some tasks, naming them (up to ``limit``)."""
    lines = []
    for r in rows:
        names = [t.task for t in r.per_task if t.shown == 0]
        if names:
            more = f" and {len(names) - limit} more" if len(names) > limit else ""
            lines.append(
                f"zero shown by {r.retriever}: {', '.join(names[:limit])}{more} (no hit above the threshold: "
                "the model would see no operation; --min-k N shows N anyway)"
            )
    return lines


@dataclass(frozen=True)
class RetrievalChoice:
    """The retriever and cut-off a suite's pre-selection and search should use, as measured on its tasks."""

    retriever: str
    k: int
    recall: float
    """recall@k of the choice."""
    mrr: float
    missed: tuple[str, ...]
    """Tasks none of whose expected operations is shown within k (empty when the choice reaches every task)."""
    tasks: int
    others: tuple[tuple[str, int, float, int], ...]
    """Every pair considered: (retriever, k, recall@k, tasks missed), in the order judged."""


def missed_at(row: RetrievalRow, k: int) -> tuple[str, ...]:
    """The tasks for which none of the expected operations is shown within the top ``k``."""
    return tuple(t.task for t in row.per_task if not any(r is not None and r <= k for r in t.ranks))


def choose_retrieval(rows: Sequence[RetrievalRow], ks: Sequence[int]) -> RetrievalChoice:
    """The pair (retriever, k) a suite's pre-selection should use.

    The fewest tasks missed, then the smallest k (a smaller block shown), then the highest recall@k, then the
    first in ``rows`` (order them cheapest first). A task is missed when not one of its expected operations
    would be shown: that task cannot be solved on the surface, whatever the model. Ties on misses go to the
    smaller k, so k only grows to reach a task.
    """
    judged = []
    for order, row in enumerate(rows):
        for k in sorted(ks):
            missed = missed_at(row, k)
            judged.append(((len(missed), k, -row.recall[k], order), row, k, missed))
    if not judged:
        raise ValueError("choose_retrieval: no retriever or cut-off to choose from")
    judged.sort(key=lambda item: item[0])
    _, row, k, missed = judged[0]
    others = tuple((r.retriever, kk, r.recall[kk], len(m)) for _, r, kk, m in judged)
    return RetrievalChoice(row.retriever, k, row.recall[k], row.mrr, missed, row.tasks, others)
