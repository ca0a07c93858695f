from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests import namespace_guard

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE_MCP = ROOT / "examples" / "gitea96.mcp.json"

sys.path.insert(0, str(FIXTURES))  # so that "pytools" imports as a python-callables catalog
namespace_guard.install()  # `import bench` fails here as it does outside a checkout: only surfbench.* imports


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test session gets its own cache dir: tests never read a developer's cache."""
    monkeypatch.setenv("SURFBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def load_script(name: str) -> ModuleType:
    """scripts/<name>.py as a fresh module (the scripts are not a package): its main() and helpers, to test."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None, f"no scripts/{name}.py"
    script = importlib.util.module_from_spec(spec)
    sys.modules[name] = script  # a dataclass resolves its annotations through its module's entry
    try:
        spec.loader.exec_module(script)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return script


@pytest.fixture(scope="session")
def gitea96():
    from surfbench.bench.catalog.importers import load_catalog

    return load_catalog(EXAMPLE_MCP)


NOT_APPLICABLE = "n/a: "
"""A skip reason starting with this says the test does not apply (not that something is missing)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """Under ``CI=true`` a test skipped for a missing component (bubblewrap, Chromium, node, a package)
    is a failure: CI installs all of them, so a skip there hides a broken install step."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") != "true" or not report.skipped or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    if reason.removeprefix("Skipped: ").startswith(NOT_APPLICABLE):
        return
    report.outcome = "failed"
    report.longrepr = f"CI=true: this test may not be skipped (CI installs what it needs): {reason}"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The session fails if a file of the checkout was loaded as two modules (tests/namespace_guard.py)."""
    twice = namespace_guard.twice_loaded(list(sys.modules.items()))
    if twice:
        terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        write = terminal.write_line if terminal else print
        write("FAILED: files of the checkout loaded as two modules (import them by their surfbench.* name):")
        for path, names in sorted(twice.items()):
            write(f"  {path}: {', '.join(names)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
