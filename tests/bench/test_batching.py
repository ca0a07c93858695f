"""The batching benchmark's pure parts (bench/serverbench/batching.py) on hand-built tables, and its plan (--dry-run).

The benchmark itself runs the real model (scripts/bench_batching.py, for the lead on a quiet machine); what it
decides from its runs is checked here: which settings it reads, which episodes it calls different, the rows it
prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from surfbench.bench.models import providers
from surfbench.bench.serverbench.batching import (
    DEFAULT_SETTINGS,
    Setting,
    best_setting,
    differences,
    episode_outcomes,
    markdown_rows,
    parse_setting,
    parse_settings,
    speedups,
    workload_outcomes,
)
from tests.bench.test_upstream_server import install_fake_binary
from tests.conftest import ROOT, load_script


def test_settings_are_read_with_their_slots_and_threads():
    assert parse_setting("llama-cpp-python") == Setting("llama-cpp-python")
    assert parse_setting("server:3:t=1:tb=2:poll=0") == Setting("llama-server", 3, 1, 2, 0)
    assert parse_setting("llama-server:2:t=1").concurrency == 2
    assert parse_setting("llama-server:1:wait=passive") == Setting("llama-server", 1, wait="passive")
    assert parse_setting("llama-server:1:wait=passive").name == "llama-server:1:wait=passive"
    assert parse_setting("llama-server:1:fa=on") == Setting("llama-server", 1, flash_attn="on")
    assert parse_setting("server:1:fa=on:wait=passive").name == "llama-server:1:wait=passive:fa=on"
    assert [s.name for s in parse_settings(DEFAULT_SETTINGS)] == list(DEFAULT_SETTINGS)
    assert parse_setting("python:t=1").name == "llama-cpp-python:t=1"
    assert [s.slots for s in parse_settings(["llama-server:1,llama-server:2", "llama-server:4"])] == [1, 2, 4]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vllm:2", "unknown engine 'vllm'"),
        ("llama-server:two", "cannot read 'two'"),
        ("llama-server:2:threads=1", "cannot read 'threads=1'"),
        ("llama-server:0", "1 or more"),
        ("llama-server:2:t=0", "1 or more"),
        ("llama-server:2:poll=101", "0 to 100"),
        ("llama-cpp-python:2", "one request at a time"),
        ("llama-cpp-python:poll=0", "one request at a time"),
        ("llama-server:2:t=1:t=2", "t given twice"),
        ("llama-server:1:wait=lazy", "cannot read 'wait=lazy'"),
        ("llama-server:1:wait=passive:wait=active", "wait given twice"),
        ("llama-server:1:fa=fast", "cannot read 'fa=fast'"),
        ("llama-server:1:fa=on:fa=off", "fa given twice"),
        ("llama-cpp-python:fa=on", "has no fa="),
    ],
)
def test_a_setting_that_cannot_be_read_says_what_is_wrong(text: str, message: str):
    with pytest.raises(ValueError, match=message):
        parse_setting(text)


def test_a_setting_given_twice_is_refused():
    with pytest.raises(ValueError, match="given twice"):
        parse_settings(["llama-server:2", "server:2"])


def tables(runs: dict[str, tuple[bool, list[tuple[str | None, str, object]]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An episodes and a calls table: task -> (success, [(operation, tool, arguments), ...])."""
    episodes, calls = [], []
    for n, (task, (success, made)) in enumerate(runs.items()):
        key = f"cell-{n}:{task}:0"
        episodes.append(
            {"episode_key": key, "suite": "forge", "surface": "core", "task_id": task, "repeat": 0, "success": success}
        )
        for i, (operation, tool, arguments) in enumerate(made):
            args = arguments if isinstance(arguments, str) else json.dumps(arguments)
            calls.append(
                {
                    "episode_key": key,
                    "step": i // 2,
                    "index": i % 2,
                    "tool": tool,
                    "operation": operation,
                    "arguments": args,
                }
            )
    return pd.DataFrame(episodes), pd.DataFrame(
        calls, columns=["episode_key", "step", "index", "tool", "operation", "arguments"]
    )


REFERENCE = {
    "hot-repo-get": (True, [("repo_get", "repo_get", {"owner": "acme", "repo": "web"})]),
    "hot-issue-get": (
        True,
        [(None, "help", {"op": "issue_get"}), ("issue_get", "call", {"owner": "acme", "index": 3})],
    ),
    "hot-pull-list": (False, []),
}


def test_identical_runs_have_no_differences_whatever_the_key_order_of_the_arguments():
    ref = episode_outcomes(*tables(REFERENCE))
    same = dict(REFERENCE)
    same["hot-repo-get"] = (True, [("repo_get", "repo_get", '{"repo": "web", "owner": "acme"}')])
    assert differences(ref, episode_outcomes(*tables(same))) == []
    assert ref["forge/core/hot-issue-get/0"].calls[0] == ("help", '{"op":"issue_get"}')  # a meta call: its tool


