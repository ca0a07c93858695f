"""``surfbench init --mcp "COMMAND ARGS" DIR`` (or ``--mcp-url URL``): a suite over a live MCP server.

Isolated by default: the folder the server's arguments name (or ``--fixture DIR``) is copied into DIR as
``fixture/`` and its argument becomes ``{workdir}`` (bench/authoring/scaffold_data.py), so every episode,
``check`` included, runs the server on a fresh copy; ``--live-data`` runs it on the folder itself. The server
is started once, on a copy, and its tools listed; DIR gets suite.yaml (``catalog: {mcp: ..., pinned:
tools.json}``, ``backend: mcp``), tools.json (the ``tools/list`` answer as sent, what ``surfbench catalog
dump`` writes), tasks.yaml (bench/authoring/scaffold.py's example tasks without ``canned``: results come from
the server), gate.yaml, README.md (the recipe's remaining steps, every path relative) and
configs/suite/<name>.yaml. Also, for a live suite, what ``check`` says per task (:func:`live_lines`): what the
server returned to the oracle's calls and whether each read task's answer words occur in it. The command
line of ``init`` and ``check`` is bench/authoring/authoring_cli.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.authoring.scaffold import (
    MATCHER_HELP,
    REFUSE_ANSWER,
    SYSTEM_PROMPT,
    building,
    example_operations,
    recipe_paths,
    smoke_turn,
    suite_name,
    task_entry,
    task_slug,
    working_op,
    yaml_text,
)
from surfbench.bench.authoring.scaffold_data import Placement, copy_data, place
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.mcp.mcp_spec import STARTUP_TIMEOUT_S, ServerSpec

SURFACES = "full,dispatcher,preselect,search"
MODEL = "qwen2.5-coder-0.5b-instruct"


def server_mapping(spec: ServerSpec) -> dict[str, Any]:
    """suite.yaml's ``catalog.mcp`` for the server as init writes it (``python`` stays ``python``)."""
    found: dict[str, Any] = {"command": spec.command, "args": list(spec.args)} if spec.command else {"url": spec.url}
    for key in ("cwd", "fixture", "live_data"):
        if getattr(spec, key):
            found[key] = getattr(spec, key)
    if spec.env:  # `env KEY=VALUE PROGRAM` and the paths in it, as the server gets them
        found["env"] = dict(spec.env)
    if spec.watch:
        found["watch"] = list(spec.watch)
    if spec.headers:
        found["headers"] = dict(spec.headers)
    if spec.startup_timeout_s != STARTUP_TIMEOUT_S:
        found["startup_timeout_s"] = spec.startup_timeout_s
    return found


def _flow(value: object) -> str:
    """``value`` as YAML on one line (a list or mapping in flow style)."""
    return str(yaml.safe_dump([value], default_flow_style=True, width=10**6, allow_unicode=True)).strip()[1:-1]


def _where_data(placement: Placement, folder: Path) -> str:
    """The data folder as the suite's files name it: relative to the suite folder (never absolute)."""
    data = placement.data or placement.live
    return os.path.relpath(data.resolve(), folder.resolve()) if data is not None else ""


def suite_text(name: str, placement: Placement, catalog: Catalog, folder: Path) -> str:
    """suite.yaml: the live server, the pinned listing, ``backend: mcp``, and how to add what it lacks."""
    spec = placement.spec
    notes = {
        "fixture": f"# a copy of {_where_data(placement, folder)} made by init: every episode, `check` included,\n"
        "    #   starts the server on a fresh copy of it ({workdir} in args), at the same path each time; a folder\n"
        "    #   relative to this suite (../shared works too)",
        "cwd": "# the server starts in a fresh empty folder per episode",
        "live_data": "# init --live-data: the server works on this folder ITSELF; writes change it\n"
        "    #   (`surfbench check` lists what each task changed)",
        "env": "# variables for the server; a path into the data is written {workdir}/...",
        "watch": "# your folder init copied: check and run hash it and stop if anything changed it",
    }
    server = "\n".join(
        f"    {k}: {_flow(v)}" + (f"   {notes[k]}" if k in notes and spec.command else "")
        for k, v in server_mapping(spec).items()
    )
    if spec.command and not spec.fixture and not spec.live_data:
        server += (
            "\n    # fixture: data              # a folder relative to this suite, copied to a fresh working copy for"
            '\n    #                            # every episode; write "{workdir}" in args where the server finds it'
        )
    rest = {"system_prompt": SYSTEM_PROMPT, "max_steps": 6, "tasks": ["tasks.yaml"]}
    fresh = "a fresh one" if spec.command else "a new session"
    return f"""\
# A suite over a live MCP server (see README.md): every call goes to the server, which answers with its own
# data; tasks have no `canned`.
name: {_flow(name)}
description: {_flow(f"{len(catalog)} tools of the live MCP server {spec.label}")}
catalog:
  mcp:
{server}
    # setup: fixture.py:build    # fn(path): called on each fresh working copy before the server starts
    #                            # (builds what a folder cannot ship, such as a .git; tasks/git does)
    # reset_tool: reset          # a tool the harness calls with {{scenario: NAME}} between episodes instead
    #                            # of starting a fresh server (hidden from the model)
    # call_timeout_s: 10         # a slower call is a tool error of type tool_timeout
    # {{suite}} in args: this folder; {{workdir}}: the episode's working copy; {{scenario}}: the task's
  pinned: tools.json             # the tools/list answer init saw, as sent; a run warns when the live list differs
backend: mcp                     # each call goes to the live server ({fresh} per episode)
# backend_options: {{state: state.py:read_state}}   # fn(workdir) -> dict: what tasks' `state:` checks read
{yaml_text(rest).rstrip()}
"""


