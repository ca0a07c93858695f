"""One direction of flow: every import of the core goes along the flow, and no import cycle anywhere.

The flow (docs/architecture.md): catalog -> surface -> episode loop <-> model -> backend -> scorer ->
results -> report / gate. Each module of ``bench/`` belongs to one stage of it (:data:`STAGES`, in flow
order); a module may import modules of its own stage or of an earlier one, never of a later one. Every
import counts: module-level, inside a function, and under ``TYPE_CHECKING`` (an annotation that names a
later stage is an arrow against the flow all the same). Surfaces may import only the stages up to the
contracts; suites up to the suite format. A module with no stage fails the test: name its stage here.

The stages are a map of module -> stage while the core is one folder; when it becomes packages by
stage (issue 28's floor plan), the package of a module will be its stage and this map goes away.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

ORDER = ("base", "catalog", "contracts", "suites", "models", "score", "store", "run", "analysis", "report", "cli")
"""The stages in flow order: a module imports only from its own stage and the ones before it. The run stage
plays a cell (its episodes, their scores and rows into the store); the front ends (``cli``: the command
line, ``surfbench.run``, Hydra's composition) come last, as they drive every stage."""

STAGES: dict[str, tuple[str, ...]] = {
    "base": (
        "__init__ paths secrets bounded validation taxonomy markdown sections config concurrency sandbox sandbox.box "
        "sandbox.channel sandbox.limits sandbox.memcap sandbox.procs sandbox.__main__"
    ).split(),
    "catalog": (
        "catalog wire limits importers importers.common importers.openapi importers.pycallable "
        "importers.tools_json pool pool_data embedding retrieval"
    ).split(),
    "contracts": "surface backend program records plugins registry".split(),
    "suites": (
        "fields expected matchers matcher_checks hooks suite_model suite_checks suite checks grow mcp mcp.backend "
        "mcp.catalog mcp.client mcp.guard mcp.http mcp.pool mcp.spec mcp.suites mcp.transport"
    ).split(),
    "models": (
        "models models.cache models.client models.cost models.litellm_setup models.local models.parsing "
        "models.prompting models.providers models.schema models.scripted models.server models.spec models.types"
    ).split(),
    "score": "scorer stuck".split(),
    "store": (
        "tables schema parts transcripts results commits claims compact evidence provenance reader recorded identity"
    ).split(),
    "run": ("episode cell fit rows play runner overrides progress").split(),
    "analysis": "metrics power compare multicall retrieval_eval funnel replay whatif_metrics whatif".split(),
    "report": ("report_choices scale_figure report_data figures report surface_report gate_criteria gate".split()),
    "cli": "tempdirs session compose sweep api cli scaffold scaffold_mcp scale_cli mcp.cli".split(),
}

OUTSIDE_CORE = {"surfaces": "contracts", "tasks": "suites"}
"""The latest core stage a surface module or a suite's module may import."""

EXCEPTIONS = {
    ("surfbench.tasks.bfcl.agreement", "surfbench.bench.results"): "BFCL's agreement check reads recorded runs",
}
"""Imports out of a suite folder past its stage, each with its reason (an analysis shipped with a suite)."""


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["surfbench", *parts])


def modules() -> dict[str, Path]:
    found = {}
    for top in ("bench", "surfaces", "tasks"):
        for path in (ROOT / top).rglob("*.py"):
            if "workspace/files" not in path.as_posix():
                found[module_name(path)] = path
    return found


def imports(path: Path, known: set[str]) -> set[str]:
    """The known modules ``path`` imports anywhere (module level, functions, TYPE_CHECKING)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out.update(n for n in names if n in known)
    return out


def stage_of() -> dict[str, str]:
    return {f"surfbench.bench.{m}" if m != "__init__" else "surfbench.bench": s for s, ms in STAGES.items() for m in ms}


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(path, known) - {name} for name, path in found.items()}


def arrows_against_the_flow(edges: dict[str, set[str]], stages: dict[str, str]) -> list[str]:
    rank = {s: i for i, s in enumerate(ORDER)}
    bad = []
    for src, dsts in sorted(edges.items()):
        top = src.split(".")[1]
        limit = rank[stages[src]] if top == "bench" else rank[OUTSIDE_CORE[top]]
        for dst in sorted(dsts):
            if not dst.startswith("surfbench.bench") or (src, dst) in EXCEPTIONS:
                continue
            if rank[stages[dst]] > limit:
                where = stages.get(src, f"a {top} module")
                bad.append(f"{src} ({where}) imports {dst} ({stages[dst]})")
    return bad


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_every_core_module_has_one_stage():
    stages = stage_of()
    listed = [m for ms in STAGES.values() for m in ms]
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"modules named in two stages: {twice}"
    core = {name for name in modules() if name.startswith("surfbench.bench")}
    missing = sorted(core - set(stages))
    assert not missing, f"modules with no stage (name one in tests/test_layers.py STAGES): {missing}"
    assert not sorted(set(stages) - core), "STAGES names modules that no longer exist"


def test_every_import_goes_along_the_flow():
    bad = arrows_against_the_flow(graph(), stage_of())
    assert not bad, "imports against the flow:\n  " + "\n  ".join(bad)


def test_no_import_cycle_anywhere():
    found = cycles(graph())
    assert not found, f"import cycles: {found}"


def test_the_test_catches_a_planted_arrow_and_a_planted_cycle():
    edges = graph()
    stages = stage_of()
    planted = {**edges, "surfbench.bench.catalog": edges["surfbench.bench.catalog"] | {"surfbench.bench.gate"}}
    assert "surfbench.bench.catalog (catalog) imports surfbench.bench.gate (report)" in arrows_against_the_flow(
        planted, stages
    )
    surface = {**edges, "surfbench.surfaces.full": edges["surfbench.surfaces.full"] | {"surfbench.bench.runner"}}
    assert any("surfaces.full" in line for line in arrows_against_the_flow(surface, stages))
    looped = {**planted, "surfbench.bench.gate": edges["surfbench.bench.gate"] | {"surfbench.bench.catalog"}}
    assert any({"surfbench.bench.catalog", "surfbench.bench.gate"} <= set(c) for c in cycles(looped))


@pytest.mark.parametrize(
    "source, seen",
    [
        ("def f():\n    from surfbench.bench.gate import judge\n", {"surfbench.bench.gate"}),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import surfbench.bench.gate\n",
            {"surfbench.bench.gate"},
        ),
        ("from surfbench.bench import gate\n", {"surfbench.bench", "surfbench.bench.gate"}),
    ],
)
def test_function_level_and_type_checking_imports_count(tmp_path: Path, source: str, seen: set[str]):
    path = tmp_path / "m.py"
    path.write_text(source)
    assert imports(path, set(modules())) == seen
