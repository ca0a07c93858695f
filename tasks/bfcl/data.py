"""BFCL's data on disk: where it is, reading its JSON-lines files, and function docs as catalogs.

Shared by the single-turn loader and the multi-turn categories.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.importers.tools_json import import_bfcl
from surfbench.bench.suites.suite import SuiteError

PIN = "bfcl-eval==2026.3.23"


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
