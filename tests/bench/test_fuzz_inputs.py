"""Fuzzing: malformed suites, task files and catalogs never raise anything but one line naming the file.

Every example is a mutation of the shipped notes_mcp suite (suite.yaml, tasks.yaml, catalog.json) written
into a fresh folder and loaded in-process through ``surfbench.bench.suites.suite.load_suite`` (and, for catalogs, also
``surfbench.bench.catalog.importers.load_catalog``). A load may succeed; when it fails it must raise SuiteError,
ConfigError or CatalogError (what ``surfbench.bench.cli.cli.main`` prints as one line, exit 2) with a one-line,
UTF-8-writable message that names a file of that folder. Mutations: a field set to a value of each
wrong type, deleted, an unknown key added, deep nesting (5,000 levels), numbers of 5,000 digits,
NaN and infinities, YAML dates, binary and recursive aliases, odd unicode (surrogates, line and
paragraph separators, NUL, right-to-left marks), invalid bytes, truncation. Seeds are fixed (the
runs are reproducible) and printed with the number of examples.
"""

from __future__ import annotations

import collections
import copy
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.validation import has_lone_surrogate
from surfbench.bench.catalog.catalog import CatalogError
from surfbench.bench.catalog.importers import load_catalog
from surfbench.bench.suites.suite import SuiteError, load_suite
from tests.conftest import ROOT

NOTES = ROOT / "tasks" / "notes_mcp"
SUITE = yaml.safe_load((NOTES / "suite.yaml").read_text())
TASKS = yaml.safe_load((NOTES / "tasks.yaml").read_text())
CATALOG = json.loads((NOTES / "catalog.json").read_text())
FILES = {name: (NOTES / name).read_bytes() for name in ("suite.yaml", "tasks.yaml", "catalog.json")}
SEEDS = {"suite": 130_001, "tasks": 130_002, "catalog": 130_003, "bytes": 130_004}
EXAMPLES = {"suite": 2_000, "tasks": 4_500, "catalog": 2_500, "bytes": 1_500}  # 10,500 in all
ONE_LINE_ERRORS = (SuiteError, ConfigError, CatalogError)
COUNTS: collections.Counter[str] = collections.Counter()
BASE = Path(tempfile.gettempdir())  # replaced by a pytest temporary folder (the fixture below)


