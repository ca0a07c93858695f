"""The analysis notebook runs top to bottom on a real results folder (its code cells, in order)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.bench.test_sweep import configs, surfbench  # noqa: F401  (fixture)
from tests.conftest import ROOT


def test_analysis_notebook_executes(configs: Path, tmp_path: Path, monkeypatch):  # noqa: F811
    proc = surfbench(
        configs, "-m", "surface=full,dispatcher", "model=oracle", "limit=4", f"results_dir={tmp_path}", "run=nb"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    monkeypatch.setenv("SURFBENCH_RUNS", str(tmp_path / "nb"))
    monkeypatch.setenv("SURFBENCH_NOTEBOOK_OUT", str(tmp_path / "figs"))
    notebook = json.loads((ROOT / "notebooks" / "analysis.ipynb").read_text())
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code":
                exec(compile("".join(cell["source"]), "analysis.ipynb", "exec"), namespace)  # noqa: S102
    finally:
        os.chdir(cwd)
    assert len(namespace["episodes"]) == 8
    assert set(namespace["table"]["surface"]) == {"full", "dispatcher"}
    assert (tmp_path / "figs" / "pareto.png").stat().st_size > 3000
    assert (tmp_path / "figs" / "tokens_per_step.png").stat().st_size > 3000
    assert [c.episodes for c in namespace["scripted"].cells] == [2, 2], "the surfbench.run cell"
