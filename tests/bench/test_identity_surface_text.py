"""A cell is keyed by the text its surface shows and the code it runs: an edited preamble, tool description
or error text is another cell, the older episodes are left out with a count, and an unchanged surface keeps
its key in another process, under another hash seed and from another folder. Scripted oracle model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.store.provenance import load_current
from tests.conftest import ROOT

ORACLE = "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"
MODEL = "qwen2.5-coder-0.5b-instruct"  # resolved only, never started

PLUGIN_SURFACE = '''
"""A surface kept outside the repository: typed tools, a preamble, its own error text in a helper."""
from pathlib import Path

from surfbench.bench.contracts.surface import Dispatch, Session, Surface, ToolSpec, typed_tool
from noted_plugin._texts import NOT_SHOWN

PREAMBLE = "Use the note tools; one call per step."
RUNTIME = (Path(__file__).parent / "runtime.py").read_text()


class NotedSession(Session):
    def reject_unshown(self, call):
        return Dispatch("rejected", call.name, text=NOT_SHOWN, error_type="not_exposed")


class NotedSurface(Surface):
    kind = "noted"
    session_class = NotedSession

    def setup(self) -> None:
        self._tools = [typed_tool(op) for op in self.catalog.operations]

    def static_tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def system_text(self) -> str:
        return PREAMBLE
'''
PLUGIN_FILES = {
    "__init__.py": "",
    "surface.py": PLUGIN_SURFACE,
    "_texts.py": 'NOT_SHOWN = "That tool is not here."\n',
    "runtime.py": 'print("runs as text, never imported")\n',
}


def plugin(where: Path) -> Path:
    """The plugin package ``noted_plugin`` under ``where``; returns its folder."""
    folder = where / "noted_plugin"
    folder.mkdir(parents=True)
    for name, text in PLUGIN_FILES.items():
        (folder / name).write_text(text)
    return folder


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def cli(configs: Path, pythonpath: Path, seed: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true", "PYTHONPATH": str(pythonpath)}
    env["PYTHONHASHSEED"] = seed
    cmd = [sys.executable, "-m", "surfbench", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_an_edited_preamble_or_error_text_runs_the_cell_again_and_the_older_episodes_are_left_out(tmp_path: Path):
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "model" / "notes-oracle.yaml").write_text(ORACLE)
    (configs / "surface" / "noted.yaml").write_text('name: noted\nkind: "noted_plugin.surface:NotedSurface"\n')
    results = tmp_path / "results"
    run = ("run", "suite=notes_mcp", "surface=noted", "model=notes-oracle", "limit=2", f"results_dir={results}")
    run += ("run=t",)
    here = plugin(tmp_path / "here")

    first = cli(configs, here.parent, "1", *run)
    assert first.returncode == 0 and "0/2 episodes already done" in first.stderr, first.stderr[-3000:]
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(here.parent, elsewhere)  # the same surface from another folder, in another process and seed
    same = cli(configs, elsewhere, "2", *run)
    assert same.returncode == 0 and "2/2 episodes already done" in same.stderr, same.stderr[-3000:]

    edit(elsewhere / "noted_plugin" / "surface.py", "one call per step", "one call at a time")  # the preamble
    preamble = cli(configs, elsewhere, "3", *run)
    assert preamble.returncode == 0 and "0/2 episodes already done" in preamble.stderr, preamble.stderr[-3000:]
    view = load_current([results / "t"])
    assert len(view.frame) == 2 and view.ignored == 2
    assert any("2 episode(s) of an older cell identity left out" in note for note in view.notes), view.notes

    edit(elsewhere / "noted_plugin" / "_texts.py", "is not here", "does not exist")  # shown on no first turn
    error_text = cli(configs, elsewhere, "4", *run)
    assert error_text.returncode == 0 and "0/2 episodes already done" in error_text.stderr, error_text.stderr[-3000:]
    report = cli(configs, elsewhere, "4", "report", str(results / "t"), "--baseline", "noted")
    assert report.returncode == 0, report.stderr[-3000:]
    assert "4 episode(s) of an older cell identity left out" in (results / "t" / "report" / "report.md").read_text()
    assert len(load_current([results / "t"]).frame) == 2


def _cell_id(suite: str, surface: str) -> str:
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    return resolve_cell(CellSpec(suite, surface, MODEL, limit=1)).cell_id


def _bash_tool(name: str = "bash") -> Any:
    from surfbench.bench.contracts.surface import ToolSpec
    from surfbench.surfaces._exec import bash_tool

    tool = bash_tool(name)
    return ToolSpec(tool.name, tool.description + " Prefer one command per call.", tool.parameters)


def _typed_tool(op: Any) -> Any:
    from surfbench.bench.contracts.surface import ToolSpec

    return ToolSpec(op.name, f"{op.description} (typed)", op.parameters)


EDITS = [  # (suite, surface, module, attribute, the edited value): text that only a first turn shows
    ("forge", "code", "surfbench.surfaces.code", "PREAMBLE", "Run a Python program."),
    ("forge", "code_index", "surfbench.surfaces.code", "PREAMBLE", "Run a Python program."),
    ("forge", "code_search", "surfbench.surfaces.code", "PREAMBLE", "Run a Python program."),
    ("notes_mcp", "dispatcher", "surfbench.surfaces.listing", "one_line", lambda op: op.name),
    ("forge", "core_dispatch", "surfbench.surfaces.listing", "one_line", lambda op: op.name),
    ("notes_mcp", "lazy", "surfbench.surfaces.lazy", "LOADER", "load_more_tools"),
    ("notes_mcp", "search", "surfbench.surfaces.search", "SEARCH", "find_tools"),
    ("notes_mcp", "preselect", "surfbench.bench.contracts.surface", "typed_tool", _typed_tool),  # every candidate
    ("notes_mcp", "full", "surfbench.surfaces.full", "typed_tool", _typed_tool),
    ("workspace", "unified", "surfbench.surfaces.unified", "DESCRIPTION", "Execute code in the workspace."),
    ("workspace", "bash", "surfbench.surfaces.bash", "bash_tool", _bash_tool),
    ("workspace", "four", "surfbench.surfaces.four", "bash_tool", _bash_tool),
]


@pytest.mark.parametrize(("suite", "surface", "module", "attribute", "value"), EDITS, ids=[e[1] for e in EDITS])
def test_every_kind_keys_the_text_its_first_turn_shows(
    suite: str, surface: str, module: str, attribute: str, value: Any, monkeypatch: pytest.MonkeyPatch
):
    import importlib

    before = _cell_id(suite, surface)
    assert _cell_id(suite, surface) == before
    monkeypatch.setattr(importlib.import_module(module), attribute, value)
    assert _cell_id(suite, surface) != before, f"{surface}: an edited first turn must be another cell"


def test_preselect_is_keyed_by_its_whole_candidate_catalog():
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    cell = resolve_cell(CellSpec("notes_mcp", "preselect", MODEL, limit=1))
    assert cell.surface.static_tools() == []  # nothing shown before a request selects
    assert [t.name for t in cell.surface.candidate_tools()] == [op.name for op in cell.suite.catalog.operations]


IDS = """
import json, sys
from surfbench.bench.run.runner import CellSpec, resolve_cell
from surfbench.bench.store.identity import surface_code
cells = [("notes_mcp", s) for s in ("full", "preselect", "lazy", "search", "dispatcher")]
cells += [("forge", s) for s in ("code", "code_index", "code_search", "core_dispatch")]
cells += [("workspace", s) for s in ("unified", "split", "four", "bash")]
shipped = sys.argv[3] == "all"
out = {f"{a}/{b}": resolve_cell(CellSpec(a, b, sys.argv[1], limit=1)).cell_id for a, b in cells if shipped}
sys.path.insert(0, sys.argv[2])
from noted_plugin.surface import NotedSurface
out["plugin"] = surface_code(NotedSurface)
print(json.dumps(out))
"""


def _ids(where: Path, seed: str, cwd: Path, cells: str = "all") -> dict[str, Any]:
    """Cell ids of the shipped surfaces (``cells="all"``) and the plugin's code version, from a new process."""
    env = {**os.environ, "PYTHONHASHSEED": seed}
    cmd = [sys.executable, "-c", IDS, MODEL, str(where), cells]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(json.loads(proc.stdout))


