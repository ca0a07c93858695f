"""The APIs.guru directory as a pool source: capped per API, broken descriptions skipped, names unique."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from surfbench.bench.catalog.pool import DIRECTORY_PER_API, PoolError, build_pool


def _api(title: str, count: int) -> dict:
    paths = {
        f"/{title}/thing{i}": {
            "get": {"operationId": f"{title}_get_{i}", "summary": f"Get thing {i} of {title}", "responses": {"200": {}}}
        }
        for i in range(count)
    }
    return {"openapi": "3.0.0", "info": {"title": title, "version": "1"}, "paths": paths}


def _tarball(path: Path, members: dict[str, object]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, doc in members.items():
            data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_directory_operations_are_capped_per_api_and_broken_descriptions_skipped(tmp_path: Path):
    tarball = _tarball(
        tmp_path / "dir.tgz",
        {
            "package/api/big.example.com.json": _api("big", DIRECTORY_PER_API + 5),
            "package/api/small.example.com/v1.json": _api("small", 2),
            "package/api/broken.example.com.json": b"{not json",
            "package/api/nopaths.example.com.json": {"openapi": "3.0.0", "info": {"title": "x", "version": "1"}},
            "package/README.md": b"not a description",
        },
    )
    pool = build_pool(github=tmp_path / "no-github.tgz", directory=tarball, progress=False)
    from_directory = [op for op in pool.operations if op.category.startswith("directory:")]
    names = [op.name for op in from_directory]
    assert pool.sources["directory"] == DIRECTORY_PER_API + 2
    assert names[:DIRECTORY_PER_API] == [f"big_get_{i}" for i in range(DIRECTORY_PER_API)]
    assert names[DIRECTORY_PER_API:] == ["small_get_0", "small_get_1"]
    assert "directory" not in pool.missing and "github" in pool.missing
    assert len({op.name.lower() for op in pool.operations}) == len(pool.operations)


def test_a_directory_tarball_with_nothing_importable_is_refused_with_what_to_do(tmp_path: Path):
    tarball = _tarball(tmp_path / "dir.tgz", {"package/api/broken.json": b"[]"})
    with pytest.raises(PoolError, match="fetch-directory"):
        build_pool(github=tmp_path / "no-github.tgz", directory=tarball, progress=False)


def test_without_the_directory_the_pool_says_how_to_add_it(tmp_path: Path):
    pool = build_pool(github=tmp_path / "no.tgz", directory=tmp_path / "none.tgz", progress=False)
    assert "surfbench pool fetch-directory" in pool.missing["directory"]


def test_operations_whose_schema_is_not_valid_are_left_out_so_growth_never_breaks_a_catalog(tmp_path: Path):
    api = _api("dup", 2)
    api["paths"]["/dup/thing1"]["get"]["parameters"] = [
        {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
    ]
    item = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]}
    body = {"type": "object", "properties": {"orders": {"type": "array", "items": item}}}
    api["paths"]["/dup/thing0"]["post"] = {
        "operationId": "dup_post_0",
        "requestBody": {"content": {"application/json": {"schema": body}}},
        "responses": {"200": {}},
    }
    tarball = _tarball(tmp_path / "dir.tgz", {"package/api/dup.json": api})
    pool = build_pool(github=tmp_path / "no.tgz", directory=tarball, progress=False)
    names = {op.name for op in pool.operations}
    assert {"dup_get_0", "dup_get_1"} <= names and "dup_post_0" not in names

    from surfbench.bench.suites.grow import grow_catalog
    from surfbench.bench.suites.suite import load_suite

    suite = load_suite("notes_mcp")
    grown = grow_catalog(suite.catalog, len(pool.operations) + len(suite.catalog), pool=pool.operations)
    assert len(grown) == len(pool.operations) + len(suite.catalog)
