"""`surfbench diff`'s core: what a catalog change does to each operation, and which changes break old callers."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.catalog_diff import (
    SCHEMA_KINDS,
    CatalogDiff,
    OperationChange,
    SchemaChange,
    diff_catalogs,
    format_markdown,
    rename_score,
    schema_changes,
    to_json,
)
from surfbench.bench.suites.suite import load_suite


def obj(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, **extra}
    if required:
        schema["required"] = required
    return schema


def kinds(changes: list[SchemaChange] | tuple[SchemaChange, ...]) -> list[tuple[str, str, bool]]:
    return [(c.path, c.kind, c.breaking) for c in changes]


@pytest.fixture(scope="module")
def forge() -> Catalog:
    return load_suite("forge").catalog


def edit(catalog: Catalog, name: str, change: Callable[[dict[str, Any]], None] | None = None, **fields: Any) -> Catalog:
    """The catalog with operation ``name``'s parameters edited in a deep copy by ``change``, and ``fields`` set."""
    ops = []
    for op in catalog.operations:
        if op.name == name:
            params = copy.deepcopy(op.parameters)
            if change:
                change(params)
            op = replace(op, parameters=params, **fields)
        ops.append(op)
    return replace(catalog, operations=tuple(ops))


def by_name(diff: CatalogDiff) -> dict[str, OperationChange]:
    return {c.name: c for c in diff.changes}


# ---- schema_changes on hand-written schemas ---------------------------------------------------------------------


def test_a_new_required_argument_and_an_optional_one_made_required_break_callers() -> None:
    old = obj({"owner": {"type": "string"}, "tag": {"type": "string"}}, ["owner"])
    new = obj(
        {"owner": {"type": "string"}, "tag": {"type": "string"}, "sha": {"type": "string"}}, ["owner", "sha", "tag"]
    )
    found = schema_changes(old, new)
    assert kinds(found) == [("properties.sha", "required_added", True), ("properties.tag", "required_added", True)]
    assert "sha" in found[0].detail and "string" in found[0].detail


def test_optional_argument_added_and_required_relaxed_are_compatible_removal_is_not() -> None:
    old = obj({"a": {"type": "string"}, "b": {"type": "string"}}, ["a", "b"])
    new = obj({"a": {"type": "string"}, "c": {"type": "integer"}}, ["a"])
    assert kinds(schema_changes(old, new)) == [
        ("properties.b", "property_removed", True),
        ("properties.c", "property_added", False),
    ]
    assert kinds(schema_changes(obj({"a": {}}, ["a"]), obj({"a": {}}))) == [("properties.a", "required_removed", False)]


@pytest.mark.parametrize(
    ("before", "after", "kind", "breaking"),
    [
        (["string", "null"], "string", "type_narrowed", True),
        ("number", "integer", "type_narrowed", True),
        (["string", "integer"], ["string"], "type_narrowed", True),
        ("string", ["string", "null"], "type_widened", False),
        ("integer", "number", "type_widened", False),
        ("string", "integer", "type_changed", True),
    ],
)
def test_type_narrowed_widened_or_changed(before: Any, after: Any, kind: str, breaking: bool) -> None:
    found = schema_changes(obj({"x": {"type": before}}), obj({"x": {"type": after}}))
    assert kinds(found) == [("properties.x.type", kind, breaking)]


def test_same_types_spelled_differently_are_no_change() -> None:
    assert schema_changes(obj({"x": {"type": "string"}}), obj({"x": {"type": ["string"]}})) == []
    assert schema_changes(obj({"x": {"type": ["number", "integer"]}}), obj({"x": {"type": "number"}})) == []


def test_enum_values_removed_added_or_newly_imposed_inside_array_items() -> None:
    def labels(items: dict[str, Any]) -> dict[str, Any]:
        return obj({"labels": {"type": "array", "items": items}})

    old = labels({"type": "string", "enum": ["bug", "docs", "feature"]})
    new = labels({"type": "string", "enum": ["bug", "feature", "question"]})
    found = schema_changes(old, new)
    assert kinds(found) == [
        ("properties.labels.items.enum", "enum_value_added", False),
        ("properties.labels.items.enum", "enum_value_removed", True),
    ]
    assert '"docs"' in found[1].detail and '"question"' in found[0].detail
    imposed = schema_changes(labels({"type": "string"}), labels({"type": "string", "enum": ["bug"]}))
    assert kinds(imposed) == [("properties.labels.items.enum", "enum_added", True)]