class Raw:
    """Text written into a file as it is (no YAML or JSON quoting): deep nesting, huge numbers, tags."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Raw({self.text[:40]!r}{'…' if len(self.text) > 40 else ''} len={len(self.text)})"


def _deep(kind: str, depth: int) -> Raw:
    if kind == "list":
        return Raw("[" * depth + "1" + "]" * depth)
    return Raw('{"a": ' * depth + "1" + "}" * depth)


ODD_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(["\u2028", "\u2029", "\x85", "\x00", "\u202e", "\ufeff", "\r", "\n", "\t", "\x1b", "'", '"']),
    ),
    max_size=12,
)
RAW = st.one_of(
    st.builds(_deep, st.sampled_from(["list", "map"]), st.integers(60, 5_000)),
    st.integers(300, 6_000).map(lambda n: Raw("9" * n)),  # past Python's 4,300-digit int limit, or near it
    st.sampled_from(
        [
            Raw(".nan"),
            Raw(".inf"),
            Raw("-.inf"),
            Raw("NaN"),
            Raw("Infinity"),
            Raw("1e999"),
            Raw("2026-02-30"),
            Raw("2026-12-24T09:00:00Z"),
            Raw("!!binary aGVsbG8="),
            Raw("!!binary ***"),
            Raw("!!set {a, b}"),
            Raw("!!python/object/apply:os.system ['true']"),
            Raw("&loop [*loop]"),
            Raw("*nowhere"),
            Raw("!!int x"),
            Raw('"\\ud800"'),
            Raw("? [a, b]\n: c"),
            Raw("{[1]: 2}"),
            Raw("[,]"),
            Raw(""),
            Raw("~"),
        ]
    ),  # fmt: skip
)
WRONG_TYPES = st.sampled_from(
    [None, True, False, 0, -1, -3, 1, 42, 1.5, -0.0, "", " ", "x", "yes", "none", "four", [], [None], [1, 2],
     ["x"], [[]], {}, {"x": 1}, {"$regex": "("}, {"$any": False}, {"$approx": "x"}, {"$set": 1},
     {"$list": [{"$foo": 1}]}, {"$extra": "yes"}, {"$tol": 1}, "(", "[a-", "*", "\\", "a" * 300,
     datetime.date(2026, 1, 1), b"\x00\xff",
     {"op": "notes_get"}, {"path": ""}, {"path": []}, [{"op": 1}], [{"path": "a..b"}], {1: 2}, {None: 1}]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    ODD_TEXT,
    st.dates(),
    st.binary(max_size=8),
)
WEIRD = st.one_of(
    WRONG_TYPES,
    RAW,
    st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(
                st.one_of(ODD_TEXT, st.integers(-3, 3), st.sampled_from(["op", "args", "id"])), inner, max_size=4
            ),
        ),
        max_leaves=10,
    ),
)
# a mutation: (what, which node (index into the document's nodes, modulo), key or value)
MUTATION = st.tuples(st.sampled_from(["set", "set", "set", "delete", "add_key", "wrap"]), st.integers(0, 10**6), WEIRD)
KEYS = st.sampled_from(
    ["id", "turns", "split", "tags", "expected", "state", "answer", "canned", "refuse", "exact_calls", "op", "args",
     "oracle_args", "turn", "path", "match", "len", "contains", "regex", "any_of", "max_steps", "catalog", "tasks",
     "backend", "loader", "classify", "variants", "inputSchema", "properties", "type", "name", "tools", "result",
     "required", "annotations", "$extra", "$regex", "expectd", "bogus", "", "\u2028"]
)  # fmt: skip


def _nodes(doc: Any) -> list[tuple[Any, ...]]:
    """The path of every node of ``doc``, the root first."""
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        node, path = stack.pop()
        paths.append(path)
        if isinstance(node, dict):
            stack.extend((value, (*path, key)) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend((value, (*path, i)) for i, value in enumerate(node))
    return paths


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def mutate(doc: Any, mutations: list[tuple[str, int, Any]], key: str = "bogus") -> Any:
    """Apply each mutation to a deep copy of ``doc``; the root may be replaced."""
    doc = copy.deepcopy(doc)
    for what, index, shared in mutations:
        value = copy.deepcopy(shared)  # sampled values are shared objects: never edit them in place
        paths = _nodes(doc)
        path = paths[index % len(paths)]
        if not path:  # the root itself
            doc = value if what != "wrap" else [doc]
            continue
        parent, last = _get(doc, path[:-1]), path[-1]
        if what == "set":
            parent[last] = value
        elif what == "delete":
            del parent[last]
        elif what == "add_key":
            target = _get(doc, path)
            if isinstance(target, dict):
                target[key] = value
            else:
                parent[last] = {key: value}
        else:  # wrap: a value where a list or mapping of it was meant, or the reverse
            parent[last] = [parent[last]] if index % 2 else {key: parent[last]}
    return doc


def dump(doc: Any, fmt: str) -> bytes:
    """``doc`` as YAML, JSON or JSON lines, with every Raw written as its text."""
    raws: dict[str, str] = {}

    def swap(node: Any) -> Any:
        if isinstance(node, str) and has_lone_surrogate(node):  # no emitter writes one: a \\ud800 escape instead
            node = Raw(json.dumps(node))
        if isinstance(node, Raw):
            token = f"RAW{len(raws)}TOKEN"
            raws[token] = node.text
            return token
        if isinstance(node, dict):
            return {swap(k): swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    plain = swap(doc)
    if fmt == "yaml":
        text = yaml.dump(plain, Dumper=yaml.CSafeDumper, allow_unicode=True, sort_keys=False)
    else:
        default = lambda o: str(o)  # noqa: E731  dates and bytes: JSON has no such type
        if fmt == "jsonl" and isinstance(plain, list):
            text = "\n".join(json.dumps(row, default=default, ensure_ascii=False) for row in plain)
        else:
            text = json.dumps(plain, default=default, ensure_ascii=False)
    for token, raw in raws.items():
        text = text.replace(f'"{token}"', raw).replace(token, raw)
    return text.encode("utf-8")


@pytest.fixture(autouse=True)
def _same_corpus_whatever_ran_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Draw without Hypothesis's "local constants".

    Hypothesis mixes the literals of every imported local module into some of its draws; which modules
    are imported depends on the tests that ran before, so the corpus would too (the seed alone would not
    fix it). Private API, hence ``raising=False``: a Hypothesis without it has nothing to switch off.
    """
    from hypothesis.internal.conjecture import providers

    monkeypatch.setattr(providers, "_get_local_constants", lambda: providers.Constants(), raising=False)
    if hasattr(providers, "CONSTANTS_CACHE"):  # draws cached with earlier tests' constants
        monkeypatch.setattr(providers, "CONSTANTS_CACHE", type(providers.CONSTANTS_CACHE)(1024))


