"""Agreement with BFCL: BFCL's own AST checker and surfbench's scorer on the same model outputs.

For every episode of a single-turn BFCL suite in the given runs, the model's first-turn calls (tool
name and arguments as the model sent them) go to ``bfcl_eval``'s ``ast_checker`` with the entry's
original function docs and possible answer; BFCL's verdict is compared with the episode's
``success``. ``irrelevance`` categories: BFCL's rule, valid when no call could be decoded.

``bfcl_eval``'s checker imports BFCL's model registry, which imports every provider SDK; that one
module is replaced by a stub naming a single model that, like BFCL's OpenAI-compatible handlers,
turns dots in function names into underscores (``underscore_to_dot``). The checker code itself runs
unchanged.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surfbench.bench.store.results import load_runs
from surfbench.bench.suites.suite import Task, load_suite

MODEL = "surfbench"


@dataclass
class _ModelConfig:
    underscore_to_dot: bool = True


def bfcl_checker() -> Any:
    """BFCL's ``ast_checker`` and its ``Language`` enum, importable without BFCL's dependencies."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stub = types.ModuleType(name)
        stub.MODEL_CONFIG_MAPPING = {MODEL: _ModelConfig()}  # type: ignore[attr-defined]
        sys.modules[name] = stub
    from bfcl_eval.constants.enums import Language
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

    return ast_checker, Language


@dataclass(frozen=True)
class Verdict:
    episode_key: str
    task_id: str
    category: str
    ours: bool
    bfcl: bool
    bfcl_error: str
    our_failures: str
    output: str

    @property
    def agree(self) -> bool:
        return self.ours == self.bfcl


def _decoded(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """The first turn's calls as BFCL's decoded output; False when one could not be decoded."""
    out, ok = [], True
    for row in rows:
        if row["kind"] == "parse_error":
            ok = False
            continue
        args = row["arguments"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                ok = False
                continue
        out.append({row["tool"]: args})
    return out, ok


def bfcl_verdict(task: Task, first_calls: list[dict[str, Any]]) -> tuple[bool, str]:
    ast_checker, language = bfcl_checker()
    category = str(task.meta["bfcl_category"])
    decoded, decodable = _decoded(first_calls)
    if "irrelevance" in category:
        called = decodable and bool(decoded)
        return (not called, "function call made" if called else "")
    if not decodable or not decoded:
        return False, "no decodable function call"
    try:
        result = ast_checker(
            task.meta["functions"], decoded, task.meta["ground_truth"], language.PYTHON, category, MODEL
        )
    except Exception as exc:  # BFCL's checker raising on an output is BFCL's verdict: invalid
        return False, f"checker raised {type(exc).__name__}: {exc}"
    return bool(result["valid"]), "; ".join(map(str, result.get("error", [])))


def verdicts(runs: Sequence[str | Path]) -> list[Verdict]:
    episodes = load_runs(runs)
    calls = load_runs(runs, table="calls")
    episodes = episodes[episodes["suite"].astype(str).str.startswith("bfcl:")]
    first_turn = calls[calls["step"] == 0].sort_values("index") if len(calls) else calls
    by_episode = {key: group.to_dict("records") for key, group in first_turn.groupby("episode_key")}
    suites: dict[str, dict[str, Task]] = {}
    out = []
    for row in episodes.to_dict("records"):
        name = str(row["suite"])
        if name not in suites:
            suites[name] = {t.id: t for t in load_suite(name).tasks}
        task = suites[name].get(str(row["task_id"]))
        if task is None or "bfcl_category" not in task.meta or task.meta["bfcl_category"].startswith("multi_turn"):
            continue
        first = by_episode.get(row["episode_key"], [])
        ok, error = bfcl_verdict(task, first)
        failures = row["failures"]
        out.append(
            Verdict(
                episode_key=str(row["episode_key"]),
                task_id=task.id,
                category=str(task.meta["bfcl_category"]),
                ours=bool(row["success"]),
                bfcl=ok,
                bfcl_error=error,
                our_failures="; ".join(json.loads(failures)) if isinstance(failures, str) else str(failures),
                output=json.dumps([{r["tool"]: r["arguments"]} for r in first], ensure_ascii=False)[:300],
            )
        )
    return out


def summary(items: Sequence[Verdict]) -> str:
    """A markdown summary: agreement per category and overall, then every disagreement."""
    lines = ["| category | outputs | agree | rate | BFCL valid | surfbench success |", "|---|---|---|---|---|---|"]
    cats = sorted({v.category for v in items})
    for cat in [*cats, "all"]:
        sub = [v for v in items if cat in ("all", v.category)]
        if not sub:
            continue
        agree = sum(v.agree for v in sub)
        lines.append(
            f"| {cat} | {len(sub)} | {agree} | {100 * agree / len(sub):.1f}% | {sum(v.bfcl for v in sub)} | "
            f"{sum(v.ours for v in sub)} |"
        )
    diffs = [v for v in items if not v.agree]
    lines += ["", f"Disagreements: {len(diffs)}", ""]
    for v in diffs:
        lines.append(
            f"- `{v.task_id}` ({v.category}): BFCL {'valid' if v.bfcl else 'invalid'}"
            f"{' (' + v.bfcl_error + ')' if v.bfcl_error else ''}; surfbench {'success' if v.ours else 'failure'}"
            f"{' (' + v.our_failures + ')' if v.our_failures else ''}. Output: `{v.output}`"
        )
    return "\n".join(lines) + "\n"
