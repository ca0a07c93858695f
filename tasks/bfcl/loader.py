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

``multi_turn_base``: see :mod:`tasks.bfcl.multi_turn` (executable backends).

Splits: every fifth entry (by position) is ``dev``, the rest ``test``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from bench.catalog import Catalog, CatalogError, Operation
from bench.importers.tools_json import import_bfcl
from bench.suite import ExpectedCall, SuiteError, Task

PIN = "bfcl-eval==2026.3.23"
SINGLE_TURN = (
    "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
    "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "irrelevance", "live_irrelevance",
)  # fmt: skip
MULTI_TURN = ("multi_turn_base",)
SYSTEM = (
    "You are an assistant that can call functions. When a function fits the request, call it with the "
    "right arguments; when none fits, answer in plain text without calling any."
)


def data_dir() -> Path:
    """BFCL's data folder: ``SURFBENCH_BFCL_DATA``, else the installed ``bfcl_eval`` package's."""
    env = os.environ.get("SURFBENCH_BFCL_DATA")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise SuiteError(f"SURFBENCH_BFCL_DATA={env}: not a directory")
        return path
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise SuiteError(
            f"BFCL data not found: install it without its dependencies (pip install --no-deps {PIN}; make setup "
            "does) or set SURFBENCH_BFCL_DATA to BFCL's data/ folder"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise SuiteError(f"{path}: file not found (BFCL data incomplete?)")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise SuiteError(f"{path}: line {n}: invalid JSON: {exc.msg}") from None
    return rows


def op_name(name: str) -> str:
    """BFCL's own renaming for OpenAI-compatible models: dots become underscores."""
    return name.replace(".", "_")


def matcher(options: Any) -> Any:
    """A BFCL possible-answer list as a surfbench matcher.

    BFCL nests: a dict option holds a possible-answer list per key, a list of such dicts is a list of
    objects matched in order. A single such option becomes the equivalent nested surfbench matcher;
    anything else stays a list of acceptable values.
    """
    if not isinstance(options, list):
        return options
    concrete = [o for o in options if o != ""]
    if len(concrete) == 1:
        only = concrete[0]
        if isinstance(only, dict):
            return {k: matcher(v) for k, v in only.items()}
        if isinstance(only, list) and only and all(isinstance(o, dict) for o in only):
            return {"$list": [{k: matcher(v) for k, v in o.items()} for o in only]}
    return options


def turn_text(messages: list[dict[str, Any]]) -> str:
    """One user turn from BFCL's message list (a system message or prior exchange is kept, labelled)."""
    if len(messages) == 1:
        return str(messages[0].get("content", ""))
    return "\n\n".join(f"[{m.get('role', 'user')}] {m.get('content', '')}" for m in messages)


def catalog_of(functions: list[dict[str, Any]], source: str) -> Catalog:
    return Catalog(name="bfcl", operations=tuple(import_bfcl(functions, source)), source=source)


def union(catalogs: list[Catalog], source: str) -> Catalog:
    """All operations of a category once (the first definition of a name wins): for static reports."""
    ops: dict[str, Operation] = {}
    for catalog in catalogs:
        for op in catalog.operations:
            ops.setdefault(op.name, op)
    return Catalog(name="bfcl", operations=tuple(ops.values()), source=source)


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
        from tasks.bfcl.multi_turn import multi_turn

        return multi_turn(variant, data)
    return single_turn(variant, data)
