from __future__ import annotations

import json
from pathlib import Path

import pytest

from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.importers import load_catalog
from tests.conftest import EXAMPLE_MCP, FIXTURES

CATS = FIXTURES / "catalogs"


def test_openai_tools():
    cat = load_catalog(CATS / "openai_tools.json")
    assert cat.names == ["get_weather", "get_time"]
    assert cat["get_weather"].parameters["properties"]["unit"]["enum"] == ["c", "f"]
    assert cat["get_weather"].summary == "Get the weather for a city."


def test_anthropic_tools():
    cat = load_catalog(CATS / "anthropic_tools.json")
    assert cat.names == ["search_docs", "open_doc"]
    assert cat["search_docs"].required == ["query"]


def test_mcp_tools_list_envelope_and_annotations():
    cat = load_catalog(CATS / "mcp_tools_list.json")
    assert cat["read_file"].read_only and not cat["read_file"].destructive
    assert cat["delete_file"].destructive


def test_mcp_bare_list(tmp_path: Path):
    doc = json.loads((CATS / "mcp_tools_list.json").read_text())["result"]["tools"]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(doc))
    assert load_catalog(path).names == ["read_file", "delete_file"]


def test_openapi3_merges_parameters_resolves_refs_and_skips_headers():
    cat = load_catalog(CATS / "petstore_openapi3.json")
    assert cat.names == ["listPets", "createPet", "showPet", "delete_pets_petId"]
    assert set(cat["listPets"].parameters["properties"]) == {"limit"}  # header dropped
    create = cat["createPet"].parameters
    assert create["properties"]["tag"] == {
        "type": "string",
        "enum": ["cat", "dog"],
    }  # $ref inlined, example dropped
    assert create["required"] == ["name"]
    assert cat["showPet"].parameters["required"] == ["petId"]  # path-level $ref parameter
    assert cat["delete_pets_petId"].category == "admin" and cat["delete_pets_petId"].destructive
    assert cat["listPets"].read_only and cat["listPets"].category == "pets"


def test_swagger2_body_and_path_parameters(tmp_path: Path):
    doc = {
        "swagger": "2.0",
        "paths": {
            "/repos/{owner}/{repo}/issues": {
                "post": {
                    "operationId": "issueCreate",
                    "tags": ["issue"],
                    "parameters": [
                        {"name": "owner", "in": "path", "type": "string", "required": True},
                        {"name": "repo", "in": "path", "type": "string", "required": True},
                        {"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Opt"}},
                    ],
                }
            }
        },
        "definitions": {"Opt": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}},
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    op = load_catalog(path)["issueCreate"]
    assert op.parameters["properties"] == {
        "owner": {"type": "string"},
        "repo": {"type": "string"},
        "title": {"type": "string"},
    }
    assert op.parameters["required"] == ["owner", "repo", "title"]


def test_bfcl_types_normalised_and_names_made_callable():
    cat = load_catalog(CATS / "bfcl_functions.jsonl")
    assert cat.names == ["calculate_triangle_area", "math_factorial"]
    area = cat["calculate_triangle_area"].parameters
    assert area["type"] == "object" and area["properties"]["height"]["type"] == "number"
    pairs = cat["math_factorial"].parameters["properties"]["pairs"]
    assert pairs["items"] == {"type": "array", "items": {"type": "number"}}


def test_python_callables_with_google_docstrings():
    cat = load_catalog("pytools")
    create = cat["create_issue"]
    assert create.description == "Create an issue in a repository."
    params = create.parameters
    assert params["required"] == ["repo", "title"]
    assert params["additionalProperties"] is False
    assert params["properties"]["labels"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": "Label names to add.",
    }
    assert params["properties"]["priority"]["enum"] == ["low", "high"]
    assert params["properties"]["priority"]["default"] == "low"
    assert (
        cat["close_issue"].parameters["properties"]["number"]["description"]
        == "Issue number, as shown in the issue list."
    )


def test_python_callable_single_attr():
    assert load_catalog("pytools:close_issue").names == ["close_issue"]


def test_native_round_trip(tmp_path: Path):
    cat = load_catalog(CATS / "openai_tools.json")
    path = tmp_path / "native.json"
    path.write_text(json.dumps(cat.to_json()))
    again = load_catalog(path)
    assert again.content_hash == cat.content_hash
    assert again.name == cat.name


def test_content_hash_changes_with_content(tmp_path: Path):
    doc = json.loads((CATS / "openai_tools.json").read_text())
    base = load_catalog(CATS / "openai_tools.json").content_hash
    doc[0]["function"]["description"] += " More."
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(doc))
    assert load_catalog(path).content_hash != base


def test_gitea_shaped_example_imports_all_96():
    assert len(load_catalog(EXAMPLE_MCP)) == 96


# --- malformed catalogs: one line that names the file and the tool -------------------------------


def _write(tmp_path: Path, name: str, content: str) -> Path:
    path = tmp_path / name
    path.write_text(content)
    return path


def _error(path: Path) -> str:
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message
    return message


def test_invalid_json_names_line_and_column(tmp_path: Path):
    msg = _error(_write(tmp_path, "bad.json", '[{"name": "a",, }]'))
    assert "invalid JSON" in msg and "line 1" in msg


def test_duplicate_names(tmp_path: Path):
    tool = {"name": "dup", "description": "", "inputSchema": {"type": "object", "properties": {}}}
    msg = _error(_write(tmp_path, "dup.json", json.dumps({"tools": [tool, tool]})))
    assert "'dup'" in msg and "duplicate" in msg


def test_parameters_not_an_object_schema(tmp_path: Path):
    doc = [{"type": "function", "function": {"name": "f", "parameters": {"type": "array"}}}]
    msg = _error(_write(tmp_path, "p.json", json.dumps(doc)))
    assert "'f'" in msg and "type: object" in msg


def test_parameters_a_string(tmp_path: Path):
    doc = [{"name": "g", "input_schema": "nope"}]
    msg = _error(_write(tmp_path, "p2.json", json.dumps(doc)))
    assert "'g'" in msg


def _openapi_with(schemas: dict) -> str:
    return json.dumps(
        {
            "openapi": "3.1.0",
            "paths": {
                "/x": {
                    "post": {
                        "operationId": "makeX",
                        "requestBody": {
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}
                        },
                    }
                }
            },
            "components": {"schemas": schemas},
        }
    )


def test_dangling_ref(tmp_path: Path):
    msg = _error(_write(tmp_path, "dangle.json", _openapi_with({"B": {"type": "object"}})))
    assert "'makeX'" in msg and "dangling $ref '#/components/schemas/A'" in msg


def test_ref_cycle(tmp_path: Path):
    schemas = {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
    }
    msg = _error(_write(tmp_path, "cycle.json", _openapi_with(schemas)))
    assert "'makeX'" in msg and "$ref cycle" in msg and "#/components/schemas/A -> #/components/schemas/B" in msg


def test_missing_name(tmp_path: Path):
    doc = {
        "tools": [
            {"name": "ok", "inputSchema": {"type": "object"}},
            {"description": "x", "inputSchema": {"type": "object"}},
        ]
    }
    msg = _error(_write(tmp_path, "noname.json", json.dumps(doc)))
    assert "no name" in msg


def test_unknown_shape_says_which_formats(tmp_path: Path):
    msg = _error(_write(tmp_path, "what.json", json.dumps({"hello": 1})))
    assert "openapi" in msg and "mcp" in msg


def test_missing_file(tmp_path: Path):
    assert "file not found" in _error(tmp_path / "nothing.json")
