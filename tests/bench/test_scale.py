"""Catalog size as an axis: growth, name mapping, provider limits and the does-not-fit prediction."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.provider_limits import (
    NAME_PATTERN,
    ProviderLimits,
    name_map_for,
    original_names,
    predict_fit,
    safe_names,
    tool_problems,
)
from surfbench.bench.suites.grow import grow_catalog, grow_setting, grow_suite
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

PARAMS = {"type": "object", "properties": {"q": {"type": "string"}}}


@pytest.fixture(scope="module")
def pool() -> tuple[Operation, ...]:
    from surfbench.bench.catalog.pool import load_pool

    built = load_pool(progress=False)  # shipped Gitea + installed bfcl-eval; GitHub only when fetched
    assert built.sources["gitea"] > 250
    return built.operations


def test_growth_is_reproducible_and_keeps_the_suite(pool: tuple[Operation, ...]):
    forge = load_suite("forge").catalog
    first = grow_catalog(forge, 300, seed=0, pool=pool)
    again = grow_catalog(forge, 300, seed=0, pool=pool)
    other = grow_catalog(forge, 300, seed=1, pool=pool)
    assert len(first) == 300
    assert first.content_hash == again.content_hash != other.content_hash
    assert all(first[op.name] == op for op in forge)  # the suite's own operations, unchanged
    assert grow_catalog(forge, 50, pool=pool) is forge  # asking for fewer than the suite has: no change


def test_distractors_never_collide_with_suite_names():
    suite_ops = (Operation("issue_get", "Get an issue.", PARAMS), Operation("repo_get", "Get a repo.", PARAMS))
    catalog = Catalog("s", suite_ops)
    pool = [Operation("Issue_Get", "Clash by case.", PARAMS), Operation("issue_get", "Clash.", PARAMS)]
    pool += [Operation(f"other_{i}", f"Other {i}.", PARAMS) for i in range(5)]
    grown = grow_catalog(catalog, 7, pool=pool)
    lowered = [n.lower() for n in grown.names]
    assert len(lowered) == len(set(lowered)) == 7
    assert grown["issue_get"].description == "Get an issue."
    assert "Issue_Get" not in grown


def test_near_duplicates_only_where_the_pool_runs_out():
    catalog = Catalog("s", (Operation("a", "A.", PARAMS),))
    pool = [Operation("p", "P.", PARAMS), Operation("q", "Q.", PARAMS)]
    grown = grow_catalog(catalog, 6, pool=pool)
    assert sorted(grown.names) == ["a", "p", "p_v2", "p_v3", "q", "q_v2"]
    assert grown.content_hash == grow_catalog(catalog, 6, pool=pool).content_hash


def test_growing_a_suite_keeps_its_tasks(pool: tuple[Operation, ...]):
    suite = load_suite("forge")
    grown = grow_suite(suite, 200, pool=pool)
    assert len(grown.catalog) == 200 and grown.tasks == suite.tasks
    assert grown.catalog.content_hash != suite.catalog.content_hash


def test_grow_setting_refuses_bad_values():
    assert grow_setting({"grow": 64, "seed": 2}).grow == 64
    for bad in ({"grow": 0}, {"grow": "many"}, {"grow": 64, "sede": 1}, {"seed": -1}):
        with pytest.raises(ValueError, match="catalog"):
            grow_setting(bad)


def test_name_mapping_round_trips():
    names = ["repos/update-org-ruleset", "repos__update-org-ruleset", "math.factorial", "x" * 80, "ok_name"]
    mapping = safe_names(names)
    assert "ok_name" not in mapping and "repos__update-org-ruleset" not in mapping
    final = [mapping.get(n, n) for n in names]
    assert all(re.fullmatch(NAME_PATTERN, n) for n in final)
    assert len(set(final)) == len(names)  # injective: a mapped name never takes one in use
    assert {v: k for k, v in mapping.items()}[mapping["x" * 80]] == "x" * 80
    assert (
        mapping["repos/update-org-ruleset"]
        == "repos__update-org-ruleset_" + mapping["repos/update-org-ruleset"].rsplit("_", 1)[-1]
    )  # it collides with the real name, so it gains a hash suffix


def test_openapi_importer_maps_slash_names_reversibly(tmp_path: Path):
    from surfbench.bench.catalog.importers import load_catalog

    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "paths": {
            "/user": {"get": {"operationId": "users/get-authenticated", "summary": "Get the authenticated user."}},
            "/repos": {"get": {"operationId": "repos/list", "summary": "List repositories."}},
        },
    }
    path = tmp_path / "api.json"
    path.write_text(json.dumps(doc))
    catalog = load_catalog(path)
    assert catalog.names == ["users__get-authenticated", "repos__list"]
    assert original_names(catalog.source) == {
        "users__get-authenticated": "users/get-authenticated",
        "repos__list": "repos/list",
    }
    assert name_map_for(catalog.source)["repos/list"] == "repos__list"


def test_limits_flag_too_many_tools_and_bad_names():
    limits = ProviderLimits(max_tools=2, name_pattern=NAME_PATTERN)
    problems = tool_problems(["a", "b/c", "d"], limits)
    assert problems[0].startswith("3 tools in one request, over the provider's 2")
    assert "'b/c'" in problems[1]
    assert tool_problems(["a"], limits) == []


def test_does_not_fit_is_predicted_from_static_counts():
    texts = ["You are helpful.", json.dumps({"name": "t", "description": "word " * 2000}), "Do it."]
    assert not predict_fit(texts, 512, ProviderLimits(context_window=1024)).fits
    assert predict_fit(texts, 512, ProviderLimits(context_window=8192)).fits
    assert predict_fit(texts, 512, ProviderLimits()).fits  # unknown window: nothing predicted


ORACLE = "provider: scripted\nscript_suite: forge\nparams_b: 0.0\nmode: native\nlimits:\n  context_window: 4000\n"


def test_run_records_does_not_fit_without_calling_the_model_and_grows_the_catalog(tmp_path: Path):
    from surfbench.bench.store.results import load_runs

    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "tiny.yaml").write_text(ORACLE)
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true"}
    args = [
        "-m",
        "surface=full,preselect,search",
        "model=tiny",
        "limit=2",
        "catalog.grow=150",
        f"results_dir={tmp_path}",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", *args, "run=s"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    frame = load_runs([tmp_path / "s"])
    full = frame[frame["surface"] == "full[grow=150]"]
    assert len(full) == 2 and full["error"].str.startswith("does not fit:").all()
    assert (full["round_trips"] == 0).all()  # never sent
    picked = frame[frame["surface"] == "preselect[grow=150]"]
    assert len(picked) == 2 and (picked["round_trips"] > 0).all() and picked["error"].isna().all()  # fits: run
    info = json.loads((tmp_path / "s" / "run.json").read_text())
    hashes = {c["catalog_hash"] for c in info["cells"]}
    assert hashes == {grow_suite(load_suite("forge"), 150).catalog.content_hash}

    # the funnel: the oracle searches with the user's request; every search showed tools (none named as
    # showing nothing), and BM25 among 150 operations found the expected one for one of the two tasks
    from surfbench.bench.analysis.funnel import funnel_rows
    from surfbench.bench.store.provenance import load_current

    view = load_current([tmp_path / "s"])
    rows = {r.surface: r for r in funnel_rows([tmp_path / "s"], view.frame, view.infos)}
    assert set(rows) == {"preselect[grow=150]", "search[grow=150]"}
    search = rows["search[grow=150]"]
    assert search.operations == 150 and search.episodes == 2 and search.zero_shown == ()
    assert search.retrieved == 0.5 and search.selection == 0.5
    assert rows["preselect[grow=150]"].zero_shown == ()

    # the same cells at the suite's own size: the report gains the catalog-size table and figure
    args = [a for a in args if not a.startswith("catalog.grow")]
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", *args, "run=s"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "report", str(tmp_path / "s"), "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = (out / "report.md").read_text()
    assert "## Catalog size" in report and "| tiny | full | 150 | 2 | does not fit |" in report
    assert "| tiny | full | 96 | 2 |" in report and (out / "scale.png").is_file()


def test_scale_points_mark_cells_that_do_not_fit():
    import pandas as pd

    from surfbench.bench.contracts.records import EpisodeOutcome
    from surfbench.bench.report.scale_figure import scale_points

    base = {"model": "m", "expected_calls": 1, "prompt_tokens_per_step": 100.0, "latency_s": 1.0}
    frame = pd.DataFrame(
        [
            {**base, "surface": "full", "cell_id": "a", "error": None, "outcome": EpisodeOutcome.RAN,
             "first_try_correct": 1, "selection_correct": True},
            {**base, "surface": "full[grow=4096]", "cell_id": "b", "error": "does not fit: x",
             "outcome": EpisodeOutcome.DOES_NOT_FIT, "first_try_correct": 0, "selection_correct": False,
             "prompt_tokens_per_step": None},
        ]
    )  # fmt: skip
    points = scale_points(frame, {"a": 96, "b": 4096})
    assert [(p.surface, p.operations, p.does_not_fit) for p in points] == [("full", 96, False), ("full", 4096, True)]
    assert points[0].first_try is not None and points[0].first_try[0] == 1.0

    from surfbench.bench.report.scale_figure import scale_section

    (section,) = scale_section(points)
    text = section.markdown()
    assert text.startswith("## Catalog size")
    assert "| m | full | 96 | 1 | 100% [21%, 100%] | 100% | 100 | 1.0 s |" in text
    assert "| m | full | 4,096 | 1 | does not fit | - | - | - |" in text
    assert scale_section(points[:1]) == []  # one size: no section


def test_the_scale_figure_pairs_two_models_lines_of_a_surface_by_colour(tmp_path: Path, monkeypatch):
    import matplotlib.figure

    from surfbench.bench.report.scale_figure import ScalePoint, draw_scale

    drawn: list[matplotlib.figure.Figure] = []
    save = matplotlib.figure.Figure.savefig
    keep = lambda fig, *a, **k: (drawn.append(fig), save(fig, *a, **k))  # noqa: E731
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    rate = (0.5, 0.2, 0.8)
    points = [
        ScalePoint(surface, model, n, 45, False, rate, rate, 1000.0, 5.0)
        for surface in ("full", "preselect", "search")
        for model in ("small", "large")
        for n in (96, 1024)
    ]
    assert draw_scale(points, tmp_path / "scale.png").is_file()
    lines = {bars.get_label(): bars.lines[0] for bars in drawn[0].axes[0].containers}  # errorbar: data line first
    assert len(lines) == 6, sorted(lines)
    for surface in ("full", "preselect", "search"):
        small, large = lines[f"{surface} / small"], lines[f"{surface} / large"]
        assert small.get_color() == large.get_color() and small.get_linestyle() != large.get_linestyle()
    assert len({lines[f"{s} / small"].get_color() for s in ("full", "preselect", "search")}) == 3


def test_funnel_rows_of_a_surface_read_in_catalog_size_order():
    from surfbench.bench.analysis.funnel import _funnel_order

    cells = [("search", "m", 96), ("preselect[grow=1024]", "m", 1024), ("preselect[grow=256]", "big", 256),
             ("preselect[grow=256]", "m", 256), ("preselect", "m", 96)]  # fmt: skip
    ordered = [key for key, _ in sorted(((c, None) for c in cells), key=_funnel_order)]
    assert [(s, m) for s, m, _ in ordered] == [
        ("preselect", "m"),
        ("preselect[grow=256]", "big"),
        ("preselect[grow=256]", "m"),
        ("preselect[grow=1024]", "m"),
        ("search", "m"),
    ]  # by text, 1,024 came before 256, and a model's sizes were apart from the other's
