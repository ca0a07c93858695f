"""An installed surfbench works outside a checkout, from the wheel and from the sdist; a package adds a surface kind.

A wheel and an sdist are built once each from a copy of the checkout (setuptools' build backend, no
build isolation: nothing is downloaded) and each is installed with ``pip install --target`` into an
empty folder (the sdist through the wheel pip builds from it, as an installer would). The commands run
from an unrelated directory with ``python -S`` and that folder first on the path, so neither the
checkout nor the editable install can stand in for what a release holds.
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
FOLDERS = ("surfbench", "bench", "surfaces", "tasks", "configs")
"""The folders pyproject.toml's package-dir maps into the namespace: all their files are installed."""
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


def _build(source: Path, kind: str, out: Path) -> Path:
    """Build the wheel or the sdist of ``source`` into ``out`` with setuptools' backend, as a frontend does."""
    call = f"import setuptools.build_meta as b; print(b.build_{kind}({str(out)!r}))"
    done = subprocess.run([sys.executable, "-c", call], cwd=source, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One wheel and one sdist of a copy of the checkout, and the copy itself (``source``)."""
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    skip = lambda _d, names: [n for n in names if n in SKIP or n.endswith(".egg-info")]  # noqa: E731
    shutil.copytree(ROOT, source, symlinks=True, ignore=skip)
    return {"source": source, "wheel": _build(source, "wheel", work), "sdist": _build(source, "sdist", work)}


@pytest.fixture(scope="module", params=["wheel", "sdist"])
def installed(request: pytest.FixtureRequest, built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):
    target = tmp_path_factory.mktemp(f"site-{request.param}")
    _pip_target(built[request.param], target)
    return target


def test_building_leaves_no_egg_info_in_the_checkout(built: dict[str, Path]):
    """A stale surfbench.egg-info at the checkout root would hide new entry points whenever it is on sys.path."""
    assert not list(built["source"].glob("*.egg-info")), sorted(p.name for p in built["source"].iterdir())


def test_every_file_of_the_package_folders_is_installed(installed: Path, built: dict[str, Path]):
    """Modules, configs, suite files, seed files and pool data: each folder's files under its namespace name."""
    source = built["source"]
    files = [p.relative_to(source) for f in FOLDERS for p in (source / f).rglob("*") if p.is_file()]
    files = [f for f in files if "__pycache__" not in f.parts]
    wanted = {f: f if f.parts[0] == "surfbench" else Path("surfbench", f) for f in files}
    assert [str(f) for f, name in wanted.items() if not (installed / name).is_file()] == []


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
    assert not any(p.is_symlink() for p in shipped.iterdir()), "an install holds copies, not links"
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
    done = _run(installed, tmp_path, "-c", "import surfbench.bench.cli.cli as c; print(c.__file__)")
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
    gate = _run(
        installed, tmp_path, "-m", "surfbench", "gate", "--criteria", str(gate_file), "results/installed",
        "--allow-scripted",
    )  # fmt: skip
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
