"""Splitting the forge backend into modules left its catalog exactly as it was, and every module small.

``tests/fixtures/forge_catalog_before.json`` was recorded from the single-file backend before the
split (``snapshot()`` below made it): operation names in order, each operation's record (description,
JSON schema, category, weight, flags), the catalog's canonical JSON bytes, the ``full`` surface's
wire bytes and the content hash.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.base.config import surface_config
from surfbench.bench.report.surface_report import measure_surface
from surfbench.bench.suites.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
FORGE = ROOT / "tasks" / "forge"
BEFORE = ROOT / "tests" / "fixtures" / "forge_catalog_before.json"
MAX_LINES = 400


def snapshot() -> dict[str, Any]:
    """The forge catalog's identity, as the suite loads it (suite.yaml's ``catalog:``)."""
    catalog = load_suite("forge").catalog
    canonical = json.dumps(catalog.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return {
        "names": catalog.names,
        "operations": [op.to_record() for op in catalog],
        "catalog_bytes": len(canonical.encode("utf-8")),
        "full_surface_bytes": measure_surface(catalog, surface_config("full")).total_bytes,
        "hash": catalog.content_hash,
    }


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return snapshot()


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    return json.loads(BEFORE.read_text(encoding="utf-8"))


def test_same_operations_in_the_same_order(now, before):
    assert len(now["names"]) == 96
    assert now["names"] == before["names"]


@pytest.mark.parametrize("field", ["description", "parameters", "category", "weight", "read_only", "destructive"])
def test_every_operation_unchanged(now, before, field):
    changed = [
        old["name"]
        for old, new in zip(before["operations"], now["operations"], strict=True)
        if old[field] != new[field]
    ]
    assert changed == [], f"{field} changed for {changed}"


def test_same_bytes_and_hash(now, before):
    assert now["catalog_bytes"] == before["catalog_bytes"]
    assert now["full_surface_bytes"] == before["full_surface_bytes"]
    assert now["hash"] == before["hash"]


def test_every_forge_module_is_small():
    sizes = {str(p.relative_to(FORGE)): len(p.read_text(encoding="utf-8").splitlines()) for p in FORGE.rglob("*.py")}
    assert sizes, "no modules found"
    too_big = {name: n for name, n in sizes.items() if n >= MAX_LINES}
    assert too_big == {}