def gate_text(name: str) -> str:
    """gate.yaml: the candidates of the recipe's sweep against ``full``, with the shipped gates' thresholds."""
    return f"""\
# surfbench gate --criteria gate.yaml RUN: ship / revise / close per candidate surface against `full`
# (docs/sweeps-and-gates.md); the thresholds are the shipped gates' (configs/gate/front-door.yaml).
# preselect and search are this suite's configs/surface/preselect.yaml and search.yaml once `surfbench check`
# has chosen their retriever and k on the tasks (bench/authoring/scaffold_retrieval.py); before, the shipped ones.
name: {name}
description: dispatcher, preselect and search against every tool as a typed tool (full), on {name}
baseline: full
candidates: [dispatcher, preselect, search]
criteria:
  - {{kind: prompt_tokens_ratio_max, value: 1.0, on_fail: revise}}
  - {{kind: first_try_drop_max, value: 0.05, on_fail: close}}
  - {{kind: success_drop_max, value: 0.05, on_fail: close}}
  - {{kind: round_trips_ratio_max, value: 1.5, on_fail: revise}}
"""


def _runnable_op(catalog: Catalog, first: list[Operation]) -> Operation | None:
    """The runnable task's operation: never a destructive one; read-only first (the check really calls it)."""
    safe = tuple(op for op in catalog if not op.destructive)
    if not safe:
        return None
    return working_op(Catalog(name=catalog.name, operations=safe), [op for op in first if not op.destructive])


def tasks_text(catalog: Catalog) -> str:
    """tasks.yaml: bench/authoring/scaffold.py's runnable tasks and commented examples, without ``canned``."""
    chosen = example_operations(catalog)
    out = [
        "# Tasks of this suite (format: docs/suites.md in surfbench, 'The suite and task format').",
        "# A live server: every call goes to it and its answer goes back to the model (no `canned` here).",
        "# These tasks are STARTING POINTS: their arguments are placeholders and the server answers with its",
        "# own data, so a task may fail `surfbench check` (the server refuses the call) until you edit it to",
        "# match what the server really does: real values in args, the turn a user would write, and checks:",
        "# answer: {contains: [...]} for what the answer must say; for a write, state: [...] with suite.yaml's",
        "# backend_options.state (a function reading the working copy).",
        *MATCHER_HELP,
        "#",
    ]
    runnable = []
    op = _runnable_op(catalog, chosen)
    if op is not None:
        task = task_entry(op, f"smoke-{task_slug(op.name)}", smoke_turn(op), {})
        del task["canned"]
        runnable.append(task)
        marked = "marked read-only" if op.read_only else "NOT marked read-only (readOnlyHint) by the server"
        out += [f"# Runnable tasks. {op.name} is {marked}:", "# `surfbench check` and every run really call it."]
    else:
        out += ["# Runnable task (every tool is marked destructive: none is called until you write a task):"]
    runnable.append(
        {
            "id": "refuse-unrelated",
            "split": "dev",
            "tags": ["should-refuse"],
            "turns": ["Book me a table for two at an Italian restaurant tonight."],
            "answer": {"any_of": REFUSE_ANSWER},
        }
    )
    examples = "# Examples, one per operation of bench/authoring/scaffold.py's example_operations"
    out += [yaml_text(runnable).rstrip(), "", examples]
    out += ["# (the heaviest, else round-robin over categories). Uncomment one, write its turn as a user would"]
    out += ["# ask, put real values in args, and add an answer or state check for what the server really does."]
    for op in chosen:
        task = task_entry(op, task_slug(op.name), f"{(op.summary or op.name).rstrip('.')}.", {})
        del task["canned"]
        out += ["#", *(f"# {line}" for line in yaml_text([task]).rstrip().splitlines())]
    return "\n".join(out) + "\n"


