"""``surfbench init --mcp "COMMAND ARGS" DIR`` (or ``--mcp-url URL``): a suite over a live MCP server.

The server is started once and its tools listed; DIR gets suite.yaml (``catalog: {mcp: ..., pinned:
tools.json}``, ``backend: mcp``), tools.json (the ``tools/list`` answer as sent, what ``surfbench
catalog dump`` writes), tasks.yaml (bench/cli/scaffold.py's example tasks without ``canned``: results
come from the server), README.md and configs/suite/<name>.yaml. Also the command line of ``init``
and ``check`` (for a live suite, ``check`` says per task what the oracle's calls got from the server).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from surfbench.bench.base.config import group_names
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.cli.scaffold import (
    REFUSE_ANSWER,
    SYSTEM_PROMPT,
    _dump,
    _slug,
    _task,
    _working_op,
    building,
    check_suite,
    example_operations,
    init_suite,
    smoke_turn,
    suite_name,
)
from surfbench.bench.mcp.spec import STARTUP_TIMEOUT_S, McpError, ServerSpec

SURFACES = "full,dispatcher,preselect,search"
MODEL = "qwen2.5-coder-0.5b-instruct"


def server_for_init(args: argparse.Namespace) -> ServerSpec | None:
    """The live server ``init`` names (None for ``--catalog``); McpError for a bad combination of options."""
    from surfbench.bench.cli.mcp import server_spec

    spec = server_spec(args)  # exactly one of --catalog, --mcp, --mcp-url
    if spec is None and args.mcp_header:
        raise McpError(args.catalog, "--mcp-header applies to --mcp-url only")
    if spec is not None and args.format:
        raise McpError(spec.label, "--format applies to --catalog only (a live server's list is MCP)")
    return spec


def server_mapping(spec: ServerSpec) -> dict[str, Any]:
    """suite.yaml's ``catalog.mcp`` for the server as given (``python`` stays ``python``)."""
    found: dict[str, Any] = {"command": spec.command, "args": list(spec.args)} if spec.command else {"url": spec.url}
    if spec.headers:
        found["headers"] = dict(spec.headers)
    if spec.startup_timeout_s != STARTUP_TIMEOUT_S:
        found["startup_timeout_s"] = spec.startup_timeout_s
    return found


def relative_paths(spec: ServerSpec) -> list[str]:
    """Arguments (or ``--opt=VALUE`` values) that name an existing path relative to the current folder."""
    found = []
    for arg in spec.args:
        value = arg.partition("=")[2] if arg.startswith("-") else arg
        if value and not os.path.isabs(value) and not value.startswith("{") and Path(value).exists():
            found.append(arg)
    return found


def _flow(value: Any) -> str:
    """``value`` as YAML on one line (a list or mapping in flow style)."""
    return str(yaml.safe_dump([value], default_flow_style=True, width=10**6, allow_unicode=True)).strip()[1:-1]


def suite_text(name: str, spec: ServerSpec, catalog: Catalog) -> str:
    """suite.yaml: the live server, the pinned listing, ``backend: mcp``, and how to add what it lacks."""
    server = "\n".join(f"    {k}: {_flow(v)}" for k, v in server_mapping(spec).items())
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
    # fixture: data              # a folder of this suite, copied to a fresh working copy for every episode;
    #                            # write "{{workdir}}" in args where the server should find that copy
    # setup: fixture.py:build    # fn(path): called on each fresh working copy before the server starts
    #                            # (builds what a folder cannot ship, such as a .git; tasks/git does)
    #                            # with fixture or setup the server runs in the working copy, so relative
    #                            # paths in args resolve there, not where `surfbench run` starts
    # reset_tool: reset          # a tool the harness calls with {{scenario: NAME}} between episodes instead
    #                            # of starting a fresh server (hidden from the model)
    # call_timeout_s: 10         # a slower call is a tool error of type tool_timeout
  pinned: tools.json             # the tools/list answer init saw, as sent; a run warns when the live list differs
backend: mcp                     # each call goes to the live server ({fresh} per episode)
# backend_options: {{state: state.py:read_state}}   # fn(workdir) -> dict: what tasks' `state:` checks read
{_dump(rest).rstrip()}
"""


def _runnable_op(catalog: Catalog, first: list[Operation]) -> Operation | None:
    """The runnable task's operation: never a destructive one; read-only first (the check really calls it)."""
    safe = tuple(op for op in catalog if not op.destructive)
    if not safe:
        return None
    return _working_op(Catalog(name=catalog.name, operations=safe), [op for op in first if not op.destructive])


