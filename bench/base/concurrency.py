"""Many episodes in flight: a thread pool that hands results back in order, and per-endpoint rate control.

**Why threads, not asyncio.** The episode loop, the surfaces, the backends (sandboxed processes, MCP
servers over stdio) and the model client (LiteLLM's sync ``completion``) are synchronous code. An
asyncio version would need an async twin of each, or ``to_thread`` around all of them, which is a
thread pool anyway. Episodes spend their time waiting on HTTP, where the GIL is released, so N threads
keep N requests in flight; 32 threads cost a few MB.

**What episodes share, and why that is safe.**

- The model client: LiteLLM's ``completion`` builds a fresh request per call over one ``httpx.Client``
  (thread-safe, pooled); the request-bytes hook writes to a thread-local sink; the response cache
  writes each entry to a temporary file and renames it (the client serialises its own writes).
- The results store (group commit), the claims and progress are touched only by the thread that
  called :func:`in_order`: workers return finished rows, the calling thread commits them in episode
  order. So the store's rows, the transcripts and the cache-aware order are exactly those of a run
  with ``concurrency=1``, whatever order episodes finish in.
- Backends and surface sessions are per-episode objects.

**Kill safety.** An episode is committed when it and every episode before it in the cell's order have
finished; at most ``lookahead`` episodes (running, queued, or finished and waiting for an earlier one)
are uncommitted at any time. A SIGKILL loses those and nothing else: their claims die with the
process, and the re-run runs each of them once.

**Parked episodes.** ``concurrency=N`` is the number of episodes *in flight against the endpoint*.
An episode whose call was answered 429 and that sleeps out the ``Retry-After`` has nothing in flight:
it parks (:func:`park`), giving its episode slot to a queued episode, and takes a slot again when the
wait is over. So at most N episodes are ever working at once (and the gate keeps at most N calls in
flight), while a rate-limit wait no longer idles a slot; the pool holds N more threads for parked ones.

**Rate control** (:class:`EndpointGate`): every call to one endpoint passes the gate. Calls in flight
are capped by an adaptive limit that halves on a burst of 429s (at least half of the last
:data:`BURST_WINDOW` outcomes) and grows back by one after each ``limit`` successes since its last change
(a scattered 429 does not reset that count: it is waited out, and says nothing about the limit); optional
``rpm`` / ``tpm`` budgets hold calls back until the last minute's requests / tokens leave room.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

K = TypeVar("K")
R = TypeVar("R")

LOOKAHEAD = 8
"""Episodes taken per slot before the oldest unfinished one is committed. Commits go in episode order,
so one slow episode (three 429s and their waits: about 5x the usual) holds back those after it; with
4 per slot the slots ran dry behind it (the 20%-429 benchmark took 2.1x the clean run), with 8 they
keep working. A SIGKILL loses at most these (their re-run does each once)."""
MAX_CONCURRENCY = 256
"""The most episodes in flight a run may ask for (``concurrency=N``, a model config's ``concurrency``).
Each one holds up to two threads (one more while parked), and on an MCP or sandboxed suite a child
process with three pipes: 256 of those stay under the usual 1,024 open files per process
(``ulimit -n``), and a SIGKILL loses at most ``LOOKAHEAD * 256`` episodes. No API key we know of allows
more parallel requests (the hosted configs use 16); ``concurrency=99999999`` is a typo, not a plan."""
BURST_WINDOW = 32
"""Outcomes looked at to tell a 429 burst (the endpoint is over its limit) from scattered 429s. At 16, one
call in five answered 429 (scattered, in completion order) reached half of a window often enough to
halve the limit in a 200-episode benchmark run (and it never grew back); at 32 that takes a real burst."""


class EpisodeSlots:
    """``n`` episode slots; an episode coming back from a wait (:func:`park`) is served before a new one.

    Without that priority the returning episode competes with every queued one and may wait for
    many of them: the oldest unfinished episode then holds back the in-order commit and the lookahead
    window, and the slots run dry (measured: about 10 of 32 calls in flight for seconds at a time).
    """

    def __init__(self, n: int) -> None:
        self.free = n
        self.returning = 0
        self._cond = threading.Condition()

    def take(self, returning: bool = False) -> None:
        with self._cond:
            self.returning += returning
            try:
                while self.free == 0 or (self.returning and not returning):
                    self._cond.wait()
                self.free -= 1
            finally:
                self.returning -= returning
            if self.free:
                self._cond.notify_all()

    def give(self) -> None:
        with self._cond:
            self.free += 1
            self._cond.notify_all()


_SLOT = threading.local()
"""The episode slots of the pool the current thread works for (unset outside :func:`in_order`)."""


def park(seconds: float) -> None:
    """Sleep ``seconds`` with the current episode's slot given up (see Parked episodes), then take one again.

    Outside a pool of episodes (``concurrency=1``, tools, tests) this is ``time.sleep``.
    """
    slots: EpisodeSlots | None = getattr(_SLOT, "slots", None)
    if slots is None:
        time.sleep(seconds)
        return
    slots.give()
    try:
        time.sleep(seconds)
    finally:
        slots.take(returning=True)


def in_order(items: Iterable[K], work: Callable[[K], R], concurrency: int, lookahead: int = 0) -> Iterator[tuple[K, R]]:
    """Yield ``(item, work(item))`` in the order of ``items``, with up to ``concurrency`` running at once.

    ``items`` is pulled lazily on the calling thread (so it may claim an episode as it yields it); at
    most ``lookahead`` items (default ``8 * concurrency``, see LOOKAHEAD) are taken but not yet yielded. An exception
    in ``work`` is raised here when its item's turn comes; the items not yet started are cancelled and
    the running ones are waited for.
    """
    if concurrency > MAX_CONCURRENCY:  # the CLI refuses it first; this keeps a library caller in bounds too
        raise ValueError(f"concurrency={concurrency}: at most {MAX_CONCURRENCY} episodes in flight (MAX_CONCURRENCY)")
    if concurrency <= 1:
        for item in items:
            yield item, work(item)
        return
    lookahead = max(lookahead or LOOKAHEAD * concurrency, concurrency)
    slots = EpisodeSlots(concurrency)

    def slotted(item: K) -> R:  # at most `concurrency` episodes working; parked ones wait outside
        slots.take()
        _SLOT.slots = slots
        try:
            return work(item)
        finally:
            _SLOT.slots = None
            slots.give()

    source = iter(items)
    pending: deque[tuple[K, Future[R]]] = deque()
    executor = ThreadPoolExecutor(2 * concurrency, thread_name_prefix="surfbench-episode")
    try:
        exhausted = False
        while True:
            while not exhausted and len(pending) < lookahead:
                try:
                    item = next(source)
                except StopIteration:
                    exhausted = True
                    break
                pending.append((item, executor.submit(slotted, item)))
            if not pending:
                return
            item, future = pending.popleft()
            yield item, future.result()
    finally:
        executor.shutdown(wait=True, cancel_futures=True)


class EndpointGate:
    """Admission for the calls to one endpoint: adaptive in-flight limit plus optional rpm / tpm budgets."""

    def __init__(self, ceiling: int = 1, rpm: int | None = None, tpm: int | None = None) -> None:
        """``ceiling``: the most calls in flight (the cell's concurrency); ``rpm`` / ``tpm``: budgets per minute."""
        self.ceiling = max(1, ceiling)
        self.limit = self.ceiling
        self.rpm = rpm
        self.tpm = tpm
        self.in_flight = 0
        self.halvings = 0
        """How often a burst of 429s halved the limit (reported by the benchmark)."""
        self.rate_limited = 0
        """429s and provider rate-limit errors seen."""
        self._streak = 0
        self._recent: deque[bool] = deque(maxlen=BURST_WINDOW)
        self._requests: deque[float] = deque()
        self._tokens: deque[tuple[float, int]] = deque()
        self._cond = threading.Condition()

    def widen(self, ceiling: int) -> None:
        """Raise the ceiling to ``ceiling`` (a cell with more concurrency than the last one)."""
        with self._cond:
            if ceiling > self.ceiling:
                self.limit += ceiling - self.ceiling
                self.ceiling = ceiling
                self._cond.notify_all()

    def _budget_wait(self, now: float, tokens: int) -> float:
        """Seconds until the last minute's requests and tokens leave room for this call (0: go)."""
        while self._requests and now - self._requests[0] >= 60.0:
            self._requests.popleft()
        while self._tokens and now - self._tokens[0][0] >= 60.0:
            self._tokens.popleft()
        wait = 0.0
        if self.rpm is not None and len(self._requests) >= self.rpm:
            wait = max(wait, 60.0 - (now - self._requests[0]))
        if self.tpm is not None and self._tokens:
            used = sum(n for _, n in self._tokens)
            if used + tokens > self.tpm:  # wait until enough of the oldest have left the window
                for stamp, n in self._tokens:
                    used -= n
                    if used + tokens <= self.tpm:
                        wait = max(wait, 60.0 - (now - stamp))
                        break
        return wait

    def acquire(self, tokens: int = 0) -> float:
        """Wait for a free slot and room in the budgets; return the seconds waited."""
        started = time.monotonic()
        with self._cond:
            while True:
                now = time.monotonic()
                wait = self._budget_wait(now, tokens)
                if self.in_flight < self.limit and wait <= 0:
                    self.in_flight += 1
                    self._requests.append(now)
                    if tokens:
                        self._tokens.append((now, tokens))
                    return now - started
                self._cond.wait(timeout=wait if wait > 0 else None)

    def release(self, outcome: str, tokens_used: int | None = None, tokens_estimated: int = 0) -> None:
        """A call ended: ``ok``, ``rate_limited`` or ``error``; ``tokens_used`` corrects the tpm estimate."""
        with self._cond:
            self.in_flight = max(0, self.in_flight - 1)
            if tokens_used is not None and tokens_estimated and self._tokens:
                for i in range(len(self._tokens) - 1, -1, -1):
                    if self._tokens[i][1] == tokens_estimated:
                        self._tokens[i] = (self._tokens[i][0], tokens_used)
                        break
            if outcome == "rate_limited":
                self.rate_limited += 1
                self._recent.append(True)
                if len(self._recent) == BURST_WINDOW and sum(self._recent) * 2 >= BURST_WINDOW:
                    self.limit = max(1, self.limit // 2)
                    self.halvings += 1
                    self._streak = 0
                    self._recent.clear()  # the next halving needs a fresh burst at the new limit
            elif outcome == "ok":
                self._recent.append(False)
                self._streak += 1
                if self._streak >= self.limit and self.limit < self.ceiling:
                    self.limit += 1
                    self._streak = 0
            self._cond.notify_all()


class EndpointRing:
    """Endpoints serving one model (a local model's ``n_parallel`` servers), one free per call.

    Each call takes a free endpoint and gives it back, so N calls in flight go to N different servers.
    """

    def __init__(self, bases: list[str]) -> None:
        self._free = list(bases)
        self._moved: dict[str, str] = {}
        self._ready = threading.Condition()

    def take(self) -> str:
        """A free endpoint (waits for one)."""
        with self._ready:
            while not self._free:
                self._ready.wait()
            return self._free.pop()

    def give(self, base: str) -> None:
        """Hand an endpoint back (its new address if its server was restarted meanwhile)."""
        with self._ready:
            self._free.append(self._moved.get(base, base))
            self._ready.notify()

    def replace(self, old: list[str], new: list[str]) -> None:
        """Endpoints that moved (a revived server has a new port): the free list follows them."""
        with self._ready:
            self._moved.update((a, b) for a, b in zip(old, new, strict=True) if a != b)
            self._free = [self._moved.get(b, b) for b in self._free]
