"""The pre-selection and search a suite made by ``surfbench init`` will use, chosen on its own tasks by ``check``.

The shipped ``preselect`` and ``search`` rank with BM25 and show 5 operations. On a server whose tool names and
descriptions share few words with what its users ask, BM25 finds no word in common and shows nothing at all:
on a knowledge-graph server a newcomer tried, 29 of 59 tasks would have shown zero tools, and only a separate
``surfbench retrieval`` run said so. So ``check``, on a suite whose folder has the ``configs/`` init wrote,
scores every retriever at every cut-off of :data:`KS` on the tasks with expected calls (no model, the same
funnel as ``surfbench retrieval``), picks the pair that leaves no task without one of its expected operations
shown (the fewest such tasks, then the smallest cut-off: bench.analysis.retrieval_eval.choose_retrieval), and
writes it as the suite's own ``configs/surface/preselect.yaml`` and ``search.yaml``. They shadow the shipped
configs of the same names for runs with the suite's ``SURFBENCH_CONFIGS`` (the recipe exports it), so the
recipe's sweep and init's ``gate.yaml`` (candidates ``preselect`` and ``search``) use the measured choice with
no other change. A file without :data:`MARK` as its first line is the user's own and is never rewritten.
"""

from __future__ import annotations

from pathlib import Path

from surfbench.bench.base.atomic import write_atomic

KS = (5, 8, 10)
"""Cut-offs considered: never fewer than the shipped 5 (tasks with several expected operations need room)."""
RETRIEVERS: tuple[str, ...] = ("bm25", "hybrid", "embedding")
"""Cheapest first: a tie goes to BM25 (no embedding model to load)."""
MARK = "# written by `surfbench check` from this suite's retrieval funnel"


def _config(kind: str, retriever: str, k: int, why: list[str]) -> str:
    cut = f"k: {k}\n  threshold: 0.0" if kind == "preselect" else f"top_n: {k}"
    head = "\n".join([MARK, *(f"# {line}" for line in why)])
    return f"{head}\nname: {kind}\nkind: {kind}\nparams:\n  retriever: {retriever}\n  {cut}\n"


def measured_surfaces(suite_arg: str) -> list[str]:
    """Choose and write the suite's preselect and search configs; the lines to print (none when not an init'd suite).

    Only for a suite folder with ``configs/suite/`` (what ``init`` writes) and at least one task with expected
    calls; shipped suites and suites named by name are left alone.
    """
    from surfbench.bench.analysis.retrieval_eval import choose_retrieval, evaluate, missed_at
    from surfbench.bench.suites.suite import load_suite

    folder = Path(suite_arg)
    if not (folder / "suite.yaml").is_file() or not (folder / "configs" / "suite").is_dir():
        return []
    suite = load_suite(str(folder))
    tasks = [t for t in suite.tasks if t.expected and t.turns]
    if not tasks:
        return ["retrieval: no task with expected calls yet, so preselect and search stay the shipped ones (bm25, 5)"]
    from surfbench.bench.catalog.embedding import EmbeddingModelMissing, model_dir

    kinds: tuple[str, ...] = RETRIEVERS
    note: list[str] = []
    try:
        model_dir()
    except EmbeddingModelMissing as exc:  # `make setup` installs the weights; a bare pip install may not
        kinds, note = ("bm25",), [f"retrieval: bm25 only, {exc}"]
    rows = evaluate(suite, kinds, KS, tasks, progress=False)
    choice = choose_retrieval(rows, KS)
    shipped = len(missed_at(rows[0], 5))  # rows[0] is bm25 at the shipped k
    reach = (
        "shows one of its expected operations for every task"
        if not choice.missed
        else f"still shows none of the expected operations for {len(choice.missed)} task(s): "
        + ", ".join(choice.missed[:5])
        + (" ..." if len(choice.missed) > 5 else "")
    )
    chosen = f"{choice.retriever} at k {choice.k} {reach}"
    why = [
        f"on {choice.tasks} task(s) with expected calls: {chosen}",
        f"(recall@{choice.k} {choice.recall:.2f}, MRR {choice.mrr:.2f}); the shipped bm25 at k 5 shows none of the "
        f"expected operations for {shipped}.",
        "Rewritten by every `surfbench check` while the first line is here; delete that line to keep your own.",
    ]
    lines = note + [
        f"retrieval on {choice.tasks} task(s), no model: "
        + "; ".join(
            f"{r.retriever} recall@{'/'.join(str(k) for k in KS)} "
            + "/".join(f"{r.recall[k]:.2f}" for k in KS)
            + f" (no expected operation shown at 5: {len(missed_at(r, 5))})"
            for r in rows
        )
    ]
    target = folder / "configs" / "surface"
    for kind in ("preselect", "search"):
        path = target / f"{kind}.yaml"
        if path.is_file() and not path.read_text(encoding="utf-8").startswith(MARK):
            lines.append(f"kept your {path} (not written by check); measured: {choice.retriever}, k {choice.k}")
            continue
        target.mkdir(parents=True, exist_ok=True)
        write_atomic(path, _config(kind, choice.retriever, choice.k, why))
        lines.append(f"wrote {path}: {kind} with {choice.retriever}, k {choice.k} ({chosen})")
    if choice.missed:
        lines.append(
            f"warning: {len(choice.missed)} task(s) show none of their expected operations on preselect and search "
            "with any retriever up to k 10: reword their turns as a user would, or check their expected calls"
        )
    return lines
