"""Model fields typed and range-checked, and unknown config names (issue 27, item 6): a bad
``model.*`` value or ``concurrency=N`` is one line naming the field, the value and what is allowed,
exit code 2, and no results folder; an unknown ``suite=``/``surface=``/``model=`` name is one line
with the close names instead of Hydra's option list. Scripted oracle model throughout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from tests.conftest import ROOT

# every field the overrides below change is in the file: Hydra refuses `model.x=` for a key it lacks
ORACLE = (
    "provider: scripted\nscript_suite: notes_mcp\nparams_b: 0.0\nmode: native\n"
    "max_tokens: 64\ntemperature: 0.0\nn_ctx: 16384\ntokenizer: o200k_base\nconcurrency: 1\nseed: 0\n"
)


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cfg") / "configs"
    shutil.copytree(ROOT / "configs", folder)
    (folder / "model" / "oracle.yaml").write_text(ORACLE)
    return folder


def run(configs: Path, results: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "CI": "true", "SURFBENCH_CACHE": str(results.parent / "c")}
    env.pop("SURFBENCH_DEBUG", None)
    cmd = [sys.executable, "-m", "surfbench", "run", "suite=notes_mcp", "surface=dispatcher", "model=oracle",
           "limit=2", *args, f"results_dir={results}", "run=x"]  # fmt: skip
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "error" in lines[0] and "Traceback" not in stderr, stderr[-3000:]
    return lines[0]


BAD = [
    # (override, words the one line must hold: the field, the value, the allowed range)
    ("model.max_tokens=abc", ["max_tokens=abc", "whole number", "262,144", "got string"]),
    ("model.max_tokens=-5", ["max_tokens=-5", "1 or more", "262,144"]),
    ("model.max_tokens=0", ["max_tokens=0", "1 or more", "262,144"]),
    ("model.max_tokens=1.5", ["max_tokens=1.5", "whole number"]),
    ("model.temperature=9", ["temperature=9", "from 0 to 2"]),
    ("model.n_ctx=-1", ["n_ctx=-1", "1 or more", "16,777,216"]),
    ("model.tokenizer=bogus", ["tokenizer=bogus", "gguf", "o200k_base", "cl100k_base"]),
    ("model.seed=-1", ["seed=-1", "0 or more"]),
    ("model.concurrency=99999999", ["concurrency=99999999", "at most 256"]),
    ("concurrency=99999999", ["concurrency=99999999", "1 or more and at most 256"]),
    ("concurrency=0", ["concurrency=0", "1 or more and at most 256"]),
]


@pytest.mark.parametrize(("override", "words"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_model_field_is_one_line_and_nothing_is_written(
    configs: Path, tmp_path: Path, override: str, words: list[str]
) -> None:
    proc = run(configs, tmp_path / "results", override)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line(proc.stderr)
    assert all(w in line for w in words), line
    assert not (tmp_path / "results").exists(), "a refused run leaves no results folder (nor run.json)"


def test_good_values_run_and_are_recorded_with_their_type(configs: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = run(configs, results, "model.max_tokens=256", "model.temperature=1", "model.tokenizer=cl100k_base",
               "concurrency=4")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cell,) = json.loads((results / "x" / "run.json").read_text())["cells"]
    model = cell["identity"]["model"]
    assert model["max_tokens"] == 256 and model["temperature"] == 1.0
    assert isinstance(model["temperature"], float), "temperature=1 is the number 1.0, the same cell as 1.0"


def test_a_whole_number_temperature_is_the_same_cell_as_its_float(
    configs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from surfbench.bench.run.runner import CellSpec, resolve_cell

    monkeypatch.setenv("SURFBENCH_CONFIGS", str(configs))
    spec = CellSpec("notes_mcp", "dispatcher", "oracle", limit=1)
    data = {"provider": "scripted", "script_suite": "notes_mcp", "params_b": 0.0, "mode": "native", "max_tokens": 64}
    as_int, as_float = (resolve_cell(spec, None, {**data, "temperature": t}) for t in (0, 0.0))
    assert as_int.cell_id == as_float.cell_id  # a resumed run with `model.temperature=0` finds its episodes


WRONG = {"provider": "nowhere", "params_b": -1, "n_ctx": 0, "threads": 0, "mode": "chat", "prompt_format": "xml",
         "tokenizer": "p50k_base", "temperature": -0.1, "max_tokens": 10**9, "seed": 2**40, "description": ["x"],
         "script_delay_s": 3600, "concurrency": 257, "rpm": 0, "tpm": True, "cache_control": "all",
         "n_parallel": "two", "limits": "none", "model": 5, "api_base": 5, "api_key_env": 5, "chat_format": 5,
         "embedded": 5, "script_suite": 5, "cache_profiles": "none", "server": "vllm", "slots": 0,
         "repeat_penalty": -1, "omp_spincount": -5, "flash_attn": "fast", "stop_on_repeated_call": 1,
         "keep_prefix": "yes"}  # fmt: skip


def test_every_model_field_has_a_type_and_a_range() -> None:
    from surfbench.bench.models import MODEL_KEYS, model_config

    assert set(WRONG) == MODEL_KEYS - {"name"}, "a new model field needs a bad value here"
    accepted, unclear = [], []
    for key, value in sorted(WRONG.items()):
        try:
            model_config("m", {"provider": "scripted", "script_suite": "notes_mcp", key: value})
        except ConfigError as exc:
            message = str(exc)
            if f"{key}=" not in message or "must be" not in message or len(message.splitlines()) != 1:
                unclear.append(message)
        else:
            accepted.append(f"{key}={value!r}")
    assert not accepted, f"accepted: {accepted}"
    assert not unclear, f"not one line naming the field and what it must be: {unclear}"


@pytest.mark.parametrize(
    ("override", "suggested"),
    [("surface=dispatchr", "dispatcher"), ("suite=notes_mpc", "notes_mcp"), ("model=oracel", "oracle")],
)
def test_an_unknown_config_name_is_one_line_with_the_close_names(
    configs: Path, tmp_path: Path, override: str, suggested: str
) -> None:
    proc = run(configs, tmp_path / "results", override)
    assert proc.returncode == 2, proc.stderr[-3000:]
    line = one_line(proc.stderr)
    assert override in line and f"did you mean {suggested}" in line, line
    assert not (tmp_path / "results").exists()
