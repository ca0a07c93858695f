"""``surfbench init`` (a code-free suite for any importable catalog) and ``surfbench check`` (validate one).

``init`` writes DIR/suite.yaml, DIR/tasks.yaml, a copy of the catalog, DIR/configs/suite/<name>.yaml (the registration
``surfbench run suite=<name>`` needs) and DIR/README.md. Everything is built in a temporary folder next to DIR, loaded
back as a suite, and only then moved into place: an error leaves nothing behind. ``check`` loads a suite (the
load-time checks of bench.suites.suite), checks the arguments the oracle would send for each expected call against the
operation's schema, and replays every task with the scripted oracle model through the real loop, scorer and store.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.values import decoded
from surfbench.bench.catalog.catalog import Catalog, CatalogError, Operation

EXAMPLES = 5
"""Commented example tasks ``init`` writes (one per operation, see :func:`example_operations`)."""
SYSTEM_PROMPT = (
    "You are an assistant that acts through the tools you are given. Use the tools to do what the user "
    "asks, then answer briefly in plain text. If no tool can do it, say so."
)
CANNED_WORD = "placeholder-result"
FILE_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
REFUSE_ANSWER = ["can't", "cannot", "unable", "not able", "no tool", "don't have"]
ORACLE_MODEL = {"provider": "scripted", "params_b": 0.0, "mode": "native"}
MATCHER_HELP = (
    "# expected: the calls a correct answer makes; args are matchers: a value, a list of accepted values",
    '# ("" = may be omitted), {$regex: ...}, {$any: true}, {$set: [...]}; a list value is written [[a, b]]',
    "# (its items may be matchers) or {$list: [...]}, a list of objects {$list: [{name: Bob}]}.",
)
"""The comment lines on ``expected`` and its argument matchers at the top of every tasks.yaml ``init`` writes."""


def example_operations(catalog: Catalog, n: int = EXAMPLES) -> list[Operation]:
    """The operations the example tasks show: the ``n`` most used ones, by a documented rule.

    With traffic weights (a native catalog or a Python backend), the ``n`` heaviest. A foreign catalog
    has none: then round-robin over its categories in first-seen order, taking each category's next
    operation in catalog order, until ``n`` are chosen (deterministic, and spread over the catalog).
    """
    if any(op.weight > 0 for op in catalog):
        return catalog.by_weight()[:n]
    queues = {c: [op for op in catalog if op.category == c] for c in catalog.categories}
    chosen: list[Operation] = []
    while len(chosen) < min(n, len(catalog)):
        for queue in queues.values():
            if queue and len(chosen) < n:
                chosen.append(queue.pop(0))
    return chosen


def placeholder(schema: Any, depth: int = 0) -> Any:
    """A value of the schema's JSON type (first enum value, bounds respected); objects get their required keys."""
    if not isinstance(schema, dict) or depth > 12:
        return "example"
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return placeholder(schema[key][0], depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        value = low if isinstance(low, int | float) and low > 1 else 1
        value = high if isinstance(high, int | float) and high < value else value
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        least = schema.get("minItems")
        return [
            placeholder(schema.get("items"), depth + 1) for _ in range(max(1, least if isinstance(least, int) else 1))
        ]
    if kind == "object":
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        return {k: placeholder(props.get(k), depth + 1) for k in schema.get("required") or []}
    fmt = str(schema.get("format"))
    formats = {"date-time": "2026-01-01T09:00:00Z", "date": "2026-01-01", "email": "user@example.com"}
    text = formats.get(fmt, "https://example.com" if fmt.startswith(("uri", "url")) else "example")
    least = schema.get("minLength")
    return text.ljust(least, "x") if isinstance(least, int) else text


def required_args(op: Operation) -> dict[str, Any]:
    """Placeholder values for the operation's required arguments."""
    args = placeholder({**op.parameters, "type": "object"})
    return args if isinstance(args, dict) else {}


def matchers(args: dict[str, Any]) -> dict[str, Any]:
    """Argument matchers that accept exactly ``args`` (a list value is one alternative: ``[[...]]``)."""
    return {k: matchers(v) if isinstance(v, dict) else [v] if isinstance(v, list) else v for k, v in args.items()}


def task_slug(name: str) -> str:
    """A task id's part made from an operation's name: lowercase words joined by hyphens (``task`` if none)."""
    return re.sub(r"[^a-z0-9]+", "-", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()).strip("-") or "task"


def smoke_turn(op: Operation) -> str:
    """The runnable example task's request: the operation's summary and its required placeholder values."""
    given = ", ".join(f"{k} {json.dumps(v)}" for k, v in required_args(op).items())
    return f"{(op.summary or op.name).rstrip('.')}{f' ({given})' if given else ''}."


def task_entry(op: Operation, task_id: str, turn: str, canned: dict[str, Any]) -> dict[str, Any]:
    """A tasks file's entry: one dev turn expecting ``op`` with its required arguments, ``canned`` its result."""
    return {
        "id": task_id,
        "split": "dev",
        "tags": ["single", "read" if op.read_only else "write"],
        "turns": [turn],
        "expected": [{"op": op.name, "args": matchers(required_args(op))}],
        "canned": {op.name: canned},
    }


def yaml_text(data: Any) -> str:
    """``data`` as the scaffolds write YAML: keys in order, short lists inline, lines of about 110 characters."""
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, allow_unicode=True, width=110)


