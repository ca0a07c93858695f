"""A refused ``surfbench run`` writes nothing: no results folder, no Hydra folder, nothing outside it.

Every refusal (Hydra's own: an unknown option, an override of a key that is not there; surfbench's: a
bad setting, an unknown model key, a task that does not exist; a ``run`` name that would leave
``results_dir``) exits with 2, and a secret in the refused override stays out of the message too.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: forge\nparams_b: 0.0\nmode: native\n"
SECRET = "sk-refused-PLANTED-4711"


@pytest.fixture
def configs(tmp_path: Path) -> Path:
    folder = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE)
    # a sweep preset naming a run outside results_dir: refused from the composed config, not the overrides
    (folder / "sweep" / "escape.yaml").write_text("# @package _global_\nrun: ../escaped-by-preset\n")
    return folder


def surfbench(tmp_path: Path, configs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``surfbench run model=oracle limit=1 ARGS`` with results in ``tmp_path/deep/results``."""
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true", "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir(exist_ok=True)
    cmd = [
        sys.executable, "-m", "surfbench", "run", "model=oracle", "limit=1", *args,
        f"results_dir={tmp_path / 'deep' / 'results'}",
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


REFUSED = [
    ("surface=fulll",),  # Hydra: no such option
    ("model.api_base=http://user:" + SECRET + "@127.0.0.1:9/v1",),  # Hydra: the oracle has no api_base
    ("+model.api_key=" + SECRET,),  # the model config: unknown key
    ("+deploy_token=" + SECRET,),  # an unknown top-level setting
    ("limit=abc",),  # a bad setting
    ("tasks=[no-such-task]",),  # no such task
    ("+sweep=escape",),  # a run name leaving results_dir, from a preset
]
BAD_RUN_NAMES = ["../../escaped", "..", "nested/run", "{tmp}/absolute"]  # {tmp}: the test's tmp_path


@pytest.mark.parametrize("args", REFUSED + [(f"run={name}",) for name in BAD_RUN_NAMES], ids=str)
def test_a_refused_run_writes_nothing(configs: Path, tmp_path: Path, args: tuple[str, ...]):
    proc = surfbench(tmp_path, configs, *(a.format(tmp=tmp_path) for a in args))
    assert proc.returncode == 2, proc.stdout[-1000:] + proc.stderr[-2000:]
    assert "surfbench: error" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "tmp"], "something was written"
    assert not list((tmp_path / "tmp").iterdir()), "Hydra's temporary folder is left behind"
    assert SECRET not in proc.stdout + proc.stderr


@pytest.mark.parametrize("name", BAD_RUN_NAMES)
def test_a_run_name_leaving_results_dir_is_one_error_line(configs: Path, tmp_path: Path, name: str):
    proc = surfbench(tmp_path, configs, f"run={name.format(tmp=tmp_path)}")
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr[-2000:]
    assert lines[0].startswith("surfbench: error: run=") and "results_dir" in lines[0]


def test_a_run_that_is_not_refused_writes_only_its_run_folder(configs: Path, tmp_path: Path):
    proc = surfbench(tmp_path, configs, "run=plain-name")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / "deep" / "results").iterdir()) == ["plain-name"]
    assert not list((tmp_path / "tmp").iterdir())
