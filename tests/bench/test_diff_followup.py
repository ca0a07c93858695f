"""``surfbench diff OLD NEW --suite S --against RUN``: the paired follow-up of a catalog change (issue 54).

A code-free suite of 30 one-call tasks on the first 15 of its 40 operations is run on its old catalog (the scripted
oracle, on ``full`` and ``core``: core shows the first 15 operations). The new catalog puts 15 admin operations at
the top of the list: ``full`` still shows every operation the tasks need, while ``core`` now shows only the admin
ones, so every task core solved on the old catalog fails on the new one. The follow-up must find core worse (close)
and full not worse, stop running core once decided, write its episodes to a folder of its own, and resume.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.catalog.catalog_diff import diff_catalogs
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.report.diff_report import PrefixChange
from surfbench.bench.sequential.catalog_followup import touched_tasks
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

WORDS = (
    "amber azure birch cedar cobalt coral crimson dune ember fern flint frost garnet hazel indigo iris ivory jade "
    "juniper lapis lilac maple marble moss ochre onyx opal pearl pine quartz raven ruby sable sage slate spruce "
    "topaz umber willow zinc"
).split()
assert len(WORDS) == 40


def tool(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"entry": {"type": "integer"}}, "required": ["entry"]}
    return {"name": name, "description": description, "inputSchema": schema}


OLD_TOOLS = [tool(f"read_{w}", f"Read one entry of the {w} ledger: its total.") for w in WORDS]
ADMIN = [tool(f"admin_{w}", f"Administer the {w} archive settings.") for w in WORDS[:15]]


def write_suite(folder: Path, tools: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tools.json").write_text(json.dumps({"tools": tools}, indent=1))
    (folder / "suite.yaml").write_text(
        "name: ledger\ndescription: ledgers\ncatalog: tools.json\nbackend: none\nmax_steps: 3\ntasks: [tasks.yaml]\n"
    )
    tasks = [
        {
            "id": f"t-{w}-{n}", "split": "dev", "tags": ["single"],
            "turns": [f"What is the total of entry {n} in the {w} ledger?"],
            "expected": [{"op": f"read_{w}", "args": {"entry": n}}],
            "canned": {f"read_{w}": {"total": 11}}, "answer": {"contains": ["11"]},
        }
        for w in WORDS[:15] for n in (7, 9)
    ]  # fmt: skip
    (folder / "tasks.yaml").write_text(json.dumps(tasks, indent=1))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The suite, its old run (full and core, oracle), the old catalog saved, the suite's catalog changed."""
    base = tmp_path_factory.mktemp("followup")
    suites, configs = base / "suites", base / "configs"
    write_suite(suites / "ledger", OLD_TOOLS)
    shutil.copytree(ROOT / "configs", configs)
    (configs / "suite" / "ledger.yaml").write_text("name: ledger\n")
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_SUITES": str(suites), "CI": "true"}
    old = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", "-m", "suite=ledger", "surface=full,core", "model=oracle",
         "split=all", f"results_dir={base / 'results'}", "run=old"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert old.returncode == 0, old.stderr[-3000:]
    shutil.copy(suites / "ledger" / "tools.json", base / "old-tools.json")
    write_suite(suites / "ledger", ADMIN + OLD_TOOLS)  # the pull request: 15 admin tools at the top
    return {"base": base, "env": env, "old_run": base / "results" / "old"}


