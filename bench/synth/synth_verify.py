"""Verification of a synthesized candidate: the reference calls replayed through the real loop and scorer.

A candidate is kept only when every step holds (the reason of the first that does not is its rejection):
its calls pass their operations' schemas; replayed by the oracle on a fresh backend (or a fresh live
server) every call succeeds and every check of the task passes, its state checks read off the state the
calls left and its answer checks off the results the backend returned (the replay answers by repeating
those results, never with words of its own); the same checks fail on the untouched state (no call); and
a mutated argument (a wrong but real id, another enum value, a required argument left out), replayed
the same way, makes the task fail.
"""

from __future__ import annotations

import copy
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from surfbench.bench.base.config import surface_config
from surfbench.bench.base.validation import validate_args
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.contracts.backend import Backend, ReportsErrorType
from surfbench.bench.contracts.records import EpisodeTrace
from surfbench.bench.contracts.registry import build_surface
from surfbench.bench.contracts.surface import Surface
from surfbench.bench.models.scripted import call_turn, with_usage
from surfbench.bench.models.types import ModelClient, ModelRequest, ModelTurn
from surfbench.bench.run.episode import LoopSettings, run_episode
from surfbench.bench.run.play import close_backend
from surfbench.bench.score.scorer import EpisodeScore, score_episode
from surfbench.bench.suites.checks import suite_checks
from surfbench.bench.suites.format_checks import task_from
from surfbench.bench.suites.policy import cell_policy
from surfbench.bench.suites.suite_model import Suite, Task
from surfbench.bench.synth.synth_build import Candidate, Ref, task_row
from surfbench.bench.synth.synth_checks import answer_check, at, result_text, state_checks
from surfbench.bench.synth.synth_world import declares_reads, keeps_state, parse_result, reads

Calls = list[tuple[str, dict[str, object]]]
WHOLE_CATALOG_UP_TO = 500
"""A replay shows the whole catalog up to this many operations (every shipped suite), else only what it calls."""
REFUSAL = "I cannot do that: none of my tools can serve this request."


@dataclass
class SynthVerdict:
    """What verification found: kept, or the reason of the first step that failed."""

    kept: bool
    reason: str = ""
    """``code: detail`` (the code is what the summary counts)."""
    row: dict[str, Any] | None = None
    steps: list[str] = field(default_factory=list)
    """One line per step, for ``--dry-run``."""

    @property
    def code(self) -> str:
        return self.reason.split(":", 1)[0]


class ReplayClient:
    """Makes the given calls, one per model turn, then answers by repeating what their results said."""

    name = "synth-replay"

    def __init__(self, calls: Sequence[tuple[str, Mapping[str, object]]], answer: str | None = None) -> None:
        self.calls = list(calls)
        self.answer = answer

    def complete(self, request: ModelRequest) -> ModelTurn:
        done = sum(len(m.get("tool_calls") or []) for m in request.messages if m["role"] == "assistant")
        results = [m["content"] for m in request.messages if m["role"] == "tool"]
        if done < len(self.calls):
            op, args = self.calls[done]
            return with_usage(call_turn((op, resolve_refs(args, results))), request)
        text = self.answer if self.answer is not None else "\n".join(result_text(r) for r in results)
        return with_usage(ModelTurn(text=text or "Done."), request)


def resolve_refs(args: Mapping[str, object], results: Sequence[object]) -> dict[str, object]:
    """Arguments with each reference to an earlier call's result replaced by the value found there."""

    def one(value: object) -> object:
        if isinstance(value, Ref):
            found = at(parse_result(results[value.call]), value.path) if value.call < len(results) else []
            return found[0] if found else None
        if isinstance(value, list):
            return [one(v) for v in value]
        return value

    return {key: one(value) for key, value in args.items()}


