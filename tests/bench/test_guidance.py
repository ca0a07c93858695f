"""Guidance beside tools: a suite's snippets, picked for the request, injected into the system text and counted.

Snippets are ``guidance/*.md`` with a title and a description; a surface's ``guidance`` option (any kind) ranks
them against the user's request with preselect's retrievers and puts the top ones in the system text, so they
count in the request's wire bytes and tokens, in the static surface report and in the cell identity.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from surfbench.bench.base.config import SurfaceConfig
from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.guidance import HEADER, attach, load_guidance, read_snippet
from surfbench.bench.catalog.wire import count_tokens, utf8_len
from surfbench.bench.models.scripted import ScriptedClient, text_turn
from surfbench.bench.report.surface_report import format_table, surface_table
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.store.identity import surface_text
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Task
from surfbench.surfaces import build_surface

FORGE = load_suite("forge")
GUIDED = {"retriever": "bm25", "k": 5, "guidance": {"k": 3}}
BRANCH = "Create a branch docs/update in acme/web from main, then open a pull request from it into main titled 'Docs'."


def write(folder: Path, name: str, text: str) -> Path:
    (folder / "guidance").mkdir(parents=True, exist_ok=True)
    path = folder / "guidance" / f"{name}.md"
    path.write_text(text)
    return path


def test_a_snippet_is_its_front_matter_and_its_text(tmp_path: Path):
    path = write(tmp_path, "pr", "---\ntitle: Open a PR\ndescription: when a pull request is wanted\n---\nDo X.\n")
    snippet = read_snippet(path)
    assert (snippet.name, snippet.title, snippet.description, snippet.body) == (
        "pr", "Open a PR", "when a pull request is wanted", "Do X."
    )  # fmt: skip
    for text, problem in [
        ("no front matter\n", "starts with a front matter"),
        ("---\ntitle: T\n---\nDo X.\n", "'description' must be non-empty text"),
        ("---\ntitle: T\ndescription: D\nweight: 2\n---\nDo X.\n", "unknown key(s) ['weight']"),
        ("---\ntitle: T\ndescription: D\n---\n\n", "no text after its front matter"),
    ]:
        with pytest.raises(CatalogError, match=problem.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            read_snippet(write(tmp_path, "bad", text))


def test_the_forge_and_workspace_ship_guidance_for_their_conventions_and_multi_call_tasks():
    for name in ("forge", "workspace", "forge_instances"):
        snippets = load_suite(name).catalog.guidance
        assert len(snippets) >= 2 and len({s.title for s in snippets}) == len(snippets), name
    forge = {s.name: s for s in FORGE.catalog.guidance}
    assert 'owner: "acme" and repo: "web"' in forge["owner-and-repo"].body  # the 0.5B model's owner: "acme/web"
    assert {"branch-then-pull", "find-then-act", "edit-a-file"} <= set(forge)
    assert "beside operation" in load_suite("forge_instances").catalog.guidance[0].body


def test_the_option_injects_the_top_snippets_for_the_request():
    plain = build_surface(FORGE.catalog, "preselect", {"retriever": "bm25", "k": 5}).session(BRANCH)
    guided = build_surface(FORGE.catalog, "preselect", GUIDED).session(BRANCH)
    assert plain.system_text() == "" and [t.name for t in plain.tools()] == [t.name for t in guided.tools()]
    text = guided.system_text()
    assert text.startswith(HEADER) and text == guided.guidance_text()
    assert "## Open a pull request from a new branch" in text and text.count("\n## ") == 3  # k: 3
    one = build_surface(FORGE.catalog, "dispatcher", {"guidance": {"k": 1}}).session(BRANCH)  # any surface kind
    assert one.system_text().count("\n## ") == 1 and "## Open a pull request from a new branch" in one.system_text()
    strict = build_surface(FORGE.catalog, "preselect", {"guidance": {"k": 3, "threshold": 0.99}}).session(BRANCH)
    assert strict.system_text().count("\n## ") == 1  # BM25 scores are divided by the best: only it clears 0.99
    assert build_surface(FORGE.catalog, "preselect", GUIDED).session("").system_text() == ""


def test_a_bad_option_names_the_surface_and_the_key():
    with pytest.raises(ValueError, match=r"surface 'preselect': guidance: unknown key\(s\) \['top'\]"):
        build_surface(FORGE.catalog, "preselect", {"guidance": {"top": 3}})
    with pytest.raises(ValueError, match="guidance: threshold must be a number within"):
        build_surface(FORGE.catalog, "full", {"guidance": {"threshold": 2}})
    with pytest.raises(ValueError, match="unknown retriever"):
        build_surface(FORGE.catalog, "full", {"guidance": {"retriever": "bm26"}})


def test_the_static_report_counts_guidance_bytes_and_tokens():
    configs = [
        SurfaceConfig("preselect", "preselect", {"retriever": "bm25", "k": 5}),
        SurfaceConfig("preselect_guidance", "preselect", GUIDED),
    ]
    plain, guided = surface_table(FORGE.catalog, configs)
    assert plain.guidance_bytes is None and guided.guidance_bytes and guided.guidance_bytes > 100
    assert guided.tool_block_bytes == plain.tool_block_bytes  # the same tools
    assert guided.system_bytes == guided.guidance_bytes  # preselect adds no other system text
    assert guided.total_bytes == pytest.approx(plain.total_bytes + guided.guidance_bytes)
    assert guided.guidance_tokens_o200k == pytest.approx(guided.tokens_o200k - plain.tokens_o200k)
    session = build_surface(FORGE.catalog, "preselect", GUIDED).session(FORGE.catalog["issue_get"].summary)
    assert utf8_len(session.guidance_text()) > 0 and count_tokens(session.guidance_text(), "o200k_base") > 0
    table = format_table([plain, guided], FORGE.catalog)
    assert "guidance B" in table and "guidance tok" in table
    assert "guidance B" not in format_table([plain], FORGE.catalog)


def test_the_report_says_so_when_a_catalog_has_no_snippets():
    (row,) = surface_table(load_suite("notes_mcp").catalog, [SurfaceConfig("g", "preselect", GUIDED)])
    assert row.guidance_bytes == 0 and "the catalog has no snippets" in row.note


def test_the_request_carries_the_guidance_like_tool_text():
    task = Task(id="t", turns=(BRANCH,))
    steps = {}
    for name, params in (("plain", {"retriever": "bm25", "k": 5}), ("guided", GUIDED)):
        session = build_surface(FORGE.catalog, "preselect", params).session(BRANCH)
        trace = run_episode(
            task, session, FORGE.new_backend(task), ScriptedClient([text_turn("ok")]), LoopSettings(),
            FORGE.system_prompt, lambda n: FORGE.catalog[n].parameters,
        )  # fmt: skip
        steps[name] = (trace.messages[0]["content"], trace.steps[0])
    system, step = steps["guided"]
    assert "## Open a pull request from a new branch" in system and system.startswith(FORGE.system_prompt)
    assert step.request_bytes - steps["plain"][1].request_bytes >= utf8_len(HEADER)
    assert step.prompt_tokens_est > steps["plain"][1].prompt_tokens_est


def test_the_snippets_are_part_of_a_guided_cell_identity_only(tmp_path: Path):
    catalog = FORGE.catalog
    write(tmp_path, "owner-and-repo", "---\ntitle: T\ndescription: D\n---\nAnother text.\n")
    other = attach(catalog, tmp_path)  # the same operations, other guidance
    assert other.guidance != catalog.guidance and other.content_hash == catalog.content_hash
    for kind, params in (("preselect", {"k": 5}), ("dispatcher", {})):
        assert surface_text(build_surface(catalog, kind, params)) == surface_text(build_surface(other, kind, params))
    guided = [surface_text(build_surface(c, "preselect", GUIDED)) for c in (catalog, other)]
    assert guided[0] != guided[1]


def test_a_suite_without_a_guidance_folder_keeps_its_catalog_object():
    suite = load_suite("notes_mcp")
    assert suite.catalog.guidance == () and load_guidance(suite.folder) == ()
    assert attach(suite.catalog, suite.folder) is suite.catalog