@pytest.fixture(autouse=True, scope="module")
def _base(tmp_path_factory: pytest.TempPathFactory) -> None:
    global BASE
    BASE = tmp_path_factory.mktemp("fuzz")


class SuiteFolder:
    """One suite folder per kind, reused: each example starts from the shipped files again.

    Files are rewritten only when their bytes change (opening files dominated the run time).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.on_disk: dict[str, bytes] = {}
        folder.mkdir(parents=True, exist_ok=True)

    def write(self, files: dict[str, bytes]) -> Path:
        wanted = {**FILES, **files}
        for name in set(self.on_disk) - set(wanted):  # what an earlier example added (tasks.jsonl, catalog.yaml)
            (self.folder / name).unlink()
            del self.on_disk[name]
        for name, data in wanted.items():
            if self.on_disk.get(name) != data:
                (self.folder / name).write_bytes(data)
                self.on_disk[name] = data
        return self.folder


FOLDERS: dict[str, SuiteFolder] = {}


def suite_folder(kind: str, files: dict[str, bytes]) -> Path:
    """The kind's suite folder holding the shipped files, with ``files`` in their place."""
    if kind not in FOLDERS or not FOLDERS[kind].folder.is_relative_to(BASE):
        FOLDERS[kind] = SuiteFolder(BASE / kind / "suite")
    return FOLDERS[kind].write(files)


def outcome(load: Callable[[], object], folder: Path) -> str:
    """Load; an error must be one of ours, on one line, naming a file of ``folder``."""
    try:
        load()
    except ONE_LINE_ERRORS as exc:
        message = str(exc)
        assert message and len(message.splitlines()) == 1, message
        assert str(folder) in message, message
        message.encode("utf-8")  # printable as it is: no lone surrogate
        return "error"
    return "loaded"


def report(capsys: pytest.CaptureFixture[str], kind: str, started: float) -> None:
    total = sum(v for k, v in COUNTS.items() if k.startswith(kind + ":"))
    parts = ", ".join(f"{k.split(':')[1]} {v}" for k, v in sorted(COUNTS.items()) if k.startswith(kind + ":"))
    if kind == "catalog":  # each catalog is also loaded alone, through load_catalog
        direct = ", ".join(f"{k.split(':')[1]} {v}" for k, v in sorted(COUNTS.items()) if k.startswith("catalog-"))
        parts += f"; load_catalog alone: {direct}"
    with capsys.disabled():
        print(f"\nfuzz {kind}: {total} examples ({parts}), seed {SEEDS[kind]}, {time.perf_counter() - started:.1f} s")
    assert total >= EXAMPLES[kind], f"only {total} of {EXAMPLES[kind]} examples ran"


def fuzz_settings(kind: str) -> Callable[[Any], Any]:
    def apply(fn: Any) -> Any:
        return seed(SEEDS[kind])(
            settings(
                max_examples=EXAMPLES[kind],
                deadline=None,
                database=None,  # nothing carried over between runs: the seed alone decides the corpus
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=[
                    HealthCheck.too_slow,
                    HealthCheck.data_too_large,
                    HealthCheck.large_base_example,
                ],
            )(fn)
        )

    return apply


@fuzz_settings("suite")
@given(st.lists(MUTATION, min_size=1, max_size=3), KEYS)
def fuzz_suite(mutations: list[tuple[str, int, Any]], key: str) -> None:
    folder = suite_folder("suite", {"suite.yaml": dump(mutate(SUITE, mutations, key), "yaml")})
    COUNTS["suite:" + outcome(lambda: load_suite(str(folder)), folder)] += 1


@fuzz_settings("tasks")
@given(st.lists(MUTATION, min_size=1, max_size=3), KEYS, st.sampled_from(["yaml", "yaml", "jsonl"]))
def fuzz_tasks(mutations: list[tuple[str, int, Any]], key: str, fmt: str) -> None:
    name = f"tasks.{fmt}"
    files = {name: dump(mutate(TASKS, mutations, key), fmt)}
    if fmt == "jsonl":
        files["suite.yaml"] = FILES["suite.yaml"].replace(b"[tasks.yaml]", f"[{name}]".encode())
    folder = suite_folder("tasks", files)
    COUNTS["tasks:" + outcome(lambda: load_suite(str(folder)), folder)] += 1