def recipe(name: str, suite: str, parent: str) -> str:
    """Steps 3 to 7 of the recipe (docs/suites.md), as commands to run from the folder ``suite`` is relative to."""
    return f"""\
    $EDITOR {suite}/tasks.yaml                 # 3. write tasks: the turns, expected calls, answer or state checks
    surfbench check {suite}                    # 4. check: schemas, the oracle's calls on a fresh copy, answers
    export SURFBENCH_SUITES={parent} SURFBENCH_CONFIGS={suite}/configs
    surfbench run suite={name} surface=full model=oracle run={name}-plumbing      # 5. a plumbing run, no model
    surfbench run -m suite={name} surface={SURFACES} model={MODEL} run={name}   # 5. the sweep
    surfbench report results/{name}            # 6. report: results/{name}/report/
    surfbench gate --criteria {suite}/gate.yaml results/{name}   # 7. gate: ship / revise / close per candidate
"""


def _readme(name: str, folder: Path, placement: Placement, tools: int, copied: tuple[int, int]) -> str:
    spec = placement.spec
    given = "--mcp" if spec.command else "--mcp-url"
    where, suite, parent = recipe_paths(folder)
    data = _where_data(placement, folder)
    if placement.data is not None:
        files, size = copied
        server = (
            f"- `fixture/`: a copy of `{data}` (the folder its arguments named: {files} files, {size:,} bytes) made\n"
            "  by init. Every episode, `surfbench check` included, starts the server on a fresh copy of it, at\n"
            f"  the same path each time (`{{workdir}}` in its arguments); `{data}` itself is never touched. Edit\n"
            "  `fixture/` to change what every task starts from.\n"
        )
    elif placement.live is not None:
        server = (
            f"- **Live data.** `init --live-data`: the server works on `{data}` itself (`live_data:`), so `check`\n"
            "  and every run call it there, writes included, and each episode starts from what the last one\n"
            "  left. `surfbench check` lists what each task changed. For a fresh copy per episode, init again\n"
            "  without `--live-data`.\n"
        )
    elif spec.command:
        server = (
            "- Its arguments name no folder, so nothing was copied: every episode starts the server in a fresh\n"
            '  empty folder (`cwd: "{workdir}"`). A server that serves a folder: init again with `--fixture DIR`.\n'
        )
    else:
        server = (
            "- Every episode opens a new session on this running server and sends it the model's calls, for\n"
            "  real: the server keeps what one episode writes for the next (no fresh copy per episode).\n"
            + (f"  Headers are read from the environment: {', '.join(f'`{v}`' for v in spec.headers.values())}.\n"
               if spec.headers else "")
        )  # fmt: skip
    moved = "".join(f"  `{a}` -> `{b}`\n" for a, b in placement.rewritten if "{suite}" in b)
    if moved:
        server += "- Relative paths among its arguments are written relative to this folder:\n" + moved
    return f"""# {name}: a surfbench suite over a live MCP server

Written by `surfbench init {given}` for a server with {tools} tools, as suite.yaml starts it:

    {spec.label}

- `suite.yaml`: the server (`catalog.mcp`) and `backend: mcp`: every call of the model goes to it.
{server}- `tools.json`: its `tools/list` answer as sent, byte for byte (a run warns when the live list differs).
- `tasks.yaml`: runnable tasks and commented examples: starting points, to edit until they match what the
  server really does.
- `gate.yaml`: the gate's criteria: `dispatcher`, `preselect` and `search` against `full`.
- `configs/surface/preselect.yaml`, `search.yaml` (written by `surfbench check` once tasks have expected calls):
  the retriever and k that show an expected operation for every task, measured on them without a model.
- `configs/suite/{name}.yaml`: what lets `surfbench run suite={name}` find the suite.

## The recipe

Steps 1 and 2, connect and pin, are done (`tools.json`). From {where}:

{recipe(name, suite, parent)}
`check` replays every task with the scripted oracle on the real server and says, per task, what the
server returned and whether the answer words occur in it. `model=oracle` is the same oracle as a run: a
plumbing check, never a result. The surfaces over the pinned list, without a model:
`surfbench surfaces --catalog {suite}/tools.json --format mcp --name {name}`.
"""