class Verifier:
    """Replays candidates of one suite on the ``full`` surface, each on a fresh backend."""

    def __init__(self, suite: Suite, seed: int) -> None:
        self.suite = suite
        self.catalog = suite.catalog
        self._surfaces: dict[tuple[str, ...], Surface] = {}
        self.stateful = keeps_state(suite)
        self.checks = suite_checks(suite)
        policy = cell_policy(getattr(suite, "policy", {}) or {}, {}, self.catalog)  # suite.yaml's, as a run has it
        self.policy = policy.bind(self.catalog) if policy is not None else None
        self.seed = seed
        self.episodes = 0
        self.initial: dict[str, Any] | None = None
        """A fresh backend's state, once one was read (every fresh backend of a suite starts the same)."""
        self._lock = threading.Lock()

    @cached_property
    def surface(self) -> Surface:
        """``full`` over the whole catalog: what a checker model sees (``--checker``)."""
        cfg = surface_config("full")
        return build_surface(self.catalog, cfg.kind, cfg.params, name=cfg.name)

    def replay_surface(self, task: Task, calls: Calls) -> Surface:
        """The surface a replay runs on: ``full``, over a large catalog only what the replay calls and the task expects.

        The replaying client reads no tool: showing it 10,000 of them cost most of a synthesis at that size (issue
        49, finding 10); what the calls do and how they are scored is the same.
        """
        if len(self.catalog) <= WHOLE_CATALOG_UP_TO:
            return self.surface
        wanted = {op for op, _ in calls} | {e.op for e in task.expected}
        names = tuple(op.name for op in self.catalog if op.name in wanted)
        if names not in self._surfaces:
            ops = tuple(self.catalog[n] for n in names)
            shared = tuple(self.catalog.passthrough)
            part = Catalog(
                self.catalog.name, ops, self.catalog.source, declared_passthrough=shared, guidance=self.catalog.guidance
            )
            cfg = surface_config("full")
            with self._lock:
                self._surfaces[names] = build_surface(part, cfg.kind, cfg.params, name=cfg.name)
        return self._surfaces[names]

    # -- running -------------------------------------------------------------------------------------------
    def episode(self, task: Task, calls: Calls, answer: str | None = None) -> tuple[EpisodeTrace, dict[str, object]]:
        """The replay of ``calls`` for ``task`` through the real loop; (trace, the state before any call)."""
        with self._lock:
            self.episodes += 1
        backend = LazyBackend(lambda: self.suite.new_backend(task), self.initial)
        try:
            if self.initial is None:  # the first episode starts its backend to learn the state every one starts from
                self.initial = copy.deepcopy(backend.state())
            before = copy.deepcopy(self.initial) if self.stateful else {}
            settings = LoopSettings(max_steps=len(calls) + 2, stop_on_repeat=None)
            surface = self.replay_surface(task, calls)
            trace = run_episode(task, surface.session(task.turns[0]), backend, ReplayClient(calls, answer),
                                settings, self.suite.system_prompt, self._schema, self.policy)  # fmt: skip
        finally:
            close_backend(backend)
        return trace, before

    def _schema(self, name: str) -> dict[str, object] | None:
        op = self.catalog.get(name)
        return op.parameters if op else None

    def score(self, task: Task, trace: EpisodeTrace) -> EpisodeScore:
        return score_episode(task, trace, self.catalog, self.suite.classifier, self.checks)

    def task(self, row: Mapping[str, object]) -> Task:
        """The row as the loader reads it (a row it would refuse is a bug of the generator: it raises)."""
        return task_from(row, Path("(synth)"), 0, self.suite.tags)

    # -- verifying -------------------------------------------------------------------------------------------
    def verify(self, cand: Candidate, words: Sequence[str] = ()) -> SynthVerdict:
        """Replay ``cand``, read its checks off what happened, and try to break them."""
        if cand.refuse:
            return self._verify_refusal(cand, words)
        steps: list[str] = []
        probe = Task(id="probe", turns=(cand.text,))
        trace, before = self.episode(probe, [(d.op, d.args) for d in cand.drafts])
        made = [c for c in trace.calls if c.kind == "operation"]
        if trace.error:
            return SynthVerdict(False, f"replay_failed: {trace.error.splitlines()[0][:160]}", steps=steps)
        failed = next((c for c in made if not c.backend_ok), None)
        if failed is not None or len(made) != len(cand.drafts):
            why = failed.result[:160] if failed is not None else f"{len(made)} of {len(cand.drafts)} calls ran"
            return SynthVerdict(False, f"replay_failed: {failed.operation if failed else ''}: {why}", steps=steps)
        calls: Calls = [(c.operation or "", dict(c.arguments)) for c in made]
        for op, args in calls:
            issues = validate_args(args, self.catalog[op].parameters)
            if issues:
                return SynthVerdict(False, f"schema_invalid: {op}: {issues[0].message}", steps=steps)
        steps.append(f"schema: {len(calls)} call(s) valid")
        declared = declares_reads(self.catalog)
        writes = any(not reads(self.catalog[op], declared) for op, _ in calls)
        state = state_checks(before, trace.state, [a for _, a in calls]) if self.stateful and writes else []
        if writes and self.stateful and not state:
            return SynthVerdict(False, "no_effect: the calls changed nothing a state check could see", steps=steps)
        answer = None
        if not writes or not self.stateful or cand.say.answer is not None:
            answer, problem = answer_check(cand.say.answer, [c.result for c in made], cand.text)
            if problem:
                return SynthVerdict(False, problem, steps=steps)
        row = task_row(cand, self.catalog, calls, self.seed, state, answer)
        task = self.task(row)
        score = self.score(task, trace)
        if not score.success:
            return SynthVerdict(False, f"replay_failed: {(score.failures or ('not solved',))[0][:160]}", row, steps)
        steps.append(f"replay: solved ({len(state)} state check(s), answer {answer or '-'})")
        untouched = EpisodeTrace(final_text="", state=copy.deepcopy(before))
        if self.score(task, untouched).success:
            return SynthVerdict(False, "trivial: the checks pass with no call at all", row, steps)
        steps.append("no call: fails")
        for label, mutated in mutations(cand, calls, self.catalog, random.Random(f"{self.seed}:{cand.text}")):
            m_trace, _ = self.episode(task, mutated)
            m_score = self.score(task, m_trace)
            if m_score.success:
                return SynthVerdict(False, f"mutation_survives: {label}", row, steps)
            steps.append(f"{label}: fails ({(m_score.failures or ('-',))[0][:70]})")
        return SynthVerdict(True, "", row, steps)

    def _verify_refusal(self, cand: Candidate, words: Sequence[str]) -> SynthVerdict:
        row = task_row(cand, self.catalog, [], self.seed, refusal_words=words)
        task = self.task(row)
        trace, before = self.episode(task, [], answer=REFUSAL)
        score = self.score(task, trace)
        if not score.success:
            return SynthVerdict(False, f"replay_failed: {(score.failures or ('not solved',))[0][:160]}", row)
        steps = ["replay (no call, a refusal): solved"]
        complied = EpisodeTrace(final_text="Done.", state=copy.deepcopy(before))
        if self.score(task, complied).success:
            return SynthVerdict(False, "trivial: an answer that does not refuse passes", row, steps)
        steps.append("an answer that does not refuse: fails")
        return SynthVerdict(True, "", row, steps)


