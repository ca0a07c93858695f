"""The synthesis templates a suite ships (``synth/templates.yaml``): what ``surfbench synth`` may ask, and how.

One file per suite, beside its ``suite.yaml`` in ``synth/``::

    world: world.py:pools          # optional: fn(state) -> {pool: [bundle, ...]}, a bundle a dict of slot values
    refusal_words: [cannot, ...]   # what a refusal answer contains (one of them); default: REFUSAL_WORDS
    values:                        # named lists a template draws from with $name (new titles, comments, ...)
      title: [Footer links are broken, ...]
    ops:                           # per operation: the pool its arguments come from and its phrasings
      issue_get:
        pool: issue                # draw a bundle of this pool; its fields fill the required arguments by name
        args: {}                   # arguments every phrasing of the operation gets (see the value syntax below)
        say:
          - {text: "What is issue #{index} in {owner}/{repo} about?", answer: title}
          - {text: "Close issue {index} of {owner}/{repo}.", args: {state: closed}, pool: open_issue}
    pairs:                         # multi-call tasks: calls that feed each other (create then read back, ...)
      create-then-read:
        pool: repo
        calls: [issue_create, issue_get]
        require_calls: true        # the request asks for every call (default: the state reached is what counts)
        say:
          - {text: "Open an issue ...", args: [{title: $title}, {index: "<0.number"}], answer: "1:state"}
    refuse:                        # requests no operation serves; slots from a bundle of the pool
      - {pool: repo, text: "Re-run the CI pipeline for {owner}/{repo}."}

Argument values: a literal; ``"@field"`` a field of the drawn bundle; ``"$name"`` one of ``values[name]``;
``{$pick: [a, b]}`` one of these; ``"<i.path"`` a field of call ``i``'s result (pairs: the call that feeds
this one); a string with ``{slot}`` is rendered. A required argument not given comes from the bundle by
name, else from the world's values, else from the schema; an optional one only when ``args`` names it.
``answer``: where the answer is in the result: a dotted path (``title``, ``issues.*.title``), a
``/regex/`` over the result's text (group 1), or ``{path, true: [...], false: [...]}`` for a yes/no;
``i:`` in front names the call (default: the last). Without one, a read's answer is picked from its
result. A phrasing's ``pool`` replaces its operation's. A template's id is ``op.N`` (``pair:name.N``,
``refuse.N``): its place in its list, from 1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surfbench.bench.base.validation import closest
from surfbench.bench.catalog.catalog import Catalog
from surfbench.bench.suites.fields import SuiteError, read_yaml

TEMPLATES = Path("synth") / "templates.yaml"
"""Where a suite keeps its templates, relative to its folder."""
REFUSAL_WORDS = (
    "can't", "cannot", "unable", "not able", "no tool", "don't have", "not possible", "not supported",
    "not available", "isn't",
)  # fmt: skip
"""What a refusal's answer must contain one of (the shipped suites' hand-written refusals use these)."""
SLOT = re.compile(r"\{(\w+)\}")
SPEC_KEYS = frozenset({"world", "refusal_words", "values", "ops", "pairs", "refuse"})
OP_KEYS = frozenset({"pool", "args", "say"})
PAIR_KEYS = frozenset({"pool", "calls", "say", "require_calls"})
SAY_KEYS = frozenset({"text", "args", "answer", "pool"})
REFUSE_KEYS = frozenset({"pool", "text"})


@dataclass(frozen=True)
class Say:
    """One phrasing: its text with ``{slot}``s, the arguments it sets (one mapping per call), where the answer is."""

    id: str
    """``op.N``, ``pair:name.N`` or ``refuse.N``: recorded with every task made from it."""
    text: str
    args: tuple[dict[str, Any], ...] = ()
    answer: Any = None
    pool: str | None = None
    """The pool this phrasing draws from, when not its plan's."""
    generated: bool = False
    """Made from the operation's description (the suite ships no phrasing for it)."""


@dataclass(frozen=True)
class SynthPlan:
    """What one operation (or one pair of calls) can be asked: its calls, the pool they draw from, its phrasings."""

    key: str
    """The operation's name, or ``pair:NAME``."""
    ops: tuple[str, ...]
    pool: str | None
    says: tuple[Say, ...]
    base_args: tuple[dict[str, Any], ...] = ()
    require_calls: bool = False
    """Every call must be made (the request asks for each), not only the state reached."""

    @property
    def is_pair(self) -> bool:
        return len(self.ops) > 1


@dataclass(frozen=True)
class SynthSpec:
    """A suite's templates, checked against its catalog."""

    source: str
    """The templates file, or ``(generated)`` when the suite ships none."""
    world_hook: str | None
    values: dict[str, list[Any]]
    plans: dict[str, SynthPlan]
    """Per operation (in catalog order; every operation has one), then the pairs."""
    refusals: tuple[tuple[Say, str | None], ...] = ()
    refusal_words: tuple[str, ...] = REFUSAL_WORDS
    folder: Path = field(default=Path("."))