def tasks_text(catalog: Catalog) -> str:
    """tasks.yaml: bench/cli/scaffold.py's runnable tasks and commented examples, without ``canned``."""
    chosen = example_operations(catalog)
    out = [
        "# Tasks of this suite (format: docs/suites.md in surfbench, 'The suite and task format').",
        "# A live server: every call goes to it and its answer goes back to the model (no `canned` here).",
        "# These tasks are STARTING POINTS: their arguments are placeholders and the server answers with its",
        "# own data, so a task may fail `surfbench check` (the server refuses the call) until you edit it to",
        "# match what the server really does: real values in args, the turn a user would write, and checks:",
        "# answer: {contains: [...]} for what the answer must say; for a write, state: [...] with suite.yaml's",
        "# backend_options.state (a function reading the working copy).",
        "# expected: the calls a correct answer makes; args are matchers: a value, a list of accepted values",
        '# ("" = may be omitted), {$regex: ...}, {$any: true}, {$set: [...]}; a list value is written [[a, b]].',
        "#",
    ]
    runnable = []
    op = _runnable_op(catalog, chosen)
    if op is not None:
        task = _task(op, f"smoke-{_slug(op.name)}", smoke_turn(op), {})
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
    out += [_dump(runnable).rstrip(), "", "# Examples, one per operation of bench/cli/scaffold.py's example_operations"]
    out += ["# (the heaviest, else round-robin over categories). Uncomment one, write its turn as a user would"]
    out += ["# ask, put real values in args, and add an answer or state check for what the server really does."]
    for op in chosen:
        task = _task(op, _slug(op.name), f"{(op.summary or op.name).rstrip('.')}.", {})
        del task["canned"]
        out += ["#", *(f"# {line}" for line in _dump([task]).rstrip().splitlines())]
    return "\n".join(out) + "\n"


def _readme(name: str, folder: Path, spec: ServerSpec, tools: int) -> str:
    home = folder.resolve()
    given = f"--mcp {shlex.quote(spec.label)}" if spec.command else f"--mcp-url {shlex.quote(str(spec.url))}"
    given += "".join(f" --mcp-header {shlex.quote(f'{k}={v}')}" for k, v in spec.headers.items())
    paths = ", ".join(f"`{p}`" for p in relative_paths(spec))
    where = (
        f"\n**Relative paths.** Arguments that are relative paths ({paths}) are written as given: the server\n"
        "starts in the directory `surfbench check` or `surfbench run` starts in (`run` does not change it), so\n"
        f"they resolve from there. `init` ran in `{Path.cwd()}`: run from there, or make them absolute.\n"
        if paths
        else ""
    )
    server = (
        "Every episode starts a fresh server with this command and sends it the model's calls, for real: if\n"
        "its arguments name your own data, writes change it. For a fresh copy per episode, add `fixture:` (a\n"
        "folder copied per episode, `{workdir}` in the arguments) or `setup:` (a function that builds it) to\n"
        "suite.yaml's `catalog.mcp`; the server then starts in that copy (relative paths resolve there).\n"
        "Without them it starts in the directory `surfbench` runs in.\n"
        if spec.command
        else "Every episode opens a new session on this running server and sends it the model's calls, for\n"
        "real: the server keeps what one episode writes for the next (no fresh copy per episode).\n"
        + (f"Headers are read from the environment: {', '.join(f'`{v}`' for v in spec.headers.values())}.\n"
           if spec.headers else "")
    )  # fmt: skip
    return f"""# {name}: a surfbench suite over a live MCP server

Written by `surfbench init {given.split(" ", 1)[0]}` for the server ({tools} tools)

    {spec.label}

`suite.yaml` (the server, `backend: mcp`), `tools.json` (its `tools/list` answer as sent, byte for byte;
a run warns when the live list differs), `tasks.yaml` (runnable tasks and commented examples: starting
points, edit them to match what the server really does) and `configs/suite/{name}.yaml` (what lets
`surfbench run` find the suite).

{server}{where}
Check it (the schemas, the expected calls, and an oracle replay of every task: per task, whether its
calls reached the server without an error; a placeholder argument the server refuses fails until edited):

    surfbench check {home}

The surfaces over the live list (no model):

    surfbench surfaces {given}

Run a sweep and report it (`SURFBENCH_SUITES` and `SURFBENCH_CONFIGS` take `:`-separated folders,
searched before the shipped ones; the run prints its folder, `run=NAME` chooses it):

    export SURFBENCH_SUITES={home.parent}
    export SURFBENCH_CONFIGS={home / "configs"}
    surfbench run -m suite={name} surface={SURFACES} model={MODEL}
    surfbench report results/<run>
"""


