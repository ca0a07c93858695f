"""Malformed suites, tasks, configs and results folders: one clear error naming the file and the field,
exit code 2, and nothing written into results.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.score.scorer import check_answer
from surfbench.bench.store.results import ResultsError, RunStore, load_runs
from surfbench.bench.suites.suite import SuiteError, load_suite
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"


def run(tmp_path: Path, *args: str, configs: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": "true", "SURFBENCH_CACHE": str(tmp_path / "cache"), "SURFBENCH_SUITES": str(tmp_path)}
    if configs is not None:
        env["SURFBENCH_CONFIGS"] = str(configs)
    cmd = [sys.executable, "-m", "surfbench", "run", *args, f"results_dir={tmp_path / 'results'}", "run=bad"]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def broken_suite(tmp_path: Path, file: str, old: str, new: str) -> Path:
    folder = tmp_path / "suite"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", folder)
    path = folder / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return folder


SUITE_CASES = [
    ("tasks.yaml", "  tags: [single, read]\n", "  tags: [single, read]\n  expectd: []\n", ["tasks.yaml", "expectd"]),
    ("tasks.yaml", "- id: read-note\n", "- idx: read-note\n", ["tasks.yaml", "id"]),
    ("tasks.yaml", "  split: dev\n", "  split: [dev\n", ["tasks.yaml"]),
    ("tasks.yaml", "split: dev", "split: devv", ["tasks.yaml", "split"]),
    ("suite.yaml", "catalog: catalog.json", "catalog: nowhere.json", ["nowhere.json"]),
    ("suite.yaml", "max_steps: 4", "max_steps: 4\nmax_step: 5", ["suite.yaml", "max_step"]),
    ("suite.yaml", "max_steps: 4", "max_steps: 4\nsteps_per: turns", ["suite.yaml", "steps_per"]),
    ("catalog.json", '"name"', '"nome"', ["catalog.json"]),
    ("tasks.yaml", "{op: notes_get, args: {id: n7}}", "{op: notes_get, args: {id: n7}, turn: 1}",
     ["tasks.yaml", "read-note", "turn"]),
    # these used to end in a traceback
    ("tasks.yaml", '  turns: ["Read note n7."]', "  turns: 42", ["tasks.yaml", "read-note", "turns"]),
    ("suite.yaml", "max_steps: 4", "max_steps: four", ["suite.yaml", "max_steps"]),
    ("suite.yaml", "catalog: catalog.json", "catalog: .", ["suite.yaml", "catalog", "is a directory"]),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "named"), SUITE_CASES)
def test_a_malformed_suite_is_refused_before_anything_is_written(tmp_path, file, old, new, named):
    broken_suite(tmp_path, file, old, new)
    configs = tmp_path / "configs"  # a user's own suite: a folder (SURFBENCH_SUITES) and a config naming it
    shutil.copytree(ROOT / "configs", configs)
    (configs / "suite" / "suite.yaml").write_text("name: suite\n")
    proc = run(tmp_path, "suite=suite", "surface=full", "model=qwen2.5-coder-0.5b-instruct", configs=configs)
    assert proc.returncode == 2, proc.stderr[-2000:]
    first = [line for line in proc.stderr.splitlines() if "error" in line]
    assert first and all(n in proc.stderr for n in named), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results" / "bad").exists()


def load_broken(tmp_path: Path, file: str, old: str, new: str) -> str:
    """Load a broken copy of notes_mcp in-process: the one-line SuiteError's message (it must name the file)."""
    folder = broken_suite(tmp_path, file, old, new)
    (folder / "somedir").mkdir()  # for `catalog: somedir`
    with pytest.raises(SuiteError) as info:
        load_suite(str(folder))
    message = str(info.value)
    named = folder / ("tasks.yaml" if file == "tasks.yaml" else "suite.yaml")  # a catalog's error names both
    assert len(message.splitlines()) == 1 and str(named) in message, message
    return message


