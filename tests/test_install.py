"""An installed surfbench works outside a checkout, and another package can add a surface kind.

The wheel is built from a copy of the checkout (symlinks kept, as git keeps them) and installed with
``pip install --target`` into a temporary folder; the commands then run from an unrelated directory
with ``python -S`` and that folder first on the path, so neither the checkout nor the editable install
can stand in for what the wheel holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"
SKIP = {".git", ".venv", ".venv-peer", "results", "build", "dist", "node_modules", "__pycache__"}
PLUGIN_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "surfbench-plugin-demo"
version = "0.0.1"

[project.entry-points."surfbench.surfaces"]
echo_full = "sbplugin_demo:EchoFull"

[tool.setuptools]
py-modules = ["sbplugin_demo"]
"""
PLUGIN_MODULE = '''
"""A surface kind from outside the repository: the full catalog, renamed."""

from surfbench.surfaces.full import FullSurface


class EchoFull(FullSurface):
    kind = "echo_full"
'''


def _pip_target(source: Path, target: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target)]
    done = subprocess.run([*cmd, str(source)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("install")
    source = work / "src"
    shutil.copytree(ROOT, source, symlinks=True, ignore=lambda _d, names: [n for n in names if n in SKIP])
    target = work / "site"
    _pip_target(source, target)
    return target


def _run(target: Path, cwd: Path, *args: str, extra_path: Path | None = None, configs: Path | None = None):
    deps = sysconfig.get_paths()["purelib"]  # the venv's dependencies, without its .pth files (-S)
    paths = [str(p) for p in (extra_path, target) if p] + [deps, sysconfig.get_paths()["platlib"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SURFBENCH_")}
    env |= {"PYTHONPATH": os.pathsep.join(paths), "CI": "true", "SURFBENCH_CACHE": str(cwd / "cache")}
    if configs:
        env["SURFBENCH_CONFIGS"] = str(configs)
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_only_surfbench_lands_at_the_top_of_site_packages(installed: Path):
    top = sorted(p.name for p in installed.iterdir())
    assert [n for n in top if n != "bin"] == ["surfbench", "surfbench-0.2.0.dist-info"], top
    shipped = installed / "surfbench"
    assert not any(p.is_symlink() for p in shipped.iterdir()), "the wheel holds copies, not the checkout's links"
    for data in (
        "configs/config.yaml",
        "configs/surface/full.yaml",
        "tasks/forge/suite.yaml",
        "tasks/notes_mcp/catalog.json",
    ):
        assert (shipped / data).is_file(), data


def test_outside_a_checkout_only_surfbench_imports(installed: Path, tmp_path: Path):
    for old in ("bench", "surfaces", "tasks"):
        done = _run(installed, tmp_path, "-c", f"import {old}")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, old
    done = _run(installed, tmp_path, "-c", "import surfbench.bench.cli as c; print(c.__file__)")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed)


def test_surfaces_run_report_and_gate_work_from_an_unrelated_directory(installed: Path, tmp_path: Path):
    mine = tmp_path / "my-configs" / "model"
    mine.mkdir(parents=True)
    (mine / "oracle.yaml").write_text(ORACLE)  # an extra config folder: the shipped configs still count
    catalog = installed / "surfbench" / "tasks" / "notes_mcp" / "catalog.json"
    table = _run(installed, tmp_path, "-m", "surfbench", "surfaces", "--catalog", str(catalog))
    assert table.returncode == 0, table.stderr
    assert "dispatcher" in table.stdout and "full" in table.stdout
    run = _run(
        installed, tmp_path, "-m", "surfbench", "run", "-m", "suite=notes_mcp", "surface=full,dispatcher,core",
        "model=oracle", "results_dir=results", "run=installed", configs=tmp_path / "my-configs",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "results" / "installed" / "episodes.parquet").exists() or list(
        (tmp_path / "results" / "installed").glob("episodes*")
    )
    report = _run(installed, tmp_path, "-m", "surfbench", "report", "results/installed")
    assert report.returncode == 0, report.stderr
    gate_file = installed / "surfbench" / "configs" / "gate" / "dsh.yaml"
    gate = _run(installed, tmp_path, "-m", "surfbench", "gate", "--criteria", str(gate_file), "results/installed")
    assert gate.returncode in (0, 1, 2) and "dispatcher" in gate.stdout, gate.stderr


def test_a_package_of_its_own_adds_a_surface_kind(installed: Path, tmp_path: Path):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (plugin / "sbplugin_demo.py").write_text(PLUGIN_MODULE)
    plugins = tmp_path / "plugins"
    _pip_target(plugin, plugins)
    mine = tmp_path / "my-configs" / "surface"
    mine.mkdir(parents=True)
    (mine / "echo.yaml").write_text("name: echo\nkind: echo_full\n")
    catalog = installed / "surfbench" / "tasks" / "notes_mcp" / "catalog.json"
    args = ("-m", "surfbench", "surfaces", "--catalog", str(catalog), "--surface", "echo", "--surface", "full")
    done = _run(installed, tmp_path, *args, extra_path=plugins, configs=tmp_path / "my-configs")
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.split()}
    assert rows["echo"][:2] == rows["full"][:2], done.stdout  # same tools, same bytes
    without = _run(installed, tmp_path, *args, configs=tmp_path / "my-configs")
    assert without.returncode == 2 and "echo_full" in without.stderr, "without the plugin the kind is unknown"
