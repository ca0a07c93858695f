"""run.json across a resumed run: when the run began stays, what changed is merged (bench/store/results.py)."""

from __future__ import annotations

import json
from pathlib import Path

from surfbench.bench.store.results import RunStore


def test_a_resumed_run_keeps_when_it_began_and_merges_the_rest(tmp_path: Path):
    # the results pages say "started <created>": a resumed run re-writing it said the run began at the resume
    store = RunStore(tmp_path / "run")
    store.prepare()
    store.write_run_info({"created": "2026-12-06T06:19:48+00:00", "git_commit": "a", "cells": []})
    store.write_run_info(
        {"created": "2026-12-06T08:30:40+00:00", "git_commit": "b", "cells": [{"cell_id": "c1", "surface": "full"}]}
    )
    info = json.loads((store.root / "run.json").read_text())
    assert info["created"] == "2026-12-06T06:19:48+00:00"
    assert info["git_commit"] == "b" and [c["cell_id"] for c in info["cells"]] == ["c1"]
    fresh = RunStore(tmp_path / "other")
    fresh.prepare()
    fresh.write_run_info({"created": "2026-12-06T08:30:40+00:00", "cells": []})
    assert json.loads((fresh.root / "run.json").read_text())["created"] == "2026-12-06T08:30:40+00:00"


def test_run_json_records_the_command_a_user_can_type_again(tmp_path, monkeypatch):
    """run.json's command: `surfbench ...` from the console script or `python -m surfbench`; a script that runs cells
    through the Python API is recorded as `python SCRIPT ...` (synth_proxy.py was recorded as `surfbench --hand`)."""
    from surfbench.bench.store.results import typed_command

    monkeypatch.chdir(tmp_path)
    assert typed_command(["/x/.venv/bin/surfbench", "run", "-m", "surface=full,core"]) == (
        "surfbench run -m surface=full,core"
    )
    assert typed_command(["/x/surfbench/__main__.py", "report", "a b"]) == "surfbench report 'a b'"
    script = tmp_path / "scripts" / "synth_proxy.py"
    assert typed_command([str(script), "--hand", "results/x"]) == "python scripts/synth_proxy.py --hand results/x"
    assert typed_command(["/elsewhere/mine.py"]) == "python /elsewhere/mine.py"
    assert typed_command(["/home/u/surfbench/mine.py"]) == "python /home/u/surfbench/mine.py"  # a checkout's script