def test_nested_object_changes_are_reported_at_their_own_path() -> None:
    def schema(state: dict[str, Any], required: list[str]) -> dict[str, Any]:
        return obj({"filter": obj({"state": state, "q": {"type": "string"}}, required)})

    old = schema({"type": "string", "description": "Which ones."}, [])
    new = schema({"type": "string", "description": "Which issues."}, ["state"])
    assert kinds(schema_changes(old, new)) == [
        ("properties.filter.properties.state", "required_added", True),
        ("properties.filter.properties.state.description", "description_changed", False),
    ]


def test_description_and_default_changes_are_compatible() -> None:
    old = obj({"limit": {"type": "integer", "default": 10, "description": "Most results."}})
    new = obj({"limit": {"type": "integer", "default": 50, "description": "Maximum number of results."}})
    found = schema_changes(old, new)
    assert kinds(found) == [
        ("properties.limit.default", "default_changed", False),
        ("properties.limit.description", "description_changed", False),
    ]
    assert "10 -> 50" in found[0].detail


def test_closing_additional_properties_breaks_and_opening_does_not() -> None:
    open_, closed = obj({"a": {}}), obj({"a": {}}, additionalProperties=False)
    assert kinds(schema_changes(open_, closed)) == [("additionalProperties", "additional_closed", True)]
    assert kinds(schema_changes(closed, open_)) == [("additionalProperties", "additional_opened", False)]


@pytest.mark.parametrize(
    ("before", "after", "kind", "breaking"),
    [
        ({"minimum": 1}, {"minimum": 2}, "constraint_tightened", True),
        ({"minimum": 1}, {"minimum": 0}, "constraint_loosened", False),
        ({}, {"maximum": 100}, "constraint_tightened", True),
        ({"maximum": 100}, {}, "constraint_loosened", False),
        ({"maxLength": 50}, {"maxLength": 20}, "constraint_tightened", True),
        ({"minLength": 3}, {"minLength": 1}, "constraint_loosened", False),
        ({}, {"pattern": "^[a-z]+$"}, "constraint_tightened", True),
        ({"pattern": "^[a-z]+$"}, {}, "constraint_loosened", False),
    ],
)
def test_bounds_tightened_break_and_loosened_do_not(
    before: dict[str, Any], after: dict[str, Any], kind: str, breaking: bool
) -> None:
    key = next(iter(before or after))
    found = schema_changes(obj({"n": {"type": "integer", **before}}), obj({"n": {"type": "integer", **after}}))
    assert kinds(found) == [(f"properties.n.{key}", kind, breaking)]


def test_unions_are_compared_as_a_whole() -> None:
    def union(*types: str) -> dict[str, Any]:
        return obj({"v": {"anyOf": [{"type": t} for t in types]}})

    assert kinds(schema_changes(union("string"), union("string", "null"))) == [
        ("properties.v.anyOf", "union_changed", False)
    ]
    assert kinds(schema_changes(union("string", "integer"), union("string"))) == [
        ("properties.v.anyOf", "union_changed", True)
    ]
    # Optional[str] written as a union where a plain type was: old strings still pass, so nothing breaks
    plain = obj({"v": {"type": "string", "description": "V."}})
    optional = obj({"v": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "V."}})
    found = schema_changes(plain, optional)
    assert not any(c.breaking for c in found), found
    assert {c.kind for c in found} == {"union_changed", "type_widened"}
    # a union imposed that the old values do not fit does break
    assert any(c.breaking for c in schema_changes(plain, obj({"v": {"anyOf": [{"type": "integer"}]}})))


def test_unanalysed_keywords_count_as_breaking_and_every_kind_is_documented() -> None:
    old = obj({"a": {"type": "string", "not": {"const": "x"}}})
    new = obj({"a": {"type": "string", "not": {"const": "y"}}})
    assert kinds(schema_changes(old, new)) == [("properties.a.not", "schema_changed", True)]
    every = schema_changes(
        obj({"a": {"type": "string", "enum": ["x", "y"]}, "b": {}}, ["a"], additionalProperties=False),
        obj({"a": {"type": "integer", "enum": ["x", "z"]}, "c": {"minimum": 1}}, ["c"]),
    )
    assert {c.kind for c in every} <= set(SCHEMA_KINDS)


