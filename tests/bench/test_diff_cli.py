"""`surfbench diff OLD NEW` on the forge catalog with planted edits (issue 54).

Each edit is reported with its classification and the static gate's exit code (configs/gate/diff.yaml: 0 ship,
1 revise, 2 close or error); the surfaces and the cached prefix are measured; REV:path reads a file at a git
revision; a side can be a live MCP server; ``--suite`` finds the tasks an edit breaks and the retrieval drop.
Everything here is static: no model runs (the embedding retriever is left out: ``--retriever bm25``).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.cli.cli import main
from surfbench.bench.models.cache_profiles import PROFILES
from surfbench.bench.report.diff_report import Head, HeadTokens, profile_outcome
from surfbench.bench.suites.suite import load_suite
from tests.bench.mcp_helpers import tiny

FAST = ("--surface", "full,core,dispatcher")
"""The surfaces most tests measure: every typed tool, the hot ones, a dispatcher with its help (the default set
is every surface `surfbench surfaces` shows; one test runs it)."""
Ops = list[dict[str, Any]]


@pytest.fixture(scope="module")
def forge_doc() -> dict[str, Any]:
    """The forge catalog in the native format (what a team would keep in its repository)."""
    return load_suite("forge").catalog.to_json()


def write(path: Path, doc: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return path


def planted(tmp_path: Path, doc: dict[str, Any], change: Callable[[Ops], Ops | None]) -> tuple[Path, Path]:
    """(old, new): the catalog as it is, and a copy edited by ``change`` (in place, or the list it returns)."""
    edited = copy.deepcopy(doc)
    result = change(edited["operations"])
    if result is not None:
        edited["operations"] = result
    return write(tmp_path / "old" / "forge.json", doc), write(tmp_path / "new" / "forge.json", edited)


def op(ops: Ops, name: str) -> dict[str, Any]:
    return next(o for o in ops if o["name"] == name)


def run(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, str, str]:
    code = main(["diff", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, *args, "--json")
    assert out, err
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report


def changes(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["operations"]["changes"]}


def surface(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in report["surfaces"] if s["surface"] == name)


def prefix(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in report["prefix"] if p["surface"] == name)


def verdict(report: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(v for v in report["gate"]["criteria"] if v["criterion"].split(" ")[0] == kind)


# ---- planted edits: classification and exit code ---------------------------------------------------------------


def test_the_same_catalog_under_another_file_name_is_no_change_and_ships(tmp_path: Path, forge_doc, capsys):
    old = write(tmp_path / "forge.json", forge_doc)
    new = write(tmp_path / "forge-next.json", forge_doc)  # another stem: NEW takes OLD's name (dispatcher tool names)
    code, report = run_json(capsys, old, new, *FAST)
    assert code == 0 and report["gate"]["decision"] == "ship"
    assert report["operations"]["changes"] == []
    assert all(s["token_change_o200k"] == 0 for s in report["surfaces"])
    assert all(p["first_change"] is None for p in report["prefix"])
    assert all(o["survives"] or o["cached_before"] == 0 for p in report["prefix"] for o in p["profiles"].values())


def test_a_shortened_description_is_a_compatible_change_that_ships_and_costs_the_cached_prefix(
    tmp_path: Path, forge_doc, capsys
):
    def shorten(ops: Ops) -> None:
        op(ops, "issue_get")["description"] = "Get an issue."

    code, report = run_json(capsys, *planted(tmp_path, forge_doc, shorten), *FAST)
    assert code == 0
    change = changes(report)["issue_get"]
    assert (change["kind"], change["description_changed"], change["breaking"]) == ("changed", True, False)
    assert change["schema_changes"] == []
    full, core = surface(report, "full"), surface(report, "core")
    assert full["token_change_o200k"] < 0 and core["token_change_o200k"] < 0  # issue_get is one of the 15 hot ones
    assert full["before"]["tools"] == full["after"]["tools"] == 96
    head = prefix(report, "full")
    assert "issue_get" in head["first_change"]
    openai, anthropic = head["profiles"]["openai"], head["profiles"]["anthropic"]
    assert not openai["survives"] and openai["history_lost"]
    assert 0 < openai["kept"] < openai["cached_before"] == head["head_tokens_before"]
    assert openai["kept"] % 128 == 0  # whole 128-token blocks
    assert anthropic["kept"] == 0 and anthropic["lost"] == head["head_tokens_before"]  # the breakpoint is after it


def test_a_required_argument_added_breaks_callers_and_is_revised_unless_allowed(tmp_path: Path, forge_doc, capsys):
    def require(ops: Ops) -> None:
        params = op(ops, "issue_create")["parameters"]
        assert "priority" not in params["properties"]
        params["properties"]["priority"] = {"type": "integer", "description": "1 (urgent) to 4."}
        params["required"].append("priority")

    old, new = planted(tmp_path, forge_doc, require)
    code, report = run_json(capsys, old, new, *FAST)
    assert code == 1 and report["gate"]["decision"] == "revise"
    change = changes(report)["issue_create"]
    assert change["breaking"]
    assert [(s["path"], s["kind"], s["breaking"]) for s in change["schema_changes"]] == [
        ("properties.priority", "required_added", True)
    ]
    assert verdict(report, "breaking")["outcome"] == "fail"
    assert verdict(report, "breaking")["detail"] == "issue_create (required_added)"
    assert report["gate"]["criteria_file"] == "configs/gate/diff.yaml"  # the default, as the docs name it
    code, report = run_json(capsys, old, new, *FAST, "--allow-breaking")
    assert code == 0
    assert verdict(report, "breaking")["outcome"] == "pass" and "allowed" in verdict(report, "breaking")["detail"]


def test_an_enum_value_removed_is_breaking(tmp_path: Path, forge_doc, capsys):
    def narrow(ops: Ops) -> None:
        op(ops, "issue_list")["parameters"]["properties"]["state"]["enum"].remove("all")

    code, out, _ = run(capsys, *planted(tmp_path, forge_doc, narrow), *FAST)
    assert code == 1
    assert "| ↳ enum_value_removed | `issue_list` `properties.state.enum` | yes |" in out
    assert "decision: REVISE (exit 1" in out


def test_an_operation_removed_is_breaking_and_the_full_tool_block_shrinks(tmp_path: Path, forge_doc, capsys):
    code, report = run_json(
        capsys, *planted(tmp_path, forge_doc, lambda ops: [o for o in ops if o["name"] != "hook_create"]), *FAST
    )
    assert code == 1
    assert changes(report)["hook_create"]["kind"] == "removed" and changes(report)["hook_create"]["breaking"]
    full = surface(report, "full")
    assert (full["before"]["tools"], full["after"]["tools"]) == (96, 95) and full["token_change_o200k"] < 0
    assert "removed hook_create" in verdict(report, "breaking")["detail"]


def rename(ops: Ops) -> None:
    op(ops, "issue_lock")["name"] = "issue_lock_conversation"


def test_a_rename_is_a_guess_with_its_score_and_breaks_callers(tmp_path: Path, forge_doc, capsys):
    old, new = planted(tmp_path, forge_doc, rename)
    code, out, _ = run(capsys, old, new, *FAST)
    assert code == 1
    assert "renamed from issue_lock? (similarity" in out and "a guess" in out
    code, report = run_json(capsys, old, new, *FAST)
    change = changes(report)["issue_lock_conversation"]
    assert (change["kind"], change["old_name"]) == ("renamed", "issue_lock") and change["score"] >= 0.6


def test_a_rename_below_the_threshold_is_a_removal_plus_an_addition(tmp_path: Path, forge_doc, capsys):
    code, report = run_json(capsys, *planted(tmp_path, forge_doc, rename), *FAST, "--rename-threshold", "0.99")
    assert code == 1
    found = changes(report)
    assert found["issue_lock"]["kind"] == "removed" and found["issue_lock_conversation"]["kind"] == "added"
    assert report["operations"]["summary"]["renamed"] == 0


def test_a_tool_moved_to_the_end_ships_but_costs_every_cached_prefix_after_it(tmp_path: Path, forge_doc, capsys):
    def move(ops: Ops) -> Ops:
        return [o for o in ops if o["name"] != "repo_get"] + [op(ops, "repo_get")]

    code, report = run_json(capsys, *planted(tmp_path, forge_doc, move), *FAST)
    assert code == 0
    moved = changes(report)["repo_get"]
    assert (moved["kind"], moved["breaking"], moved["old_position"], moved["new_position"]) == ("moved", False, 0, 95)
    assert report["operations"]["summary"]["order_changed"]
    full = surface(report, "full")
    assert full["token_change_o200k"] == 0 and full["bytes_change"] == 0  # the same tools, in another order
    head = prefix(report, "full")
    assert head["first_change"] == "tool 1 'repo_get'"
    for name, outcome in head["profiles"].items():  # the first tool changed: nothing of the head is served
        assert outcome["lost"] > 0, name
    assert head["profiles"]["openai"]["kept"] == 0


def test_a_help_payload_newly_over_the_budget_is_revised(tmp_path: Path, forge_doc, capsys):
    def lengthen(ops: Ops) -> None:  # a cold operation: not in core; after the first sentence: not in the listing
        op(ops, "hook_create")["description"] += " " + "Details of the hook's payload and delivery. " * 40

    code, report = run_json(capsys, *planted(tmp_path, forge_doc, lengthen), *FAST)
    assert code == 1
    help_verdict = verdict(report, "help_bytes_max")
    assert help_verdict["outcome"] == "fail" and "dispatcher: hook_create" in help_verdict["detail"]
    assert surface(report, "dispatcher")["newly_over_help_budget"] == ["hook_create"]
    assert surface(report, "core")["token_change_o200k"] == 0


def test_the_default_surfaces_and_the_markdown_for_a_pull_request(tmp_path: Path, forge_doc, capsys):
    def shorten(ops: Ops) -> None:
        op(ops, "issue_get")["description"] = "Get an issue."

    code, out, _ = run(capsys, *planted(tmp_path, forge_doc, shorten), "--format", "markdown")
    assert code == 0
    assert out.startswith("## surfbench diff: ")
    assert "**decision: SHIP (exit 0" in out.splitlines()[2]
    for section in ("### Operations", "### Surfaces", "### Cached prefix", "### Gate", "<details>"):
        assert section in out
    for name in ("full", "core", "dispatcher", "search", "preselect"):  # `surfbench surfaces`' default set
        assert f"\n| {name} |" in out
    assert "its tools depend on the request" in out  # preselect: no one head


# ---- the gate's criteria --------------------------------------------------------------------------------------


def test_own_criteria_a_close_exits_2_and_a_bad_file_is_one_line_naming_the_field(tmp_path: Path, forge_doc, capsys):
    def add(ops: Ops) -> None:
        ops.append(dict(op(ops, "issue_get"), name="issue_get_v2"))

    old, new = planted(tmp_path, forge_doc, add)
    strict = tmp_path / "strict.yaml"
    strict.write_text(
        "name: strict\ncriteria:\n  - {kind: tokens_ratio_max, value: 1.0, surfaces: [full], on_fail: close}\n"
    )
    code, report = run_json(capsys, old, new, "--surface", "core", "--criteria", strict)
    assert code == 2 and report["gate"]["decision"] == "close"
    assert [s["surface"] for s in report["surfaces"]] == ["core", "full"]  # the criteria's surface is measured too
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - {kind: breaking, value: 0}\n")
    code, out, err = run(capsys, old, new, "--criteria", bad)
    assert code == 2 and out == ""
    assert f"{bad}: criteria[0].value: breaking takes no value" in err and len(err.strip().splitlines()) == 1
    bad.write_text("criteria:\n  - {kind: token_ratio, value: 1.1}\n")
    code, _, err = run(capsys, old, new, "--criteria", bad)
    assert code == 2 and "criteria[0].kind: 'token_ratio' is not a diff criterion" in err


def test_one_side_missing_is_a_usage_error(tmp_path: Path, forge_doc, capsys):
    code, out, err = run(capsys, write(tmp_path / "forge.json", forge_doc))
    assert code == 2 and out == "" and "give OLD and NEW" in err


# ---- REV:path and a live server ---------------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="REV:path needs git")
def test_rev_path_reads_the_catalog_at_two_commits(tmp_path: Path, forge_doc, capsys, monkeypatch):
    repo = tmp_path / "repo"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e"]

    def commit(doc: dict[str, Any], message: str) -> None:
        write(repo / "tools" / "forge.json", doc)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True, capture_output=True)
        subprocess.run([*git, "commit", "-qm", message], cwd=repo, check=True, capture_output=True)

    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, capture_output=True)
    commit(forge_doc, "the catalog")
    edited = copy.deepcopy(forge_doc)
    edited["operations"] = [o for o in edited["operations"] if o["name"] != "hook_create"]
    commit(edited, "hook_create removed")
    monkeypatch.chdir(repo)
    code, report = run_json(capsys, "HEAD~1:tools/forge.json", "HEAD:tools/forge.json", *FAST)
    assert code == 1
    assert (report["old"]["source"], report["new"]["source"]) == ("HEAD~1:tools/forge.json", "HEAD:tools/forge.json")
    assert [(c["kind"], c["name"]) for c in report["operations"]["changes"]] == [("removed", "hook_create")]
    code, report = run_json(capsys, "main~1:tools/forge.json", "tools/forge.json", *FAST)  # against the work tree
    assert code == 1 and report["operations"]["summary"]["removed"] == 1
    code, out, err = run(capsys, "nope:tools/forge.json", "tools/forge.json")
    assert code == 2 and out == "" and "'nope' is not a git revision" in err


def test_a_live_server_as_the_new_side(tmp_path: Path, capsys):
    obj = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [
        {"name": "echo", "description": "Echo the text back.", "inputSchema": obj},
        {"name": "shout", "description": "Echo the text back in capitals.", "inputSchema": obj},
    ]
    old = write(tmp_path / "tiny.json", {"tools": tools})
    code, report = run_json(capsys, old, "--new-mcp", tiny("ok"), "--surface", "full")
    assert code == 1  # shout is gone
    found = changes(report)
    assert found["shout"]["kind"] == "removed" and found["fail"]["kind"] == "added"
    assert report["new"]["source"].startswith("mcp:")


# ---- --suite: the tasks an edit breaks, and the retrieval funnel ------------------------------------------------


def test_suite_tasks_an_edit_breaks_and_the_retrieval_drop(tmp_path: Path, forge_doc, capsys):
    def edit(ops: Ops) -> Ops:
        params = op(ops, "issue_create")["parameters"]
        params["properties"]["priority"] = {"type": "integer"}
        params["required"].append("priority")
        return [o for o in ops if o["name"] != "issue_add_labels"]

    old, new = planted(tmp_path, forge_doc, edit)
    code, report = run_json(capsys, old, new, "--surface", "full", "--suite", "forge", "--retriever", "bm25")
    assert code == 1
    suite = report["suite"]
    why = {(b["task"], b["op"]): b["why"] for b in suite["broken_calls"]}
    assert why[("hot-add-label", "issue_add_labels")] == "no longer in the catalog"
    assert why[("hot-issue-create", "issue_create")] == "missing required argument 'priority' (integer)"
    assert "hot-issue-get" not in suite["broken_tasks"]
    (bm25,) = suite["retrieval"]
    assert bm25["retriever"] == "bm25" and bm25["recall_after"]["5"] < bm25["recall_before"]["5"]
    assert "hot-add-label" in bm25["newly_missed"]["10"]
    assert verdict(report, "broken_tasks_max")["outcome"] == "fail"
    assert verdict(report, "recall_drop_max")["outcome"] in ("pass", "fail")  # judged, whatever the size


def test_suite_a_rename_breaks_the_tasks_naming_the_old_name_and_retrieval_follows_the_new(
    tmp_path: Path, forge_doc, capsys
):
    def rename_get(ops: Ops) -> None:
        op(ops, "issue_get")["name"] = "issue_fetch"

    old, new = planted(tmp_path, forge_doc, rename_get)
    code, report = run_json(capsys, old, new, "--surface", "full", "--suite", "forge", "--retriever", "bm25")
    assert code == 1
    why = {(b["task"], b["op"]): b["why"] for b in report["suite"]["broken_calls"]}
    assert why[("hot-issue-get", "issue_get")].startswith("renamed to issue_fetch? (a guess, similarity")
    (bm25,) = report["suite"]["retrieval"]
    assert abs(bm25["mrr_after"] - bm25["mrr_before"]) < 0.05  # the renamed tool is still found, under its new name


# ---- the prefix model on hand-made heads ------------------------------------------------------------------------


def test_each_profile_keeps_what_its_rule_serves_when_only_the_system_text_changes():
    tokens = HeadTokens()
    tools = tuple((f"t{i}", json.dumps({"name": f"t{i}", "description": "word " * 300})) for i in range(5))
    old = Head(tools, "You act through the tools. " * 20)
    new = Head(tools, "You act through the tools, carefully. " * 20)
    block = sum(tokens(t) for _, t in tools)
    same = {name: profile_outcome(p, old, old, tokens) for name, p in PROFILES.items()}
    assert all(o.survives for o in same.values())
    out = {name: profile_outcome(p, old, new, tokens) for name, p in PROFILES.items()}
    assert out["anthropic"].kept == block and out["anthropic"].cached_before == block + tokens(old.system)
    assert out["openai"].kept == (out["openai"].kept // 128) * 128 and block - 128 < out["openai"].kept <= block + 10
    assert out["local"].kept < tokens(old.system)  # the local server puts the system text first
    assert all(o.history_lost for name, o in out.items() if name != "anthropic")
