"""``surfbench synth`` without hand-written templates: arguments that are arrays of objects are built from the
schema and the world, and a candidate nothing can fill is rejected naming what had no value and where to
give one (issue 50, point 4: a knowledge-graph server's ``create_entities`` was skipped, and the summary said
only "a slot or a required argument has no value in the world")."""

from __future__ import annotations

import json
import random
from pathlib import Path

from surfbench.bench.catalog.catalog import Operation
from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.suites.synth_world import World, harvest, reads, world_value

ENTITY = {"type": "object", "required": ["name", "entityType", "observations"], "properties": {
    "name": {"type": "string"}, "entityType": {"type": "string"},
    "observations": {"type": "array", "items": {"type": "string"}}}}  # fmt: skip
CREATE_ENTITIES = Operation(
    "create_entities", "Create entities in the knowledge graph.",
    {"type": "object", "required": ["entities"], "properties": {"entities": {"type": "array", "items": ENTITY}}},
)  # fmt: skip
RELATION = {"type": "object", "required": ["from", "to", "relationType"], "properties": {
    "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}}}  # fmt: skip
CREATE_RELATIONS = Operation(
    "create_relations", "Link entities.",
    {"type": "object", "required": ["relations"], "properties": {"relations": {"type": "array", "items": RELATION}}},
)  # fmt: skip
GRAPH = {  # what the memory server's read_graph answers
    "entities": [{"name": "Bob", "entityType": "person", "observations": ["likes tea", "works remotely"]},
                 {"name": "Acme", "entityType": "company", "observations": []}],
    "relations": [{"from": "Bob", "to": "Acme", "relationType": "works_at"}],
}  # fmt: skip


def graph_world() -> World:
    world = World(source="live")
    harvest(GRAPH, world)
    return world


def test_an_array_of_objects_is_built_from_the_schema_with_values_the_world_holds():
    world = graph_world()
    value = world_value(world, "entities", CREATE_ENTITIES, random.Random(0))
    assert isinstance(value, list) and len(value) == 1
    (entity,) = value
    assert set(entity) == {"name", "entityType", "observations"}
    assert entity["name"] in {"Bob", "Acme"} and entity["entityType"] in {"person", "company"}
    # a list's members are world values under the list's key: an observation the graph holds, not an invented one
    assert len(entity["observations"]) == 1 and entity["observations"][0] in {"likes tea", "works remotely"}
    relation = world_value(world, "relations", CREATE_RELATIONS, random.Random(0))[0]
    assert relation["relationType"] == "works_at" and {relation["from"], relation["to"]} <= {"Bob", "Acme"}


def test_an_object_field_nothing_can_fill_leaves_the_argument_unresolved():
    world = World()  # no values at all: a text field has nothing to take, and none is invented
    assert world_value(world, "entities", CREATE_ENTITIES, random.Random(0)) is None


def test_the_summary_names_what_had_no_value_and_where_to_give_one(tmp_path: Path, capsys):
    catalog = tmp_path / "tools.json"
    catalog.write_text(json.dumps([
        {"name": "get_user", "description": "Read a user's profile.",
         "inputSchema": {"type": "object", "required": ["username"], "properties": {"username": {"type": "string"}}}},
    ]))  # fmt: skip
    suite = tmp_path / "users"
    assert cli_main(["init", "--catalog", str(catalog), str(suite)]) == 0
    capsys.readouterr()
    assert cli_main(["synth", str(suite), "--n", "2", "--progress", "plain", "--out", str(tmp_path / "t.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "rejected by reason: unresolved 3" in out, out
    line = next(x for x in out.splitlines() if x.startswith("unresolved, what had no value:"))
    assert "argument username of get_user 3" in line and "synth/templates.yaml" in line and "docs/suites.md" in line


def test_an_operation_that_removes_takes_a_whole_record_the_world_holds_camel_case_names_included():
    """A relation to delete must exist: built field by field it would pair names at random (no_effect)."""
    relations = [{"from": "Bob", "to": "Acme", "relationType": "works_at"},
                 {"from": "Carol", "to": "Bob", "relationType": "knows"}]  # fmt: skip
    world = World(source="live")
    harvest({**GRAPH, "relations": relations}, world)
    for name in ("delete_relations", "deleteRelations"):
        op = Operation(name, "Delete relations.", CREATE_RELATIONS.parameters)
        drawn = [world_value(world, "relations", op, random.Random(seed))[0] for seed in range(10)]
        assert all(r in relations for r in drawn), (name, drawn)
    mixed = [world_value(world, "relations", CREATE_RELATIONS, random.Random(seed))[0] for seed in range(10)]
    assert any(r not in relations for r in mixed)  # a create puts one together: a new relation


def test_an_operation_named_in_camel_case_is_read_as_a_read_when_the_catalog_declares_none():
    """readGraph, searchNodes, getUser read; createEntities and deleteRelations do not (no read-only hints)."""
    for name in ("readGraph", "searchNodes", "read_graph", "getUser", "ListIssues"):
        assert reads(Operation(name, "x", {"type": "object", "properties": {}})), name
    for name in ("createEntities", "deleteRelations", "addObservations"):
        assert not reads(Operation(name, "x", {"type": "object", "properties": {}})), name