def working_op(catalog: Catalog, first: list[Operation]) -> Operation | None:
    """The operation of the runnable task: a read with required arguments whose placeholders are valid."""
    from surfbench.bench.base.validation import validate_args

    ordered = [*first, *(op for op in catalog if op not in first)]
    valid = [op for op in ordered if not validate_args(required_args(op), op.parameters)]
    for fits in (lambda op: op.read_only and op.required, lambda op: op.read_only, lambda op: True):
        found = next((op for op in valid if fits(op)), None)
        if found is not None:
            return found
    return None


def tasks_text(catalog: Catalog) -> str:
    """tasks.yaml: two runnable tasks, then one commented example per operation of example_operations."""
    chosen = example_operations(catalog)
    rule = (
        [f"# the {len(chosen)} heaviest operations by the catalog's traffic weights."]
        if any(op.weight > 0 for op in catalog)
        else [
            f"# this catalog has no usage data, so {len(chosen)} operations spread over its categories: round-robin",
            "# over the categories in catalog order, each time the category's next operation in catalog order.",
        ]
    )
    out = [
        "# Tasks of this suite (format: docs/suites.md in surfbench, 'The suite and task format').",
        *MATCHER_HELP,
        "# canned: what each operation returns in this suite (no backend); {error: text} makes the call fail.",
        "#",
        "# Runnable tasks, so that the suite runs as it is (replace their placeholders with real values):",
    ]
    runnable = []
    op = working_op(catalog, chosen)
    if op is not None:
        task = task_entry(op, f"smoke-{task_slug(op.name)}", smoke_turn(op), {"result": CANNED_WORD})
        runnable.append({**task, "answer": {"contains": [CANNED_WORD]}})
    runnable.append(
        {
            "id": "refuse-unrelated",
            "split": "dev",
            "tags": ["should-refuse"],
            "turns": ["Book me a table for two at an Italian restaurant tonight."],
            "answer": {"any_of": REFUSE_ANSWER},
        }
    )
    out += [yaml_text(runnable).rstrip(), "", "# Examples, one per most-used operation; the operations chosen:", *rule]
    out += ["# Uncomment one, write its turn as a user would ask, and put real values in args and canned."]
    for op in chosen:
        turn = f"{(op.summary or op.name).rstrip('.')}."
        block = yaml_text([task_entry(op, task_slug(op.name), turn, {"ok": True})]).rstrip()
        out += ["#", *(f"# {line}" for line in block.splitlines())]
    return "\n".join(out) + "\n"


def recipe_paths(folder: Path) -> tuple[str, str, str]:
    """(where to run from, the suite folder, its parent) as a README's commands name them, never absolute.

    Relative to the folder init ran in when the suite is below it, else to the suite's parent folder.
    """
    home, here = folder.resolve(), Path.cwd().resolve()
    if here in home.parents:
        suite = home.relative_to(here).as_posix()
        parent = home.parent.relative_to(here).as_posix() if home.parent != here else "."
        return "the folder `init` ran in", suite, parent
    return f"this folder's parent (`cd ..` from `{home.name}/`)", home.name, "."


