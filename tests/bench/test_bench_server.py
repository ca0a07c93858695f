"""scripts/bench_server.py on the llama-server stand-in: each setting cold then cached, its flags, the rows."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from surfbench.bench.models import providers
from tests.bench.test_upstream_server import install_fake_binary
from tests.conftest import load_script


def test_each_setting_sends_the_first_request_cold_then_cached_and_writes_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    binary = install_fake_binary(tmp_path, monkeypatch)
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")  # the stand-in never reads it
    started: list[list[str]] = []
    from surfbench.bench.models.server import LocalServer

    real_command = LocalServer.command
    monkeypatch.setattr(LocalServer, "command", lambda self: started.append(real_command(self)) or started[-1])
    script = load_script("bench_server")
    out = tmp_path / "server.json"
    args = ["--surfaces", "core", "--tokens", "4", "--rounds", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["bench_server.py", *args])
    assert script.main() == 0
    assert [c[c.index("--flash-attn") + 1] for c in started] == ["off", "on"]  # one fresh server per setting
    sent = [json.loads(line) for line in binary.with_name("requests.jsonl").read_text().splitlines()]
    assert len(sent) == 4 and all(r["ignore_eos"] is True and r["max_tokens"] == 4 for r in sent)
    assert sent[0]["messages"] == sent[1]["messages"]  # the same first request, twice
    rows = json.loads(out.read_text())["rows"]
    assert [(r["setting"], r["attempt"]) for r in rows] == [("fa=off", "cold"), ("fa=off", "cached")] + [
        ("fa=on", "cold"),
        ("fa=on", "cached"),
    ]
    assert rows[0]["cache_n"] == 0 and rows[1]["prompt_n"] == 0  # the second time the whole prompt is cached
    printed = capsys.readouterr().out
    assert "| fa=off | core | cold |" in printed and "| fa=on | core | cached | " in printed
    assert "| - | 20.0 |" in printed  # a cached request has no prompt rate; the stand-in generates at 20/s


def test_a_busy_probe_runs_each_setting_alone_then_beside_the_busy_process_and_gives_the_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    binary = install_fake_binary(tmp_path, monkeypatch)
    monkeypatch.setattr(providers, "require", lambda name: tmp_path / "m.gguf")
    script = load_script("bench_server")
    out = tmp_path / "server.json"
    args = ["--busy", "--settings", "spin=1000:t=1", "--surfaces", "core", "--rounds", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["bench_server.py", *args])
    assert script.main() == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["busy"], r["attempt"]) for r in rows] == [(False, "cold"), (False, "cached"), (True, "cold")] + [
        (True, "cached")
    ]
    assert json.loads(binary.with_name("omp_env.json").read_text())["GOMP_SPINCOUNT"] == "1000"
    printed = capsys.readouterr().out
    assert "| spin=1000:t=1 | core | cached | " in printed
    assert "| 20.0 | 1.0x |" in printed  # the stand-in generates at 20/s alone and beside the busy process


def test_a_setting_that_cannot_be_read_stops_before_any_server_starts(monkeypatch: pytest.MonkeyPatch):
    script = load_script("bench_server")
    monkeypatch.setattr(sys, "argv", ["bench_server.py", "--settings", "fa=maybe"])
    with pytest.raises(SystemExit, match="fa is on, off or auto"):
        script.main()
    assert script.parse("t=1:spin=0:wait=passive") == {"n_threads": 1, "omp_spincount": 0, "omp_wait_policy": "passive"}
    assert script.parse("spin=env") == {"omp_spincount": None} and script.parse("default") == {}
