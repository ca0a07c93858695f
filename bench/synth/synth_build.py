"""Candidate tasks for ``surfbench synth``: arguments drawn from the world, phrasings filled in, calls as matchers.

A candidate is one phrasing of one plan (an operation, a pair of calls, or a refusal) over one bundle of
the world. What can be judged without running anything is judged here (every slot filled, no operation
name or argument key in the request, no near-duplicate); the replay that decides the rest is
:mod:`surfbench.bench.synth.synth_verify`'s.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar, cast

from surfbench.bench.base.validation import validate_args
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.suites.expected import ExpectedCall
from surfbench.bench.suites.matchers import example_args
from surfbench.bench.suites.suite_model import Task
from surfbench.bench.synth.synth_spec import Say, SynthPlan, SynthSpec, missing_slots, render
from surfbench.bench.synth.synth_world import World, declares_reads, pool_bundles, reads, world_value

GENERATOR = "surfbench-synth/2"
"""The generator's version: recorded with every task it makes (and so part of the task's content hash)."""
SIMILAR = 0.7
"""Two requests with the same calls whose word sets overlap this much (Jaccard) are near-duplicates."""


@dataclass(frozen=True)
class Ref:
    """An argument that a call takes from an earlier call's result (``<0.number``: call 0's ``number``)."""

    call: int
    path: str


@dataclass
class Draft:
    """One call of a candidate: its operation, its arguments, which of them the request names."""

    op: str
    args: dict[str, Any]
    mentioned: frozenset[str] = frozenset()
    """Optional arguments the phrasing sets (the others are left to their defaults)."""
    drawn: Mapping[str, str] = field(default_factory=dict)
    """Arguments whose value names a thing of the world, each with the bundle field it came from (the targets
    of the wrong-id mutation, which takes that field of another bundle)."""


@dataclass
class Candidate:
    """One request and the calls that serve it, before verification."""

    plan: SynthPlan
    say: Say
    text: str
    drafts: list[Draft]
    bundle: dict[str, Any] = field(default_factory=dict)
    others: list[dict[str, Any]] = field(default_factory=list)
    """Other bundles of the same pool: where a wrong (but real) id comes from."""
    refuse: bool = False
    template_text: str = ""
    writer: str | None = None
    unresolved: str = ""
    """What had no value, when something had none: ``argument owner of repo_get``, ``slot {title}``."""

    @property
    def key(self) -> str:
        return "refuse" if self.refuse else self.plan.key


def _resolve(
    value: object, bundle: Mapping[str, object], values: Mapping[str, Sequence[object]], rng: random.Random
) -> object:
    """A template's argument value (see bench.synth.synth_spec): bundle field, named value, pick, reference."""
    if isinstance(value, str):
        if value.startswith("@"):
            return bundle.get(value[1:])
        if value.startswith("$") and value[1:] in values:
            return rng.choice(values[value[1:]])
        if value.startswith("<") and "." in value:
            head, _, path = value[1:].partition(".")
            return Ref(int(head), path)
        return render(value, bundle) if "{" in value else value
    if isinstance(value, Mapping) and "$pick" in value:
        return _resolve(rng.choice(list(value["$pick"])), bundle, values, rng)
    if isinstance(value, list):
        return [_resolve(v, bundle, values, rng) for v in value]
    if isinstance(value, Mapping):
        return {k: _resolve(v, bundle, values, rng) for k, v in value.items()}
    return value


