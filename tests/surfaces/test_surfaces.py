"""Behaviour of each surface: what the model sees, and where its calls go."""

from __future__ import annotations

import pytest

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.contracts.surface import ToolCall
from surfbench.surfaces import build_surface, surface_class


def op(name: str, desc: str, cat: str, weight: float = 0.0, **props) -> Operation:
    properties = props or {"repo": {"type": "string"}}
    return Operation(
        name=name,
        description=desc,
        parameters={"type": "object", "properties": properties, "required": list(properties)[:1]},
        category=cat,
        weight=weight,
    )


@pytest.fixture
def catalog() -> Catalog:
    return Catalog(
        name="forge",
        operations=(
            op(
                "issue_create",
                "Create an issue in a repository.",
                "issues",
                9,
                repo={"type": "string"},
                title={"type": "string"},
            ),
            op(
                "issue_list",
                "List issues of a repository.",
                "issues",
                20,
                repo={"type": "string"},
                state={"type": "string", "enum": ["open", "closed", "all"]},
            ),
            op(
                "issue_comment_create",
                "Comment on an issue.",
                "comments",
                3,
                repo={"type": "string"},
                body={"type": "string"},
            ),
            op("label_create", "Create a label in a repository.", "labels", 1),
            op("release_delete", "Delete a release.", "releases", 0.5),
            op("webhook_list", "List the webhooks of a repository.", "webhooks", 0.1),
        ),
    )


def names(tools):
    return [t.name for t in tools]


def test_full_shows_every_operation_with_its_own_schema(catalog):
    tools = build_surface(catalog, "full").session().tools()
    assert names(tools) == catalog.names
    assert tools[1].parameters is catalog["issue_list"].parameters  # derived, never copied


def test_core_top_k_by_weight(catalog):
    tools = build_surface(catalog, "core", {"k": 2}).session().tools()
    assert names(tools) == ["issue_list", "issue_create"]


def test_core_explicit_list_and_rest_through_dispatcher(catalog):
    surface = build_surface(catalog, "core", {"operations": ["label_create"], "rest": "dispatcher"})
    session = surface.session()
    assert names(session.tools()) == ["label_create", "forge", "forge_help"]
    assert "label_create" not in session.tools()[1].description  # listing covers only the rest
    routed = session.dispatch(ToolCall("forge", {"operation": "webhook_list", "args": {"repo": "a/b"}}))
    assert (routed.kind, routed.operation) == ("operation", "webhook_list")


def test_core_unknown_operation_in_list_is_an_error(catalog):
    with pytest.raises(ValueError, match="not in catalog"):
        build_surface(catalog, "core", {"operations": ["nope"]})


def test_dispatcher_routes_and_teaches(catalog):
    session = build_surface(catalog, "dispatcher").session()
    assert names(session.tools()) == ["forge", "forge_help"]
    assert "issue_comment_create: Comment on an issue." in session.tools()[0].description
    ok = session.dispatch(ToolCall("forge", {"operation": "issue_list", "args": {"repo": "a/b", "state": "open"}}))
    assert ok.kind == "operation" and ok.args == {"repo": "a/b", "state": "open"}
    bad = session.dispatch(ToolCall("forge", {"operation": "issue_list", "args": {"repo": "a/b", "state": "opened"}}))
    assert bad.kind == "rejected" and bad.error_type == "schema_invalid"
    assert '"open", "closed", "all"' in bad.text
    assert 'Call forge_help {"operation": "issue_list"}' in bad.text
    unknown = session.dispatch(ToolCall("forge", {"operation": "issue_lst", "args": {}}))
    assert unknown.error_type == "unknown_operation" and "issue_list" in unknown.text and "forge_help" in unknown.text
    flat = session.dispatch(ToolCall("forge", {"operation": "issue_list", "repo": "a/b"}))
    assert flat.kind == "rejected" and "inside 'args'" in flat.text


def test_dispatcher_args_as_json_string_is_accepted(catalog):
    session = build_surface(catalog, "dispatcher").session()
    routed = session.dispatch(ToolCall("forge", '{"operation": "issue_list", "args": "{\\"repo\\": \\"a/b\\"}"}'))
    assert routed.kind == "operation" and routed.args == {"repo": "a/b"}