def init_mcp_suite(spec: ServerSpec, folder: Path, name: str | None = None, force: bool = False) -> tuple[str, int]:
    """Start the server once, list its tools, write the suite into ``folder``; (its name, tools listed).

    Raises:
        ConfigError: the folder or name (before the server starts); McpError: the server.
    """
    from surfbench.bench.mcp.catalog import live_catalog
    from surfbench.bench.mcp.suites import resolve
    from surfbench.bench.suites.fields import read_yaml
    from surfbench.bench.suites.format_checks import check_against_catalog, suite_file
    from surfbench.bench.suites.suite import load_tasks

    name = suite_name(folder, name, force)
    live = live_catalog(spec, name=name)
    with building(folder, name) as target:
        (target / "tools.json").write_bytes(live.snapshot())  # what `catalog dump` writes: the answer as sent
        path = target / "suite.yaml"
        path.write_text(suite_text(name, spec, live.catalog), encoding="utf-8")
        (target / "tasks.yaml").write_text(tasks_text(live.catalog), encoding="utf-8")
        (target / "README.md").write_text(_readme(name, folder, spec, len(live.catalog)), encoding="utf-8")
        # what load_suite checks, against the list just read (loading it would start the server again)
        found = suite_file(read_yaml(path), path)
        resolve(found.catalog_mcp, target, str(path))
        for task in load_tasks(target / "tasks.yaml", found.tags):
            where = f"{task.source}: task {task.id!r}"
            check_against_catalog(where, task.expected, task.canned, live.catalog, args=True, backend="mcp")
    return name, len(live.catalog)


def live_lines(live: dict[str, Any]) -> list[str]:
    """For a suite over a live server (check_suite's ``live``): per task, what the oracle's calls got."""
    if not live:
        return []
    lines = [f"live MCP server {live['server']}: the oracle's calls went to it (a fresh server per task):"]
    for task, made in live["calls"].items():
        bad = [c for c in made if not c["ok"]]
        said = "; ".join(f"{c['op']}: {' '.join(str(c['result']).split())[:160]}" for c in bad)
        ops = ", ".join(dict.fromkeys(c["op"] for c in made))
        outcome = f"{len(bad)} of {len(made)} answered with an error: {said}" if bad else f"{ops}: no error"
        lines.append(f"  {task}: {outcome if made else 'no call'}")
    lines.append(
        "  checked: the oracle's calls reach the server without an error; not checked: that its answers are "
        "what a task means (each task's answer and state checks, which you write)"
    )
    return lines


def _init(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    spec = server_for_init(args)
    if spec is None:
        name = init_suite(args.catalog, folder, fmt=args.format, name=args.name, force=args.force)
        print(f"wrote suite {name!r} in {folder} (see {folder / 'README.md'}); check it: surfbench check {folder}")
        return 0
    name, tools = init_mcp_suite(spec, folder, name=args.name, force=args.force)
    print(
        f"wrote suite {name!r} over the live MCP server {spec.label} ({tools} tools) in {folder} "
        f"(see {folder / 'README.md'}); edit tasks.yaml, then check it: surfbench check {folder}"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    live: dict[str, Any] = {}
    ran, solved, lines = check_suite(args.suite, live)
    for line in live_lines(live):
        print(line)
    for line in lines:
        print(f"surfbench: check: {line}", file=sys.stderr)
    name = Path(args.suite).name if Path(args.suite).is_dir() else args.suite.partition(":")[0]
    if name not in group_names("suite") and not (Path(args.suite) / "configs" / "suite" / f"{name}.yaml").is_file():
        print(f"note: no configs/suite/{name}.yaml in SURFBENCH_CONFIGS: `surfbench run suite={name}` needs one")
    if lines:
        print(f"{len(lines)} problem(s): {ran} tasks, oracle solves {solved}/{ran}")
        return 2
    print(f"ok: {ran} tasks, oracle solves {solved}/{ran}")
    return 0


def add_commands(sub: Any) -> None:
    """The ``init`` and ``check`` subcommands, on the ``surfbench`` parser's subparsers."""
    from surfbench.bench.cli.mcp import add_server_options

    p = sub.add_parser(
        "init", help="write a suite for a catalog (code-free) or a live MCP server: suite.yaml, tasks.yaml, README"
    )
    p.add_argument("dir", metavar="DIR", help="the new suite's folder (its name is the suite's)")
    p.add_argument(
        "--catalog", default=None, help="catalog file (OpenAI/Anthropic/MCP/OpenAPI/BFCL/native) or module:attr"
    )
    add_server_options(p)  # --mcp COMMAND / --mcp-url URL instead of --catalog: a suite over the live server
    p.add_argument("--format", default=None, help="catalog format when it cannot be guessed")
    p.add_argument("--name", default=None, help="suite name (default and only choice: DIR's name)")
    p.add_argument("--force", action="store_true", help="write into a non-empty DIR, replacing the files init writes")
    p.set_defaults(func=_init)
    p = sub.add_parser("check", help="validate a suite: schemas, expected calls, and an oracle replay of every task")
    p.add_argument("suite", metavar="DIR_OR_NAME", help="a suite folder, or a suite's name")
    p.set_defaults(func=_check)