def _readme(name: str, folder: Path, catalog: Catalog, source: str) -> str:
    where, suite, parent = recipe_paths(folder)
    return f"""# {name}: a code-free surfbench suite

Written by `surfbench init` for the catalog `{Path(source).name}` ({len(catalog)} operations): `suite.yaml`,
`tasks.yaml` (runnable tasks and commented examples: edit them), `{catalog_file_name(source)}` (a copy
of the catalog) and `configs/suite/{name}.yaml` (what lets `surfbench run` find the suite by name).

From {where}, check it (schemas, expected calls, and an oracle replay of every task):

    surfbench check {suite}

Run it (`SURFBENCH_SUITES` and `SURFBENCH_CONFIGS` take `:`-separated folders, searched before the
shipped ones):

    export SURFBENCH_SUITES={parent} SURFBENCH_CONFIGS={suite}/configs
    surfbench run suite={name} surface=full model=qwen2.5-coder-0.5b-instruct split=all
    surfbench run -m suite={name} surface=full,dispatcher model=qwen2.5-coder-0.5b-instruct split=all
"""


def catalog_file_name(source: str) -> str:
    """The catalog's name in the suite folder: ``catalog`` with a suffix its parser reads the same way."""
    suffix = Path(source).suffix.lower()
    return f"catalog{suffix if suffix in ('.yaml', '.yml', '.jsonl') else '.json'}"


def init_suite(source: str, folder: Path, fmt: str | None = None, name: str | None = None, force: bool = False) -> str:
    """Write a code-free suite for the catalog ``source`` into ``folder``; return its name.

    Raises:
        ConfigError: a non-empty ``folder`` (without ``force``), a bad name; CatalogError: the catalog.
    """
    from surfbench.bench.catalog.importers import load_catalog
    from surfbench.bench.catalog.importers.common import exists
    from surfbench.bench.suites.suite import load_suite

    name = suite_name(folder, name, force)
    if fmt != "python" and not exists(Path(source)) and (Path(source).suffix in FILE_SUFFIXES or os.sep in source):
        raise CatalogError(source, "file not found")  # not read as a Python module's name
    catalog = load_catalog(source, fmt=fmt, name=name)
    python = not exists(Path(source))  # module:attr: written as a native catalog
    with building(folder, name) as target:
        file_name = "catalog.json" if python else catalog_file_name(source)
        if python:
            (target / file_name).write_text(json.dumps(catalog.to_json(), indent=2) + "\n", encoding="utf-8")
        else:
            shutil.copyfile(source, target / file_name)
        suite: dict[str, Any] = {
            "name": name,
            "description": f"{len(catalog)} operations from {Path(source).name}, scaffolded by surfbench init",
            "catalog": file_name,
        }
        if fmt or python:
            suite["catalog_format"] = "native" if python else fmt
        suite.update(backend="none", system_prompt=SYSTEM_PROMPT, max_steps=6, tasks=["tasks.yaml"])
        head = "# A code-free suite (see README.md): no backend; results come from each task's `canned`.\n"
        (target / "suite.yaml").write_text(head + yaml_text(suite), encoding="utf-8")
        (target / "tasks.yaml").write_text(tasks_text(catalog), encoding="utf-8")
        (target / "README.md").write_text(_readme(name, folder, catalog, source), encoding="utf-8")
        load_suite(str(target))  # what was written loads as a suite, before it is moved into place
    return name