FIELD_CASES = [
    # accepted silently, or scored wrongly, before
    ("answer contains a string", "tasks.yaml", "  answer: {contains: [tent]}", "  answer: {contains: tent}",
     ["read-note", "answer", "contains", "must be a list"]),
    ("answer regex invalid", "tasks.yaml", "  answer: {contains: [tent]}", '  answer: {regex: "tent("}',
     ["read-note", "answer.regex", "invalid regular expression"]),
    ("$regex invalid", "tasks.yaml", "{query: {$regex: dentist}", '{query: {$regex: "dent[ist"}',
     ["search-then-tag", "expected[0].args.query.$regex", "invalid regular expression"]),
    ("state match regex invalid", "tasks.yaml", "  answer: {contains: [tent]}",
     '  answer: {contains: [tent]}\n  state: [{path: calls.0.op, match: {$regex: "("}}]',
     ["read-note", "state[0].match.$regex", "invalid regular expression"]),
    ("unknown matcher operator", "tasks.yaml", "{query: {$regex: dentist}", "{query: {$regexp: dentist}",
     ["search-then-tag", "$regexp", "unknown matcher operator"]),
    ("max_steps negative", "suite.yaml", "max_steps: 4", "max_steps: -3", ["max_steps", "-3"]),
    ("argument not in the schema", "tasks.yaml", "{op: notes_get, args: {id: n7}}", "{op: notes_get, args: {idd: n7}}",
     ["read-note", "expected[0].args", "'idd'", "did you mean 'id'"]),
    ("optional argument not in the schema", "tasks.yaml", 'tag: [""]', 'tagg: [""]',
     ["search-groceries", "'tagg'", "did you mean 'tag'"]),
    ("oracle argument not in the schema", "tasks.yaml", "oracle_args: {query: dentist}",
     "oracle_args: {qery: dentist}", ["search-then-tag", "oracle_args", "'qery'"]),
    ("canned operation not in the catalog", "tasks.yaml", "canned: {notes_get: {id: n7", "canned: {notes_gett: {id: n7",
     ["read-note", "canned", "'notes_gett'", "notes_get"]),
    ("refuse yes", "tasks.yaml", "  tags: [should-refuse]", '  tags: [should-refuse]\n  refuse: "yes"',
     ["refuse-share", "'refuse'", "true or false"]),
    ("exact_calls maybe", "tasks.yaml", "  answer: {contains: [tent]}",
     "  answer: {contains: [tent]}\n  exact_calls: maybe", ["read-note", "'exact_calls'", "true or false"]),
    ("YAML date where a string belongs", "tasks.yaml", 'at: "2026-12-24T09:00:00Z"', "at: 2026-12-24T09:00:00Z",
     ["remind-sms", "expected[0].args.at", "quote it"]),
    # misleading messages before
    ("integer id", "tasks.yaml", "- id: read-note", "- id: 42", ["task #2", "'id'", "must be a non-empty string"]),
    ("tags a string", "tasks.yaml", "  tags: [single, read]", "  tags: single", ["search-groceries", "'tags'", "list"]),
    # tracebacks before
    ("turns an integer", "tasks.yaml", '  turns: ["Read note n7."]', "  turns: 42", ["read-note", "'turns'"]),
    ("canned a list", "tasks.yaml", '  canned: {notes_get: {id: n7, title: "Trip", body: "Pack the tent."}}',
     "  canned: [1, 2]", ["read-note", "'canned'", "mapping"]),
    ("max_steps a word", "suite.yaml", "max_steps: 4", "max_steps: four", ["max_steps", "four"]),
    ("catalog a directory", "suite.yaml", "catalog: catalog.json", "catalog: somedir", ["somedir", "is a directory"]),
    ("catalog type typo", "catalog.json", '"type": "string", "description": "keyword"',
     '"type": "strng", "description": "keyword"',
     ["catalog.json", "notes_search", "properties.query.type", "not a JSON Schema type"]),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "named"), [c[1:] for c in FIELD_CASES], ids=[c[0] for c in FIELD_CASES])
def test_a_bad_field_is_one_error_naming_file_and_field(tmp_path: Path, file, old, new, named):
    message = load_broken(tmp_path, file, old, new)
    assert all(n in message for n in named), message


def test_an_answer_needle_list_is_not_read_character_by_character():
    assert check_answer({"contains": ["tent"]}, "net") is not None
    assert check_answer({"contains": ["tent"]}, "Pack the tent.") is None


def test_a_non_utf8_or_empty_task_file_is_one_error(tmp_path: Path):
    folder = broken_suite(tmp_path, "tasks.yaml", "Pack the tent.", "Pack the tent.")
    tasks = folder / "tasks.yaml"
    tasks.write_bytes(tasks.read_bytes().replace(b"Pack the tent.", b"Pack the t\xe9nt.\xff"))
    with pytest.raises(SuiteError, match=r"tasks\.yaml: not UTF-8 text"):
        load_suite(str(folder))
    for empty in ("", "# no tasks yet\n", "[]\n", "tasks: []\n"):
        tasks.write_text(empty)
        with pytest.raises(SuiteError, match=r"tasks\.yaml: no tasks in this file"):
            load_suite(str(folder))


