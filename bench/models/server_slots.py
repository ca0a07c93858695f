"""Slot affinity on llama-server: each episode in flight keeps one slot of the server for all its steps.

llama-server with ``slots: N`` decodes N sequences together in one process, each slot with its own KV cache
(``--parallel N --kv-unified``). An episode's next request repeats its previous one and adds to it, so sent to
the same slot it finds that prompt still cached and computes only what was added. A request names its slot in
the body as ``id_slot`` (llama-server's field, read on ``/v1/chat/completions``: ``task.id_slot =
json_value(data, "id_slot", -1)`` in tools/server/server-context.cpp); a request pinned to a busy slot waits for
it (the server defers it: "requested slot is unavailable, defer task"), never moves to another.

So the episodes in flight hold distinct slots: :class:`SlotPool` hands each episode a free one and takes it back
when the episode ends. Among several free slots it picks the one whose last episode's first request shares the
longest start with this episode's (the cells' cache-aware order puts such episodes next to each other), and
computes those prefixes only when there is such a choice. With every slot held (more episodes in flight than
slots, or an episode parked on a rate limit) an episode runs unpinned and the server chooses.

The pool belongs to the client of one server (:class:`surfbench.bench.models.client.LiteLLMClient`), never to a
module: two cells, two runs or two threads on one server see the same slots.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from surfbench.bench.models.types import ModelClient, ModelRequest, ModelTurn

Prefix = Callable[[], str]
"""What an episode's first request starts with (system text and tools), computed on demand."""


class SlotPool:
    """The ``n`` slots of one server; at most one episode holds a slot at a time."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"a server has 1 slot or more, got {n}")
        self.n = n
        self._free: list[int] = list(range(n))
        self._last: dict[int, Prefix] = {}
        self._lock = threading.Lock()

    def take(self, prefix: Prefix | None = None) -> int | None:
        """A free slot for an episode whose first request starts with ``prefix()``; None when every slot is held."""
        with self._lock:
            if not self._free:
                return None
            slot = self._closest(prefix) if prefix is not None and len(self._free) > 1 else self._free[0]
            self._free.remove(slot)
            return slot

    def _closest(self, prefix: Prefix) -> int:
        """The free slot whose last prefix shares the longest start with ``prefix()`` (the lowest on ties)."""
        if not any(s in self._last for s in self._free):
            return self._free[0]
        mine = prefix()

        def shared(slot: int) -> int:
            return len(os.path.commonprefix([mine, self._last[slot]()])) if slot in self._last else -1

        return max(self._free, key=lambda s: (shared(s), -s))

    def give(self, slot: int, prefix: Prefix | None = None) -> None:
        """Slot ``slot`` is free again; its KV cache now holds the episode whose first request was ``prefix()``."""
        with self._lock:
            if slot in self._free or not 0 <= slot < self.n:
                raise ValueError(f"slot {slot} was not taken from this pool of {self.n}")
            if prefix is not None:
                self._last[slot] = prefix
            else:
                self._last.pop(slot, None)
            self._free.append(slot)
            self._free.sort()

    @property
    def free(self) -> int:
        with self._lock:
            return len(self._free)


@runtime_checkable
class Slotted(Protocol):
    """A model client of a server with slots, each slot keeping one episode's KV cache (llama-server, ``slots`` > 1).

    Implemented by :class:`surfbench.bench.models.client.LiteLLMClient`: ``slots`` is its server's pool (None:
    one slot, nothing pinned), ``pinned(slot)`` the client with every request pinned to that slot. Declared here
    beside :class:`SlotPool` (the model client's contract, bench.models.types, cannot name the pool without an
    import cycle). The run stage runs each episode on a pinned client while a slot is free (:func:`episode_slot`,
    from bench.run.runner.run_cell); a client without slots runs every episode as it is.
    """

    @property
    def slots(self) -> SlotPool | None: ...

    def pinned(self, slot: int) -> ModelClient: ...


@contextmanager
def episode_slot(client: ModelClient, prefix: Prefix | None = None) -> Iterator[ModelClient]:
    """The client one episode runs on: pinned to a free slot of its server while the episode runs.

    A client without slots (not :class:`Slotted`, or ``slots`` None: every engine but llama-server with ``slots``
    > 1, the scripted clients), or one whose slots are all held, is yielded as it is.
    """
    if not (isinstance(client, Slotted) and isinstance(client.slots, SlotPool)):
        yield client
        return
    pool = client.slots
    once = functools.cache(prefix) if prefix is not None else None  # computed at most once, if ever
    slot = pool.take(once)
    if slot is None:
        yield client
        return
    try:
        yield client.pinned(slot)
    finally:
        pool.give(slot, once)


class SlotCapable(Protocol):
    """A client that runs a request on a slot it is given (:class:`surfbench.bench.models.client.LiteLLMClient`)."""

    def complete(self, request: ModelRequest, slot: int | None = None) -> ModelTurn: ...


class PinnedClient:
    """One episode's view of a client: each request pinned to slot ``slot`` of its server.

    Everything but :meth:`complete` is the client's own (its gate, counters and cache are shared).
    """

    def __init__(self, client: SlotCapable, slot: int) -> None:
        self.client = client
        self.slot = slot

    def complete(self, request: ModelRequest) -> ModelTurn:
        turn: ModelTurn = self.client.complete(request, slot=self.slot)
        return turn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)
