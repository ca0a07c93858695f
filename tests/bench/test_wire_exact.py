"""Byte-exact wire: the `full` surface's tool block is what the catalog's source sends, byte for byte.

The independent count below never goes through surfbench's importers: it reads the source file with
``json`` and measures compact JSON of its own objects (the dsh method).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.catalog.provider_limits import NAME_PATTERN, name_map_for, original_names
from tests.conftest import FIXTURES, ROOT

CATS = FIXTURES / "catalogs"
GITEA = FIXTURES / "gitea-1.15-swagger.json"  # Gitea's own Swagger (MIT), copied from shared/catalogs
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def dsh_bytes(objects: list[dict]) -> int:
    return sum(len(json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode("utf-8")) for o in objects)


def full_bytes(path: Path) -> int:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "surfbench.bench.cli.cli",
            "surfaces",
            "--catalog",
            str(path),
            "--surface",
            "full",
            "--out",
            str(path.parent / "_rows.json"),
        ],  # fmt: skip
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads((path.parent / "_rows.json").read_text())
    (row,) = [r for r in rows if r["surface"] == "full"]
    return int(row["tool_block_bytes"])


def test_mcp_dump_with_trailing_newlines_and_non_ascii_counts_exactly(tmp_path: Path):
    src = tmp_path / "tools.json"
    src.write_bytes((CATS / "mcp_whitespace_unicode.json").read_bytes())
    tools = json.loads(src.read_text(encoding="utf-8"))["result"]["tools"]
    assert any(t["description"].endswith("\n") for t in tools), "fixture must carry trailing newlines"
    expected = dsh_bytes([{"name": t["name"], "description": t["description"], "parameters": t["inputSchema"]}
                          for t in tools])  # fmt: skip
    assert full_bytes(src) == expected
    catalog = load_catalog(src)
    assert catalog["get_me"].description == "Get details of the authenticated user.\n"
    assert catalog["list_tags"].parameters == {"type": "object"}  # no keys added


def test_openai_tools_file_counts_exactly(tmp_path: Path):
    src = tmp_path / "openai.json"
    src.write_bytes((CATS / "openai_tools.json").read_bytes())
    functions = [t["function"] for t in json.loads(src.read_text())]
    expected = dsh_bytes([{"name": f["name"], "description": f["description"], "parameters": f["parameters"]}
                          for f in functions])  # fmt: skip
    assert full_bytes(src) == expected


def test_gitea_swagger_names_and_descriptions_are_the_documents_own(tmp_path: Path):
    """Swagger has no tool objects: the importer's mapping is operationId -> name, summary then description
    (joined by one space) -> description, untouched. Names and descriptions are checked against the
    document independently; the surface's bytes against the catalog's own objects."""
    if not GITEA.is_file():
        pytest.fail(f"{GITEA} missing: the fixture ships with the repository")
    doc = json.loads(GITEA.read_text(encoding="utf-8"))
    want = {}
    for item in doc["paths"].values():
        for method in METHODS:
            spec = item.get(method)
            if isinstance(spec, dict):
                text = " ".join(spec[k] for k in ("summary", "description") if spec.get(k))
                want[spec["operationId"]] = text
    catalog = load_catalog(GITEA)
    assert len(catalog.operations) == len(want) == 269
    # one operationId providers reject as a tool name (non-ASCII) is mapped, reversibly (issue 17)
    mapped = name_map_for(str(GITEA))
    assert mapped == {"repoAddTopíc": mapped["repoAddTopíc"]} and re.fullmatch(NAME_PATTERN, mapped["repoAddTopíc"])
    back = original_names(str(GITEA))
    assert {back.get(op.name, op.name): op.description for op in catalog.operations} == want
    src = tmp_path / "gitea.json"
    src.write_bytes(GITEA.read_bytes())
    ops = [{"name": op.name, "description": op.description, "parameters": op.parameters} for op in catalog.operations]
    assert full_bytes(src) == dsh_bytes(ops)