def deep_catalog(path: Path, depth: int = 5_000) -> Path:
    doc = json.loads((ROOT / "tasks" / "notes_mcp" / "catalog.json").read_text())
    text = json.dumps(doc).replace('{"type": "string", "description": "keyword"}', "DEEP", 1)
    path.write_text(text.replace("DEEP", '{"type": "object", "properties": {"a": ' * depth + "{}" + "}}" * depth))
    return path


def test_a_deeply_nested_schema_is_one_error_not_a_recursion_error(tmp_path: Path):
    for depth, why in ((5_000, "nested too deeply"), (100, "nested more than 128 levels"), (40, "nested more than 64")):
        path = deep_catalog(tmp_path / f"deep{depth}.json", depth)
        with pytest.raises(CatalogError, match=why) as info:
            load_catalog(path)
        assert str(path) in str(info.value) and len(str(info.value).splitlines()) == 1


def test_shipped_and_fixture_catalogs_pass_the_meta_schema_check():
    for path in [ROOT / "examples" / "gitea96.mcp.json", ROOT / "tests" / "fixtures" / "gitea-1.15-swagger.json"]:
        assert len(load_catalog(path)) > 90
    for path in sorted((ROOT / "tests" / "fixtures" / "catalogs").iterdir()):
        assert len(load_catalog(path)) >= 1, path


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"properties": {"n": {"type": "integer", "minimum": 0, "exclusiveMinimum": True}}}, None),  # draft 4
        ({"properties": {"p": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]}}}, None),  # tuple
        ({"properties": {"p": {"type": ["string", "null"]}}, "additionalProperties": False}, None),
        ({"properties": {"q": {"type": "strng"}}}, "properties.q.type"),
        ({"properties": {"q": {"type": "string", "enum": "a"}}}, "properties.q.enum"),
        ({"properties": {"q": {"type": "string", "minLength": "3"}}}, "properties.q.minLength"),
        ({"properties": {"q": {"type": "string"}}, "required": "q"}, "required"),
        ({"properties": {"q": {"type": "string", "default": float("nan")}}}, "not a finite number"),
    ],
)
def test_parameter_schemas_are_checked_against_the_meta_schema(tmp_path: Path, schema, problem):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([{"name": "t", "description": "d", "input_schema": {"type": "object", **schema}}]))
    if problem is None:
        assert load_catalog(path).names == ["t"]
        return
    with pytest.raises(CatalogError, match="tool 't'") as info:
        load_catalog(path)
    assert problem in str(info.value) and str(path) in str(info.value), info.value


def test_bfcl_blank_type_reads_as_any_but_a_blank_type_elsewhere_is_an_error(tmp_path: Path):
    fn = {"name": "f", "description": "d", "parameters": {"type": "dict", "properties": {"x": {"type": ""}}}}
    bfcl = tmp_path / "fns.jsonl"
    bfcl.write_text(json.dumps(fn) + "\n")
    assert load_catalog(bfcl)["f"].parameters["properties"]["x"] == {}
    openai = tmp_path / "tools.json"
    openai.write_text(
        json.dumps([{"type": "function", "function": {**fn, "parameters": {**fn["parameters"], "type": "object"}}}])
    )
    with pytest.raises(CatalogError, match="properties.x.type"):
        load_catalog(openai)


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CI": "true", "SURFBENCH_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "surfbench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_surfaces_on_a_directory_or_a_deep_schema_is_one_line_and_exit_2(tmp_path: Path):
    (tmp_path / "some" / "dir").mkdir(parents=True)
    for catalog, why in ((tmp_path / "some" / "dir", "is a directory"), (deep_catalog(tmp_path / "d.json"), "deeply")):
        proc = cli(tmp_path, "surfaces", "--catalog", str(catalog))
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert len(lines) == 1 and str(catalog) in lines[0] and why in lines[0], proc.stderr[-2000:]


def test_an_empty_task_file_or_an_empty_selection_writes_nothing(tmp_path: Path):
    folder = broken_suite(tmp_path, "tasks.yaml", "split: test", "split: dev")
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "suite" / "suite.yaml").write_text("name: suite\n")
    (configs / "model" / "oracle.yaml").write_text(ORACLE)  # a model that needs nothing: the run would go on
    model = ("surface=full", "model=oracle")
    tasks = folder / "tasks.yaml"
    tasks.write_text(tasks.read_text().replace("split: test", "split: dev"))  # every task in dev now
    proc = run(tmp_path, "suite=suite", *model, "split=test", configs=configs)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "no task selected by split=test" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "results" / "bad").exists()
    tasks.write_text("")
    proc = run(tmp_path, "suite=suite", *model, configs=configs)
    assert proc.returncode == 2 and "tasks.yaml: no tasks in this file" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results" / "bad").exists()