def init_mcp_suite(
    spec: ServerSpec,
    folder: Path,
    name: str | None = None,
    force: bool = False,
    fixture: str | None = None,
    live_data: bool = False,
) -> tuple[str, int, Placement, tuple[int, int]]:
    """Write a suite over the server into ``folder``; (its name, tools listed, where the data went, (files, bytes)).

    The server's data is copied into the suite (bench/authoring/scaffold_data.py), the server started once on a
    copy of it and its tools listed.

    Raises:
        ConfigError: the folder or name (before the server starts); McpError: the server, its arguments.
    """
    from surfbench.bench.mcp.mcp_catalog import live_catalog
    from surfbench.bench.mcp.suites import resolve
    from surfbench.bench.suites.fields import read_yaml
    from surfbench.bench.suites.format_checks import check_against_catalog, suite_file
    from surfbench.bench.suites.suite import load_tasks

    name = suite_name(folder, name, force)
    placement = place(spec, folder, fixture=fixture, live_data=live_data)
    with building(folder, name) as target:
        copied = copy_data(placement, target)
        live = live_catalog(placement.listing_spec(target, folder), name=name)  # on a copy: the data is only read
        (target / "tools.json").write_bytes(live.snapshot())  # what `catalog dump` writes: the answer as sent
        path = target / "suite.yaml"
        path.write_text(suite_text(name, placement, live.catalog, folder), encoding="utf-8")
        (target / "tasks.yaml").write_text(tasks_text(live.catalog), encoding="utf-8")
        (target / "gate.yaml").write_text(gate_text(name), encoding="utf-8")
        readme = _readme(name, folder, placement, len(live.catalog), copied)
        (target / "README.md").write_text(readme, encoding="utf-8")
        # what load_suite checks, against the list just read (loading it would start the server again);
        # live_data is resolved against the final folder, which does not exist yet
        found = suite_file(read_yaml(path), path)
        mcp = dict(found.catalog_mcp or {})
        mcp["mcp"] = {k: v for k, v in dict(mcp.get("mcp") or {}).items() if k != "live_data"}
        resolve(mcp, target, str(path))
        for task in load_tasks(target / "tasks.yaml", found.tags):
            where = f"{task.source}: task {task.id!r}"
            check_against_catalog(where, task.expected, task.canned, live.catalog, args=True, backend="mcp")
    return name, len(live.catalog), placement, copied


def _brief(result: object, width: int = 100) -> str:
    """A tool result on one line, cut to ``width`` characters, with its length when cut."""
    text = " ".join(str(result).split())
    return json.dumps(text if len(text) <= width else text[:width] + "...", ensure_ascii=False) + (
        f" ({len(text):,} chars)" if len(text) > width else ""
    )


def live_lines(live: dict[str, Any]) -> list[str]:
    """For a suite over a live server (check_suite's ``live``): per task, what the server returned.

    Also whether each read task's answer check holds on those results, and on live data what changed.
    """
    if not live:
        return []
    wrote, ops = live.get("wrote"), live.get("ops") or {}
    data = Path(live.get("live_data") or ".").resolve()
    shown = data.relative_to(Path.cwd().resolve()).as_posix() if Path.cwd().resolve() in data.parents else str(data)
    how = "on live data: NOT a copy" if wrote is not None else "a fresh server and copy per task"
    lines = [f"live MCP server {live['server']}: the oracle's calls went to it ({how}):"]
    flagged = 0
    for task, made in live["calls"].items():
        bad = [c for c in made if not c["ok"]]
        said = "; ".join(f"{c['op']}: {' '.join(str(c['result']).split())[:160]}" for c in bad)
        if bad:
            lines.append(f"  {task}: {len(bad)} of {len(made)} answered with an error: {said}")
        elif not made:
            lines.append(f"  {task}: no call")
        else:
            lines.append(f"  {task}: " + "; ".join(f"{c['op']} -> {_brief(c['result'])}" for c in made))
        why = (live.get("answers") or {}).get(task)
        if why:
            flagged += 1
            lines.append(f"    FLAG: its answer check cannot be read off the server's results: they {why}")
        elif why == "":
            lines.append("    answer check: holds on the server's results")
        if wrote is not None:
            writes = [c["op"] for c in made if c["op"] in ops and not ops[c["op"]].read_only]
            changed = ", ".join(wrote.get(task) or []) or "nothing"
            lines.append(
                f"    {shown}: changed {changed}"
                + (f" (calls not marked read-only: {', '.join(dict.fromkeys(writes))})" if writes else "")
            )
    lines.append(
        "  checked: the oracle's calls reach the server without an error, and each read task's answer words "
        f"occur in what the server returned ({flagged} flagged); a flagged task passes only when the model "
        "says what the results never do: a derived answer (a count, yes or no) is fine, a word the server "
        "never says is a task to fix"
    )
    return lines
