"""The operation policy: how it is written and checked, what it decides, and what a run records of it.

The per-surface matrix (a denied operation unreachable by every path) is tests/surfaces/test_policy_matrix.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.models import ModelPool
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.identity import _plain, canonical_hash
from surfbench.bench.store.results import RunStore, load_runs
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.policy import Policy, PolicyError, parse_policy
from surfbench.bench.suites.suite import load_suite

OBJ = {"type": "object", "properties": {}}
CATALOG = Catalog(
    "notes",
    (
        Operation("notes_get", "Read a note.", OBJ, category="read", read_only=True),
        Operation("notes_delete", "Delete a note.", OBJ, category="write", destructive=True),
        Operation("notes_archive", "Archive a note.", OBJ, category="write"),
        Operation("notes_purge", "Purge every note.", OBJ, category="admin", destructive=True),
    ),
)


def decide(policy: dict[str, Any], op: str) -> str:
    parsed = parse_policy(policy, "test")
    return "allow" if parsed is None else parsed.rule(CATALOG[op]).decision


# -- what a policy decides ------------------------------------------------------------------------------------
def test_deny_wins_over_ask_and_ask_over_allow_by_name_category_annotation_and_glob():
    policy = {"deny": ["notes_purge"], "ask": ["destructiveHint"], "allow": ["notes_*"]}
    assert [decide(policy, op) for op in CATALOG.names] == ["allow", "ask", "allow", "deny"]
    assert decide({"deny": ["category:write"]}, "notes_archive") == "deny"
    assert decide({"deny": ["category:write"]}, "notes_get") == "allow"
    assert decide({"deny": ["!readOnlyHint"]}, "notes_archive") == "deny"  # every write
    assert decide({"deny": ["!readOnlyHint"]}, "notes_get") == "allow"
    rule = Policy(deny=("destructiveHint",)).rule(CATALOG["notes_delete"])
    assert (rule.decision, rule.rule) == ("deny", "deny: destructiveHint")


def test_an_allow_list_is_an_allowlist_unless_a_default_says_otherwise():
    assert decide({"allow": ["notes_get"]}, "notes_archive") == "deny"
    assert Policy(allow=("notes_get",)).rule(CATALOG["notes_archive"]).rule == "default: deny (not in the allow list)"
    assert decide({"allow": ["notes_get"], "default": "ask"}, "notes_archive") == "ask"
    assert decide({"default": "deny"}, "notes_get") == "deny"


def test_a_policy_that_denies_and_asks_nothing_is_no_policy():
    assert parse_policy({}, "x") is None and parse_policy(None, "x") is None
    assert parse_policy({"deny": [], "user": "approve"}, "x") is None
    assert parse_policy({"deny": "notes_purge"}, "x") == Policy(deny=("notes_purge",))  # one selector, not letters


def test_an_ask_is_answered_by_the_configured_simulated_user():
    refuse = Policy(ask=("destructiveHint",)).bind(CATALOG).judge("notes_delete")
    assert (refuse.outcome, refuse.runs, refuse.error_type) == ("refused", False, ErrorType.POLICY_REFUSED)
    assert "the user was asked and refused" in refuse.text and "ask: destructiveHint" in refuse.text
    approve = Policy(ask=("destructiveHint",), user="approve").bind(CATALOG).judge("notes_delete")
    assert (approve.outcome, approve.runs, approve.error_type) == ("approved", True, None)
    deny = Policy(deny=("notes_delete",)).bind(CATALOG).judge("notes_delete")
    assert (deny.outcome, deny.error_type) == ("deny", ErrorType.POLICY_DENIED)
    assert "not permitted by the operation policy (deny: notes_delete)" in deny.text


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"deny": [5]}, r"policy.deny\[0\] must be a selector"),
        ({"deny": {"a": 1}}, r"policy.deny must be a list of selectors"),
        ({"dney": ["x"]}, r"unknown key\(s\) \['dney'\]; did you mean deny\?"),
        ({"ask": ["!notes_get"]}, r"'!' negates an annotation only"),
        ({"ask": ["x"], "user": "maybe"}, r"policy.user must be one of approve, refuse"),
        ({"default": "never"}, r"policy.default must be one of allow, deny, ask"),
        ("deny everything", r"policy must be a mapping"),
    ],
)
def test_a_malformed_policy_says_where_and_what_to_write(policy: Any, message: str):
    with pytest.raises(PolicyError, match=message):
        parse_policy(policy, "suite.yaml")


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("notes_delte", r"no operation 'notes_delte' in catalog 'notes'; did you mean notes_delete"),
        ("category:wirte", r"no category 'wirte' in catalog 'notes'; did you mean category:write"),
        ("repo_*", r"glob 'repo_\*' matches no operation"),
    ],
)
def test_a_selector_that_names_nothing_in_the_catalog_is_an_error(selector: str, message: str):
    policy = parse_policy({"deny": [selector]}, "x")
    assert policy is not None
    with pytest.raises(PolicyError, match=message):
        policy.check(CATALOG, "suite.yaml")


# -- a suite with a policy, run end to end with the scripted model --------------------------------------------
def _tool(name: str, hints: dict[str, bool]) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    described = f"{name.replace('_', ' ')} by id."
    return {"name": name, "description": described, "inputSchema": schema, "annotations": hints}


def write_suite(folder: Path, policy: dict[str, Any] | None) -> Path:
    """A notes suite over an MCP tools/list dump: notes_delete carries destructiveHint, notes_archive does not."""
    folder.mkdir(parents=True, exist_ok=True)
    tools = [_tool("notes_get", {"readOnlyHint": True}), _tool("notes_delete", {"destructiveHint": True}),
             _tool("notes_archive", {})]  # fmt: skip
    (folder / "catalog.json").write_text(json.dumps({"tools": tools}), encoding="utf-8")
    suite = {"name": folder.name, "catalog": "catalog.json", "backend": "none", "tasks": ["tasks.yaml"]}
    if policy is not None:
        suite["policy"] = policy
    (folder / "suite.yaml").write_text(json.dumps(suite), encoding="utf-8")
    task = {"id": "drop-n3", "turns": ["Get rid of note n3."], "canned": {"notes_archive": {"ok": True}},
            "expected": [{"one_of": [{"op": "notes_delete", "args": {"id": "n3"}},
                                     {"op": "notes_archive", "args": {"id": "n3"}}]}]}  # fmt: skip
    (folder / "tasks.yaml").write_text(json.dumps([task]), encoding="utf-8")
    return folder


SCRIPT = [[("notes_delete", {"id": "n3"})], [("notes_archive", {"id": "n3"})], "Archived note n3."]


def run(tmp_path: Path, suite: Path, name: str, **spec: Any) -> tuple[Any, Any, Any]:
    store = RunStore(tmp_path / name, commit_interval_s=0.1)
    store.prepare()
    cell = resolve_cell(CellSpec(str(suite), "full", "qwen2.5-coder-0.5b-instruct", split="all", **spec))
    store.write_run_info({"cells": [{**cell.provenance(), "provider": "scripted"}]})
    run_cell(cell, ModelPool(None), store, name, client=ScriptedClient(SCRIPT))  # type: ignore[arg-type]
    episodes = load_runs([tmp_path / name])
    calls = load_runs([tmp_path / name], table="calls")
    return cell, episodes.iloc[0], calls


def test_a_denied_call_is_refused_the_task_succeeds_by_an_allowed_route_and_the_tables_say_so(tmp_path: Path):
    suite = write_suite(tmp_path / "notes_policy", {"deny": ["destructiveHint"]})
    cell, episode, calls = run(tmp_path, suite, "denied")
    assert cell.identity.as_dict()["policy"]["deny"] == ["destructiveHint"]
    assert list(calls["operation"]) == ["notes_delete", "notes_archive"]
    assert list(calls["policy"]) == ["deny", "allow"] and list(calls["kind"]) == ["rejected", "operation"]
    assert calls["error_type"].iloc[0] == ErrorType.POLICY_DENIED and "not permitted" in calls["result"].iloc[0]
    assert episode["success"] and episode["policy_denials"] == 1 and episode["policy_recovered"]
    assert ErrorType.POLICY_DENIED in json.loads(episode["error_types"])
    assert episode["call_share"] == 1.0 and episode["min_round_trips"] == 2
    assert episode["efficiency"] == pytest.approx(2 / 3)  # one round trip lost to the denied call


def test_the_runs_policy_replaces_the_suites_key_by_key_and_is_another_cell(tmp_path: Path):
    suite = write_suite(tmp_path / "notes_policy", {"deny": ["destructiveHint"]})
    denied, _, _ = run(tmp_path, suite, "denied")
    asked, episode, calls = run(
        tmp_path, suite, "approved", policy={"deny": [], "ask": ["destructiveHint"], "user": "approve"}
    )
    assert asked.cell_id != denied.cell_id
    assert list(calls["policy"]) == ["approved", "allow"] and list(calls["kind"]) == ["operation", "operation"]
    assert episode["policy_denials"] == 0 and episode["policy_asked"] == 1 and episode["policy_recovered"] is None
    none, episode, calls = run(tmp_path, suite, "none", policy={"deny": []})  # the suite's only list emptied
    assert none.policy is None and "policy" not in none.identity.as_dict()
    assert calls["policy"].isna().all() and math.isnan(episode["policy_denials"])  # null: no policy


def test_a_cell_without_a_policy_keeps_the_id_it_had_before_policies(tmp_path: Path):
    cell = resolve_cell(CellSpec(str(write_suite(tmp_path / "plain", None)), "full", "qwen2.5-coder-0.5b-instruct"))
    assert cell.policy is None and cell.cell_id == canonical_hash(_plain(cell.identity))  # the old formula


def test_a_policy_naming_no_operation_stops_the_suite_at_load_and_the_cell_at_resolution(tmp_path: Path):
    with pytest.raises(SuiteError, match=r"policy.deny\[0\]: no operation 'notes_delte'.*did you mean notes_delete"):
        load_suite(str(write_suite(tmp_path / "typo", {"deny": ["notes_delte"]})))
    suite = str(write_suite(tmp_path / "fine", None))
    with pytest.raises(ConfigError, match=r"policy \(the run config.*policy.ask\[0\]: no category 'wirte'"):
        resolve_cell(CellSpec(suite, "full", "qwen2.5-coder-0.5b-instruct", policy={"ask": ["category:wirte"]}))


def test_the_run_config_takes_policy_overrides():
    from surfbench.bench.cli.compose import compose_run
    from surfbench.bench.run.overrides import run_settings
    from surfbench.bench.suites.policy import RUN_WHERE, policy_mapping
    from tests.conftest import ROOT

    cell = compose_run(ROOT / "configs", ["+policy.deny=[repo_delete]", "+policy.user=approve"], False).cells[0]
    task = cell.task()
    run_settings(task)  # policy is a known setting of config.yaml
    assert policy_mapping(task.get("policy"), RUN_WHERE) == {"deny": ("repo_delete",), "user": "approve"}