def test_the_code_version_covers_the_modules_a_surface_imports_and_holds_across_processes(tmp_path: Path):
    from surfbench.bench.store.identity import surface_code
    from surfbench.surfaces.code import CodeSurface
    from surfbench.surfaces.search import SearchSurface

    code = set(surface_code(CodeSurface))
    assert {"surfbench.surfaces.code", "surfbench.surfaces._code_calls", "surfbench.surfaces._sdk"} <= code
    assert {
        "surfbench.surfaces._exec",
        "surfbench.surfaces/_code_runtime.py",
        "surfbench.bench.contracts.surface",
    } <= code
    assert "surfbench.surfaces.lazy" in surface_code(SearchSurface)  # its session is lazy's

    here, elsewhere = plugin(tmp_path / "here").parent, tmp_path / "elsewhere"
    shutil.copytree(here, elsewhere)
    one, two = _ids(here, "1", ROOT), _ids(elsewhere, "2", tmp_path)  # other folders, hash seeds, processes
    assert one == two
    assert {"noted_plugin.surface", "noted_plugin._texts", "noted_plugin/runtime.py"} <= set(one["plugin"])
    for file_name, old, new in (("_texts.py", "not here", "missing"), ("runtime.py", "never", "not")):
        edit(elsewhere / "noted_plugin" / file_name, old, new)
        changed = _ids(elsewhere, "3", tmp_path, "plugin")["plugin"]
        assert changed != one["plugin"], f"an edit of {file_name} must change the surface's code version"
        assert changed["noted_plugin.surface"] == one["plugin"]["noted_plugin.surface"]  # per file: which one changed
