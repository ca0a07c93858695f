"""Every surface rejects a call to a tool it does not expose before anything reaches a backend."""

from __future__ import annotations

import pytest

from surfbench.bench.base.config import group_names, surface_config
from surfbench.bench.contracts.surface import ToolCall
from surfbench.bench.suites.suite import load_suite
from surfbench.surfaces import build_surface, surface_class


class RecordingBackend:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def call(self, op: str, args: dict) -> dict:
        self.calls.append((op, args))
        return {"ok": True}


def run_call(session, backend, call):
    """What the episode loop does with one call: only routed operations reach the backend."""
    outcome = session.dispatch(call)
    if outcome.kind == "operation":
        backend.call(outcome.operation, outcome.args)
    return outcome


@pytest.mark.parametrize("config_name", group_names("surface"))
def test_call_outside_the_surface_never_reaches_backend(config_name, gitea96):
    config = surface_config(config_name)
    if not surface_class(config.kind).applies_to(gitea96):  # hand-written over one suite's operations
        gitea96 = load_suite("workspace").catalog
    surface = build_surface(gitea96, config.kind, config.params)
    session = surface.session("list the issues of a repository")
    shown = {t.name for t in session.tools()}
    backend = RecordingBackend()
    # a real operation not shown this turn (all but `full` hide some), and a tool nobody offers
    hidden = [n for n in reversed(gitea96.names) if n not in shown][:1]
    assert hidden or config.kind == "full"
    calls = [ToolCall(n, {"owner": "a", "repo": "b"}) for n in hidden] + [ToolCall("rm_rf", {"path": "/"})]
    for call in calls:
        outcome = run_call(session, backend, call)
        assert outcome.kind == "rejected"
        assert outcome.error_type in ("not_exposed", "not_loaded")
    assert backend.calls == []


def test_every_config_is_exercised():
    assert {"full", "core", "dispatcher", "lazy", "search", "preselect"} <= set(group_names("surface"))