def test_schema_changes_are_sorted_and_equal_schemas_have_none() -> None:
    old = obj({"z": {"type": "string"}, "a": {"type": "string"}})
    new = obj({"z": {"type": "integer"}, "a": {"type": "integer"}, "m": {}})
    paths = [c.path for c in schema_changes(old, new)]
    assert paths == sorted(paths) == ["properties.a.type", "properties.m", "properties.z.type"]
    assert schema_changes(old, copy.deepcopy(old)) == []


# ---- rename_score -----------------------------------------------------------------------------------------------

PARAMS = obj({"owner": {"type": "string"}, "repo": {"type": "string"}, "id": {"type": "integer"}})


def test_rename_score_is_high_for_the_same_operation_renamed_and_low_for_an_unrelated_one() -> None:
    old = Operation("issue_comment_delete", "Delete a comment.", PARAMS)
    assert rename_score(old, old) == pytest.approx(1.0)
    assert rename_score(old, replace(old, name="issueCommentDelete")) == pytest.approx(1.0)  # camelCase = snake_case
    assert rename_score(old, replace(old, name="zzz")) >= 0.7  # same text and arguments: a rename whatever the name
    unrelated = Operation("weather_forecast", "Forecast the weather of a city.", obj({"city": {"type": "string"}}))
    assert rename_score(old, unrelated) < 0.3
    assert 0.0 <= rename_score(unrelated, old) <= 1.0


# ---- diff_catalogs on small catalogs ----------------------------------------------------------------------------


def small(*ops: Operation) -> Catalog:
    return Catalog("small", ops)


def test_renames_are_paired_best_first_and_each_operation_only_once() -> None:
    get = Operation("issue_get", "Get one issue by its number.", obj({"index": {"type": "integer"}}))
    close = Operation("issue_close", "Close an issue by its number.", obj({"index": {"type": "integer"}}))
    new_get = replace(get, name="issues_fetch")
    new_close = replace(close, name="issues_close")
    diff = diff_catalogs(small(get, close), small(new_close, new_get))
    assert [(c.kind, c.old_name, c.name) for c in diff.changes] == [
        ("renamed", "issue_close", "issues_close"),
        ("renamed", "issue_get", "issues_fetch"),
    ]
    assert all(c.breaking and c.schema_changes == () and not c.description_changed for c in diff.changes)
    # a threshold above every score turns guessing off: plain removals and additions
    plain = diff_catalogs(small(get, close), small(new_close, new_get), rename_threshold=1.01)
    assert [c.kind for c in plain.changes] == ["removed", "removed", "added", "added"]


def test_changed_operations_swapped_change_the_order_without_any_moved() -> None:
    a = Operation("a", "A.", obj({"x": {"type": "string"}}))
    b = Operation("b", "B.", obj({"x": {"type": "string"}}))
    c = Operation("c", "C.", obj({"x": {"type": "string"}}))
    diff = diff_catalogs(small(a, b, c), small(replace(b, description="B!"), replace(a, description="A!"), c))
    assert [ch.kind for ch in diff.changes] == ["changed", "changed"]
    assert diff.order_changed and diff.unchanged == 1 and diff.breaking == ()
    assert not diff_catalogs(small(a, b, c), small(replace(a, description="A!"), b, c)).order_changed


# ---- diff_catalogs on the forge catalog with planted edits ------------------------------------------------------


def test_identical_catalogs_have_no_changes(forge: Catalog) -> None:
    diff = diff_catalogs(forge, forge)
    assert diff.changes == () and diff.unchanged == len(forge) and not diff.order_changed
    assert "no operation changed" in format_markdown(diff).lower()


def test_a_shortened_description_is_a_compatible_change(forge: Catalog) -> None:
    short = forge["repo_get"].description.split(":")[0] + "."
    diff = diff_catalogs(forge, edit(forge, "repo_get", description=short))
    (change,) = diff.changes
    assert (change.kind, change.name, change.description_changed, change.schema_changes) == (
        "changed",
        "repo_get",
        True,
        (),
    )
    assert not change.breaking and diff.breaking == ()


def test_a_required_argument_added_breaks_the_operation(forge: Catalog) -> None:
    def require_due(params: dict[str, Any]) -> None:
        params["properties"]["due"] = {"type": "string", "description": "Due date."}
        params["required"].append("due")

    diff = diff_catalogs(forge, edit(forge, "issue_create", require_due))
    (change,) = diff.changes
    assert change.kind == "changed" and change.breaking and diff.breaking == (change,)
    assert kinds(change.schema_changes) == [("properties.due", "required_added", True)]