def test_malformed_model_and_surface_configs_are_refused(tmp_path: Path):
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "typo.yaml").write_text(ORACLE + "temprature: 0.5\n")
    (configs / "surface" / "odd.yaml").write_text("name: odd\nkind: core\nparams: {k: many}\n")
    for args, named in (
        (("suite=notes_mcp", "surface=full", "model=typo"), ["typo", "temprature"]),
        (("suite=notes_mcp", "surface=odd", "model=qwen2.5-coder-0.5b-instruct"), ["odd", "k"]),
        (("suite=notes_mcp", "surface=full", "model=qwen2.5-coder-0.5b-instruct", "limit=-3"), ["limit"]),
    ):
        proc = run(tmp_path, *args, configs=configs)
        assert proc.returncode == 2, (args, proc.stderr[-2000:])
        assert all(n in proc.stderr for n in named) and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert not (tmp_path / "results" / "bad").exists()


def test_an_unusable_results_folder_is_a_clear_error(tmp_path: Path):
    blocker = tmp_path / "results"
    blocker.write_text("a file where the results folder should be")
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "oracle.yaml").write_text(ORACLE)
    proc = run(tmp_path, "suite=notes_mcp", "surface=full", "model=oracle", configs=configs)
    assert proc.returncode == 2
    assert "results directory" in proc.stderr and "results_dir=" in proc.stderr and "Traceback" not in proc.stderr


def test_a_full_disk_mid_episode_leaves_no_corrupt_table(tmp_path: Path, monkeypatch):
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"cells": []})
    row = {"episode_key": "e1", "run": "r", "task_id": "t", "surface": "full", "model": "m", "mode": "native"}
    store.write_episode("e1", row, [{"episode_key": "e1", "step": 0}], [], ["{}"])
    assert store.done_keys() == {"e1"}, "without group commit an episode is written at once"
    real = pq.write_table
    writes = {"n": 0}

    def fill_up(table, path, *a, **kw):
        writes["n"] += 1
        if writes["n"] == 2:  # steps written, then the disk is full
            real(table, path, *a, **kw)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(table, path, *a, **kw)

    monkeypatch.setattr(pq, "write_table", fill_up)
    with pytest.raises(ResultsError, match="No space left"):
        store.write_episode("e2", {**row, "episode_key": "e2"}, [{"episode_key": "e2", "step": 0}], [], ["{}"])
    monkeypatch.undo()
    episodes = load_runs([tmp_path / "run"])
    assert list(episodes["episode_key"]) == ["e1"], "a half-written episode must not count as done"
    assert store.done_keys() == {"e1"}
    assert not list((tmp_path / "run").rglob("*.tmp"))
    for table in ("steps", "calls"):
        load_runs([tmp_path / "run"], table)  # every part still reads


def test_group_commit_holds_quick_episodes_briefly_and_resume_reads_groups(tmp_path: Path):
    store = RunStore(tmp_path / "run", commit_interval_s=60)
    store.prepare()
    store.write_run_info({"cells": []})
    for i in range(5):  # quick episodes (a scripted model): held
        key = f"e{i}"
        store.write_episode(
            key, {"episode_key": key, "round_trips": i}, [{"episode_key": key, "step": 0}], [], ["{}"], 0.01
        )
    assert store.done_keys() == set(), "held, not yet committed"
    store.write_episode("slow", {"episode_key": "slow", "round_trips": 9}, [], [], ["{}"], took_s=61)  # commits all
    assert store.done_keys() == {"e0", "e1", "e2", "e3", "e4", "slow"}
    parts = list((tmp_path / "run" / "episodes.parquet").glob("part-*.parquet"))
    assert len(parts) == 1, "one group, one part per table"
    assert len(load_runs([tmp_path / "run"])) == 6 and len(load_runs([tmp_path / "run"], "steps")) == 5
    assert len(list((tmp_path / "run" / "transcripts").glob("*.jsonl"))) == 6


def test_after_each_commit_hears_every_commit_in_its_block_only(tmp_path: Path):
    store = RunStore(tmp_path / "run", commit_interval_s=60)
    store.prepare()
    store.write_run_info({"cells": []})
    heard: list[list[str]] = []
    with store.after_each_commit(heard.append):
        for key in ("a", "b"):  # quick: held for a group commit
            store.write_episode(key, {"episode_key": key}, [], [], ["{}"], 0.01)
        assert heard == []
        store.flush()
        store.write_episode("slow", {"episode_key": "slow"}, [], [], ["{}"], took_s=61)
    store.write_episode("after", {"episode_key": "after"}, [], [], ["{}"], took_s=61)
    assert heard == [["a", "b"], ["slow"]], "a group commit's keys together; none after the block"
