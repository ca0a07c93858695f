"""What a backend, a model client or a surface may offer beyond its contract is declared, and read as declared.

A backend's ``close`` and ``last_error_type``, a client's ``gate`` and slots are runtime-checkable protocols
(bench.contracts.backend, bench.models.types, bench.models.server_slots): the run stage asks ``isinstance``, so
a part that is absent is skipped and one that is there is used. The retrieval funnel reads what the episodes
recorded (the cell's ``retrieves``, its steps' operations shown, its calls' hits), so a retrieving surface written
outside the core is in the funnel with no change to the core.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from surfbench.bench.analysis.funnel import RETRIEVAL_KINDS, funnel_rows
from surfbench.bench.analysis.retrieval_eval import expected_ops
from surfbench.bench.contracts import plugins
from surfbench.bench.contracts.backend import Closable, ReportsErrorType, ToolError
from surfbench.bench.contracts.registry import KIND
from surfbench.bench.contracts.surface import (
    Dispatch,
    MetaHandler,
    Session,
    Surface,
    ToolCall,
    ToolSpec,
    coerce_args,
    ranked,
    typed_tool,
)
from surfbench.bench.models import ModelPool
from surfbench.bench.models.client import LiteLLMClient
from surfbench.bench.models.scripted import ScriptedClient, call_turn, text_turn, with_usage
from surfbench.bench.models.server_slots import PinnedClient, SlotPool, Slotted, episode_slot
from surfbench.bench.models.types import Gated, ModelRequest, ModelTurn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.play import close_backend, play_episode
from surfbench.bench.run.runner import CellSpec, resolve_cell, run_cell
from surfbench.bench.store.provenance import load_current
from surfbench.bench.store.results import RunStore
from surfbench.bench.suites.suite import Suite, Task, load_suite
from surfbench.surfaces import build_surface

MODEL = "qwen2.5-coder-0.5b-instruct"  # its config only: scripted clients answer
CLOSE = {"owner": "acme", "repo": "web", "index": 3, "state": "closed"}


# -- backends: close and last_error_type ---------------------------------------------------------------
class PlainBackend:
    """The contract and nothing more: no close, no error type."""

    def __init__(self) -> None:
        self.calls = 0

    def reset(self, scenario: str | None = None) -> None:
        pass

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        self.calls += 1
        raise ToolError("the repository is read-only")

    def state(self) -> dict[str, Any]:
        return {}


class HoldingBackend(PlainBackend):
    """Holds something until closed, and names the limit its last call ran into."""

    def __init__(self) -> None:
        super().__init__()
        self.closed = 0
        self.last_error_type: str | None = None

    def call(self, op: str, args: Mapping[str, Any]) -> Any:
        self.last_error_type = "tool_timeout"
        return super().call(op, args)

    def close(self) -> None:
        self.closed += 1


def test_the_backend_protocols_are_what_a_backend_declares() -> None:
    assert isinstance(HoldingBackend(), Closable) and isinstance(HoldingBackend(), ReportsErrorType)
    assert not isinstance(PlainBackend(), Closable) and not isinstance(PlainBackend(), ReportsErrorType)
    close_backend(PlainBackend())  # nothing to close: nothing called, nothing raised
    held = HoldingBackend()
    close_backend(held)
    assert held.closed == 1


@pytest.mark.parametrize("declares", [True, False], ids=["with close", "without close"])
def test_the_run_stage_closes_an_episodes_backend_only_where_it_declares_close(
    declares: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    cell = resolve_cell(CellSpec("forge", "full", MODEL, split="dev", limit=1))
    task = cell.tasks[0]
    made: list[PlainBackend] = []

    def new_backend(self: Suite, task: Task, options: Mapping[str, Any] | None = None) -> PlainBackend:
        made.append(HoldingBackend() if declares else PlainBackend())
        return made[-1]

    monkeypatch.setattr(Suite, "new_backend", new_backend)
    finished = play_episode(cell, "k", task, 0, ScriptedClient(["Nothing to do."]), "test")
    assert finished.episode.task_id == task.id and len(made) == 1
    backend = made[0]
    if isinstance(backend, HoldingBackend):
        assert backend.closed == 1  # closed once, when the episode ended
    else:
        assert not hasattr(backend, "close")  # and the episode ended all the same


@pytest.mark.parametrize(("made", "error_type"), [(HoldingBackend, "tool_timeout"), (PlainBackend, "backend_error")])
def test_a_call_records_the_error_type_a_backend_names_else_backend_error(
    made: type[PlainBackend], error_type: str
) -> None:
    backend = made()
    forge = load_suite("forge")
    task = next(t for t in forge.tasks if t.id == "hot-issue-close")
    session = build_surface(forge.catalog, "full").session(task.turns[0])
    trace = run_episode(
        task, session, backend, ScriptedClient([[("issue_edit", CLOSE)], "Done."]), LoopSettings(max_steps=4),
        forge.system_prompt, lambda n: forge.catalog[n].parameters,
    )  # fmt: skip
    (call,) = [c for c in trace.calls if c.operation == "issue_edit"]
    assert backend.calls == 1 and call.backend_ok is False and call.error_type == error_type


# -- model clients: gate and slots ---------------------------------------------------------------------
class SlottedStandIn:
    """A client with slots, as LiteLLMClient exposes them."""

    def __init__(self, n: int) -> None:
        self.slots: SlotPool | None = SlotPool(n) if n > 1 else None

    def pinned(self, slot: int) -> PinnedClient:
        return PinnedClient(self, slot)

    def complete(self, request: ModelRequest, slot: int | None = None) -> ModelTurn:
        return ModelTurn(text="ok", slot=slot)


def test_a_client_is_gated_and_slotted_as_it_declares() -> None:
    local = LiteLLMClient("openai/x", api_base="http://127.0.0.1:9/v1", is_local=True)
    assert isinstance(local, Gated) and isinstance(local, Slotted) and local.slots is None
    scripted = ScriptedClient([])
    assert not isinstance(scripted, Gated) and not isinstance(scripted, Slotted)
    with episode_slot(scripted) as client:  # nothing declared: the client as it is
        assert client is scripted
    with episode_slot(local) as client:  # slots declared, one slot: as it is
        assert client is local
    two = SlottedStandIn(2)
    with episode_slot(two) as client:
        assert isinstance(client, PinnedClient) and client.slot == 0
    assert two.slots is not None and two.slots.free == 2


# -- surfaces: a retrieving surface written here is in the funnel -----------------------------------------
FIND = "find_operations"
TOP = 5


class FindingSession(Session):
    """What the find tool returned becomes callable from the next turn (typed tools)."""

    def __init__(self, surface: Surface, request: str = "") -> None:
        super().__init__(surface, request)
        self.found: list[str] = []

    def current_tools(self) -> list[ToolSpec]:
        return [*self.surface.static_tools(), *(typed_tool(self.surface.catalog[n]) for n in self.found)]


class FindingSurface(Surface):
    """A retrieving surface outside the core: a find tool ranks operations by the words of their names."""

    kind = "test_finding"
    session_class = FindingSession

    def static_tools(self) -> list[ToolSpec]:
        parameters = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
        return [ToolSpec(FIND, "The operations that match what you want to do.", parameters)]

    def meta_handlers(self) -> Mapping[str, MetaHandler]:
        return {FIND: _find}

    @property
    def retrieves(self) -> bool:
        return True

    def find(self, query: str) -> list[str]:
        """The ``TOP`` operations sharing most words with ``query`` (at least one), ties in catalog order."""
        words = set(re.findall(r"[a-z]+", query.lower()))
        scored = [(len(words & set(op.name.split("_"))), i, op.name) for i, op in enumerate(self.catalog.operations)]
        return [name for score, _, name in sorted(scored, key=lambda s: (-s[0], s[1])) if score > 0][:TOP]


class QuietFindingSurface(FindingSurface):
    """The same tool and the same hits, but the surface says it does not retrieve: not a funnel row."""

    kind = "test_finding_quiet"

    @property
    def retrieves(self) -> bool:
        return False


def _find(session: Session, call: ToolCall) -> Dispatch:
    assert isinstance(session, FindingSession) and isinstance(session.surface, FindingSurface)
    raw = coerce_args(call.arguments)
    names = session.surface.find(str(raw.get("query", "")) if isinstance(raw, dict) else "")
    session.found += [n for n in names if n not in session.found]
    return Dispatch("meta", call.name, text=", ".join(names) or "none", meta="search", hits=ranked(names))


class Finder:
    """Finds with the user's request, then answers without calling an operation."""

    name = "scripted-finder"

    def complete(self, request: ModelRequest) -> ModelTurn:
        if not any(m["role"] == "tool" for m in request.messages):
            first = next(m["content"] for m in request.messages if m["role"] == "user")
            return with_usage(call_turn((FIND, {"query": first})), request)
        return with_usage(text_turn("Done."), request)


