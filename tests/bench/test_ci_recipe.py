"""The CI recipe of docs/ci.md (issue 54): examples/ci/surfbench-diff.sh on a temporary git repository, and the
GitHub Actions workflow that calls it.

The script runs ``surfbench diff BASE:CATALOG CATALOG --format markdown --out FILE`` and exits with the static
gate's code (0 ship, 1 revise, 2 close or error, bad usage too). Here a repository has a ``main`` branch with a
3-tool catalog and a branch that changes it, as a pull request would: a description edit ships, a new required
argument is sent back for revision. No model runs.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

CI = ROOT / "examples" / "ci"
SCRIPT = CI / "surfbench-diff.sh"
WORKFLOW = CI / "github-surfbench-diff.yml"
MODEL_GATE = CI / "model-gate.yaml"

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city, with the temperature in the unit asked for.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name."}, "unit": {"type": "string", "enum": ["c", "f"]},
        }, "required": ["city"]},
    }},
    {"type": "function", "function": {
        "name": "get_time",
        "description": "Current time in a timezone.",
        "parameters": {"type": "object", "properties": {
            "tz": {"type": "string", "description": "IANA timezone, e.g. Europe/Paris."},
        }, "required": ["tz"]},
    }},
    {"type": "function", "function": {
        "name": "send_alert",
        "description": "Send a weather alert to a phone number.",
        "parameters": {"type": "object", "properties": {"phone": {"type": "string"}, "text": {"type": "string"}},
                       "required": ["phone", "text"]},
    }},
]  # fmt: skip


def env() -> dict[str, str]:
    """The test's environment, with the venv's bin first so that the script finds ``surfbench``."""
    found = dict(os.environ)
    found["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), found.get("PATH", "")])
    for key in ("SURFBENCH_CONFIGS", "SURFBENCH_SUITES", "SURFBENCH"):  # the shipped gate, whatever the shell has
        found.pop(key, None)
    return found


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
        cwd=repo, check=True, capture_output=True, timeout=60,
    )  # fmt: skip


def write(path: Path, tools: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(tools, indent=1) + "\n", encoding="utf-8")


def pull_request(tmp_path: Path, edited: list[dict[str, Any]], catalog: str = "api/tools.json") -> Path:
    """A repository whose ``main`` holds TOOLS in ``catalog`` and whose checked-out branch ``change`` edits it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo / catalog, TOOLS)
    git(repo, "add", catalog)
    git(repo, "commit", "-q", "-m", "the catalog")
    git(repo, "checkout", "-q", "-b", "change")
    write(repo / catalog, edited)
    git(repo, "commit", "-q", "--allow-empty", "-am", "the change")
    return repo


def run_script(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=cwd, env=env(), capture_output=True, text=True, timeout=120)


def edit(name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    tools = copy.deepcopy(TOOLS)
    return tools, next(t["function"] for t in tools if t["function"]["name"] == name)


def test_a_description_edit_ships_exit_0_and_the_markdown_names_it(tmp_path: Path):
    tools, weather = edit("get_weather")
    weather["description"] = "Get the weather for a city."
    repo = pull_request(tmp_path, tools)
    done = run_script(repo, "-o", "comment.md", "main", "api/tools.json")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("## surfbench diff: main:api/tools.json (3 operations")
    assert "**decision: SHIP (exit 0; gate diff, configs/gate/diff.yaml)**" in out
    assert "| changed | `get_weather` | no | description changed |" in out
    assert "0 added, 0 removed, 0 renamed (guesses), 1 changed (0 breaking)" in out
    assert "| full | 3 |" in out  # the surfaces are measured
    assert (repo / "comment.md").read_text(encoding="utf-8") == out  # what the CI posts is what it printed
    assert "surfbench-diff.sh: exit 0 (ship)" in done.stderr


def test_a_new_required_argument_is_breaking_exit_1_from_a_subfolder_with_passed_options(tmp_path: Path):
    tools, time_op = edit("get_time")
    time_op["parameters"]["properties"]["format"] = {"type": "string", "enum": ["iso", "unix"]}
    time_op["parameters"]["required"].append("format")
    repo = pull_request(tmp_path, tools)
    done = run_script(repo / "api", "main", "tools.json", "--", "--surface", "full,dispatcher")
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert out.startswith("## surfbench diff: main:api/tools.json")  # the path from the repository's root
    assert "1 changed (1 breaking)" in out
    row = "| ↳ required_added | `get_time` `properties.format` | yes | new required argument 'format' (string) |"
    assert row in out
    assert "| breaking | none | 1 | fail | revise | get_time (required_added) |" in out
    assert "decision: REVISE (exit 1" in out
    assert "| dispatcher | 2 |" in out and "| core |" not in out  # the options after -- reached surfbench diff
    assert (repo / "api" / "surfbench-diff.md").read_text(encoding="utf-8") == out  # the default -o


def test_a_catalog_new_on_the_branch_has_nothing_to_gate(tmp_path: Path):
    repo = pull_request(tmp_path, TOOLS)
    write(repo / "next.json", TOOLS)
    done = run_script(repo, "main", "next.json")
    assert done.returncode == 0, done.stderr
    assert "next.json does not exist at main (a new catalog)" in done.stdout
    assert "a new catalog" in (repo / "surfbench-diff.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "give BASE and CATALOG"),
        (("main",), "give BASE and CATALOG"),
        (("-x", "main", "tools.json"), "unknown option -x"),
        (("-o",), "-o needs a value"),
        (("main", "tools.json", "--surface", "full"), "unexpected argument '--surface'"),
    ],
)
def test_bad_usage_prints_the_usage_and_exits_2(tmp_path: Path, args: tuple[str, ...], says: str):
    done = run_script(tmp_path, *args)
    assert done.returncode == 2
    assert says in done.stderr
    assert "usage: surfbench-diff.sh [-o FILE] [-s SUITE] BASE CATALOG" in done.stderr
    assert done.stdout == ""


