"""Retrieval without a model: metrics on a hand-checked example, the fallback, the hybrid, the command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.analysis.retrieval_eval import (
    TaskRanking,
    evaluate,
    ndcg_at,
    recall_at,
    reciprocal_rank,
    task_ranking,
    zero_shown_lines,
)
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.retrieval import BM25, Hit, select_hits
from surfbench.bench.suites.suite_model import ExpectedCall, Task
from tests.conftest import ROOT


def _task(ops: list[str], text: str = "q") -> Task:
    return Task(id="t", turns=(text,), expected=tuple(ExpectedCall(op) for op in ops))


def test_metrics_on_a_hand_checked_ranking():
    # expected a and b; shown: x, a, y, z, b -> ranks 2 and 5
    ranking = task_ranking(_task(["a", "b"]), ["x", "a", "y", "z", "b"])
    assert ranking.ranks == (2, 5)
    assert recall_at(ranking, 1) == 0.0
    assert recall_at(ranking, 3) == 0.5
    assert recall_at(ranking, 5) == 1.0
    assert reciprocal_rank(ranking) == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(6)
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at(ranking, 10) == pytest.approx(dcg / ideal)


def test_an_operation_not_shown_scores_zero():
    ranking = task_ranking(_task(["a"]), [])
    assert ranking == TaskRanking("t", ("a",), (None,), 0)
    assert recall_at(ranking, 10) == reciprocal_rank(ranking) == ndcg_at(ranking) == 0.0


def _ops() -> list[Operation]:
    params = {"type": "object", "properties": {}}
    return [
        Operation("user_get_current", "Get the authenticated user.", params),
        Operation("repo_delete", "Delete a repository.", params),
        Operation("issue_create", "Open a new issue in a repository.", params),
    ]


def test_min_k_shows_tools_when_no_word_overlaps():
    bm25 = BM25(_ops())
    top = bm25.top("Who am I logged in as?", 5)
    assert select_hits(top, 5) == []  # the zero-tools case: nothing shares a word
    fallback = select_hits(top, 5, min_k=2)
    assert len(fallback) == 2
    assert select_hits([Hit("a", 0.9), Hit("b", 0.2)], 5, threshold=0.5, min_k=0) == [Hit("a", 0.9)]


def test_bm25_top_agrees_with_rank():
    bm25 = BM25(_ops())
    assert bm25.top("delete the repository", 2) == bm25.rank("delete the repository")[:2]
    assert bm25.top("delete the repository", 1)[0].operation == "repo_delete"


def test_evaluate_counts_zero_shown_tasks():
    from surfbench.bench.suites.suite_model import Suite

    catalog = Catalog("t", tuple(_ops()))
    tasks = [
        Task(id="del", turns=("delete a repository",), expected=(ExpectedCall("repo_delete"),)),
        Task(id="who", turns=("Who am I logged in as?",), expected=(ExpectedCall("user_get_current"),)),
    ]
    suite = Suite("t", Path("."), "", None, None, "", 5, tasks, preset_catalog=catalog)
    (row,) = evaluate(suite, ["bm25"], [1, 3], progress=False)
    assert row.tasks == 2 and row.zero_shown == 1
    assert row.recall == {1: 0.5, 3: 0.5}
    assert row.mrr == 0.5
    assert zero_shown_lines([row]) == [
        "zero shown by bm25: who (no hit above the threshold: the model would see no operation; "
        "--min-k N shows N anyway)"
    ]


def test_retrieval_command_prints_and_writes_the_table(tmp_path: Path):
    out = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "retrieval", "--suite", "forge", "--retriever", "bm25", "--k", "1,5",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "R@1" in proc.stdout and "MRR" in proc.stdout
    assert "zero shown by bm25: hot-file-get" in proc.stdout  # the forge task no operation shares a word with
    (row,) = json.loads(out.read_text())
    assert row["retriever"] == "bm25" and row["operations"] == 96
    assert 0 < row["recall@1"] <= row["recall@5"] <= 1


def test_retrieval_command_refuses_a_bad_retriever_without_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "retrieval", "--suite", "forge", "--retriever", "bm26"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "unknown retriever 'bm26'" in proc.stderr and "Traceback" not in proc.stderr


def test_retrieval_command_reads_the_synthesized_split():
    """`init --mcp`, then `synth`, then `retrieval --split synth`: the recipe's tasks are the synthesized ones."""
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "retrieval", "--suite", "forge", "--split", "synth", "--retriever", "bm25",
         "--k", "5"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "forge, split synth" in proc.stdout and "R@5" in proc.stdout