def test_an_enum_value_removed_breaks_the_operation(forge: Catalog) -> None:
    def drop_all(params: dict[str, Any]) -> None:
        params["properties"]["state"]["enum"].remove("all")

    diff = diff_catalogs(forge, edit(forge, "issue_list", drop_all))
    (change,) = diff.changes
    assert change.breaking
    ((path, kind, breaking),) = kinds(change.schema_changes)
    assert (path, kind, breaking) == ("properties.state.enum", "enum_value_removed", True)
    assert '"all"' in change.schema_changes[0].detail


def test_an_optional_argument_added_is_compatible(forge: Catalog) -> None:
    def add_sort(params: dict[str, Any]) -> None:
        params["properties"]["sort"] = {"type": "string", "enum": ["newest", "oldest"]}

    (change,) = diff_catalogs(forge, edit(forge, "pull_list", add_sort)).changes
    assert kinds(change.schema_changes) == [("properties.sort", "property_added", False)]
    assert change.kind == "changed" and not change.breaking


def test_a_type_narrowed_breaks_and_a_type_widened_does_not(forge: Catalog) -> None:
    def nullable_ref(params: dict[str, Any]) -> None:
        params["properties"]["ref"]["type"] = ["string", "null"]

    def number_limit(params: dict[str, Any]) -> None:
        params["properties"]["limit"]["type"] = "number"

    old = edit(forge, "file_get", nullable_ref)  # the old catalog took null for ref: the real one narrows it
    diff = diff_catalogs(old, edit(forge, "repo_search", number_limit))
    changes = by_name(diff)
    assert kinds(changes["file_get"].schema_changes) == [("properties.ref.type", "type_narrowed", True)]
    assert kinds(changes["repo_search"].schema_changes) == [("properties.limit.type", "type_widened", False)]
    assert [c.name for c in diff.breaking] == ["file_get"]


def test_an_operation_removed_is_breaking(forge: Catalog) -> None:
    ops = tuple(op for op in forge.operations if op.name != "repo_delete")
    diff = diff_catalogs(forge, replace(forge, operations=ops))
    (change,) = diff.changes
    assert (change.kind, change.name, change.breaking) == ("removed", "repo_delete", True)
    assert change.old_position == forge.names.index("repo_delete") and change.new_position is None
    assert not diff.order_changed  # the others keep their relative order


def renamed_forge(forge: Catalog) -> Catalog:
    """forge with issue_comment_delete renamed comment_delete (same text and arguments) and user_get replaced by
    an unrelated weather_forecast."""
    weather = Operation(
        "weather_forecast",
        "Forecast tomorrow's weather for a city.",
        obj({"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"]),
    )
    ops = []
    for op in forge.operations:
        if op.name == "issue_comment_delete":
            op = replace(op, name="comment_delete")
        elif op.name == "user_get":
            op = weather
        ops.append(op)
    return replace(forge, operations=tuple(ops))


def test_a_rename_with_the_same_text_is_guessed_and_an_unrelated_replacement_is_not(forge: Catalog) -> None:
    new = renamed_forge(forge)
    diff = diff_catalogs(forge, new)
    assert [(c.kind, c.name, c.old_name) for c in diff.changes] == [
        ("removed", "user_get", None),
        ("renamed", "comment_delete", "issue_comment_delete"),
        ("added", "weather_forecast", None),
    ]
    renamed = diff.changes[1]
    assert renamed.score is not None and renamed.score >= 0.6
    assert renamed.breaking and renamed.schema_changes == () and not renamed.description_changed
    assert rename_score(forge["user_get"], new["weather_forecast"]) < 0.6
    assert [c.name for c in diff.breaking] == ["user_get", "comment_delete"]  # the addition breaks no one


def test_a_tool_moved_to_the_end_is_moved_and_breaks_nothing(forge: Catalog) -> None:
    names = forge.names
    ops = tuple(op for op in forge.operations if op.name != "branch_list") + (forge["branch_list"],)
    diff = diff_catalogs(forge, replace(forge, operations=ops))
    assert diff.order_changed and diff.breaking == ()
    assert {c.kind for c in diff.changes} == {"moved"}
    moved = by_name(diff)
    assert (moved["branch_list"].old_position, moved["branch_list"].new_position) == (9, len(forge) - 1)
    # the one operation that moved, not each one after it whose index shifted
    assert set(moved) == {"branch_list"}
    assert diff.unchanged == len(names) - 1
    assert f"position 10 -> {len(forge)}" in format_markdown(diff)