def _drawn(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and value.startswith("@")


def draft(op: Operation, explicit: Mapping[str, object], bundle: Mapping[str, object], spec: SynthSpec, world: World,
          rng: random.Random) -> Draft | str:  # fmt: skip
    """The call of ``op`` a phrasing makes over ``bundle``; else the name of an argument that has no value."""
    args: dict[str, object] = {}
    drawn = {k: v[1:] for k, v in explicit.items() if _drawn(v)}
    for key, value in explicit.items():
        got = _resolve(value, bundle, spec.values, rng)
        if got is None or got == "":
            return key
        args[key] = got
    for param in op.required:
        if param in args:
            continue
        if bundle.get(param) not in (None, ""):
            args[param], drawn[param] = bundle[param], param
            continue
        value = world_value(world, param, op, rng)
        if value is None:
            return param
        args[param] = value
    order = list((op.parameters.get("properties") or {}).keys())
    args = {k: args[k] for k in sorted(args, key=lambda k: order.index(k) if k in order else len(order))}
    return Draft(op.name, args, frozenset(set(explicit) - set(op.required)), drawn)


def slot_values(bundle: Mapping[str, object], drafts: list[Draft]) -> dict[str, object]:
    """What a phrasing's slots read: the calls' arguments (the first call's win), then the bundle's fields."""
    out = dict(bundle)
    for d in reversed(drafts):
        for key, value in d.args.items():
            if isinstance(value, Mapping):  # an object argument: its fields are slots too (rules.required_approvals)
                out.update({k: v for k, v in value.items() if not _has_ref(v)})
            if not _has_ref(value):
                out[key] = value
    return out


def _has_ref(value: object) -> bool:
    if isinstance(value, Ref):
        return True
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_ref(v) for v in value.values())
    return False


_T = TypeVar("_T")


def _interleave(groups: list[list[_T]]) -> list[_T]:
    """One of each group in turn (each phrasing of an operation gets its turn before any gets a second)."""
    out: list[_T] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out += [g[i] for g in groups if i < len(g)]
    return out


def candidates(plan: SynthPlan, spec: SynthSpec, world: World, catalog: Catalog, seed: int) -> list[Candidate]:
    """Every candidate of ``plan`` (each phrasing over each bundle), in a seeded order, phrasings taking turns."""
    rng = random.Random(f"{seed}:{plan.key}")
    pools: dict[str | None, list[dict[str, object]]] = {}
    groups = []
    for say in plan.says:
        pool = say.pool or plan.pool
        if pool not in pools:
            pools[pool] = pool_bundles(world, pool, catalog[plan.ops[0]])
        order = list(range(len(pools[pool])))
        rng.shuffle(order)
        groups.append([(say, pool, i) for i in order])
    out = []
    for say, pool, i in _interleave(groups):
        bundle = pools[pool][i]
        drafts: list[Draft] = []
        unresolved = ""
        for n, op in enumerate(plan.ops):
            explicit = {**(plan.base_args[n] if plan.base_args else {}), **say.args[n]}
            made = draft(catalog[op], explicit, bundle, spec, world, rng)
            if isinstance(made, str):
                unresolved = f"argument {made} of {op}"
                break
            drafts.append(made)
        text = None
        if not unresolved:
            values = slot_values(bundle, drafts)
            text = render(say.text, values)
            if text is None:
                unresolved = "slot " + ", ".join(f"{{{s}}}" for s in missing_slots(say.text, values))
        others = [b for j, b in enumerate(pools[pool]) if j != i]
        out.append(Candidate(plan, say, text or "", drafts, bundle, others, template_text=say.text,
                             unresolved=unresolved))  # fmt: skip
    return out


def refusal_candidates(spec: SynthSpec, world: World, seed: int) -> list[Candidate]:
    """The requests no operation serves, each over the bundles of its pool, phrasings taking turns."""
    rng = random.Random(f"{seed}:refuse")
    groups = []
    empty = SynthPlan("refuse", (), None, ())
    for say, pool in spec.refusals:
        bundles = list(world.pools.get(pool, [])) if pool else [{}]
        rng.shuffle(bundles)
        groups.append([Candidate(empty, say, render(say.text, b) or "", [], b, refuse=True,
                                 template_text=say.text) for b in bundles])  # fmt: skip
    return _interleave(groups)


# -- what is judged before any replay ---------------------------------------------------------------------
def _words(text: str) -> set[str]:
    return set(normalised(text).split())


def normalised(text: str) -> str:
    """A request as the duplicate check compares it: lower case, punctuation gone, spaces collapsed."""
    return " ".join(re.sub(r"[^\w/#.-]+", " ", text.casefold()).replace("_", " ").split())


