"""``surfbench diff --suite NAME``: what a catalog change does to a suite's tasks, before any model runs (issue 54).

Two things, both without a model:

- the expected calls that validated against the old catalog and no longer do against the new one: a call naming an
  operation that is gone (removed, or renamed: the task still names the old one), or whose arguments, as the oracle
  sends them (:func:`surfbench.bench.authoring.scaffold.reference_args`, the rule ``surfbench check`` validates),
  fail the new JSON schema. A call that already failed against the old catalog is not the change's doing and is
  left out;
- the retrieval funnel on the tasks, before and after (:func:`surfbench.bench.analysis.retrieval_eval.evaluate`, what
  ``surfbench retrieval`` prints): recall@k and MRR of each retriever. On the new catalog a renamed operation is
  looked for under its new name (a rename is a guess, but it is the operation the task needs); a removed one counts
  as not found. Without the embedding weights, BM25 only, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from surfbench.bench.analysis.retrieval_eval import RetrievalRow, evaluate, missed_at
from surfbench.bench.authoring.scaffold import reference_args
from surfbench.bench.base.validation import validate_args
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.catalog.catalog_diff import CatalogDiff
from surfbench.bench.catalog.embedding import EmbeddingModelMissing
from surfbench.bench.catalog.retrieval import retriever_kind
from surfbench.bench.report.diff_report import BrokenCall, RetrievalChange, SuiteChange, renames
from surfbench.bench.suites.suite_model import Suite, Task


def _problems(step: Any, catalog: Catalog) -> list[str] | None:
    """Why ``catalog`` refuses the call as the oracle sends it; [] valid; None: no concrete arguments to judge."""
    op = catalog[step.op]
    try:
        return [issue.message for issue in validate_args(reference_args(step, op), op.parameters)]
    except ValueError:  # a matcher with no example value and no oracle_args: nothing concrete to validate
        return None


def broken_calls(tasks: Sequence[Task], old: Catalog, new: Catalog, diff: CatalogDiff) -> list[BrokenCall]:
    """Every expected call (each step of each alternative) valid against ``old`` and not against ``new``."""
    renamed = {c.old_name: (c.name, c.score or 0.0) for c in diff.changes if c.kind == "renamed" and c.old_name}
    found: list[BrokenCall] = []
    for task in tasks:
        for i, call in enumerate(task.expected):
            for j, alt in enumerate(call.alternatives):
                for step in alt.steps:
                    if step.op not in old or _problems(step, old):  # not valid before: not this change's doing
                        continue
                    at = f"expected[{i}]" + (f".one_of[{j}]" if len(call.alternatives) > 1 else "")
                    if step.op not in new:
                        if step.op in renamed:
                            to, score = renamed[step.op]
                            why = f"renamed to {to}? (a guess, similarity {score:.2f}): the task names the old one"
                        else:
                            why = "no longer in the catalog"
                        found.append(BrokenCall(task.id, task.source, at, step.op, why))
                        continue
                    issues = _problems(step, new)
                    if issues:
                        found.append(BrokenCall(task.id, task.source, at, step.op, "; ".join(issues)))
    return found


def _renamed_task(task: Task, to: dict[str, str]) -> Task:
    """The task with its expected calls' operations under their new names (what retrieval looks for)."""
    calls = tuple(replace(c, op=to.get(c.op, c.op)) for c in task.expected)
    return replace(task, expected=calls)


def _evaluate(suite: Suite, catalog: Catalog, kind: str, ks: Sequence[int], tasks: Sequence[Task]) -> RetrievalRow:
    return evaluate(replace(suite, preset_catalog=catalog), [kind], ks, list(tasks), progress=False)[0]


def retrieval_changes(
    suite: Suite, tasks: Sequence[Task], old: Catalog, new: Catalog, diff: CatalogDiff, kinds: Sequence[str],
    ks: Sequence[int],
) -> tuple[list[RetrievalChange], list[str]]:  # fmt: skip
    """recall@k and MRR of each retriever on both catalogs; the notes say what could not be measured."""
    to = {old_name: name for name, old_name in renames(diff).items()}
    new_tasks = [_renamed_task(t, to) for t in tasks]
    out: list[RetrievalChange] = []
    notes: list[str] = []
    for kind in dict.fromkeys(retriever_kind(k) for k in kinds):
        if kind in ("embedding", "hybrid"):
            from surfbench.bench.catalog.embedding import model_dir

            try:
                model_dir()
            except EmbeddingModelMissing as exc:
                notes.append(f"{kind} retrieval not measured: {exc}")
                continue
        before = _evaluate(suite, old, kind, ks, tasks)
        after = _evaluate(suite, new, kind, ks, new_tasks)
        missed = {k: tuple(sorted(set(missed_at(after, k)) - set(missed_at(before, k)))) for k in ks}
        out.append(RetrievalChange(kind, before.recall, after.recall, before.mrr, after.mrr, before.tasks, missed))
    return out, notes


def suite_change(
    target: str,
    old: Catalog,
    new: Catalog,
    diff: CatalogDiff,
    retrievers: Sequence[str],
    ks: Sequence[int],
    split: str = "all",
) -> SuiteChange:
    """What the change from ``old`` to ``new`` does to the suite ``target`` (a name or a folder)."""
    from surfbench.bench.suites.suite import load_suite

    suite = load_suite(target)
    tasks = [t for t in suite.select(split) if t.expected and t.turns]
    if any(t.catalog is not None for t in tasks):
        raise ValueError(
            f"--suite {target}: its tasks carry their own catalogs (a loader's suite, e.g. BFCL); diff a suite over "
            "one catalog"
        )
    if not tasks:
        raise ValueError(f"--suite {target}: no task with expected calls in split {split!r} (try --split all)")
    notes: list[str] = []
    named = {s.op for t in tasks for c in t.expected for a in c.alternatives for s in a.steps}
    outside = sorted(named - set(old.names))
    if outside:
        shown = ", ".join(outside[:5]) + (" ..." if len(outside) > 5 else "")
        notes.append(
            f"{len(outside)} operation(s) the tasks expect are not in OLD ({shown}): is OLD the suite's catalog? "
            "Their calls are not judged"
        )
    rows, more = retrieval_changes(suite, tasks, old, new, diff, retrievers, ks)
    return SuiteChange(suite.name, len(tasks), tuple(broken_calls(tasks, old, new, diff)), tuple(rows),
                       tuple(notes + more))  # fmt: skip
