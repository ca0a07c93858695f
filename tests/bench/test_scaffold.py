"""``surfbench init`` writes a code-free suite that checks and runs as it is; ``surfbench check`` names the
task of a broken expected call; ``SURFBENCH_CONFIGS`` adds folders to the shipped configs. Scripted oracle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from surfbench.bench.base.config import group_names, read_group_config
from surfbench.bench.cli.cli import main as cli_main
from surfbench.bench.store.results import load_runs
from tests.conftest import FIXTURES, ROOT

GITEA = FIXTURES / "gitea-1.15-swagger.json"
ORACLE = "provider: scripted\nscript_suite: {suite}\nparams_b: 0.0\nmode: native\n"


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``surfbench init`` on the Gitea Swagger file, made once (the tests below only read it)."""
    folder = tmp_path_factory.mktemp("suites") / "gitea_demo"
    assert cli_main(["init", "--catalog", str(GITEA), str(folder)]) == 0
    return folder


def runnable_tasks(folder: Path) -> list[dict]:
    return yaml.safe_load((folder / "tasks.yaml").read_text())


def test_init_writes_a_suite_with_its_config_readme_catalog_and_commented_examples(suite_dir: Path):
    suite = yaml.safe_load((suite_dir / "suite.yaml").read_text())
    assert suite["name"] == "gitea_demo" and suite["backend"] == "none" and suite["tasks"] == ["tasks.yaml"]
    assert (suite_dir / suite["catalog"]).read_bytes() == GITEA.read_bytes()
    assert yaml.safe_load((suite_dir / "configs" / "suite" / "gitea_demo.yaml").read_text()) == {"name": "gitea_demo"}
    readme = (suite_dir / "README.md").read_text()
    # commands from the suite's parent (it is not below the folder init ran in), never an absolute path
    assert "export SURFBENCH_SUITES=. SURFBENCH_CONFIGS=gitea_demo/configs" in readme and str(suite_dir) not in readme
    assert "surfbench check gitea_demo" in readme
    text = (suite_dir / "tasks.yaml").read_text()
    examples = [line for line in text.splitlines() if line.startswith("# - id: ")]
    assert len(examples) == 5
    # one per category first (admin, miscellaneous, ...): round-robin, as the file's comment says
    assert "round-robin" in text and "# - id: admin-cron-list" in text
    tasks = runnable_tasks(suite_dir)
    assert [t["tags"] for t in tasks] == [["single", "read"], ["should-refuse"]]
    assert tasks[0]["canned"] and tasks[0]["expected"][0]["op"] in tasks[0]["canned"]


def test_check_passes_on_the_scaffold(suite_dir: Path, capsys: pytest.CaptureFixture[str]):
    assert cli_main(["check", str(suite_dir)]) == 0
    assert "ok: 2 tasks, oracle solves 2/2" in capsys.readouterr().out


def test_the_scaffold_runs_through_the_cli_on_the_oracle(suite_dir: Path, tmp_path: Path):
    oracle = tmp_path / "oracle-configs"
    (oracle / "model").mkdir(parents=True)
    (oracle / "model" / "oracle.yaml").write_text(ORACLE.format(suite="gitea_demo"))
    env = {
        **os.environ,
        "CI": "true",
        "SURFBENCH_SUITES": str(suite_dir.parent),
        "SURFBENCH_CONFIGS": f"{suite_dir / 'configs'}{os.pathsep}{oracle}",  # each holds one file: additive
    }
    cmd = [sys.executable, "-m", "surfbench", "run", "suite=gitea_demo", "surface=full", "model=oracle"]
    proc = subprocess.run(
        [*cmd, f"results_dir={tmp_path / 'results'}", "run=r"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = load_runs([tmp_path / "results" / "r"])
    assert sorted(episodes["task_id"]) == sorted(t["id"] for t in runnable_tasks(suite_dir))
    assert episodes["success"].all()


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_init_refuses_a_non_empty_folder_and_a_missing_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep")
    assert cli_main(["init", "--catalog", str(GITEA), str(folder)]) == 2
    assert str(folder) in one_error_line(capsys.readouterr().err)
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]

    missing = tmp_path / "nope.json"
    assert cli_main(["init", "--catalog", str(missing), str(tmp_path / "new")]) == 2
    assert f"{missing}: file not found" in one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]  # no folder, no temporary leftovers


def broken_copy(suite_dir: Path, tmp_path: Path, old: str, new: str) -> tuple[Path, str]:
    """A copy of the scaffold whose runnable task has ``old`` replaced by ``new``; (folder, task id)."""
    folder = tmp_path / "gitea_demo"
    shutil.copytree(suite_dir, folder)
    text = (folder / "tasks.yaml").read_text()
    assert old in text
    (folder / "tasks.yaml").write_text(text.replace(old, new, 1))
    return folder, runnable_tasks(suite_dir)[0]["id"]


def test_check_names_the_task_of_a_call_of_the_wrong_type(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder, task = broken_copy(suite_dir, tmp_path, "args: {id: example}", "args: {id: 5}")
    assert cli_main(["check", str(folder)]) == 2
    out, err = capsys.readouterr()
    problem = one_error_line(err)
    assert repr(task) in problem and "'id' must be string, got integer 5" in problem
    assert "1 problem(s): 2 tasks, oracle solves 1/2" in out


def test_check_names_the_task_of_an_unknown_operation(
    suite_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder, task = broken_copy(suite_dir, tmp_path, "op: notifyGetThread", "op: notifyGetThred")
    assert cli_main(["check", str(folder)]) == 2
    problem = one_error_line(capsys.readouterr().err)
    assert repr(task) in problem and "did you mean notifyGetThread" in problem


def test_configs_folders_add_to_the_shipped_ones_and_override_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    shipped_surfaces, shipped_suites = group_names("surface"), group_names("suite")
    extra = tmp_path / "extra"
    (extra / "suite").mkdir(parents=True)
    (extra / "suite" / "mine.yaml").write_text("name: mine\n")
    mine = tmp_path / "mine"
    (mine / "model").mkdir(parents=True)
    (mine / "model" / "qwen2.5-coder-0.5b-instruct.yaml").write_text(ORACLE.format(suite="forge"))
    monkeypatch.setenv("SURFBENCH_CONFIGS", f"{extra}{os.pathsep}{mine}")
    assert group_names("surface") == shipped_surfaces and read_group_config("surface", "full")["kind"]
    assert group_names("suite") == sorted([*shipped_suites, "mine"])
    assert read_group_config("suite", "mine") == {"name": "mine"}
    assert read_group_config("model", "qwen2.5-coder-0.5b-instruct")["provider"] == "scripted"  # the user's wins
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(tmp_path / "typo"))
    with pytest.raises(ValueError, match="typo is not a folder"):
        group_names("surface")