def test_changes_are_ordered_by_kind_then_name(forge: Catalog) -> None:
    new = edit(renamed_forge(forge), "repo_get", description="Get a repository.")
    new = edit(new, "branch_get", description="Get one branch.")
    ops = tuple(op for op in new.operations if op.name != "tag_list") + (new["tag_list"],)
    diff = diff_catalogs(forge, replace(new, operations=ops))
    order = ["removed", "renamed", "added", "changed", "moved"]
    keys = [(order.index(c.kind), c.name) for c in diff.changes]
    assert keys == sorted(keys)
    assert [c.name for c in diff.changes if c.kind == "changed"] == ["branch_get", "repo_get"]


# ---- reports ----------------------------------------------------------------------------------------------------


def everything(forge: Catalog) -> tuple[Catalog, CatalogDiff]:
    """forge with every planted edit at once."""

    def require_due(params: dict[str, Any]) -> None:
        params["properties"]["due"] = {"type": "string"}
        params["required"].append("due")

    def drop_all(params: dict[str, Any]) -> None:
        params["properties"]["state"]["enum"].remove("all")

    new = renamed_forge(forge)
    new = edit(new, "issue_create", require_due)
    new = edit(new, "issue_list", drop_all)
    new = edit(new, "repo_get", description="Get a repository.")
    new = replace(new, operations=tuple(op for op in new.operations if op.name != "repo_delete"))
    return new, diff_catalogs(forge, new)


def test_markdown_summarises_and_lists_every_change(forge: Catalog) -> None:
    new, diff = everything(forge)
    text = format_markdown(diff)
    first = text.splitlines()[0]
    assert first == (
        f"{len(forge)} operations -> {len(new)}: 1 added, 2 removed, 1 renamed (guesses), 3 changed (2 breaking), "
        "order changed: no"
    )
    assert "| change | operation | breaking | detail |" in text
    rename = next(c for c in diff.changes if c.kind == "renamed")
    assert f"renamed from issue_comment_delete? (similarity {rename.score:.2f}, a guess)" in text
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == len(diff.changes) + sum(len(c.schema_changes) for c in diff.changes)
    assert any("required_added" in r and "properties.due" in r and "| yes |" in r for r in rows)
    assert any("enum_value_removed" in r and "properties.state.enum" in r for r in rows)
    assert any(r.startswith("| removed | `repo_delete` | yes |") for r in rows)
    assert any(r.startswith("| changed | `repo_get` | no |") and "description changed" in r for r in rows)


def test_json_holds_the_counts_and_every_change(forge: Catalog) -> None:
    _, diff = everything(forge)
    data = json.loads(json.dumps(to_json(diff)))  # plain JSON values only
    assert data["summary"] == {
        "removed": 2,
        "renamed": 1,
        "added": 1,
        "changed": 3,
        "moved": 0,
        "unchanged": len(forge) - 6,
        "breaking": 5,
        "order_changed": False,
    }
    entries = {c["name"]: c for c in data["changes"]}
    assert entries["comment_delete"]["old_name"] == "issue_comment_delete" and entries["comment_delete"]["breaking"]
    (due,) = entries["issue_create"]["schema_changes"]
    assert (due["path"], due["kind"], due["breaking"]) == ("properties.due", "required_added", True)
    assert "'due'" in due["detail"]
    assert entries["issue_list"]["schema_changes"][0]["kind"] == "enum_value_removed"
    assert entries["weather_forecast"]["breaking"] is False and entries["weather_forecast"]["old_position"] is None


def test_the_fewest_moves_explain_a_reordering() -> None:
    ops = [Operation(n, f"{n}.", obj({"x": {"type": "string"}})) for n in "abcdef"]
    by = {op.name: op for op in ops}
    swapped = small(*(by[n] for n in "abdcef"))  # c and d swapped: one of them moved
    diff = diff_catalogs(small(*ops), swapped)
    assert diff.order_changed and len([c for c in diff.changes if c.kind == "moved"]) == 1
    first_last = small(*(by[n] for n in "bcdefa"))  # the first to the end
    assert [c.name for c in diff_catalogs(small(*ops), first_last).changes] == ["a"]
