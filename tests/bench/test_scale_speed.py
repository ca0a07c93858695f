"""The static report's shortcuts at scale change no number it prints.

The draft 7 meta-schema walk (bench/catalog/catalog.py) never calls a schema valid that jsonschema rejects,
and the token totals kept on disk (bench/report/surface_report.py) are the counts themselves.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest
from jsonschema import Draft7Validator

from surfbench.bench.catalog.catalog import DRAFT7_KEYWORDS, _plain_draft7, schema_problem
from surfbench.bench.suites.suite import load_suite

VALUES = [None, True, False, 0, -1, 1.5, 2.0, "x", "string", "strng", [], ["string"], ["string", "string"], ["a"],
          {}, {"type": "integer"}, [{}], [1], {"a": 1}]  # fmt: skip


def test_the_walk_knows_every_draft7_keyword():
    assert set(Draft7Validator.META_SCHEMA["properties"]) == DRAFT7_KEYWORDS


def _nodes(value: object, out: list[dict]) -> list[dict]:
    if isinstance(value, dict):
        out.append(value)
        for sub in value.values():
            _nodes(sub, out)
    elif isinstance(value, list):
        for sub in value:
            _nodes(sub, out)
    return out


def test_the_walk_never_accepts_what_jsonschema_rejects():
    meta = Draft7Validator(Draft7Validator.META_SCHEMA)
    schemas = [op.parameters for suite in ("forge", "notes_mcp") for op in load_suite(suite).catalog]
    assert all(_plain_draft7(s) for s in schemas)  # real schemas take the walk
    rnd = random.Random(0)
    keys = sorted(DRAFT7_KEYWORDS) + ["x-extra", "nullable"]
    walked = 0
    for _ in range(3000):
        schema = copy.deepcopy(rnd.choice(schemas))
        rnd.choice(_nodes(schema, []))[rnd.choice(keys)] = copy.deepcopy(rnd.choice(VALUES))
        if _plain_draft7(schema):
            walked += 1
            assert meta.is_valid(schema), json.dumps(schema)
    assert walked > 500  # the walk decided most of them


def test_a_broken_schema_is_still_named():
    bad = {"type": "object", "properties": {"q": {"type": "strng"}}}
    assert '"strng" is not a JSON Schema type' in (schema_problem(json.dumps(bad, sort_keys=True)) or "")
    assert schema_problem(json.dumps({"type": "object", "properties": {"n": {"minimum": "0"}}})) is not None


def test_token_totals_are_read_back_not_counted_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from surfbench.bench.base.config import SurfaceConfig
    from surfbench.bench.catalog.wire import count_tokens
    from surfbench.bench.report import surface_report
    from surfbench.bench.report.surface_report import TokenTotals, surface_table

    monkeypatch.setenv("SURFBENCH_CACHE", str(tmp_path))
    catalog = load_suite("notes_mcp").catalog
    configs = [SurfaceConfig("full", "full"), SurfaceConfig("preselect", "preselect", {"k": 3})]
    texts = ['{"name":"a"}', "héllo wörld <|endoftext|>"]
    assert TokenTotals()(texts) == (
        sum(count_tokens(t, "o200k_base") for t in texts),
        sum(count_tokens(t, "cl100k_base") for t in texts),
    )
    first = surface_table(catalog, configs)
    assert list((tmp_path / "tokens").iterdir()) == [tmp_path / "tokens" / f"{catalog.content_hash}.json"]

    def never(*_: object) -> int:
        raise AssertionError("counted again")

    monkeypatch.setattr(surface_report, "count_tokens", never)
    assert surface_table(catalog, configs) == first
