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
from surfbench.bench.synth.synth_world import (
    NEW_NAMES,
    World,
    harvest,
    names_folder,
    names_new_thing,
    reads,
    text_records,
    world_value,
)

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
    # what it creates is new (one the graph holds would change nothing); what describes it comes from the world
    assert entity["name"] not in {"Bob", "Acme"} and entity["name"] in NEW_NAMES
    assert entity["entityType"] in {"person", "company"}
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


def test_what_a_create_names_is_new_and_what_it_refers_to_exists():
    """``branch_name`` of a branch create and ``name`` of a label create name the new thing; ``entityName`` of
    ``add_observations`` and ``branch_name`` of a checkout name something that must exist."""
    op = Operation("git_create_branch", "Create a branch.", {"type": "object", "properties": {}})
    assert names_new_thing(op, "branch_name") and not names_new_thing(op, "base_branch")
    assert names_new_thing(Operation("create_label", "", {}), "name")
    assert not names_new_thing(Operation("add_observations", "", {}), "entityName")
    assert not names_new_thing(Operation("git_checkout", "", {}), "branch_name")
    assert not names_new_thing(Operation("delete_label", "", {}), "name")


def test_an_argument_naming_the_data_folder_gets_the_working_copy_of_a_server_started_in_it():
    assert names_folder("repo_path") and names_folder("repository") and names_folder("root_dir")
    assert not names_folder("file_path") and not names_folder("branch_name")
    op = Operation("git_status", "Status.", {"type": "object", "required": ["repo_path"],
                                             "properties": {"repo_path": {"type": "string"}}})  # fmt: skip
    assert world_value(World(), "repo_path", op, random.Random(0)) is None  # nothing says where the data is
    assert world_value(World(workdir="."), "repo_path", op, random.Random(0)) == "."


def test_a_server_that_answers_in_text_gives_records_and_lists_and_a_description_its_options():
    """mcp-server-git answers in text: ``Key: value`` lines are records, a list of names is remembered under
    what the operation reads, and an option a description quotes fills a string argument with no enum."""
    log = "Commit: 'ab12cd'\nAuthor: <Actor 'A'>\nMessage: 'first commit'\nCommit: 'ef34'\nMessage: 'second'\n"
    assert text_records(log) == [
        {"commit": "ab12cd", "author": "<Actor 'A'>", "message": "first commit"},
        {"commit": "ef34", "message": "second"},
    ]
    assert text_records("On branch main\nnothing to commit") == []
    show = Operation("git_show", "Show a commit.", {"type": "object", "required": ["revision"],
                                                    "properties": {"revision": {"type": "string"}}})  # fmt: skip
    world = World(source="live")
    harvest(text_records(log), world)
    assert world_value(world, "revision", show, random.Random(0)) in {"ab12cd", "ef34"}  # a revision is a commit
    kind = {"type": "string", "description": "Whether to list local ('local') or all ('all')."}
    params = {"type": "object", "required": ["branch_type"], "properties": {"branch_type": kind}}
    branch = Operation("git_branch", "", params)
    assert world_value(World(source="live"), "branch_type", branch, random.Random(0)) == "local"