def diff(setup: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    base = setup["base"]
    return subprocess.run(
        [sys.executable, "-m", "surfbench", "diff", str(base / "old-tools.json"),
         str(base / "suites" / "ledger" / "tools.json"), "--name", "ledger", "--suite", "ledger", "--no-gate",
         "--retriever", "bm25", "--against", str(setup["old_run"]), *extra],
        cwd=ROOT, env=setup["env"], capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def rows(out: str, surface: str) -> dict[str, list[str]]:
    found = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith(f"| {surface} | oracle | ") and len(cells) == 7:
            found[cells[2]] = cells
    return found


def test_the_follow_up_closes_the_surface_the_change_broke_and_not_the_other(setup: dict[str, Any]):
    proc = diff(setup, "--allow-scripted", "--format", "markdown")
    assert proc.returncode == 2, proc.stderr[-3000:]
    out = proc.stdout
    assert "## surfbench diff: the paired follow-up" in out
    core, full = rows(out, "core"), rows(out, "full")
    assert core["success_drop_max"][5] == "fail", core
    assert core["first_try_drop_max"][5] == "fail", core
    assert "| core | oracle | **CLOSE** |" in out
    assert not any(r[5] == "fail" for r in full.values()), full  # every task still solved on full
    assert "Tasks the change touches, per surface: core 30, full 30" in out  # both heads changed
    folder = setup["old_run"].parent / "old-followup"
    record = json.loads((folder / "catalog-followup.json").read_text())
    assert record["seed"] == 0 and len(record["order"]) == 30 and record["looks"]
    import pandas as pd

    frame = pd.concat(pd.read_parquet(p) for p in (folder / "episodes.parquet").glob("part-*.parquet"))
    ran = frame.groupby("surface").size().to_dict()
    assert ran == {"core": 10, "full": 30}, ran  # core stopped once closed (first look); full ran to the budget
    assert "surfbench diff: follow-up stopped:" in proc.stderr

    again = diff(setup, "--allow-scripted", "--format", "markdown")  # resumes: nothing runs again
    assert again.returncode == 2
    assert rows(again.stdout, "core") == core and rows(again.stdout, "full") == full
    frame2 = pd.concat(pd.read_parquet(p) for p in (folder / "episodes.parquet").glob("part-*.parquet"))
    assert len(frame2) == len(frame)


def test_json_output_carries_the_follow_up_and_the_combined_exit_code(setup: dict[str, Any]):
    proc = diff(setup, "--allow-scripted", "--json", "--run", "json-followup")
    assert proc.returncode == 2, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["exit_code"] == 2
    decisions = {(d["surface"], d["decision"]) for d in data["followup"]["decisions"]}
    assert ("core", "close") in decisions
    assert {v["criterion"] for v in data["followup"]["verdicts"]} >= {"success_drop_max", "first_try_drop_max"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ((), "scripted model oracle are a plumbing check"),
        (("--allow-scripted", "--run", "a/b"), "--run a/b: must be a folder name"),
        (("--allow-scripted", "--run", "old"), "that is RUN itself"),
    ],
)
def test_a_follow_up_that_cannot_run_is_one_error_line(setup: dict[str, Any], extra: tuple[str, ...], message: str):
    proc = diff(setup, *extra)
    assert proc.returncode == 2
    assert message in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_against_needs_a_suite_and_a_run_folder(setup: dict[str, Any], tmp_path: Path):
    base = setup["base"]
    cmd = [sys.executable, "-m", "surfbench", "diff", str(base / "old-tools.json"), str(base / "old-tools.json")]
    env = setup["env"]
    no_suite = subprocess.run([*cmd, "--against", str(setup["old_run"])], env=env, capture_output=True, text=True)
    assert no_suite.returncode == 2 and "--against RUN needs --suite SUITE" in no_suite.stderr
    not_run = subprocess.run([*cmd, "--suite", "ledger", "--against", str(tmp_path)], env=env, capture_output=True,
                             text=True)  # fmt: skip
    assert not_run.returncode == 2 and "not a run folder (no run.json)" in not_run.stderr
    for stray_option in (["--run", "x"], ["--budget", "80"], ["--allow-scripted"]):
        stray = subprocess.run([*cmd, *stray_option], env=env, capture_output=True, text=True)
        assert stray.returncode == 2 and f"{stray_option[0]}: only with --against RUN" in stray.stderr


def test_touched_tasks_are_every_task_when_the_head_changed_else_those_naming_a_changed_operation(
    setup: dict[str, Any],
):
    base = setup["base"]
    suite = load_suite(str(base / "suites" / "ledger"))
    old = load_catalog(base / "old-tools.json", name="ledger")
    edited = [dict(t) for t in OLD_TOOLS]
    edited[WORDS.index("cedar")] = tool("read_cedar", "Read the cedar ledger (one entry).")
    new = load_catalog_from(base / "edited.json", edited)
    change = diff_catalogs(old, new)
    same_head = PrefixChange("core", 100, 100, None)
    assert touched_tasks(suite.tasks, change, same_head) == ["t-cedar-7", "t-cedar-9"]
    assert len(touched_tasks(suite.tasks, change, PrefixChange("full", 100, 101, "tool 4 'read_cedar'"))) == 30
    dynamic = PrefixChange("preselect", 0, 0, None, (), "request-dependent")
    assert len(touched_tasks(suite.tasks, change, dynamic)) == 30
    assert len(touched_tasks(suite.tasks, change, None)) == 30


def load_catalog_from(path: Path, tools: list[dict[str, Any]]) -> Any:
    path.write_text(json.dumps({"tools": tools}))
    return load_catalog(path, name="ledger")


def test_a_larger_budget_extends_a_follow_up_and_another_design_is_refused(setup: dict[str, Any]):
    first = diff(setup, "--allow-scripted", "--run", "grow", "--budget", "10")
    assert first.returncode == 2, first.stderr[-2000:]
    assert "at most 10, have run" in first.stderr or "every cell decided after 10" in first.stderr
    more = diff(setup, "--allow-scripted", "--run", "grow", "--budget", "20")  # the same design, extended
    assert more.returncode == 2, more.stderr[-2000:]
    record = json.loads((setup["old_run"].parent / "grow" / "catalog-followup.json").read_text())
    assert record["budget"] == 20 and len(record["looks"]) >= 2
    other = diff(setup, "--allow-scripted", "--run", "grow", "--seed", "1")
    assert other.returncode == 2 and "records another design" in other.stderr
    assert "Traceback" not in other.stderr


def test_a_recorded_model_override_is_run_again_with_the_same_labels(setup: dict[str, Any]):
    base = setup["base"]
    suites = base / "suites-override"
    write_suite(suites / "ledger", OLD_TOOLS)
    env = {**setup["env"], "SURFBENCH_SUITES": str(suites)}
    old = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", "suite=ledger", "surface=core", "model=oracle", "split=all",
         "+model.max_tokens=100", f"results_dir={base / 'results'}", "run=override"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert old.returncode == 0, old.stderr[-2000:]
    write_suite(suites / "ledger", ADMIN + OLD_TOOLS)
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "diff", str(base / "old-tools.json"), str(suites / "ledger" / "tools.json"),
         "--name", "ledger", "--suite", "ledger", "--no-gate", "--retriever", "bm25", "--allow-scripted",
         "--against", str(base / "results" / "override")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "| core | oracle[max_tokens=100] | **CLOSE** |" in proc.stdout  # paired with the recorded cell


def test_criteria_without_a_per_task_value_are_listed_not_judged():
    from surfbench.bench.report.gate_criteria import Criterion
    from surfbench.bench.sequential.catalog_followup import sequential_criteria

    drop = Criterion("first_try_drop_max", 0.05, "close", sequential=True)
    cost = Criterion("effective_cost_ratio_max", 1.1, profile="openai")
    help_size = Criterion("help_bytes_max", 1536)
    paired, other = sequential_criteria([drop, cost, help_size], "x.yaml")
    assert paired == [drop] and other == [cost, help_size]
    with pytest.raises(ValueError, match="no criterion has a per-task value"):
        sequential_criteria([help_size], "x.yaml")
