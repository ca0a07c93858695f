"""``surfbench synth``'s engine: candidates per operation in proportion to its traffic, each verified, until N are kept.

The split of N: requests no operation serves in the proportion the suite's hand-written tasks have them
(refusal templates permitting), multi-call pairs in the proportion of its multi-call tasks, the rest single
calls shared by the operations' traffic weights (largest remainders). An operation whose candidates run out
before its share is kept leaves the rest to the others, again by weight, until N are kept or every
candidate is spent. Everything is seeded: the same suite, templates, N and seed give the same tasks, in the
same order, byte for byte.
"""

from __future__ import annotations

import math
import re
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from surfbench.bench.models.types import ModelClient, ModelRequest
from surfbench.bench.suites.suite import load_suite
from surfbench.bench.suites.suite_model import Suite
from surfbench.bench.synth.synth_build import (
    Candidate,
    Duplicates,
    call_key,
    candidates,
    naming_problem,
    refusal_candidates,
    schema_problem,
)
from surfbench.bench.synth.synth_spec import SynthPlan, SynthSpec, generated_pair, load_spec
from surfbench.bench.synth.synth_verify import SynthVerdict, Verifier, back_translation
from surfbench.bench.synth.synth_world import World, build_world, declares_reads, reads

DEFAULT_REFUSE_SHARE = 0.06
DEFAULT_MULTI_SHARE = 0.10
DRY_RUN = 10
"""Candidates ``--dry-run`` shows."""
Progress = Callable[[int, int, int, str], None]
"""``progress(kept, n, candidates tried, plan key)``."""


@dataclass
class Model:
    """A configured model for the writer or the checker: its name (recorded) and its client."""

    name: str
    client: ModelClient


@dataclass
class SynthResult:
    """What one synthesis kept and why it rejected the rest."""

    suite: Suite
    spec: SynthSpec
    world: World
    n: int
    seed: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: Counter[str] = field(default_factory=Counter)
    unresolved: Counter[str] = field(default_factory=Counter)
    """What had no value (``argument owner of repo_get``), per candidate rejected as ``unresolved``."""
    per_key: dict[str, Counter[str]] = field(default_factory=dict)
    tried: int = 0
    episodes: int = 0
    checked: tuple[int, int] | None = None
    """Back-translation: (tasks the checker solved, tasks it was given), with ``--checker``."""
    shown: list[tuple[Candidate, SynthVerdict]] = field(default_factory=list)
    """``--dry-run``: the candidates and what verification said of each."""

    @property
    def covered_ops(self) -> set[str]:
        """The operations some kept task calls: alone or in a pair (a commit after staging a file)."""
        return {str(e["op"]) for row in self.rows for e in row.get("expected") or [] if "op" in e}

    @property
    def covered(self) -> int:
        return len(self.covered_ops & set(self.suite.catalog.names))


GENERATED = "(generated)"
"""``SynthSpec.source`` of a suite with no templates file."""


def shares(suite: Suite, spec: SynthSpec) -> tuple[float, float]:
    """(refusal share, multi-call share) of the suite's hand-written tasks (defaults when it has none)."""
    written = [t for t in suite.tasks if t.split != "synth"]
    refuse = sum(t.refuse for t in written) / len(written) if written else DEFAULT_REFUSE_SHARE
    acting = [t for t in written if not t.refuse]
    multi = sum(len(t.expected) > 1 for t in acting) / len(acting) if acting else DEFAULT_MULTI_SHARE
    has_pairs = any(p.is_pair for p in spec.plans.values())
    return (refuse if spec.refusals else 0.0), (multi if has_pairs else 0.0)