def test_the_episodes_that_differ_are_listed_with_where_they_differ():
    ref = episode_outcomes(*tables(REFERENCE))
    other = dict(REFERENCE)
    other["hot-issue-get"] = (True, [(None, "help", {"op": "issue_get"}), ("issue_get", "call", {"owner": "acme"})])
    other["hot-pull-list"] = (True, [])
    del other["hot-repo-get"]
    other["hot-branch-list"] = (True, [])
    assert differences(ref, episode_outcomes(*tables(other))) == [
        "forge/core/hot-branch-list/0: not in the reference",
        "forge/core/hot-issue-get/0: calls differ from call 2 (2 vs 2 calls)",
        "forge/core/hot-pull-list/0: success False vs True",
        "forge/core/hot-repo-get/0: missing",
    ]
    fewer = {**REFERENCE, "hot-issue-get": (True, [(None, "help", {"op": "issue_get"})])}
    assert differences(ref, episode_outcomes(*tables(fewer))) == [
        "forge/core/hot-issue-get/0: calls differ from call 2 (2 vs 1 calls)"
    ]


def test_an_episode_twice_in_one_setting_is_an_error():
    episodes, calls = tables(REFERENCE)
    with pytest.raises(ValueError, match="appears twice"):
        episode_outcomes(pd.concat([episodes, episodes.iloc[:1].assign(episode_key="other")]), calls)


def test_two_workloads_that_run_the_same_episode_are_compared_each_with_its_own():
    """The front door's preselect cell and forge dev preselect share tasks and cell identity (the same episode
    keys); merged, the first real run stopped with 'appears twice' after its first setting."""
    front, dev = tables(REFERENCE), tables({**REFERENCE, "hot-pull-list": (True, [])})
    ref = workload_outcomes([("front", *front), ("preselect", *dev)])
    assert len(ref) == 6 and ref["front:forge/core/hot-pull-list/0"].success is False
    assert ref["preselect:forge/core/hot-pull-list/0"].success is True
    other = workload_outcomes([("front", *dev), ("preselect", *dev)])
    assert differences(ref, other) == ["front:forge/core/hot-pull-list/0: success False vs True"]


def row(name: str, engine: str, slots: int, rate: float, differing: list[str] | None = None) -> dict[str, object]:
    return {
        "name": name,
        "engine": engine,
        "slots": slots,
        "episodes": 63,
        "wall_s": round(63 / rate * 3600, 1),
        "episodes_per_hour": rate,
        "differing": differing or [],
    }


def record(rows: list[dict[str, object]], busy: bool = False) -> dict[str, object]:
    rates = {str(r["name"]): float(r["episodes_per_hour"]) for r in rows}  # type: ignore[arg-type]
    for r in rows:
        r["speedup"] = speedups(rates, str(rows[0]["name"]))[str(r["name"])]
    return {
        "settings": rows,
        "busy": busy,
        "cores": 2,
        "cores_left": 1 if busy else 2,
        "model": "qwen 0.5B",
        "workloads": ["front", "preselect"],
        "command": "python scripts/bench_batching.py",
        "date": "2026-12-03 10:00 UTC",
        "load_1min_before": 0.1,
        "load_1min_after": 2.0,
    }


def test_the_rows_give_each_setting_against_the_first_and_judge_the_best_n():
    rows = [
        row("llama-cpp-python", "llama-cpp-python", 1, 100.0),
        row("llama-server:1", "llama-server", 1, 110.0),
        row("llama-server:2", "llama-server", 2, 160.0, ["forge/core/x/0: success True vs False"]),
        row("llama-server:3", "llama-server", 3, 140.0),
    ]
    lines = markdown_rows(record(rows))
    assert len(lines) == 5 and all(line.startswith("| ") and line.count(" | ") == 4 for line in lines)
    assert "llama-server:2 (concurrency 2) vs llama-cpp-python" in lines[1] and "| 1.6x (160.0 vs 100.0" in lines[1]
    assert "62 of 63 episodes identical" in lines[1]
    assert "N=2: 1.6x | >= 1.5x | met |" in lines[3]
    assert "62 of 63 identical | all | missed |" in lines[4]  # one episode changed its outcome at N=2
    assert "outcome identity at temperature 0 at N=2 (front + preselect, qwen 0.5B; " in lines[4]  # names its workload
    assert "load 0.1 to 2.0" in lines[0]
    slower = [row("llama-cpp-python", "llama-cpp-python", 1, 100.0), row("llama-server:2", "llama-server", 2, 140.0)]
    assert "N=2: 1.4x | >= 1.5x | missed |" in markdown_rows(record(slower))[1]


