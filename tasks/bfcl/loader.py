"""BFCL v4, imported as it is: each entry's function docs become that task's catalog.

Data comes from the ``bfcl-eval`` package installed without its dependencies (``pip install
--no-deps bfcl-eval==2026.3.23``; ``make setup`` does it), or from the folder in ``SURFBENCH_BFCL_DATA``
(BFCL's ``data/`` directory: ``BFCL_v4_<category>.json`` and ``possible_answer/``). Nothing is
downloaded.

Single-turn categories (``simple_python``, ``multiple``, ``parallel``, ``parallel_multiple``,
``live_simple``, ``live_multiple``, ``irrelevance`` ...): one model call per episode (``max_steps:
1``), judged as BFCL judges it: the calls must be exactly the expected ones (``exact_calls``; order
free for parallel categories), each argument within BFCL's possible answers (BFCL's answer lists are
surfbench matchers: a list of acceptable values, ``""`` = may be omitted). ``irrelevance``: no call.

``multi_turn_base``: see :mod:`surfbench.tasks.bfcl.multi_turn` (executable backends).

Splits: every fifth entry (by position) is ``dev``, the rest ``test``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.suites.suite import ExpectedCall, SuiteError, Task
from surfbench.tasks.bfcl.data import catalog_of, data_dir, matcher, op_name, read_jsonl, turn_text, union
from surfbench.tasks.bfcl.multi_turn import multi_turn

SINGLE_TURN = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "irrelevance", "live_irrelevance",
)  # fmt: skip
MULTI_TURN = ("multi_turn_base",)
SYSTEM = (
    "You are an assistant that can call functions. When a function fits the request, call it with the "
    "right arguments; when none fits, answer in plain text without calling any."
)


def single_turn(category: str, data: Path) -> dict[str, Any]:
    path = data / f"BFCL_v4_{category}.json"
    entries = read_jsonl(path)
    answers: dict[str, Any] = {}
    refuse = "irrelevance" in category
    if not refuse:
        answers = {row["id"]: row["ground_truth"] for row in read_jsonl(data / "possible_answer" / path.name)}
    tasks, catalogs = [], []
    for i, entry in enumerate(entries):
        source = f"{path}#{entry['id']}"
        try:
            catalog = catalog_of(entry["function"], source)
        except CatalogError as exc:
            raise SuiteError(f"{source}: function docs: {exc}") from None
        catalogs.append(catalog)
        expected = []
        for call in answers.get(entry["id"], []):
            (name, args), *_ = call.items()
            expected.append(ExpectedCall(op_name(name), {k: matcher(v) for k, v in args.items()}))
        parallel = "parallel" in category
        tasks.append(
            Task(
                id=entry["id"],
                turns=(turn_text(entry["question"][0]),),
                split="dev" if i % 5 == 0 else "test",
                tags=("should-refuse",) if refuse else (("multi",) if len(expected) > 1 else ("single",)),
                expected=tuple(expected),
                order="any" if parallel else "ordered",
                refuse=refuse,
                exact_calls=True,
                catalog=catalog,
                meta={
                    "bfcl_category": category,
                    "functions": entry["function"],
                    "ground_truth": answers.get(entry["id"], []),
                },
                source=str(path),
            )
        )
    return {"catalog": union(catalogs, str(path)), "tasks": tasks, "max_steps": 1, "system_prompt": SYSTEM}


def load(variant: str, folder: Path) -> dict[str, Any]:
    """The suite loader (suite.yaml ``loader``): one BFCL category."""
    data = data_dir()
    if variant in MULTI_TURN:
        return multi_turn(variant, data)
    return single_turn(variant, data)