def largest_remainder(weights: dict[str, float], total: int) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` (ties to the earlier key), every key present."""
    mass = sum(weights.values())
    if total <= 0 or mass <= 0:
        return dict.fromkeys(weights, 0)
    keys = list(weights)
    exact = [total * weights[k] / mass for k in keys]
    floors = [math.floor(v) for v in exact]
    order = sorted(range(len(keys)), key=lambda i: (-(exact[i] - floors[i]), i))  # ties: the earlier key
    for i in order[: total - sum(floors)]:
        floors[i] += 1
    return dict(zip(keys, floors, strict=True))


def _slug(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


class Synthesizer:
    """One run of ``surfbench synth`` over one suite."""

    def __init__(self, target: str, n: int, seed: int, writer: Model | None = None, checker: Model | None = None,
                 checker_tries: int = 3, progress: Progress | None = None, dry_run: bool = False,
                 jobs: int = 1) -> None:  # fmt: skip
        self.suite = load_suite(target)
        self.spec = load_spec(self.suite.folder, self.suite.catalog)
        self.world = build_world(self.suite, self.spec)
        self.verifier = Verifier(self.suite, seed)
        self.dups = Duplicates((t for t in self.suite.tasks if t.split != "synth"), self.suite.catalog)
        self.result = SynthResult(self.suite, self.spec, self.world, n, seed)
        self.writer, self.checker, self.checker_tries = writer, checker, checker_tries
        self.progress, self.dry_run = progress, dry_run
        self.counts: Counter[str] = Counter()
        self._checked = [0, 0]
        self.jobs = jobs if writer is None else 1  # a rewrite comes first; then each candidate in turn
        self._pool = ThreadPoolExecutor(jobs) if self.jobs > 1 else None
        self._ahead: dict[int, Future[SynthVerdict]] = {}

    def run(self) -> SynthResult:
        n, seed = self.result.n, self.result.seed
        refuse_share, multi_share = shares(self.suite, self.spec)
        n_refuse, n_pairs = round(n * refuse_share), round(n * multi_share)
        catalog = self.suite.catalog
        singles = {
            op: iter(candidates(self.spec.plans[op], self.spec, self.world, catalog, seed)) for op in catalog.names
        }
        pairs = {k: iter(candidates(p, self.spec, self.world, catalog, seed))
                 for k, p in self.spec.plans.items() if p.is_pair}  # fmt: skip
        weights = {op: max(catalog[op].weight, 1e-9) for op in catalog.names}
        try:
            refusals = {"refuse": iter(refusal_candidates(self.spec, self.world, seed))}
            left = self._fill(refusals, {"refuse": 1.0}, n_refuse)
            left = self._fill(pairs, dict.fromkeys(pairs, 1.0), n_pairs + left)
            if self.spec.source == GENERATED:  # no templates: room for pairs that cover what one call cannot
                reserve = min(len(catalog.names), max(1, n // 6))
                self._cover(singles, n - reserve)
                enabling = {k: iter(candidates(p, self.spec, self.world, catalog, seed))
                            for k, p in self._enabling_pairs().items()}  # fmt: skip
                self._fill(enabling, dict.fromkeys(enabling, 1.0), reserve)
            self._fill(singles, weights, n - len(self.result.rows))
        finally:  # on an interrupt too: no verification left running
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
        self.result.episodes = self.verifier.episodes
        if self.checker is not None:
            self.result.checked = (self._checked[0], self._checked[1])
        return self.result

    def _cover(self, streams: dict[str, Iterator[Candidate]], limit: int) -> None:
        """One kept task per operation, in catalog order, until ``limit`` rows.

        Every operation is tried before any gets a second task, and one that cannot act alone costs no place
        (the pairs come next).
        """
        for stream in streams.values():
            if len(self.result.rows) >= limit or self._done():
                return
            ahead = Lookahead(stream, self)
            while (cand := ahead.next()) is not None:
                if self._take(cand):
                    break

    def _enabling_pairs(self) -> dict[str, SynthPlan]:
        """Pairs for the operations every single call of which was rejected, each after a write that may enable it.

        A commit with nothing staged, a staged diff that is empty: each gets a pair after every write that was
        kept and shares a required argument with it (staging a file). The replay keeps the pairs that work.
        """
        catalog = self.suite.catalog
        declared = declares_reads(catalog)
        per = self.result.per_key
        none: Counter[str] = Counter()
        kept = [op for op in catalog.names if per.get(op, none)["kept"] and not reads(catalog[op], declared)]
        stuck = [op for op in catalog.names if per.get(op, none)["rejected"] and not per[op]["kept"]]
        plans = {}
        for then in stuck:
            for first in kept:
                if first != then and set(catalog[first].required) & set(catalog[then].required):
                    plan = generated_pair(catalog, first, then)
                    plans[plan.key] = plan
        return plans

    def _done(self) -> bool:
        return len(self.result.rows) >= self.result.n or (self.dry_run and len(self.result.shown) >= DRY_RUN)

    def _fill(self, streams: dict[str, Iterator[Candidate]], weights: dict[str, float], total: int) -> int:
        """Keep up to ``total`` candidates from ``streams`` by weight; the part left unkept."""
        active = {k: Lookahead(it, self) for k, it in streams.items()}
        kept = 0
        while kept < total and active and not self._done():
            quotas = largest_remainder({k: weights[k] for k in active}, total - kept)
            for key in [k for k in streams if k in active]:
                for _ in range(quotas.get(key, 0)):
                    while not self._done():
                        cand = active[key].next()
                        if cand is None:
                            del active[key]
                            break
                        if self._take(cand):
                            kept += 1
                            break
                    if key not in active or self._done():
                        break
        return total - kept

    def _take(self, cand: Candidate) -> bool:
        """Judge one candidate; True when it is kept."""
        self.result.tried += 1
        verdict = self._judge(cand)
        per = self.result.per_key.setdefault(cand.key, Counter())
        if self.dry_run:
            self.result.shown.append((cand, verdict))
        if verdict.kept and verdict.row is not None:
            self.counts[cand.key] += 1
            verdict.row["id"] = f"synth-{_slug(cand.key)}-{self.counts[cand.key]:03d}"
            self.dups.add(cand.text, self._call_key(cand), verdict.row["id"])
            self.result.rows.append(verdict.row)
            per["kept"] += 1
        else:
            self.result.rejected[verdict.code] += 1
            per["rejected"] += 1
        if self.progress is not None:
            self.progress(len(self.result.rows), self.result.n, self.result.tried, cand.key)
        return verdict.kept

    def _call_key(self, cand: Candidate) -> str:
        return "refuse" if cand.refuse else call_key(((d.op, d.args) for d in cand.drafts), self.suite.catalog)

    def _judge(self, cand: Candidate) -> SynthVerdict:
        if not cand.text or (not cand.refuse and len(cand.drafts) != len(cand.plan.ops)):
            what = cand.unresolved or "a slot or a required argument"
            self.result.unresolved[what] += 1
            return SynthVerdict(False, f"unresolved: {what} has no value in the world")
        if self.writer is not None:
            problem = self._rewrite(cand)
            if problem:
                return SynthVerdict(False, problem)
        problem = naming_problem(cand.text, self.suite.catalog, cand.drafts) or ""
        if problem:
            return SynthVerdict(False, problem)
        problem = schema_problem(self.suite.catalog, cand.drafts) or ""
        if problem:
            return SynthVerdict(False, f"schema_invalid: {problem}")
        problem = self.dups.problem(cand.text, self._call_key(cand)) or ""
        if problem:
            return SynthVerdict(False, problem)
        ahead = self._ahead.pop(id(cand), None)
        verdict = ahead.result() if ahead is not None else self.verifier.verify(cand, self.spec.refusal_words)
        if verdict.kept and self.checker is not None and verdict.row is not None:
            self._checked[1] += 1
            temperature = 0.7 if self.checker_tries > 1 else 0.0
            task = self.verifier.task(verdict.row)
            if not back_translation(self.verifier, task, self.checker.client, self.checker_tries, temperature):
                verdict.steps.append(f"checker {self.checker.name}: not solved in {self.checker_tries} tries")
                return SynthVerdict(False, f"checker_failed: {self.checker.name}", verdict.row, verdict.steps)
            self._checked[0] += 1
            verdict.steps.append(f"checker {self.checker.name}: solved")
        return verdict

    def prefetch(self, cand: Candidate) -> None:
        """With ``jobs`` > 1: start verifying a candidate that waits its turn (its verdict does not depend on it)."""
        if self._pool is None or not cand.text or (not cand.refuse and len(cand.drafts) != len(cand.plan.ops)):
            return
        if naming_problem(cand.text, self.suite.catalog, cand.drafts) or schema_problem(
            self.suite.catalog, cand.drafts
        ):
            return
        self._ahead[id(cand)] = self._pool.submit(self.verifier.verify, cand, self.spec.refusal_words)

    def _rewrite(self, cand: Candidate) -> str | None:
        """The writer's wording of the request; a problem when it lost a value the calls need."""
        assert self.writer is not None
        before = cand.text
        cand.text = rewrite(self.writer.client, before)
        cand.writer = self.writer.name
        lost = [v for v in request_values(cand) if v.casefold() in before.casefold() and v.casefold() not in
                cand.text.casefold()]  # fmt: skip
        if lost or not cand.text.strip():
            return f"writer_dropped_value: {lost[0]!r}" if lost else "writer_dropped_value: an empty rewrite"
        return None


class Lookahead:
    """A stream of candidates read ``jobs`` ahead, the ones waiting verified meanwhile (order is unchanged)."""

    def __init__(self, stream: Iterator[Candidate], synth: Synthesizer) -> None:
        self.stream, self.synth, self.buffer = stream, synth, deque[Candidate]()

    def next(self) -> Candidate | None:
        while len(self.buffer) < self.synth.jobs:
            cand = next(self.stream, None)
            if cand is None:
                break
            self.buffer.append(cand)
            self.synth.prefetch(cand)
        return self.buffer.popleft() if self.buffer else None


WRITER_PROMPT = (
    "Rewrite the user's request to an assistant in your own words, as a person would type it. Keep every "
    "name, number, path, date and quoted text exactly as written. Do not mention tools, functions or "
    "parameters. Reply with the rewritten request only."
)


def rewrite(client: ModelClient, text: str) -> str:
    """A writer model's wording of a templated request (its text answer, stripped of quotes)."""
    request = ModelRequest(
        messages=({"role": "system", "content": WRITER_PROMPT}, {"role": "user", "content": text}),
        temperature=0.7,
        max_tokens=200,
        seed=0,
    )
    out = (client.complete(request).text or "").strip()
    return out.strip('"').strip()


def request_values(cand: Candidate) -> list[str]:
    """The argument values a request states (a rewrite must keep each of them)."""
    out: list[str] = []
    for d in cand.drafts:
        for value in d.args.values():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str | int) and not isinstance(v, bool) and str(v):
                    out.append(str(v))
    return out
