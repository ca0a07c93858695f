"""One direction of flow: every import of the core goes along the flow, and no import cycle anywhere.

The flow (docs/architecture.md): catalog -> surface -> episode loop <-> model -> backend -> scorer ->
results -> report / gate. The core is one package per stage (``bench/<stage>/``, :data:`ORDER` in flow
order), and a module's package is its stage; the three packages that kept their names belong to the stage
:data:`KEPT` gives. A module may import modules of its own stage or of an earlier one, never of a later
one. Every import counts: module-level, inside a function, and under ``TYPE_CHECKING`` (an annotation that
names a later stage is an arrow against the flow all the same). Surfaces may import only the stages up to
the contracts; suites up to the suite format. A module directly in ``bench/`` fails the test: it belongs
in the package of its stage.

Beside the stages, a **feature room** (``bench/<room>/``, :data:`ROOMS`) holds one feature that would
otherwise be cut across them (task synthesis, sequential decisions, the server's benchmarks, suite authoring,
prompt-cache modelling). A room has a place in the flow, a stage: it may import that stage and the ones before
it, and only the stages after its place may import it. A room stands after the core unless :data:`ROOM_PLACE`
gives it an earlier place: its place is then the last stage before the front ends, so it may import every stage
but ``cli``, and no stage imports it but ``cli``, which drives them all. A room the core reads (the prompt-cache
model, which the report and the gate read) is placed at the latest stage it imports, so that the stages after
it may import it. Another room is imported only where :data:`ROOM_IMPORTS` declares it, and only when that
room's place is no later than the importer's; neither surfaces nor suites import a room.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

ORDER = (
    "base", "catalog", "contracts", "suites", "models", "score", "store", "run", "analysis", "report", "view", "cli",
)  # fmt: skip
"""The stages in flow order: a module imports only from its own stage and the ones before it. The run stage
plays a cell (its episodes, their scores and rows into the store); the front ends (``cli``: the command
line, ``surfbench.run``, Hydra's composition) come last, as they drive every stage."""

KEPT = {"sandbox": "base", "mcp": "suites", "models": "models"}
"""Packages of the core that are not named after their stage: the sandbox, live MCP servers, model clients."""


ROOMS = {
    "synth": "task synthesis (surfbench synth): templates, world, candidates and their verification through the "
    "real loop and scorer, cut across suites, run and cli before",
    "sequential": "sequential decisions (gate --sequential, run until_decided=GATE): the always-valid test, its "
    "pairs, gate and runs, cut across analysis, report and cli before",
    "serverbench": "the local server's benchmarks and checks (scripts/bench_*.py): batching, the slot cache check; "
    "no user metric, so not in the analysis stage",
    "authoring": "suite authoring (surfbench init, check): scaffolds for a catalog or a live MCP server, its data's "
    "placement, the oracle replay, the retrieval chosen on the tasks; built on catalog, suites, run, store and "
    "analysis, in cli before",
    "promptcache": "prompt-cache modelling: each provider's cache replayed over a run's requests, their effective "
    "costs and the report's caching tables, cut across analysis and report before; named apart from the model "
    "stage's response cache (bench/models/cache.py)",
}
"""Feature rooms, each with why it is one: a package that imports the core stages up to its place
(:data:`ROOM_PLACE`), and that only the stages after its place import among the core."""

FRONT = ORDER[-1]
"""The front ends: the one stage a room after the core may not import, and the one stage that may import it."""

AFTER_CORE = ORDER[-2]
"""The place of a room :data:`ROOM_PLACE` does not name: the last stage before the front ends."""

ROOM_PLACE = {"promptcache": "analysis"}
"""Rooms placed earlier than after the core, each at the latest stage it may import: the stages after it may
import the room. The prompt-cache model reads run folders (store), cache profiles and segments (models) and the
metric registry (analysis), and the report, its cells table and the gate's effective-cost criteria read it."""

ROOM_IMPORTS: dict[str, frozenset[str]] = {"serverbench": frozenset({"promptcache"})}
"""The other rooms a room may import, each pair declared here: the slot cache check replays a local run's
requests through the prompt-cache model's one-slot profile."""


def place(stage: str) -> str:
    """The stage ``stage`` stands at: a stage itself, a room its :data:`ROOM_PLACE` or after the core."""
    return ROOM_PLACE.get(stage, AFTER_CORE) if stage in ROOMS else stage


OUTSIDE_CORE = {"surfaces": "contracts", "tasks": "suites"}
"""The latest core stage a surface module or a suite's module may import."""

EXCEPTIONS = {
    ("surfbench.tasks.bfcl.agreement", "surfbench.bench.store.results"): "BFCL's agreement check reads recorded runs",
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
            subs = [f"{node.module}.{a.name}" for a in node.names]
            # ``from package import module`` imports the module; the package counts only for a name it defines
            names = [*subs, node.module] if any(s not in known for s in subs) else subs
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out.update(n for n in names if n in known)
    return out


def stage_of(names: set[str] | None = None) -> dict[str, str]:
    """Module -> stage or room, from its package: ``surfbench.bench.store.results`` is of the store stage,
    ``surfbench.bench.synth.synth_run`` of the synth room."""
    out = {"surfbench.bench": "base"}
    for name in names if names is not None else set(modules()):
        parts = name.split(".")
        if parts[:2] != ["surfbench", "bench"] or len(parts) < 3:
            continue
        package = parts[2]
        stage = package if package in ORDER or package in ROOMS else KEPT.get(package)
        if stage is not None:
            out[name] = stage
    return out


def shown(stage: str) -> str:
    return f"{stage} room" if stage in ROOMS else stage


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(path, known) - {name} for name, path in found.items()}


def allowed(src_stage: str, dst_stage: str, declared: dict[str, frozenset[str]]) -> bool:
    """Whether a module of ``src_stage`` (a stage, a room, or the latest stage a surface or suite may import)
    may import one of ``dst_stage``: a stage at or before the importer's place, a room only from a stage after
    its place, or from a room that declares it and stands no earlier."""
    rank = {s: i for i, s in enumerate(ORDER)}
    if dst_stage in ROOMS:
        if src_stage in ROOMS:
            pair = dst_stage == src_stage or dst_stage in declared.get(src_stage, frozenset())
            return pair and rank[place(dst_stage)] <= rank[place(src_stage)]
        return rank[src_stage] > rank[place(dst_stage)]
    return rank[dst_stage] <= rank[place(src_stage)]


def arrows_against_the_flow(
    edges: dict[str, set[str]], stages: dict[str, str], declared: dict[str, frozenset[str]] = ROOM_IMPORTS
) -> list[str]:
    """Every import from a stage to a later one, between a stage and a room the wrong way, or between two rooms
    ``declared`` does not pair (room -> the rooms it may import)."""
    bad = []
    for src, dsts in sorted(edges.items()):
        top = src.split(".")[1]
        limit = stages[src] if top == "bench" else OUTSIDE_CORE[top]
        for dst in sorted(dsts):
            if not dst.startswith("surfbench.bench") or (src, dst) in EXCEPTIONS:
                continue
            if not allowed(limit, stages[dst], declared):
                where = shown(stages[src]) if src in stages else f"a {top} module"
                bad.append(f"{src} ({where}) imports {dst} ({shown(stages[dst])})")
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


def test_every_core_module_is_in_a_stage_package():
    core = {name for name in modules() if name.startswith("surfbench.bench")}
    loose = sorted(core - set(stage_of()))
    assert not loose, f"modules outside every stage package (move each into bench/<stage>/): {loose}"
    packages = {name.split(".")[2] for name in core if name.count(".") >= 2}
    assert set(ORDER) <= packages, "a stage has no package"
    assert set(ROOMS) <= packages, "a room has no package"
    assert not set(ROOMS) & (set(ORDER) | set(KEPT)), "a room is named like a stage"
    assert set(ROOM_IMPORTS) | {r for rooms in ROOM_IMPORTS.values() for r in rooms} <= set(ROOMS), "not a room"
    assert set(ROOM_PLACE) <= set(ROOMS), "a place for what is not a room"
    assert set(ROOM_PLACE.values()) <= set(ORDER[:-2]), "a room placed at the front ends, or at the default place"


def test_a_loose_module_has_no_stage():
    assert "surfbench.bench.helpers" not in stage_of({"surfbench.bench.helpers", "surfbench.bench.store.results"})
    assert stage_of({"surfbench.bench.mcp.mcp_client"})["surfbench.bench.mcp.mcp_client"] == "suites"
    assert stage_of({"surfbench.bench.synth.synth_run"})["surfbench.bench.synth.synth_run"] == "synth"
    model = "surfbench.bench.promptcache.prompt_cache_model"
    assert stage_of({model})[model] == "promptcache" and place("promptcache") == "analysis"
    assert place("synth") == AFTER_CORE == "view" and place("report") == "report"


def test_every_import_goes_along_the_flow():
    bad = arrows_against_the_flow(graph(), stage_of())
    assert not bad, "imports against the flow:\n  " + "\n  ".join(bad)


def test_no_import_cycle_anywhere():
    found = cycles(graph())
    assert not found, f"import cycles: {found}"


def test_the_test_catches_a_planted_arrow_and_a_planted_cycle():
    edges = graph()
    stages = stage_of()
    planted = {
        **edges,
        "surfbench.bench.catalog.catalog": edges["surfbench.bench.catalog.catalog"] | {"surfbench.bench.report.gate"},
    }
    assert (
        "surfbench.bench.catalog.catalog (catalog) imports surfbench.bench.report.gate (report)"
        in arrows_against_the_flow(planted, stages)
    )
    surface = {**edges, "surfbench.surfaces.full": edges["surfbench.surfaces.full"] | {"surfbench.bench.run.runner"}}
    assert any("surfaces.full" in line for line in arrows_against_the_flow(surface, stages))
    looped = {
        **planted,
        "surfbench.bench.report.gate": edges["surfbench.bench.report.gate"] | {"surfbench.bench.catalog.catalog"},
    }
    assert any({"surfbench.bench.catalog.catalog", "surfbench.bench.report.gate"} <= set(c) for c in cycles(looped))


def test_the_test_catches_a_stage_importing_a_room_and_a_room_importing_the_front_ends():
    edges = graph()
    stages = stage_of()
    gate, test = "surfbench.bench.report.gate", "surfbench.bench.sequential.sequential"
    from_core = {**edges, gate: edges[gate] | {test}}
    assert f"{gate} (report) imports {test} (sequential room)" in arrows_against_the_flow(from_core, stages)
    front = "surfbench.bench.cli.cli"  # the front ends may import a room
    from_front = {**edges, front: edges[front] | {test}}
    assert not [line for line in arrows_against_the_flow(from_front, stages) if line.startswith(f"{front} ")]
    surface = {**edges, "surfbench.surfaces.full": edges["surfbench.surfaces.full"] | {test}}
    assert any(line.startswith("surfbench.surfaces.full ") for line in arrows_against_the_flow(surface, stages))

    synth, session = "surfbench.bench.synth.synth_run", "surfbench.bench.cli.session"
    to_front = {**edges, synth: edges[synth] | {session}}
    assert f"{synth} (synth room) imports {session} (cli)" in arrows_against_the_flow(to_front, stages)
    late = {**edges, synth: edges[synth] | {"surfbench.bench.report.gate"}}  # any core stage but the front ends
    assert not [line for line in arrows_against_the_flow(late, stages) if line.startswith(f"{synth} ")]

    to_room = {**edges, synth: edges[synth] | {test}}
    line = f"{synth} (synth room) imports {test} (sequential room)"
    assert line in arrows_against_the_flow(to_room, stages)
    assert line not in arrows_against_the_flow(to_room, stages, {"synth": frozenset({"sequential"})})


@pytest.mark.parametrize(
    "source, seen",
    [
        ("def f():\n    from surfbench.bench.report.gate import judge\n", {"surfbench.bench.report.gate"}),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import surfbench.bench.report.gate\n",
            {"surfbench.bench.report.gate"},
        ),
        ("from surfbench.bench.report import gate\n", {"surfbench.bench.report.gate"}),
        ("from surfbench.bench.report import judge\n", {"surfbench.bench.report"}),
    ],
)
def test_function_level_and_type_checking_imports_count(tmp_path: Path, source: str, seen: set[str]):
    path = tmp_path / "m.py"
    path.write_text(source)
    assert imports(path, set(modules())) == seen


