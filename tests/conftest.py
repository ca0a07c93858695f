from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
EXAMPLE_MCP = ROOT / "examples" / "gitea96.mcp.json"

sys.path.insert(0, str(FIXTURES))  # so that "pytools" imports as a python-callables catalog


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test session gets its own cache dir: tests never read a developer's cache."""
    monkeypatch.setenv("SURFBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(scope="session")
def gitea96():
    from bench.importers import load_catalog

    return load_catalog(EXAMPLE_MCP)
