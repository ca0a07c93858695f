"""Each provider owns its settings (issue 53): every model config field is common or read by a named provider,
and a field the config's provider does not read is refused in one line, in a file or an override."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError, read_group_config
from surfbench.bench.contracts import plugins
from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.provider_settings import COMMON_FIELDS, LocalSettings, view
from surfbench.bench.models.providers import BUILT_IN, LITELLM, LOCAL, SCRIPTED, Provider
from surfbench.bench.models.scripted import ScriptedClient
from surfbench.bench.models.server import ServerSettings
from surfbench.bench.models.spec import ModelConfig
from tests.conftest import ROOT

SHIPPED = sorted(p.stem for p in (ROOT / "configs" / "model").glob("*.yaml"))


def test_every_model_config_field_is_common_or_read_by_a_built_in_provider():
    fields = {f.name for f in dataclasses.fields(ModelConfig)}
    owned = {name for p in BUILT_IN for name in p.owns or ()}
    assert not fields - COMMON_FIELDS - owned, "a new ModelConfig field must be common or a provider's setting"
    assert not (COMMON_FIELDS | owned) - fields, "a declared field that ModelConfig does not have"
    assert not COMMON_FIELDS & owned, "a field is common or a provider's, not both"
    assert all(p.owns is not None for p in BUILT_IN)
    assert {p.name for p in BUILT_IN} == set(plugins.BUILTIN["providers"])
    assert {p.name for p in BUILT_IN if "stop_on_repeated_call" in (p.owns or ())} == {"local", "litellm"}


def test_the_table_in_docs_models_md_is_the_declaration():
    text = (ROOT / "docs" / "models.md").read_text()
    rows = dict(re.findall(r"^\| (common \(every provider\)|`\w+`) \| ((?:`\w+`(?:, )?)+) \|$", text, re.M))
    declared = {f"`{p.name}`": p.owns for p in BUILT_IN} | {"common (every provider)": COMMON_FIELDS - {"extra"}}
    documented = {k: set(re.findall(r"`(\w+)`", v)) for k, v in rows.items()}
    assert documented == {k: set(v or ()) for k, v in declared.items()}


@pytest.mark.parametrize(
    ("name", "override", "reader"),
    [
        ("gpt-4o-mini", {"threads": 4}, "provider local only"),
        ("gpt-4o-mini", {"n_ctx": 8192}, "provider local only"),
        ("claude-haiku", {"server": "llama-cpp-python"}, "provider local only"),
        ("qwen2.5-coder-0.5b-instruct", {"rpm": 500}, "provider litellm only"),
        ("qwen2.5-coder-0.5b-instruct", {"api_base": "http://127.0.0.1:9/v1"}, "provider litellm only"),
        ("qwen2.5-coder-0.5b-instruct", {"script_delay_s": 0.5}, "provider scripted only"),
        ("oracle", {"keep_prefix": True}, "provider local only"),
        ("oracle", {"cache_control": "tools"}, "provider litellm only"),
    ],
)
def test_an_override_of_a_field_another_provider_reads_is_refused_in_one_line(name, override, reader):
    cfg = read_group_config("model", name)
    ((key, value),) = override.items()
    with pytest.raises(ConfigError) as info:
        model_config(name, {**cfg, **override})
    shown = "true" if value is True else value
    assert str(info.value) == (
        f"model.{key}={shown} (model {name}): read by {reader}; provider {cfg['provider']} ignores it: drop it"
    )


def test_a_field_another_provider_reads_is_refused_in_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "hosted.yaml").write_text("provider: litellm\nmodel: openai/x\nthreads: 4\n")
    monkeypatch.setenv("SURFBENCH_CONFIGS", str(tmp_path))
    with pytest.raises(ConfigError) as info:
        model_config("hosted")
    assert str(info.value) == (
        "configs/model/hosted.yaml: threads=4: read by provider local only; provider litellm ignores it: drop it"
    )


def test_a_field_at_its_default_and_a_field_two_providers_read_are_accepted():
    hosted = {"provider": "litellm", "model": "openai/x", "n_ctx": 16384, "threads": 2, "omp_spincount": 1000}
    assert model_config("h", hosted).n_ctx == 16384  # as a dump of every field would hold them
    endpoint = {**hosted, "api_base": "http://127.0.0.1:9/v1", "mode": "prompted", "stop_on_repeated_call": 2}
    assert model_config("h", endpoint).stop_on_repeated_call == 2
    assert model_config("o", {"provider": "scripted", "script_delay_s": 0.5, "seed": 7}).seed == 7


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_config_loads_and_its_provider_views_it(name: str):
    cfg = model_config(name)
    own = {"local": LOCAL, "litellm": LITELLM, "scripted": SCRIPTED}[cfg.provider]
    assert own.settings is not None
    settings = view(own.settings, cfg)
    assert {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)} == {
        k: getattr(cfg, k) for k in own.owns or ()
    }


def test_the_local_view_makes_the_server_settings_the_config_made_before():
    cfg = model_config("qwen2.5-coder-0.5b-instruct")
    own = view(LocalSettings, cfg)
    made = own.server_settings(Path("/m.gguf"), cfg.name, None)
    assert made == ServerSettings(
        Path("/m.gguf"), cfg.name, cfg.n_ctx, cfg.threads, cfg.chat_format, engine=cfg.server, slots=cfg.slots,
        omp_spincount=cfg.omp_spincount, flash_attn=cfg.flash_attn, slot_save_path=None,
    )  # fmt: skip
    assert (own.engine_identity, own.client_slots) == ("|server=llama-server", 1)
    wide = view(LocalSettings, model_config(cfg.name, {**read_group_config("model", cfg.name), "slots": 2}))
    assert (wide.engine_identity, wide.client_slots) == ("|server=llama-server|slots=2", 2)
    old = view(LocalSettings, model_config("gemma-3-270m", {**read_group_config("model", "gemma-3-270m"), "slots": 2}))
    assert (old.engine_identity, old.client_slots) == ("", 1)  # llama-cpp-python: the keys of older runs


@dataclass(frozen=True)
class _EndpointSettings:
    api_base: str | None


@pytest.mark.parametrize("declared", [False, True])
def test_a_plugin_provider_without_a_declaration_is_refused_nothing_and_one_with_is_held_to_it(declared: bool):
    made: list[str] = []

    def factory(cfg, pool):
        made.append(cfg.name)
        return ScriptedClient(["mine"])

    obj = Provider("mine", factory, settings=_EndpointSettings) if declared else Provider("mine", factory)
    plugins.register("providers", "mine", obj)
    plugins.register("providers", "bare", factory)  # a bare factory declares nothing either
    try:
        data = {"provider": "mine", "api_base": "http://127.0.0.1:9/v1", "threads": 4, "rpm": 5}
        if declared:  # a declaration is held to: its own field passes, another provider's is refused
            assert model_config("m", {**data, "threads": 2, "rpm": None}).api_base == data["api_base"]
            words = r"m\.yaml: threads=4: read by provider local only; provider mine ignores it"
            with pytest.raises(ConfigError, match=words):
                model_config("m", data)
        else:
            cfg = model_config("m", data)
            assert isinstance(ModelPool(None).client(cfg), ScriptedClient) and made == ["m"]
        assert model_config("b", {**data, "provider": "bare"}).threads == 4
    finally:
        plugins.unregister("providers", "mine")
        plugins.unregister("providers", "bare")


def test_a_sweep_with_a_cell_whose_model_cannot_take_an_override_runs_no_cell(tmp_path: Path):
    # model.script_delay_s is the scripted provider's: on the hosted cell it is refused when the run is planned,
    # so the oracle's cell, first in the sweep, does not run either (it used to run, then the hosted cell failed)
    import subprocess
    import sys

    from tests.conftest import ROOT
    from tests.fixtures.openai_stub import stub_model_config

    configs = stub_model_config(tmp_path, "http://127.0.0.1:9/v1")
    env = {**os.environ, "SURFBENCH_CONFIGS": str(configs), "SURFBENCH_CACHE": str(tmp_path / "cache"), "CI": "true"}
    proc = subprocess.run(
        [sys.executable, "-m", "surfbench", "run", "-m", "suite=forge", "surface=full", "model=oracle,stub",
         "++model.script_delay_s=0.01", "limit=1", f"results_dir={tmp_path / 'results'}", "run=r"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "forge/full/stub" in proc.stderr and "script_delay_s" in proc.stderr
    assert "1 of 2 cells of the run cannot run" in proc.stderr
    assert not (tmp_path / "results" / "r" / "episodes.parquet").exists()