@pytest.fixture
def finding_kinds() -> Iterator[None]:
    """The two surfaces registered the way any surface is (bench.contracts.registry), for this test only."""
    for cls in (FindingSurface, QuietFindingSurface):
        plugins.register(KIND, cls.kind, cls)
    yield
    for cls in (FindingSurface, QuietFindingSurface):
        plugins.unregister(KIND, cls.kind)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def test_a_new_retrieving_surface_is_in_the_funnel_with_no_change_to_the_core(
    finding_kinds: None, tmp_path: Path
) -> None:
    assert FindingSurface.kind not in RETRIEVAL_KINDS  # the legacy list of kinds does not name it
    store = RunStore(tmp_path / "run", commit_interval_s=0.0)
    store.prepare()
    cells = [
        resolve_cell(CellSpec("forge", name, MODEL, split="dev", limit=3), surface_data={"name": name, "kind": kind})
        for name, kind in (("finding", FindingSurface.kind), ("finding_quiet", QuietFindingSurface.kind))
    ]
    store.write_run_info({"cells": [{**c.provenance(), "provider": "scripted"} for c in cells]})
    for cell in cells:
        run_cell(cell, ModelPool(None), store, "run", client=Finder())
    view = load_current([tmp_path / "run"])
    rows = funnel_rows([tmp_path / "run"], view.frame, view.infos)
    assert [r.surface for r in rows] == ["finding"]  # the quiet one recorded hits too, but says it retrieves nothing

    # recall and MRR recomputed independently: what the find tool ranks for each task's request
    surface = cells[0].surface
    assert isinstance(surface, FindingSurface)
    tasks = [t for t in cells[0].tasks if t.expected]
    found = [surface.find(t.turns[0]) for t in tasks]
    recall = [len(set(expected_ops(t)) & set(f)) / len(expected_ops(t)) for t, f in zip(tasks, found, strict=True)]
    ranks = [[f.index(op) + 1 for op in expected_ops(t) if op in f] for t, f in zip(tasks, found, strict=True)]
    (row,) = rows
    assert row.episodes == len(tasks) and row.operations == len(load_suite("forge").catalog)
    assert row.retrieved == pytest.approx(_mean(recall)) and row.retrieved > 0
    assert row.mrr == pytest.approx(_mean([1 / min(r) if r else 0.0 for r in ranks]))
    assert row.zero_shown == tuple(sorted(t.id for t, f in zip(tasks, found, strict=True) if not f))