def naming_problem(text: str, catalog: Catalog, drafts: Iterable[Draft]) -> str | None:
    """Whether the request names an operation or an argument key verbatim (handing ``full`` the answer).

    An operation name or an argument key of the expected calls that is an identifier (``issue_get``,
    ``new_branch_name``, ``tagName``) anywhere as a word; one that is a plain English word when written as
    code (``echo(...)``, ``index: 3``, ``state=closed``). A plain word used as one (``the dev branch``) is fine.
    """
    low = text.casefold()
    for name in catalog.names:
        if name.casefold() in low and _names(low, name, "("):  # the regexes only where the name is in the text
            return f"names_operation: {name!r}"
    for d in drafts:
        for key in d.args:
            if _names(low, key, ":="):
                return f"names_argument: {key!r}"
    return None


def _names(low: str, name: str, written: str) -> bool:
    """Whether ``name`` is in the (case-folded) request.

    As a word when it is an identifier (``issue_get``, ``tagName``, ``v2``), else when written as code
    (followed by one of ``written``: ``echo(``, ``index:``).
    """
    word = rf"(?<![\w-]){re.escape(name.casefold())}(?![\w-])"
    if re.search(r"[_\d]|[a-z][A-Z]", name) and re.search(word, low):
        return True
    return bool(re.search(word + rf"\s*[{re.escape(written)}]", low))


def schema_problem(catalog: Catalog, drafts: Iterable[Draft]) -> str | None:
    """The first expected call whose concrete arguments the operation's schema refuses."""
    for d in drafts:
        if _has_ref(d.args):
            continue  # checked once the call it reads from has run
        issues = validate_args(d.args, catalog[d.op].parameters)
        if issues:
            return f"{d.op}: {issues[0].message}"
    return None


def call_key(calls: Iterable[tuple[str, Mapping[str, object]]], catalog: Catalog | None = None) -> str:
    """The calls as the duplicate check compares them.

    Argument order, string case, the order of a list and an argument given its schema's default (the same
    call as leaving it out) are ignored.
    """
    plain = []
    for op, args in calls:
        props = (catalog[op].parameters.get("properties") or {}) if catalog is not None and op in catalog else {}
        given = {
            k: v
            for k, v in args.items()
            if not (isinstance(props.get(k), Mapping) and props[k].get("default", _NO) == v)
        }
        plain.append([op, {k: _low(v) for k, v in sorted(given.items())}])
    return json.dumps(plain, sort_keys=True, default=str)


_NO = object()


def _low(value: object) -> object:
    if isinstance(value, str):
        return " ".join(value.casefold().split())
    if isinstance(value, list):
        items = [_low(v) for v in value]
        return sorted(items, key=str) if all(not isinstance(v, dict | list) for v in items) else items
    if isinstance(value, Mapping):
        return {k: _low(v) for k, v in sorted(value.items())}
    return value


class Duplicates:
    """Requests already taken (the suite's hand-written tasks, then every kept one): exact and near copies."""

    def __init__(self, tasks: Iterable[Task], catalog: Catalog | None = None) -> None:
        self.texts: dict[str, str] = {}
        self.by_call: dict[str, list[tuple[str, set[str]]]] = {}
        for task in tasks:
            calls = [(e.op, _reference(e)) for e in task.expected] if not task.refuse else []
            self.add(task.turns[0], call_key(calls, catalog) if calls else "refuse", task.id)

    def add(self, text: str, key: str, task_id: str) -> None:
        self.texts.setdefault(normalised(text), task_id)
        self.by_call.setdefault(key, []).append((task_id, _words(text)))

    def problem(self, text: str, key: str) -> str | None:
        """``duplicate: of TASK`` when the same request (or a near copy with the same calls) is taken."""
        same = self.texts.get(normalised(text))
        if same is not None:
            return f"duplicate: same request as {same}"
        words = _words(text)
        for task_id, other in self.by_call.get(key, []):
            if words and len(words & other) / len(words | other) >= SIMILAR:
                return f"duplicate: near copy of {task_id} (same calls)"
        return None