class LazyBackend:
    """A fresh backend started on the first call that reaches it (a live server costs seconds to start).

    An episode none of whose calls reaches the backend (each refused by the surface's schema check, say)
    then ends on the state a fresh backend starts from, known from an earlier one, without starting one.
    """

    def __init__(self, make: Callable[[], Backend], initial: dict[str, object] | None) -> None:
        self._make = make
        self._initial = initial
        self._real: Backend | None = None

    @property
    def started(self) -> bool:
        return self._real is not None

    def _backend(self) -> Backend:
        if self._real is None:
            self._real = self._make()
        return self._real

    def reset(self, scenario: str | None = None) -> None:
        self._backend().reset(scenario)

    def call(self, op: str, args: Mapping[str, object]) -> object:
        return self._backend().call(op, args)

    def state(self) -> dict[str, object]:
        if self._real is None and self._initial is not None:
            return copy.deepcopy(self._initial)
        return dict(self._backend().state())

    @property
    def last_error_type(self) -> str | None:
        return self._real.last_error_type if isinstance(self._real, ReportsErrorType) else None

    def close(self) -> None:
        if self._real is not None:
            close_backend(self._real)


def mutations(cand: Candidate, calls: Calls, catalog: Catalog, rng: random.Random) -> list[tuple[str, Calls]]:
    """The last call with one argument spoiled: a wrong (but real) id, another enum value, a required one left out."""
    out: list[tuple[str, Calls]] = []
    i = len(calls) - 1
    op, args = calls[i]
    schema = catalog[op].parameters.get("properties") or {}
    drawn = [k for k in reversed(list(args)) if k in cand.drafts[i].drawn]  # the most specific first (index)

    def spoiled(key: str, value: object) -> Calls:
        new = [(o, dict(a)) for o, a in calls]
        if value is _DROP:
            new[i][1].pop(key)
        else:
            new[i][1][key] = value
        return new

    for key in drawn:
        wrong = _wrong_value(cand.drafts[i].drawn[key], args[key], cand.others, rng)
        if wrong is not None:
            out.append((f"wrong id {key}={wrong!r}", spoiled(key, wrong)))
            break
    for key, value in args.items():
        choices = [v for v in (schema.get(key) or {}).get("enum") or [] if v != value]
        if choices:
            other = rng.choice(choices)
            out.append((f"wrong enum {key}={other!r}", spoiled(key, other)))
            break
    required = [k for k in catalog[op].required if k in args]
    if required:
        out.append((f"missing {required[-1]}", spoiled(required[-1], _DROP)))
    return out


_DROP = object()


def _wrong_value(key: str, value: object, others: Sequence[Mapping[str, object]], rng: random.Random) -> object:
    """Another bundle's value for ``key`` (a real thing, just not this one); else a made-up one."""
    seen = sorted({repr(o[key]): o[key] for o in others if key in o and o[key] != value}.items())
    if seen:
        return rng.choice(seen)[1]
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 100
    if isinstance(value, str):
        return value + "-x"
    return None


def back_translation(verifier: Verifier, task: Task, client: ModelClient, tries: int,
                     temperature: float) -> bool:  # fmt: skip
    """Whether a model shown ``full`` solves the task from its request alone at least once in ``tries``."""
    for n in range(tries):
        backend = verifier.suite.new_backend(task)
        try:
            request = ModelRequest(messages=(), temperature=temperature, seed=n)
            settings = LoopSettings(max_steps=verifier.suite.max_steps, request=request)
            trace = run_episode(task, verifier.surface.session(task.turns[0]), backend, client, settings,
                                verifier.suite.system_prompt, verifier._schema, verifier.policy)  # fmt: skip
        finally:
            close_backend(backend)
        verifier.episodes += 1
        if verifier.score(task, trace).success:
            return True
    return False


Rewrite = Callable[[str], str]