def test_a_placed_room_is_imported_after_its_place_and_imports_nothing_later():
    """The prompt-cache room stands at the analysis stage: the report and the gate may import it (they do),
    the analysis stage may not, and it imports nothing past the analysis, nor a room that stands later."""
    edges = graph()
    stages = stage_of()
    model, gate = "surfbench.bench.promptcache.prompt_cache_model", "surfbench.bench.report.gate"
    assert "surfbench.bench.promptcache.prompt_cache_requests" in edges[gate]  # the effective-cost criteria
    metrics = "surfbench.bench.analysis.metrics"
    at_place = {**edges, metrics: edges[metrics] | {model}}
    assert f"{metrics} (analysis) imports {model} (promptcache room)" in arrows_against_the_flow(at_place, stages)
    late = {**edges, model: edges[model] | {gate}}
    assert f"{model} (promptcache room) imports {gate} (report)" in arrows_against_the_flow(late, stages)
    early = {**edges, model: edges[model] | {"surfbench.bench.store.reader"}}
    assert not [line for line in arrows_against_the_flow(early, stages) if line.startswith(f"{model} ")]
    surface = {**edges, "surfbench.surfaces.full": edges["surfbench.surfaces.full"] | {model}}
    assert any(line.startswith("surfbench.surfaces.full ") for line in arrows_against_the_flow(surface, stages))

    check = "surfbench.bench.serverbench.slot_check"
    assert model in edges[check]  # declared in ROOM_IMPORTS
    assert f"{check} (serverbench room) imports {model} (promptcache room)" in arrows_against_the_flow(
        edges, stages, {}
    )
    batching = "surfbench.bench.serverbench.batching"
    back = {**edges, model: edges[model] | {batching}}
    line = f"{model} (promptcache room) imports {batching} (serverbench room)"
    assert line in arrows_against_the_flow(back, stages)  # undeclared
    assert line in arrows_against_the_flow(back, stages, {**ROOM_IMPORTS, "promptcache": frozenset({"serverbench"})})
