"""One registry (bench/contracts/plugins.py): surfaces, suites, checks and model providers found the same way.

A plugin another package installs is an entry point in the group ``surfbench.<kind>``; here that package
is a ``.dist-info`` folder with an ``entry_points.txt`` on ``sys.path``, as pip would leave it, so the
real ``importlib.metadata`` reads it. A typo is one line with the close names, for every kind.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path

import pytest

from surfbench.bench.base.config import ConfigError
from surfbench.bench.contracts import plugins
from surfbench.bench.models import ModelPool, model_config
from surfbench.bench.models.providers import Provider
from surfbench.bench.models.scripted import OracleClient, ScriptedClient
from surfbench.bench.suites.checks import suite_checks
from surfbench.bench.suites.fields import SuiteError
from surfbench.bench.suites.suite import load_suite
from tests.conftest import ROOT

MODULE = "sbplug_registry_demo"
PLUGIN = '''
from surfbench.bench.suites.checks import CheckResult
from surfbench.bench.models.scripted import ScriptedClient


def echo(cfg, pool):
    """A provider as a bare factory: the config and the pool in, a client out."""
    return ScriptedClient(["echo: " + cfg.name])


def names_a_note(task, trace, context):
    ok = "n7" in (trace.final_text or "")
    return CheckResult("names_a_note", ok, None if ok else "the answer names no note", ("unnamed_note",))
'''
ENTRY_POINTS = f"""
[surfbench.providers]
echo = {MODULE}:echo

[surfbench.checks]
names_a_note = {MODULE}:names_a_note
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A package installed beside surfbench that adds a provider ``echo`` and a check ``names_a_note``."""
    site = tmp_path / "site"
    info = site / "sbplug_registry_demo-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sbplug-registry-demo\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (site / f"{MODULE}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(site))
    plugins.refresh()
    yield site
    monkeypatch.undo()
    plugins.refresh()


def notes_with_checks(tmp_path: Path, checks: str) -> Path:
    folder = tmp_path / "notes"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", folder)
    extra = f"error_types:\n  unnamed_note: the answer names no note\nchecks: {checks}\n"
    (folder / "suite.yaml").write_text((folder / "suite.yaml").read_text() + extra)
    return folder


def test_a_provider_from_an_entry_point_is_found_by_name_and_serves_the_model(installed: Path):
    assert "echo" in plugins.names("providers")
    cfg = model_config("mine", {"provider": "echo", "params_b": 1.0})  # accepted: a registered provider
    client = ModelPool(None).client(cfg)
    assert isinstance(client, ScriptedClient) and client.script == ["echo: mine"]
    listed = {p.name: p for p in plugins.listing("providers")}
    assert listed["echo"].source == "entry point" and listed["echo"].value == f"{MODULE}:echo"
    assert listed["scripted"].source == "built-in"


def test_a_check_from_an_entry_point_is_named_in_suite_yaml_and_runs(installed: Path, tmp_path: Path):
    suite = load_suite(str(notes_with_checks(tmp_path, "[names_a_note]")))
    assert suite.checks == ("names_a_note",)
    (check,) = suite_checks(suite)
    assert check.name == "names_a_note" and check.fn.__module__ == MODULE
    assert "names_a_note" in plugins.format_listing(["checks"])  # `surfbench plugins checks`


def test_a_typo_in_a_suite_check_suggests_the_registered_name(installed: Path, tmp_path: Path):
    with pytest.raises(SuiteError) as info:
        load_suite(str(notes_with_checks(tmp_path, "[names_a_not]")))
    message = str(info.value)
    assert "checks[0]" in message and "unknown check 'names_a_not'; did you mean names_a_note?" in message, message
    assert len(message.splitlines()) == 1


@pytest.mark.parametrize(
    ("kind", "typo", "meant"),
    [
        ("providers", "scriptd", "scripted"),
        ("surfaces", "dispatchr", "dispatcher"),
        ("suites", "notes_mpc", "notes_mcp"),
        ("checks", "refusl", "refusal"),
    ],
)
def test_a_typo_is_one_line_with_the_close_name_for_every_kind(kind: str, typo: str, meant: str):
    with pytest.raises(plugins.UnknownPlugin) as info:
        plugins.lookup(kind, typo)
    message = str(info.value)  # unknown provider 'scriptd'; did you mean scripted? (known: litellm, local, ...)
    head, _, known = message.partition("? (known: ")
    assert head.startswith(f"unknown {plugins.KINDS[kind]} {typo!r}; did you mean "), message
    assert meant in head.rpartition("did you mean ")[2].split(", ") and meant in known.rstrip(")").split(", ")
    assert len(message.splitlines()) == 1


def test_a_typo_where_users_write_the_name_suggests_the_close_one():
    with pytest.raises(ConfigError) as model:
        model_config("m", {"provider": "scriptd", "script_suite": "notes_mcp"})
    assert "provider='scriptd'" in str(model.value) and "did you mean scripted?" in str(model.value), model.value
    with pytest.raises(SuiteError) as suite:
        load_suite("notes_mpc")
    assert "unknown suite 'notes_mpc'; did you mean notes_mcp?" in str(suite.value), suite.value
    from surfbench.bench.contracts.registry import UnknownSurface, surface_class

    with pytest.raises(UnknownSurface, match="did you mean dispatcher"):
        surface_class("dispatchr")  # surfbench.bench.contracts.registry's names still work, over the same registry


def test_every_shipped_suite_is_listed_as_an_entry_point():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["surfbench.suites"]
    shipped = sorted(p.parent.name for p in (ROOT / "tasks").glob("*/suite.yaml"))
    assert {"git", "forge_mcp"} <= set(shipped)
    assert sorted(declared) == shipped, "a folder under tasks/ with a suite.yaml needs an entry point in pyproject"
    assert all(declared[name] == f"surfbench.tasks.{name}" for name in shipped)
    assert set(shipped) <= set(plugins.names("suites"))  # and the registry knows each, installed metadata or not


def test_provider_scripted_is_a_registered_provider_like_any_other():
    assert isinstance(ModelPool(None).client(model_config("o", {"provider": "scripted"})), OracleClient)
    made: list[str] = []

    def stand_in(cfg, pool):
        made.append(cfg.name)
        return ScriptedClient(["stood in"])

    plugins.register("providers", "scripted", Provider("scripted", stand_in))
    try:
        client = ModelPool(None).client(model_config("oracle", {"provider": "scripted", "script_suite": "forge"}))
    finally:
        plugins.unregister("providers", "scripted")
    assert made == ["oracle"] and isinstance(client, ScriptedClient)  # the pool asked the registry, nothing else


def test_a_user_suite_folder_is_found_through_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    mine = tmp_path / "suites" / "my_notes"
    shutil.copytree(ROOT / "tasks" / "notes_mcp", mine)
    monkeypatch.setenv("SURFBENCH_SUITES", str(tmp_path / "suites"))
    assert plugins.lookup("suites", "my_notes") == mine
    assert {p.name: p.source for p in plugins.listing("suites")}["my_notes"] == "SURFBENCH_SUITES"
    assert load_suite("my_notes").folder == mine


def test_surfbench_plugins_lists_every_kind_with_its_source(capsys: pytest.CaptureFixture[str]):
    from surfbench.bench.cli.cli import main

    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    for kind in plugins.KINDS:
        assert f"{kind} (entry point group surfbench.{kind}):" in out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert rows["scripted"][:1] == ["built-in"] and rows["refusal"][:1] == ["built-in"]
    assert rows["dispatcher"][0] in ("entry", "registered")  # registered too once its module is imported
    assert "git" in rows and "forge_mcp" in rows
