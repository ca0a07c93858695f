"""The single-slot cache model against a llama.cpp server's own per-request cache counts.

llama-server answers each request with ``timings``: ``cache_n`` (prompt tokens it reused from the slot's KV cache)
and ``prompt_n`` (prompt tokens it computed); ``id_slot`` names the slot (``/completion``; one slot when absent).
Two checks:

- :func:`compare_tokens`: from the exact token ids of each prompt (and, where known, of what was generated for it),
  in the order sent. This is exact: :func:`surfbench.bench.promptcache.prompt_cache_model.slot_cache_counts` must equal
  ``cache_n`` on every request, and ``cache_n + prompt_n`` must be the prompt's length (else the ids are not the
  ones the server tokenized). :mod:`surfbench.bench.serverbench.slot_tokens` rebuilds those ids from a recorded run
  of a local model (the GGUF's chat template and vocabulary): exact on every request of the recorded fixture.
- :func:`compare_requests`: the ``local`` profile on a run's recorded requests (segments, not token ids) against
  the counts recorded per step. A step that extends the previous request reuses that request's reported length;
  the server may reuse more (the tokens it generated for the previous request, as far as the re-rendered answer
  repeats them; the chat template's tokens past the last shared segment, such as the next message's role header),
  which segments cannot see: the differences say how much.

Both assume what the profile assumes: ``--parallel 1`` (or one slot per ``id_slot``), no ``--cache-reuse``, no
RAM prompt cache that restores older prompts (``--cache-ram 0``), a model whose KV cache can be cut anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from surfbench.bench.models.cache_profiles import PROFILES
from surfbench.bench.promptcache.prompt_cache_model import Request, simulate, slot_cache_counts


@dataclass(frozen=True)
class SlotStep:
    """One request: what the model predicts the server reused, and what the server says."""

    index: int
    """Position in the order sent (or the step's (episode, step) for :func:`compare_requests`)."""
    where: str
    predicted: int
    cache_n: int
    prompt_n: int
    note: str = ""

    @property
    def matches(self) -> bool:
        return self.predicted == self.cache_n and not self.note


@dataclass(frozen=True)
class SlotComparison:
    steps: list[SlotStep]

    @property
    def exact(self) -> bool:
        """Every request's predicted reuse equals the server's ``cache_n``."""
        return bool(self.steps) and all(s.matches for s in self.steps)

    @property
    def mismatches(self) -> list[SlotStep]:
        return [s for s in self.steps if not s.matches]

    def summary(self) -> str:
        """One line: how many requests match, and the first that does not."""
        bad = self.mismatches
        line = f"{len(self.steps) - len(bad)} of {len(self.steps)} requests: predicted reuse = server cache_n"
        if bad:
            first = bad[0]
            line += f"; first difference at {first.where}: predicted {first.predicted}, cache_n {first.cache_n}" + (
                f" ({first.note})" if first.note else ""
            )
        return line


def server_counts(record: Mapping[str, Any], where: str = "record") -> tuple[int, int]:
    """``(cache_n, prompt_n)`` of a llama-server response: ``timings.cache_n`` / ``timings.prompt_n``.

    Accepts the response (``{"timings": {...}}``) or a flat record with keys ``timings.cache_n`` and
    ``timings.prompt_n``; anything else is a ValueError naming what is missing.
    """
    timings = record.get("timings")
    if isinstance(timings, Mapping):
        cache, prompt = timings.get("cache_n"), timings.get("prompt_n")
    else:
        cache, prompt = record.get("timings.cache_n"), record.get("timings.prompt_n")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (cache, prompt)):
        raise ValueError(
            f"{where}: no llama-server timings (timings.cache_n={cache!r}, timings.prompt_n={prompt!r}); "
            "record the server's response timings for every request"
        )
    return int(cache or 0), int(prompt or 0)


def compare_tokens(records: Sequence[Mapping[str, Any]]) -> SlotComparison:
    """Replay llama-server requests from their token ids; each slot on its own.

    Each record, in the order sent: ``prompt_ids`` (the prompt's token ids), optionally ``generated_ids``,
    ``id_slot`` and ``where`` (what to call it), and the server's ``timings``.
    :mod:`surfbench.bench.serverbench.slot_tokens` rebuilds them from a recorded run.
    """
    slots: dict[int, list[int]] = {}
    for i, rec in enumerate(records):
        slots.setdefault(int(rec.get("id_slot") or 0), []).append(i)
    predicted: dict[int, int] = {}
    for indices in slots.values():
        prompts = [list(records[i]["prompt_ids"]) for i in indices]
        made = [records[i].get("generated_ids") for i in indices]
        for i, n in zip(indices, slot_cache_counts(prompts, made), strict=True):
            predicted[i] = n
    steps = []
    for i, rec in enumerate(records):
        cache, prompt = server_counts(rec, f"request {i}")
        length = len(rec["prompt_ids"])
        note = "" if cache + prompt == length else f"cache_n + prompt_n = {cache + prompt}, prompt has {length} ids"
        where = f"{rec.get('where') or f'request {i}'} (slot {int(rec.get('id_slot') or 0)})"
        steps.append(SlotStep(i, where, predicted[i], cache, prompt, note))
    return SlotComparison(steps)


def compare_requests(
    requests: Iterable[Request], reported: Mapping[tuple[str, int], Mapping[str, Any]]
) -> SlotComparison:
    """The ``local`` profile on one cell's requests against the server's counts per (episode key, step).

    ``reported``: (episode key, step) -> the step's llama-server timings (see :func:`server_counts`). A step
    without them is a ValueError naming it.
    """
    steps: list[SlotStep] = []
    for s in simulate(list(requests), PROFILES["local"]):
        where = f"{s.episode} step {s.step}"
        if (s.episode, s.step) not in reported:
            raise ValueError(f"{where}: no llama-server timings recorded for this step")
        cache, prompt = server_counts(reported[(s.episode, s.step)], where)
        note = (
            ""
            if cache + prompt == s.prompt_tokens
            else f"cache_n + prompt_n = {cache + prompt}, prompt {s.prompt_tokens}"
        )
        steps.append(SlotStep(len(steps), where, s.served, cache, prompt, note))
    return SlotComparison(steps)