def _where(path: Path, *parts: object) -> str:
    return f"{path}: " + ".".join(str(p) for p in parts)


def _mapping(value: object, where: str, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise SuiteError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        near = closest(unknown[0], allowed)
        tip = f" (did you mean {near[0]!r}?)" if near else ""
        raise SuiteError(f"{where}: unknown key {unknown[0]!r}{tip}; allowed: {', '.join(sorted(allowed))}")
    return dict(value)


def _say(raw: object, sid: str, ncalls: int, where: str) -> Say:
    row = {"text": raw} if isinstance(raw, str) else _mapping(raw, where, SAY_KEYS)
    text = row.get("text")
    if not isinstance(text, str) or not text.strip():
        raise SuiteError(f"{where}: needs a text (the request, with {{slot}}s)")
    args = row.get("args") or ({} if ncalls == 1 else [{}] * ncalls)
    if ncalls == 1 and isinstance(args, Mapping):
        args = [args]
    if not isinstance(args, list) or len(args) != ncalls or not all(isinstance(a, Mapping) for a in args):
        raise SuiteError(f"{where}.args: expected {'a mapping' if ncalls == 1 else f'a list of {ncalls} mappings'}")
    pool = row.get("pool")
    return Say(sid, text.strip(), tuple(dict(a) for a in args), row.get("answer"), str(pool) if pool else None)


def _check_ops(ops: list[str], catalog: Catalog, where: str) -> None:
    for op in ops:
        if op not in catalog:
            near = closest(op, catalog.names)
            tip = f" (did you mean {near[0]}?)" if near else ""
            raise SuiteError(f"{where}: operation {op!r} not in the catalog{tip}")


def _named_values(value: object) -> list[str]:
    """The ``$name`` references in an argument value (``{$pick: [...]}`` looked into)."""
    if isinstance(value, str):
        return [value[1:]] if value.startswith("$") else []
    if isinstance(value, Mapping):
        return [n for v in value.values() for n in _named_values(v)]
    if isinstance(value, list):
        return [n for v in value for n in _named_values(v)]
    return []


def _check_args(plan: SynthPlan, catalog: Catalog, where: str, values: Mapping[str, object]) -> None:
    for say in plan.says:
        for n, (op, args) in enumerate(zip(plan.ops, say.args, strict=True)):
            unknown = [name for name in _named_values({**plan.base_args[n], **args}) if name not in values]
            if unknown:
                near = closest(unknown[0], list(values))
                tip = f" (did you mean ${near[0]}?)" if near else ""
                raise SuiteError(f"{where} {say.id}: ${unknown[0]} is not a list under values:{tip}")
            params = catalog[op].parameters.get("properties") or {}
            for key in args:
                if key not in params:
                    near = closest(key, list(params))
                    tip = f" (did you mean {near[0]!r}?)" if near else ""
                    raise SuiteError(f"{where} {say.id}: {op} has no argument {key!r}{tip}")


def load_spec(folder: Path, catalog: Catalog) -> SynthSpec:
    """The suite's ``synth/templates.yaml`` (every operation it leaves out gets phrasings from its description)."""
    path = folder / TEMPLATES
    raw: dict[str, Any] = {}
    if path.is_file():
        raw = _mapping(read_yaml(path, "suite file") or {}, str(path), SPEC_KEYS)
    values = {str(k): list(v) for k, v in _mapping(raw.get("values") or {}, _where(path, "values"), _ANY).items()}
    plans: dict[str, SynthPlan] = {}
    ops = _mapping(raw.get("ops") or {}, _where(path, "ops"), _ANY)
    _check_ops(list(ops), catalog, _where(path, "ops"))
    for op in catalog.names:
        if op not in ops:
            plans[op] = generated_plan(catalog, op)
            continue
        row = _mapping(ops[op], _where(path, "ops", op), OP_KEYS)
        says = tuple(
            _say(s, f"{op}.{i}", 1, _where(path, "ops", op, "say", i)) for i, s in enumerate(row.get("say") or [], 1)
        )
        if not says:
            raise SuiteError(f"{_where(path, 'ops', op)}: needs at least one phrasing under say:")
        base = _mapping(row.get("args") or {}, _where(path, "ops", op, "args"), _ANY)
        plans[op] = SynthPlan(op, (op,), row.get("pool"), says, (base,))
        _check_args(plans[op], catalog, _where(path, "ops", op), values)
    for name, value in _mapping(raw.get("pairs") or {}, _where(path, "pairs"), _ANY).items():
        row = _mapping(value, _where(path, "pairs", name), PAIR_KEYS)
        calls = [str(c) for c in row.get("calls") or []]
        if len(calls) < 2:
            raise SuiteError(f"{_where(path, 'pairs', name)}: calls needs two or more operations")
        _check_ops(calls, catalog, _where(path, "pairs", name, "calls"))
        key = f"pair:{name}"
        says = tuple(
            _say(s, f"{key}.{i}", len(calls), _where(path, "pairs", name, "say", i))
            for i, s in enumerate(row.get("say") or [], 1)
        )
        need = bool(row.get("require_calls"))
        plans[key] = SynthPlan(key, tuple(calls), row.get("pool"), says, tuple({} for _ in calls), need)
        _check_args(plans[key], catalog, _where(path, "pairs", name), values)
    refusals = []
    for i, value in enumerate(raw.get("refuse") or [], 1):
        row = {"text": value} if isinstance(value, str) else _mapping(value, _where(path, "refuse", i), REFUSE_KEYS)
        refusals.append((Say(f"refuse.{i}", str(row["text"]).strip()), row.get("pool")))
    words = tuple(str(w) for w in raw.get("refusal_words") or REFUSAL_WORDS)
    return SynthSpec(
        str(path) if raw else "(generated)", raw.get("world"), values, plans, tuple(refusals), words, folder
    )


class _Anything(frozenset[str]):
    """Any key allowed (a mapping of names the file chooses)."""

    def __contains__(self, key: object) -> bool:
        return True


_ANY = _Anything()


def name_parts(name: str) -> list[str]:
    """An identifier's words, as written: ``entityNames`` -> ``entity``, ``Names`` (``_`` and punctuation split too)."""
    return [p for p in re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", name) if p]


def words_of(name: str) -> str:
    """``new_branch_name`` -> ``new branch name``; ``entityNames`` -> ``entity names`` (``repoURL``: ``repo URL``)."""
    parts = name_parts(name)
    return " ".join(p.lower() if p[:1].isupper() and p[1:].islower() and i else p for i, p in enumerate(parts))


def _phrase(catalog: Catalog, op: str) -> tuple[str, str, str]:
    """(description, the same lower-cased, ", for the X '{x}', ...") of an operation, for generated phrasings."""
    description = catalog[op].description.strip().split("\n")[0].rstrip(".").strip() or words_of(op)
    lead = description[0].lower() + description[1:]
    required = list(catalog[op].required)
    given = ", ".join(f"the {words_of(p)} {_quoted(catalog, op, p)}" for p in required)
    return description, lead, f", for {given}" if given else ""


def generated_plan(catalog: Catalog, op: str) -> SynthPlan:
    """Phrasings for an operation the suite ships none for, from its description and its required arguments."""
    description, lead, tail = _phrase(catalog, op)
    forms = [f"{description}{tail}.", f"Please {lead}{tail}.", f"I need you to {lead}{tail}."]
    says = tuple(Say(f"{op}.{i}", text, ({},), generated=True) for i, text in enumerate(forms, 1))
    return SynthPlan(op, (op,), None, says, ({},))


def generated_pair(catalog: Catalog, first: str, then: str) -> SynthPlan:
    """Two calls asked in one request, phrased from the two descriptions (a suite with no templates).

    For an operation that cannot act alone (a commit with nothing staged) after one that makes it possible
    (staging a file).
    """
    d1, l1, t1 = _phrase(catalog, first)
    _, l2, t2 = _phrase(catalog, then)
    forms = [f"{d1}{t1}, then {l2}{t2}.", f"Please {l1}{t1}, and after that {l2}{t2}."]
    key = f"pair:{first}-then-{then}"
    says = tuple(Say(f"{key}.{i}", text, ({}, {}), generated=True) for i, text in enumerate(forms, 1))
    return SynthPlan(key, (first, then), None, says, ({}, {}), require_calls=True)


def _quoted(catalog: Catalog, op: str, param: str) -> str:
    """The slot of an argument as a generated phrasing says it: a text quoted, anything else as it is."""
    schema = (catalog[op].parameters.get("properties") or {}).get(param) or {}
    return f"'{{{param}}}'" if schema.get("type") == "string" and not schema.get("enum") else f"{{{param}}}"


def slots(text: str) -> list[str]:
    """The ``{slot}`` names of a phrasing, in order."""
    return SLOT.findall(text)


def shown(value: object) -> str:
    """A value as a request says it: lists as ``a, b and c``."""
    if isinstance(value, list | tuple):
        items = [shown(v) for v in value]
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):  # an object argument's fields in words: from Bob, to Acme, relation type works_at
        return ", ".join(f"{words_of(str(k))} {shown(v)}" for k, v in value.items())
    return str(value)


def missing_slots(text: str, values: Mapping[str, object]) -> list[str]:
    """The slots of a phrasing that ``values`` gives no value."""
    return [s for s in slots(text) if values.get(s) in (None, "", [])]


def render(text: str, values: Mapping[str, object]) -> str | None:
    """The phrasing with every slot filled (None when one has no value)."""
    if missing_slots(text, values):
        return None
    return SLOT.sub(lambda m: shown(values[m.group(1)]), text)