def _reference(call: ExpectedCall) -> dict[str, object]:
    try:
        return dict(call.oracle_args) if call.oracle_args is not None else example_args(call.args)
    except ValueError:
        return {}


# -- the task a kept candidate becomes -------------------------------------------------------------------
def matcher(value: object) -> object:
    """The matcher an expected argument gets: the value itself; a list in any order; objects key by key."""
    if isinstance(value, list):
        if all(isinstance(v, Mapping) for v in value) and value:
            return {"$list": [matcher(v) for v in value]}
        return {"$set": list(value)}
    if isinstance(value, Mapping):
        return {str(k): matcher(v) for k, v in value.items()}
    return value


def expected_call(op: Operation, args: Mapping[str, object], judged_by_state: bool = False) -> dict[str, object]:
    """``{op, args[, oracle_args]}``: the given arguments as matchers.

    An optional argument left out may be omitted or given its default (any value for a number left to
    the model, such as a limit). In a task its state checks judge (``judged_by_state``: a write with state
    checks), it may be given any value, as the hand-written tasks allow the optional arguments a model
    commonly adds (docs/results/synth.md): the end state, record fields left unchanged included, judges
    whether the value did harm.
    """
    props = op.parameters.get("properties") or {}
    matchers: dict[str, object] = {}
    for param, schema in props.items():
        if param in args:
            matchers[param] = matcher(args[param])
        elif param not in op.required and isinstance(schema, Mapping):
            if judged_by_state or schema.get("type") in ("integer", "number"):
                matchers[param] = {"$any": True}
            elif schema.get("default") not in (None, "", [], {}):
                matchers[param] = [schema["default"], ""]
    for param in args:
        matchers.setdefault(param, matcher(args[param]))
    row: dict[str, object] = {"op": op.name, "args": matchers}
    reference = {k: v for k, v in example_args(matchers).items()
                 if k in op.required
                 or not (isinstance(matchers.get(k), list) and "" in cast("list[object]", matchers[k]))}  # fmt: skip
    if json.dumps(reference, sort_keys=True, default=str) != json.dumps(dict(args), sort_keys=True, default=str):
        row["oracle_args"] = dict(args)
    return row


def tags(catalog: Catalog, ops: list[str], refuse: bool) -> list[str]:
    """hot|cold (an operation weighted above the catalog's mean), single|multi, read|write; should-refuse."""
    if refuse:
        return ["should-refuse"]
    weights = [o.weight for o in catalog.operations]
    mean = sum(weights) / len(weights) if weights else 0.0
    out = []
    if len(set(weights)) > 1:
        out.append("hot" if any(catalog[o].weight > mean for o in ops) else "cold")
    out.append("multi" if len(ops) > 1 else "single")
    declared = declares_reads(catalog)
    out.append("read" if all(reads(catalog[o], declared) for o in ops) else "write")
    return out


def provenance(candidate: Candidate, seed: int) -> dict[str, object]:
    """What made the task: part of its content hash (bench.store.identity.task_hash reads ``meta``)."""
    return {"generator": GENERATOR, "seed": seed, "template": candidate.say.id, "writer": candidate.writer}


def task_row(candidate: Candidate, catalog: Catalog, calls: Sequence[tuple[str, Mapping[str, object]]], seed: int,
             state: list[dict[str, object]] | None = None, answer: Mapping[str, object] | None = None,
             refusal_words: Iterable[str] = ()) -> dict[str, object]:  # fmt: skip
    """The task file row of a candidate (``id`` is given when it is kept)."""
    ops = [op for op, _ in calls]
    row: dict[str, object] = {"id": "candidate", "split": "synth", "tags": tags(catalog, ops, candidate.refuse),
                           "turns": [candidate.text]}  # fmt: skip
    if candidate.refuse:
        row["answer"] = {"any_of": list(refusal_words)}
    else:
        row["expected"] = [expected_call(catalog[op], args, judged_by_state=bool(state)) for op, args in calls]
        if state:
            row["state"] = state
        if answer:
            row["answer"] = answer
        if candidate.plan.require_calls and state:
            row["require_calls"] = True
    row["meta"] = {"synth": provenance(candidate, seed)}
    return row