def test_dispatcher_help_returns_description_and_compact_schema(catalog):
    surface = build_surface(catalog, "dispatcher")
    answer = surface.session().dispatch(ToolCall("forge_help", {"operation": "issue_list"}))
    assert answer.kind == "meta" and answer.meta == "help"
    assert answer.text.startswith("issue_list: List issues of a repository.")
    assert '"enum":["open","closed","all"]' in answer.text
    assert surface.help_payload(catalog["issue_list"]) == answer.text


@pytest.mark.parametrize(
    ("style", "present", "absent"),
    [
        ("oneline", "issue_list: List issues", "issues: issue_create"),
        ("grouped", "issues: issue_create, issue_list", "List issues"),
        ("none", "forge_help", "issue_list"),
    ],
)
def test_dispatcher_catalog_styles(catalog, style, present, absent):
    desc = build_surface(catalog, "dispatcher", {"catalog": style}).session().tools()[0].description
    assert present in desc and absent not in desc


def test_lazy_loaded_tools_appear_next_turn(catalog):
    session = build_surface(catalog, "lazy").session()
    assert names(session.tools()) == ["load_tools"]
    loaded = session.dispatch(ToolCall("load_tools", {"categories": ["issues"]}))
    assert loaded.kind == "meta" and "issue_create" in loaded.text
    early = session.dispatch(ToolCall("issue_list", {"repo": "a/b"}))
    assert early.kind == "rejected" and early.error_type == "not_loaded" and early.protocol_violation
    assert names(session.tools()) == ["load_tools", "issue_create", "issue_list"]
    assert session.dispatch(ToolCall("issue_list", {"repo": "a/b"})).kind == "operation"


def test_lazy_by_name_with_typo_suggests(catalog):
    session = build_surface(catalog, "lazy").session()
    session.tools()
    answer = session.dispatch(ToolCall("load_tools", {"names": ["label_creat"]}))
    assert "did you mean label_create" in answer.text


def test_search_hits_become_callable_next_turn(catalog):
    session = build_surface(catalog, "search", {"top_n": 2}).session()
    session.tools()
    answer = session.dispatch(ToolCall("search_tools", {"query": "list the webhooks"}))
    assert answer.meta == "search" and '"name":"webhook_list"' in answer.text
    assert session.dispatch(ToolCall("webhook_list", {"repo": "a"})).error_type == "not_loaded"
    assert "webhook_list" in names(session.tools())
    assert session.dispatch(ToolCall("webhook_list", {"repo": "a"})).kind == "operation"


def test_preselect_shows_top_k_for_the_request(catalog):
    surface = build_surface(catalog, "preselect", {"k": 2})
    session = surface.session("please delete the release v1")
    assert names(session.tools())[0] == "release_delete"
    assert len(session.tools()) <= 2


def test_preselect_threshold_drops_weak_matches(catalog):
    session = build_surface(catalog, "preselect", {"k": 5, "threshold": 0.99}).session("delete the release")
    assert names(session.tools()) == ["release_delete"]


def test_preselect_embedding_retriever(catalog):
    session = build_surface(catalog, "preselect", {"k": 1, "retriever": "embedding"}).session(
        "remove an old published version"
    )
    assert names(session.tools()) == ["release_delete"]


def test_unknown_surface_suggests():
    with pytest.raises(KeyError, match="did you mean dispatcher"):
        surface_class("dispatchr")


def test_unknown_parameter_is_an_error(catalog):
    with pytest.raises(ValueError, match="unknown parameter"):
        build_surface(catalog, "full", {"k": 3})


def test_search_names_at_most_max_categories_so_its_description_does_not_grow_with_the_catalog(catalog):
    small = build_surface(catalog, "search", {}).static_tools()[0].description
    assert "(issues, " in small and "more categories" not in small  # a few categories: every one, in order

    many = Catalog(
        "big", tuple(op(f"op_{i}", f"Operation {i}.", f"cat{i % 300}" if i < 600 else "big") for i in range(900))
    )
    text = build_surface(many, "search", {}).static_tools()[0].description
    assert text.startswith("Search 900 operations (big, cat0, cat1, ") and "and 281 more categories)" in text
    assert text.count(", ") == 19  # 20 named
    every = build_surface(many, "search", {"max_categories": None}).static_tools()[0].description
    assert "cat299" in every and "more categories" not in every
    code = build_surface(many, "code", {"sdk": "search", "max_categories": 3}).static_tools()[0].description
    assert "(big, cat0, cat1 and 298 more categories)" in code
    with pytest.raises(ValueError, match="max_categories=0"):
        build_surface(many, "search", {"max_categories": 0})