def test_busy_rows_compare_each_setting_with_its_own_quiet_run_of_the_same_episodes():
    busy = record(
        [
            row("llama-cpp-python", "llama-cpp-python", 1, 8.0),
            row("llama-server:2", "llama-server", 2, 72.0),
            row("llama-server:2:t=1", "llama-server", 2, 90.0),
        ],
        busy=True,
    )
    rows = busy["settings"]
    rows[0]["quiet"] = {"episodes": 63, "wall_s": 2268.0, "episodes_per_hour": 100.0}  # type: ignore[index]
    rows[1]["quiet"] = {"episodes": 63, "wall_s": 1417.5, "episodes_per_hour": 160.0}  # type: ignore[index]
    rows[1]["differing_vs_quiet"] = ["preselect:forge/preselect/x/0: success True vs False"]  # type: ignore[index]
    lines = markdown_rows(busy)
    judged = [line for line in lines if line.startswith("| busy / quiet")]
    assert len(judged) == 2  # the t=1 setting has no quiet run to compare with
    assert "llama-cpp-python (1 of 2 cores left) | 0.08x" in judged[0] and "| missed |" in judged[0]  # 12x slower
    assert "63 of 63 episodes as alone" in judged[0]
    assert "llama-server:2 (1 of 2 cores left) | 0.45x (72.0 vs 160.0 episodes/h alone; 62 of 63" in judged[1]
    assert ">= 0.4x (in proportion: 0.5x) | met" in judged[1]
    assert not any("best N" in line for line in lines)


def test_the_best_setting_is_the_fastest_server_and_the_fewer_slots_on_a_tie():
    rows = [row("a", "llama-cpp-python", 1, 300.0), row("b", "llama-server", 3, 150.0)]
    rows.append(row("c", "llama-server", 2, 150.0))
    assert best_setting(rows)["name"] == "c"  # type: ignore[index]
    assert best_setting(rows[:1]) is None


def test_the_dry_run_prints_the_plan_and_runs_nothing(tmp_path):  # noqa: ANN001
    out = tmp_path / "batching.json"
    done = subprocess.run(
        [sys.executable, "scripts/bench_batching.py", "--dry-run", "--limit", "2", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "5 setting(s) x 8 episodes = 40 episodes" in done.stdout  # front door 3 cells x 2 tasks, preselect 2
    assert "llama-server:4: concurrency 4; llama-server --parallel 4 --kv-unified --threads 2" in done.stdout
    assert "forge/preselect/" in done.stdout and not out.exists()
    bad = subprocess.run(
        [sys.executable, "scripts/bench_batching.py", "--dry-run", "--settings", "llama-server:x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2 and "cannot read 'x'" in bad.stderr


def test_a_run_on_a_stand_in_server_writes_each_setting_and_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The script's run (server start, cells, timing, identity, JSON, rows) on the llama-server stand-in."""
    install_fake_binary(tmp_path, monkeypatch)
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")  # the stand-in never reads it
    script = load_script("bench_batching")
    out = tmp_path / "bench" / "batching.json"
    out.parent.mkdir()
    out.write_text(json.dumps({"busy": {"kept": True}}))
    args = ["--settings", "llama-server:1", "llama-server:2", "--workloads", "front", "--limit", "2", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["bench_batching.py", *args])
    assert script.main() == 0
    data = json.loads(out.read_text())
    assert data["busy"] == {"kept": True}  # the other mode's section is left as it was
    quiet = data["quiet"]
    assert quiet["complete"] and [r["name"] for r in quiet["settings"]] == ["llama-server:1", "llama-server:2"]
    one, two = quiet["settings"]
    assert one["episodes"] == two["episodes"] == 6 and one["errors"] == two["errors"] == 0
    assert one["slots_used"] == [] and two["slots_used"] == [0, 1]  # one slot pins nothing; two pin each episode
    assert two["differing"] == [] and two["differing_vs_one_slot"] == [] and one["speedup"] == 1.0
    assert two["server_prompt_n"] > 0 and 0 < two["cached_share"] < 1
    printed = capsys.readouterr().out
    assert "rows for docs/benchmarks.md:" in printed and "| batching: best N on" in printed


def test_a_busy_run_measures_each_setting_alone_then_beside_the_busy_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """--busy: the same episodes twice per setting; the busy process runs only for the second half, then is gone."""
    install_fake_binary(tmp_path, monkeypatch)
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")
    script = load_script("bench_batching")
    spawned: list[subprocess.Popen[bytes]] = []
    real_popen = subprocess.Popen

    def popen(cmd, *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        proc = real_popen(cmd, *a, **kw)
        if cmd[:2] == [sys.executable, "-c"] and cmd[2] == script.SPIN:
            spawned.append(proc)
        return proc

    monkeypatch.setattr(script.subprocess, "Popen", popen)
    out = tmp_path / "batching.json"
    args = ["--busy", "--settings", "llama-server:1", "llama-server:1:t=1", "--workloads", "preselect"]
    monkeypatch.setattr(sys, "argv", ["bench_batching.py", *args, "--limit", "2", "--out", str(out)])
    assert script.main() == 0
    busy = json.loads(out.read_text())["busy"]
    assert busy["complete"] and busy["cores_left"] == busy["cores"] - 1
    assert len(spawned) == 2 and all(p.poll() is not None for p in spawned)  # one per setting, none left running
    for r in busy["settings"]:
        assert r["quiet"]["episodes"] == r["episodes"] == 2 and r["differing_vs_quiet"] == []
    printed = capsys.readouterr().out
    assert "| busy / quiet, llama-server:1 (" in printed and "| busy / quiet, llama-server:1:t=1 (" in printed
    assert "2 of 2 episodes as alone" in printed