@fuzz_settings("catalog")
@given(st.lists(MUTATION, min_size=1, max_size=3), KEYS, st.sampled_from(["json", "json", "yaml"]))
def fuzz_catalog(mutations: list[tuple[str, int, Any]], key: str, fmt: str) -> None:
    name = f"catalog.{fmt}"
    files = {name: dump(mutate(CATALOG, mutations, key), fmt)}
    files["suite.yaml"] = FILES["suite.yaml"].replace(b"catalog.json", name.encode())
    folder = suite_folder("catalog", files)
    COUNTS["catalog-direct:" + outcome(lambda: load_catalog(folder / name), folder)] += 1
    COUNTS["catalog:" + outcome(lambda: load_suite(str(folder)), folder)] += 1


@fuzz_settings("bytes")
@given(
    st.sampled_from(sorted(FILES)),
    st.lists(
        st.tuples(
            st.sampled_from(["insert", "delete", "truncate", "flip"]),
            st.integers(0, 10**6),
            st.binary(min_size=1, max_size=6)
            | st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80", b"\xef\xbb\xbf"]),
        ),
        min_size=1,
        max_size=4,
    ),
)
def fuzz_bytes(name: str, edits: list[tuple[str, int, bytes]]) -> None:
    data = bytearray(FILES[name])
    for what, at, blob in edits:
        at %= len(data) + 1
        if what == "insert":
            data[at:at] = blob
        elif what == "delete":
            del data[at : at + len(blob) * 7]
        elif what == "truncate":
            del data[at:]
        elif data:
            data[min(at, len(data) - 1)] ^= blob[0] | 1
    folder = suite_folder("bytes", {name: bytes(data)})
    COUNTS["bytes:" + outcome(lambda: load_suite(str(folder)), folder)] += 1


@pytest.mark.parametrize(
    ("kind", "fuzz"),
    [("suite", fuzz_suite), ("tasks", fuzz_tasks), ("catalog", fuzz_catalog), ("bytes", fuzz_bytes)],
    ids=["suite_yaml", "task_files", "catalogs", "bytes"],
)
def test_fuzz(capsys, kind: str, fuzz):
    started = time.perf_counter()
    fuzz()
    report(capsys, kind, started)


def test_the_cli_prints_fuzzed_inputs_as_one_line_and_exit_2(tmp_path: Path):
    """A few corpus-style inputs through the real command line: one error line, exit 2, no traceback."""
    suites = tmp_path / "suites"
    cases: list[tuple[str, dict[str, bytes]]] = [
        ("deep", {"tasks.yaml": dump(mutate(TASKS, [("set", 7, _deep("list", 5_000))]), "yaml")}),
        ("digits", {"suite.yaml": dump({**SUITE, "max_steps": Raw("9" * 5_000)}, "yaml")}),
        ("bytes", {"tasks.yaml": FILES["tasks.yaml"][:40] + b"\xff\xfe" + FILES["tasks.yaml"][40:]}),
        ("wrongtype", {"tasks.yaml": dump(mutate(TASKS, [("set", 3, {"x": 1})]), "yaml")}),
    ]
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    for name, files in cases:
        shutil.copytree(NOTES, suites / name)
        for file, data in files.items():
            (suites / name / file).write_bytes(data)
        (configs / "suite" / f"{name}.yaml").write_text(f"name: {name}\n")
    env = {**os.environ, "CI": "true", "SURFBENCH_SUITES": str(suites), "SURFBENCH_CONFIGS": str(configs)}
    env["SURFBENCH_CACHE"] = str(tmp_path / "cache")
    for name, _ in cases:
        cmd = [sys.executable, "-m", "surfbench", "run", f"suite={name}", "surface=full"]
        cmd += ["model=qwen2.5-coder-0.5b-instruct", f"results_dir={tmp_path / 'results'}", "run=bad"]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2, (name, proc.stderr[-2000:])
        assert len(lines) == 1 and lines[0].startswith("surfbench: error"), (name, proc.stderr[-2000:])
        assert str(suites / name) in lines[0], (name, lines[0])
        assert not (tmp_path / "results" / "bad").exists()
    deep = tmp_path / "deep.json"
    deep.write_bytes(dump(mutate(CATALOG, [("set", 9, _deep("map", 5_000))]), "json"))
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "surfaces", "--catalog", str(deep)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and str(deep) in lines[0], proc.stderr[-2000:]
