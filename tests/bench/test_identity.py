"""Cells keyed by everything that shapes them: sweeps over a parameter, edited tasks, key collisions,
provenance for report and gate, duplicate rows. Scripted oracle model throughout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from surfbench.bench.store.results import load_runs
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: {suite}\nparams_b: 0.0\nmode: native\n"


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "notes-oracle.yaml").write_text(ORACLE.format(suite="notes_mcp"))
    return folder


def cli(configs: Path, *args: str, suites: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"}
    if suites is not None:
        env["SURFBENCH_SUITES"] = str(suites)
    cmd = [sys.executable, "-m", "surfbench", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def ktest(configs: Path, results: Path, suites: Path | None = None) -> subprocess.CompletedProcess[str]:
    return cli(
        configs, "run", "-m", "suite=notes_mcp", "surface=preselect", "surface.params.k=1,3", "model=notes-oracle",
        "limit=2", f"results_dir={results}", "run=ktest", suites=suites,
    )  # fmt: skip


def test_a_sweep_over_a_surface_parameter_gives_distinct_cells(configs: Path, tmp_path: Path):
    proc = ktest(configs, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2/2 episodes already done" not in proc.stderr, "the k=3 cell must not reuse the k=1 cell's episodes"
    episodes = load_runs([tmp_path / "ktest"])
    assert len(episodes) == 4 and episodes["episode_key"].is_unique
    assert set(episodes["surface"]) == {"preselect[params.k=1]", "preselect[params.k=3]"}
    assert episodes["cell_id"].nunique() == 2
    steps = load_runs([tmp_path / "ktest"], "steps").merge(episodes[["episode_key", "surface"]], on="episode_key")
    shown = steps.groupby("surface")["tools_shown"].max().to_dict()
    assert shown == {"preselect[params.k=1]": 1, "preselect[params.k=3]": 3}

    again = ktest(configs, tmp_path)
    assert again.returncode == 0 and again.stderr.count("2/2 episodes already done") == 2, again.stderr[-2000:]
    assert len(load_runs([tmp_path / "ktest"])) == 4


def test_an_edited_task_runs_again_alone_and_its_old_row_is_not_counted(configs: Path, tmp_path: Path):
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", suites / "notes_mcp")
    assert ktest(configs, tmp_path, suites).returncode == 0
    tasks_file = suites / "notes_mcp" / "tasks.yaml"
    tasks = yaml.safe_load(tasks_file.read_text())
    tasks[1]["turns"] = ["Please read note n7."]  # read-note, the second task of the first two
    tasks_file.write_text(yaml.safe_dump(tasks, sort_keys=False))

    proc = ktest(configs, tmp_path, suites)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("1/2 episodes already done") == 2, proc.stderr[-2000:]  # one task per cell re-ran
    episodes = load_runs([tmp_path / "ktest"])
    assert len(episodes) == 6 and (episodes["task_id"] == "read-note").sum() == 4

    report = cli(configs, "report", str(tmp_path / "ktest"), "--baseline", "preselect", suites=suites)
    assert report.returncode == 0, report.stderr[-2000:]
    text = (tmp_path / "ktest" / "report" / "report.md").read_text()
    assert "2 episode(s) of an older cell identity left out" in text
    assert "tasks.yaml changed since the run" not in text  # the run recorded today's file

    pruned = cli(configs, "prune", str(tmp_path / "ktest"), suites=suites)
    assert pruned.returncode == 0 and "removed 2 episode(s)" in pruned.stdout
    assert len(load_runs([tmp_path / "ktest"])) == 4
    assert len(list((tmp_path / "ktest" / "transcripts").glob("*.jsonl"))) == 4


def test_the_gate_judges_with_the_surface_config_the_run_recorded(configs: Path, tmp_path: Path):
    for surface in ("surface=full", "surface=preselect"):
        extra = ["surface.params.k=10"] if surface.endswith("preselect") else []
        proc = cli(
            configs, "run", "suite=notes_mcp", surface, *extra, "model=notes-oracle", "limit=2",
            f"results_dir={tmp_path}", "run=g",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
    shipped = yaml.safe_load((configs / "surface" / "preselect.yaml").read_text())
    shipped["params"]["k"] = 1  # today's file says k=1; the run was made with k=10
    (configs / "surface" / "preselect.yaml").write_text(yaml.safe_dump(shipped))
    gate_file = tmp_path / "gate.yaml"
    gate_file.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "baseline": "full",
                "candidates": ["preselect"],
                "criteria": [{"kind": "round_trips_ratio_max", "value": 5}],
            }
        )  # fmt: skip
    )
    gate = cli(configs, "gate", "--criteria", str(gate_file), str(tmp_path / "g"), "--allow-scripted")
    assert gate.returncode in (0, 1), gate.stderr[-2000:]
    used = [line for line in gate.stdout.splitlines() if line.startswith("surface config used")]
    assert len(used) == 1 and '"k": 10' in used[0] and "preselect[params.k=10]" in used[0], gate.stdout


def test_task_ids_that_read_alike_and_long_ids_with_repeats_never_share_a_key(configs: Path, tmp_path: Path):
    suites = tmp_path / "suites"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", suites / "notes_mcp")
    tasks = yaml.safe_load((suites / "notes_mcp" / "tasks.yaml").read_text())
    long_id = "t" * 71
    twins = [{**tasks[1], "id": "a/b"}, {**tasks[1], "id": "a b"}, {**tasks[1], "id": long_id}]
    (suites / "notes_mcp" / "tasks.yaml").write_text(yaml.safe_dump(twins, sort_keys=False))
    proc = cli(
        configs, "run", "suite=notes_mcp", "surface=full", "model=notes-oracle", "repeats=2",
        f"results_dir={tmp_path}", "run=ids", suites=suites,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "0/6 episodes already done" in proc.stderr, proc.stderr[-2000:]
    episodes = load_runs([tmp_path / "ids"])
    assert len(episodes) == 6 and episodes["episode_key"].is_unique
    assert sorted(episodes["task_id"].value_counts().to_dict().items()) == [("a b", 2), ("a/b", 2), (long_id, 2)]
    assert len(list((tmp_path / "ids" / "transcripts").glob("*.jsonl"))) == 6


def test_a_duplicated_part_makes_report_and_gate_refuse_naming_the_key(configs: Path, tmp_path: Path):
    proc = cli(
        configs, "run", "suite=notes_mcp", "surface=full", "model=notes-oracle", "limit=2",
        f"results_dir={tmp_path}", "run=dup",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    folder = tmp_path / "dup" / "episodes.parquet"
    part = sorted(folder.glob("part-*.parquet"))[0]
    shutil.copy(part, folder / "part-copy.parquet")
    key = str(pd.read_parquet(part)["episode_key"].iloc[0])
    report = cli(configs, "report", str(tmp_path / "dup"))
    assert report.returncode == 2 and key in report.stderr and "Traceback" not in report.stderr, report.stderr
    gate = cli(configs, "gate", "--criteria", str(ROOT / "configs" / "gate" / "dsh.yaml"), str(tmp_path / "dup"))
    assert gate.returncode == 2 and key in gate.stderr and "Traceback" not in gate.stderr, gate.stderr
    kept = cli(configs, "report", str(tmp_path / "dup"), "--keep-newest")
    assert kept.returncode == 0, kept.stderr[-2000:]


def test_the_stuck_stop_is_part_of_the_cell(configs: Path, tmp_path: Path):
    common = ("run", "suite=notes_mcp", "surface=full", "model=notes-oracle", "limit=2", f"results_dir={tmp_path}")
    off = cli(configs, *common, "run=s", "stop_on_repeat=null")
    assert off.returncode == 0, off.stderr[-2000:]
    on = cli(configs, *common, "run=s")  # the shipped default stops stuck episodes
    assert on.returncode == 0 and "2/2 episodes already done" not in on.stderr, on.stderr[-2000:]
    episodes = load_runs([tmp_path / "s"])
    assert len(episodes) == 4 and episodes["cell_id"].nunique() == 2


def test_a_prompt_cache_breakpoint_is_part_of_the_model_identity_and_its_absence_changes_nothing():
    from surfbench.bench.models.spec import ModelConfig
    from surfbench.bench.store.identity import model_identity

    plain = model_identity(ModelConfig(name="x", provider="litellm", model="anthropic/x"), "native")
    assert "cache_control" not in plain, "runs recorded before the option keep their cell ids"
    cached = model_identity(
        ModelConfig(name="x", provider="litellm", model="anthropic/x", cache_control="tools"), "native"
    )
    assert cached["cache_control"] == "tools" and cached != plain
