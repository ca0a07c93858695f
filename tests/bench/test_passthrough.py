"""Pass-through parameters: declared or detected on a catalog, carried by every surface, their cost counted.

A catalog's ``passthrough`` (an ``instance`` every operation takes) is declared (native format, suite.yaml) or
detected (every operation of five or more has the same optional property); the dispatcher takes it as a top-level
argument beside ``operation`` and ``args`` and its description and help say so; typed, loaded, searched and
pre-selected tools keep it in each schema; code mode's SDK functions take it as a keyword; the static surface
report says what each form costs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surfbench.bench.base.config import SurfaceConfig
from surfbench.bench.catalog.catalog import Catalog, CatalogError, Operation
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.contracts.surface import ToolCall
from surfbench.bench.report.surface_report import format_table, surface_table
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface

INSTANCE = {"type": "string", "enum": ["a", "b"], "default": "a", "description": "Which server."}
INSTANCES = load_suite("forge_instances").catalog
FORGE = load_suite("forge").catalog


def op(name: str, shared: dict | None = None, required: tuple[str, ...] = ()) -> Operation:
    props = {"x": {"type": "string"}, **({"instance": shared} if shared is not None else {})}
    return Operation(name, f"Do {name}.", {"type": "object", "properties": props, "required": ["x", *required]})


def catalog(n: int = 5, **kw) -> Catalog:
    return Catalog("t", tuple(op(f"op{i}", INSTANCE) for i in range(n)), **kw)


def test_an_optional_property_every_operation_shares_is_detected():
    assert catalog().passthrough == {"instance": INSTANCE}
    assert catalog(4).passthrough == {}  # four operations: too few to tell a shared argument from a coincidence
    odd = Catalog("t", (*catalog().operations, op("other", {**INSTANCE, "enum": ["a", "c"]})))
    assert odd.passthrough == {}  # one operation's instance is another schema
    needs = Catalog("t", (*catalog().operations, op("req", INSTANCE, required=("instance",))))
    assert needs.passthrough == {}  # one operation requires it: not a pass-through
    assert Catalog("t", (*catalog().operations, op("bare"))).passthrough == {}
    assert catalog(declared_passthrough=()).passthrough == {}  # declared: none


def test_a_declared_pass_through_must_be_optional_everywhere():
    assert catalog(3, declared_passthrough=("instance",)).passthrough == {"instance": INSTANCE}
    with pytest.raises(CatalogError, match="passthrough parameter 'instance' must be an optional property of every"):
        Catalog("t", (*catalog().operations, op("bare")), declared_passthrough=("instance",))


def test_the_native_format_declares_it_and_writes_it_back(tmp_path: Path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(catalog(2, declared_passthrough=("instance",)).to_json()))
    loaded = load_catalog(path)
    assert loaded.declared_passthrough == ("instance",) and list(loaded.passthrough) == ["instance"]
    path.write_text(json.dumps({**loaded.to_json(), "passthrough": "instance"}))
    with pytest.raises(CatalogError, match="'passthrough' must be a list of parameter names"):
        load_catalog(path)


def test_suite_yaml_declares_it_and_a_typo_is_an_error_at_load(tmp_path: Path):
    assert INSTANCES.declared_passthrough == ("instance",)
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "c.json").write_text(json.dumps(catalog(2).to_json()))
    (folder / "t.yaml").write_text('- {id: a, turns: ["x"], expected: [{op: op0, args: {x: y}}]}\n')
    (folder / "suite.yaml").write_text("catalog: c.json\ntasks: [t.yaml]\npassthrough: [instanse]\n")
    with pytest.raises(SuiteError, match="passthrough parameter 'instanse' must be an optional property"):
        load_suite(str(folder))


def test_no_shipped_catalog_but_forge_instances_has_one():
    for name in ("forge", "workspace", "notes_mcp"):
        assert load_suite(name).catalog.passthrough == {}, name
    for variant in ("multiple", "parallel_multiple"):  # four entries of three functions share an optional argument
        tasks = load_suite(f"bfcl:{variant}").tasks
        assert all(t.catalog is None or t.catalog.passthrough == {} for t in tasks), variant


def test_the_dispatcher_takes_it_beside_operation_and_says_so():
    surface = build_surface(INSTANCES, "dispatcher")
    call_tool, help_tool = surface.static_tools()
    assert call_tool.parameters["properties"]["instance"] == INSTANCES.passthrough["instance"]
    assert "'instance' (every operation takes it) goes beside 'operation', not inside 'args'" in call_tool.description
    help_text = surface.help_payload(INSTANCES["issue_get"])
    assert help_text is not None
    schema_line, instance_line = help_text.splitlines()[1:3]
    assert '"instance"' not in schema_line and '"owner"' in schema_line  # the args schema without it
    assert instance_line.startswith("instance: beside 'operation', not inside 'args'")
    session = surface.session("x")
    help_call = session.dispatch(ToolCall(help_tool.name, {"operation": "issue_get"}))
    assert help_call.text == help_text
    args = {"owner": "acme", "repo": "web", "index": 3}
    top = session.dispatch(ToolCall(call_tool.name, {"operation": "issue_get", "args": args, "instance": "oss"}))
    assert top.kind == "operation" and top.args == {**args, "instance": "oss"}
    inside = session.dispatch(ToolCall(call_tool.name, {"operation": "issue_get", "args": {**args, "instance": "oss"}}))
    assert inside.kind == "operation" and inside.args == {**args, "instance": "oss"}
    both = session.dispatch(
        ToolCall(call_tool.name, {"operation": "issue_get", "args": {**args, "instance": "work"}, "instance": "oss"})
    )
    assert both.kind == "rejected" and "'instance' is given twice with different values" in both.text


def test_the_plain_forms_stay_as_they_were():
    forge = build_surface(FORGE, "dispatcher")
    assert set(forge.static_tools()[0].parameters["properties"]) == {"operation", "args"}
    assert "beside" not in (forge.help_payload(FORGE["issue_get"]) or "")
    args_form = build_surface(INSTANCES, "dispatcher", {"passthrough": "args"})
    assert set(args_form.static_tools()[0].parameters["properties"]) == {"operation", "args"}
    stray = args_form.session("x").dispatch(
        ToolCall(args_form.static_tools()[0].name, {"operation": "repo_get", "args": {}, "instance": "oss"})
    )
    assert stray.kind == "rejected" and "inside 'args'" in stray.text
    with pytest.raises(ValueError, match="passthrough must be one of top, args"):
        build_surface(INSTANCES, "dispatcher", {"passthrough": "both"})


def test_core_dispatch_carries_it_on_typed_tools_and_on_its_dispatcher():
    core = build_surface(INSTANCES, "core", {"k": 15, "rest": "dispatcher"})
    tools = {t.name: t for t in core.static_tools()}
    typed = [t for name, t in tools.items() if name in INSTANCES]
    assert len(typed) == 15 and all("instance" in t.parameters["properties"] for t in typed)
    assert "instance" in tools[core.dispatcher.call_name].parameters["properties"]


def test_loaded_searched_and_preselected_tools_keep_it_in_their_schema():
    lazy = build_surface(INSTANCES, "lazy").session("x")
    lazy.tools()
    lazy.dispatch(ToolCall("load_tools", {"names": ["issue_get"]}))
    (loaded,) = [t for t in lazy.tools() if t.name == "issue_get"]
    assert loaded.parameters["properties"]["instance"]["enum"] == ["work", "oss"]
    search = build_surface(INSTANCES, "search").session("x")
    search.tools()
    found = search.dispatch(ToolCall("search_tools", {"query": "get an issue"}))
    assert '"instance"' in found.text and any(t.name == "issue_get" for t in search.tools())
    preselect = build_surface(INSTANCES, "preselect").session("On the oss forge, get issue 3 of acme/web.")
    assert all("instance" in t.parameters["properties"] for t in preselect.tools())


def test_code_mode_functions_take_it_as_a_keyword():
    code = build_surface(INSTANCES, "code")
    stubs = code.static_tools()[0].description
    assert "def issue_get(*, owner: str, repo: str, index: int, instance: Literal['work', 'oss'] = 'work')" in stubs


def test_the_static_report_says_what_each_form_costs():
    configs = [SurfaceConfig(n, k) for n, k in (("full", "full"), ("dispatcher", "dispatcher"), ("lazy", "lazy"))]
    rows = {r.surface: r for r in surface_table(INSTANCES, configs)}
    bare = {r.surface: r for r in surface_table(INSTANCES.without_passthrough(), configs)}
    for name, row in rows.items():
        assert row.passthrough_bytes == pytest.approx(row.total_bytes - bare[name].total_bytes)
    assert rows["full"].passthrough_bytes > 50 * rows["dispatcher"].passthrough_bytes > 0  # 96 copies against one
    assert rows["lazy"].passthrough_bytes == 0  # its first turn shows the loader only
    assert "pass-through B" in format_table(list(rows.values()), INSTANCES)
    assert "pass-through B" not in format_table(surface_table(FORGE, configs[:1]), FORGE)