def test_errors_exit_2_and_the_comment_says_why(tmp_path: Path):
    repo = pull_request(tmp_path, TOOLS)
    done = run_script(repo, "origin/main", "api/tools.json")  # a checkout without the base branch
    assert done.returncode == 2
    assert "origin/main is not a revision of this repository" in done.stderr
    assert "fetch-depth: 0" in (repo / "surfbench-diff.md").read_text(encoding="utf-8")
    assert run_script(repo, "main", "api/missing.json").returncode == 2
    assert run_script(tmp_path, "main", str(SCRIPT)).returncode == 2  # not a git repository
    done = run_script(repo, "main", "api/tools.json", "--", "--no-such-option")  # surfbench diff's own error
    assert done.returncode == 2
    comment = (repo / "surfbench-diff.md").read_text(encoding="utf-8")
    assert comment.startswith("## surfbench diff: error") and "--no-such-option" in comment


def test_the_workflow_parses_and_calls_the_script_and_the_model_gate():
    flow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads the key `on` as true
    assert "pull_request" in on and "labeled" in on["pull_request"]["types"]
    assert flow["env"]["DIFF_SCRIPT"].endswith("/" + SCRIPT.name)
    assert flow["env"]["MODEL_GATE"].endswith("/" + MODEL_GATE.name)

    static = flow["jobs"]["static-diff"]
    steps = static["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@") and steps[0]["with"]["fetch-depth"] == 0
    diff = next(s for s in steps if s.get("id") == "diff")
    assert 'bash "$DIFF_SCRIPT"' in diff["run"] and '"$BASE" "$CATALOG"' in diff["run"]
    assert diff["env"]["BASE"] == "origin/${{ github.base_ref }}"
    comment = next(s for s in steps if "sticky-pull-request-comment" in s.get("uses", ""))
    assert comment["with"]["path"] == "surfbench-diff.md"
    assert "exit 2" in steps[-1]["run"] and "::warning" in steps[-1]["run"]

    model = flow["jobs"]["model-gate"]
    assert "contains(github.event.pull_request.labels.*.name, 'surfbench-model-gate')" in model["if"]
    assert model["env"]["OPENAI_API_KEY"] == "${{ secrets.OPENAI_API_KEY }}"
    runs = "\n".join(s.get("run", "") for s in model["steps"])
    assert 'until_decided="$MODEL_GATE"' in runs and "model=gpt-4o-mini" in runs
    assert 'surfbench gate --criteria "$MODEL_GATE"' in runs and "--sequential" in runs
    config = yaml.safe_load((ROOT / "configs" / "model" / "gpt-4o-mini.yaml").read_text(encoding="utf-8"))
    assert config["api_key_env"] == "OPENAI_API_KEY"


def test_the_model_gate_file_is_a_valid_sequential_gate_over_the_surfaces_the_workflow_runs():
    from surfbench.bench.report.gate_criteria import load_criteria

    spec = load_criteria(MODEL_GATE)
    assert any(c.sequential for c in spec["criteria"])
    assert {spec["baseline"], *spec["candidates"]} == {"full", "core", "dispatcher"}
    assert "surface=full,core,dispatcher" in WORKFLOW.read_text(encoding="utf-8")


def test_docs_ci_names_the_recipe_files():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    for path in (SCRIPT, WORKFLOW, MODEL_GATE):
        assert str(path.relative_to(ROOT)) in text