def suite_name(folder: Path, name: str | None, force: bool) -> str:
    """The new suite's name (``name``, else ``folder``'s); ConfigError for a bad name, a file, or a non-empty folder.

    A name apart from the folder's is found by name too: ``SURFBENCH_SUITES`` folders are also searched by
    each suite.yaml's ``name:`` (bench.contracts.plugins).
    """
    from surfbench.bench.catalog.importers.common import exists

    given = name
    name = name or folder.resolve().name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        what = f"--name {name!r}" if given else f"suite name {name!r} (the folder's name; or give --name NAME)"
        raise ConfigError(f"{folder}: {what}: use letters, digits, '_' and '-'")
    if exists(folder) and not folder.is_dir():
        raise ConfigError(f"{folder}: is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not force:
        raise ConfigError(
            f"{folder}: not empty; choose a new or empty folder, or --force to replace the files init writes"
        )
    return name


@contextmanager
def building(folder: Path, name: str) -> Iterator[Path]:
    """A folder next to ``folder`` with configs/suite/NAME.yaml to write in; moved into place, else removed."""
    parent = folder.resolve().parent
    made = next((p for p in reversed([parent, *parent.parents]) if not p.exists()), None)  # removed on failure
    try:
        parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{name}.init-", dir=parent))
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot create it: {exc.strerror or exc}") from None
    try:
        target = work / name
        (target / "configs" / "suite").mkdir(parents=True)
        (target / "configs" / "suite" / f"{name}.yaml").write_text(
            f"# the suite in ../.. (see its README.md); SURFBENCH_CONFIGS names this configs folder\nname: {name}\n",
            encoding="utf-8",
        )
        yield target
        _move_into(target, folder)
        made = None
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot write the suite: {exc.strerror or exc}") from None
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def _move_into(built: Path, folder: Path) -> None:
    """The built suite becomes ``folder`` (a rename); into an existing folder (``--force``), file by file."""
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    if not folder.exists():
        os.replace(built, folder)
        return
    for path in sorted(p for p in built.rglob("*") if p.is_file()):
        dest = folder / path.relative_to(built)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, dest)


def reference_args(call: Any, op: Operation) -> dict[str, Any]:
    """The arguments the oracle sends for an expected call (bench.models.scripted.OracleClient's rule)."""
    from surfbench.bench.suites.matchers import example_args

    if call.oracle_args is not None:
        return dict(call.oracle_args)
    args = example_args(call.args)
    optional = {k for k, m in call.args.items() if isinstance(m, list) and "" in m and k not in op.required}
    return {k: v for k, v in args.items() if k not in optional}


def argument_problems(suite: Any) -> dict[str, str]:
    """Per task id: the expected calls whose oracle arguments the operation's schema refuses (one line)."""
    from surfbench.bench.base.validation import validate_args

    found: dict[str, str] = {}
    for task in suite.tasks:
        catalog = suite.catalog_for(task)
        for i, call in enumerate(task.expected):
            # every alternative of a one_of: the oracle replays the first, a model may pick any
            for j, alt in enumerate(call.alternatives):
                op = catalog[alt.op]  # load_suite checked that it exists
                try:
                    issues = [issue.message for issue in validate_args(reference_args(alt, op), op.parameters)]
                except ValueError as exc:  # a matcher with no example value and no oracle_args
                    issues = [str(exc)] if j == 0 else []  # only the replayed alternative needs concrete values
                at = f"expected[{i}]" + (f".one_of[{j}]" if len(call.alternatives) > 1 else "")
                if issues and task.id not in found:
                    found[task.id] = f"{task.source}: task {task.id!r}: {at} {alt.op}: {'; '.join(issues)}"
    return found


def oracle_failures(
    target: str, calls: dict[str, list[dict[str, Any]]] | None = None, after: Callable[[str], None] | None = None
) -> tuple[int, dict[str, str]]:
    """Replay every task of the suite with the scripted oracle (surface ``full``); (tasks run, why each failed).

    ``calls``: filled with each task's calls that reached the backend (op, ok, result), in order.
    ``after``: called with each task's id once its episode is over (one at a time, in order).
    """
    from surfbench.bench.base.owned import owned_temporary
    from surfbench.bench.models import ModelPool
    from surfbench.bench.models.scripted import OracleClient
    from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
    from surfbench.bench.store.results import RunStore, load_runs

    cell = resolve_cell(CellSpec(target, "full", "oracle", split="all"), None, {**ORACLE_MODEL, "script_suite": target})
    with owned_temporary("surfbench-check-") as tmp:
        store = RunStore(Path(tmp) / "check", commit_interval_s=0.5)
        store.prepare()
        store.write_run_info({"cells": []})

        def progress(_cell: Any, _done: int, _total: int, row: dict[str, Any] | None) -> None:
            if row is not None and after is not None:
                after(str(row["task_id"]))

        run_cell(cell, ModelPool(None), store, "check", progress=progress, client=OracleClient(target))
        rows = load_runs([store.root]).to_dict("records")
        made = load_runs([store.root], "calls").to_dict("records")
    found, task_of = {} if calls is None else calls, {row["episode_key"]: str(row["task_id"]) for row in rows}
    for call in (c for c in made if c["kind"] == "operation"):  # that reached the backend
        found.setdefault(task_of[call["episode_key"]], []).append(
            {"op": call["operation"], "ok": bool(call["backend_ok"]), "result": call["result"]}
        )
    failed = {}
    for row in (r for r in rows if not r["success"]):  # failures: a JSON list as the table holds it
        why = list(decoded(row.get("failures")) if row.get("failures") is not None else [])
        failed[str(row["task_id"])] = "; ".join(map(str, why)) or str(row.get("error") or "not solved")
    for row in (r for r in rows if r["success"]):  # solved, but its own first call misses the matcher
        tries = decoded(row.get("first_tries"))
        wrong = [f"{t['op']} ({t.get('error_type') or 'wrong'})" for t in tries or [] if not t.get("correct")]
        if wrong:
            failed[str(row["task_id"])] = (
                f"its first call to {', '.join(wrong)} fails the task's own expected arguments, so no model can get "
                "it right on the first try: fix the matcher, or give oracle_args"
            )
    return len(rows), failed


def check_suite(target: str, live: dict[str, Any] | None = None) -> tuple[int, int, list[str]]:
    """(tasks, tasks the oracle solves, one line per problem) for a suite folder or name.

    ``live``: for a suite over a live MCP server, filled with its ``server``, each task's oracle ``calls``,
    ``answers`` (per task, its answer check judged on the text of those calls' results: None when it is not
    a read task with answer words, "" when the results satisfy it, else why not), the catalog's ``ops``,
    and for a server on live data (``live_data``) ``wrote``: per task, what its episode changed there.
    """
    from surfbench.bench.authoring.scaffold_data import tree_changes, tree_state
    from surfbench.bench.suites.checks import answer_in_results, judged_on_results
    from surfbench.bench.suites.suite import load_suite

    suite = load_suite(target)  # a malformed file: SuiteError, one line naming the file, task and field
    # a loader's tasks are another benchmark's data, imported as they are: their arguments aren't ours
    problems = argument_problems(suite) if getattr(suite, "preset_catalog", None) is None else {}
    calls: dict[str, list[dict[str, Any]]] = {t.id: [] for t in suite.tasks}
    data = Path(suite.mcp.server.live_data) if suite.mcp is not None and suite.mcp.server.live_data else None
    wrote: dict[str, list[str]] = {}
    seen = tree_state(data) if data is not None else {}

    def after(task_id: str) -> None:  # on live data: what this task's episode changed there
        nonlocal seen
        if data is not None:
            now = tree_state(data)
            wrote[task_id], seen = tree_changes(seen, now), now

    ran, failed = oracle_failures(target, calls, after)
    if live is not None and suite.mcp is not None:  # what the live server answered (bench.authoring.scaffold_mcp)
        if data is not None:
            live.update(live_data=data, wrote=wrote)
        answers = {
            t.id: answer_in_results(t.answer, [str(c["result"]) for c in calls[t.id] if c["ok"]])
            if judged_on_results(t) and calls[t.id]
            else None
            for t in suite.tasks
        }
        live.update(server=suite.mcp.server.label, calls=calls, answers=answers)
        live["ops"] = {op.name: op for op in suite.catalog}
    lines = list(problems.values())
    source = {t.id: t.source for t in suite.tasks}
    lines += [
        f"{source.get(t, target)}: task {t!r}: the oracle fails: {why}"
        for t, why in failed.items()
        if t not in problems
    ]
    return ran, ran - len(failed), lines
