"""Operation policy: which canonical operations an episode may run, whichever way the model reaches them.

A policy is written in ``suite.yaml`` (``policy:``) or in the run config (``+policy.deny=[repo_delete]``; the
run's keys replace the suite's, key by key)::

    policy:
      deny: [repo_delete, "category:webhooks"]   # never run; the model is told so
      ask: [destructiveHint]                     # run only if the simulated user approves
      allow: ["*"]                               # an allowlist: with one, any operation it misses is denied
      user: refuse                               # the simulated user's answer to every ask: approve | refuse
      default: allow                             # what an operation no list names gets; by default: deny
                                                 # when there is an allow list, else allow

A selector is an operation name (``repo_delete``), a glob of names (``repo_*``, ``*``), ``category:NAME``, or an
MCP annotation as the catalog carries it (``readOnlyHint``, ``destructiveHint``, ``idempotentHint``; ``!readOnlyHint``
matches the operations *not* so marked: every write). Lists are read in the order deny, ask, allow: the first
list with a selector that matches decides, so a deny always wins.

The policy is enforced by the episode loop (:mod:`surfbench.bench.run.episode`), after the surface has routed a call
to its canonical operation and validated it, right before the backend would run it: the one place every canonical
call passes, whichever tool carried it (a typed tool, a dispatcher's ``operation`` argument, a loaded or searched
tool, a command tool, an SDK call of a code-mode program, a frame a program forged on its pipe). A denied call
never reaches the backend; it is recorded as a rejected call with the error type ``policy_denied`` (a refused ask:
``policy_refused``) and the model gets the text of :meth:`Enforcer.judge` as the tool's result. The policy is part
of the cell's identity: another policy is another cell.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from surfbench.bench.base.taxonomy import ErrorType
from surfbench.bench.base.validation import closest, short
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.suites.fields import SuiteError

LISTS = ("deny", "ask", "allow")
"""The lists of a policy, in the order they are read (the first that matches decides)."""
USERS = ("approve", "refuse")
"""The simulated user's answers to an ``ask``."""
DEFAULTS = ("allow", "deny", "ask")
KEYS = (*LISTS, "user", "default")
ANNOTATIONS = {"readOnlyHint": "read_only", "destructiveHint": "destructive", "idempotentHint": "idempotent"}
"""MCP's tool annotations, by the :class:`~surfbench.bench.catalog.catalog.Operation` flag that carries each."""
GLOB = frozenset("*?[")
SELECTORS = (
    "an operation name or a glob of names (repo_*), category:NAME, or an MCP annotation "
    f"({', '.join(ANNOTATIONS)}; !NAME for the operations without it)"
)

ALLOWED, DENIED, APPROVED, REFUSED = "allow", "deny", "approved", "refused"
"""What the policy made of one call (the calls table's ``policy`` column)."""


class PolicyError(SuiteError):
    """A malformed policy, or a selector that names nothing in the catalog: names where and what to write."""


@dataclass(frozen=True)
class Selector:
    """One entry of a policy list."""

    text: str
    """As written."""

    @property
    def kind(self) -> str:
        """``category``, ``annotation``, ``glob`` or ``name``."""
        if self.text.startswith("category:"):
            return "category"
        if self.text.removeprefix("!") in ANNOTATIONS:
            return "annotation"
        return "glob" if GLOB & set(self.text) else "name"

    def matches(self, op: Operation) -> bool:
        kind = self.kind
        if kind == "category":
            return op.category == self.text.removeprefix("category:")
        if kind == "annotation":
            flag = bool(getattr(op, ANNOTATIONS[self.text.removeprefix("!")]))
            return flag != self.text.startswith("!")
        if kind == "glob":
            return fnmatch.fnmatchcase(op.name, self.text)
        return op.name == self.text

    def problem(self, catalog: Catalog) -> str | None:
        """Why this selector can match nothing in ``catalog`` (a typo), or None. Annotations always apply."""
        kind = self.kind
        if kind == "category":
            name = self.text.removeprefix("category:")
            if name not in catalog.categories:
                near = closest(name, catalog.categories)
                tip = f"; did you mean {', '.join(f'category:{n}' for n in near)}?" if near else ""
                return f"no category {name!r} in catalog {catalog.name!r}{tip}"
        elif kind == "glob" and not any(self.matches(op) for op in catalog.operations):
            return f"glob {self.text!r} matches no operation of catalog {catalog.name!r}"
        elif kind == "name" and self.text not in catalog:
            near = closest(self.text, catalog.names)
            tip = f"; did you mean {', '.join(near)}?" if near else ""
            return f"no operation {self.text!r} in catalog {catalog.name!r}{tip}"
        return None


@dataclass(frozen=True)
class Ruling:
    """What the policy says of one operation, and the rule that says it."""

    decision: str
    """``allow``, ``deny`` or ``ask``."""
    rule: str
    """The list and selector that decided (``deny: destructiveHint``), or ``default: deny``."""


@dataclass(frozen=True)
class Policy:
    """A checked policy (see the module docstring)."""

    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    user: str = "refuse"
    """The simulated user's answer to every ``ask``."""
    default: str | None = None
    """For an operation no list names; None: ``deny`` when there is an allow list, else ``allow``."""

    @property
    def fallback(self) -> str:
        """The decision for an operation that no list names."""
        return self.default or ("deny" if self.allow else "allow")

    def rule(self, op: Operation) -> Ruling:
        """The decision on ``op``: the first list (deny, ask, allow) with a matching selector, else the default."""
        for decision in LISTS:
            for text in getattr(self, decision):
                if Selector(text).matches(op):
                    return Ruling(decision, f"{decision}: {text}")
        why = " (not in the allow list)" if self.allow and not self.default else ""
        return Ruling(self.fallback, f"default: {self.fallback}{why}")

    def check(self, catalog: Catalog, where: str) -> None:
        """Every selector can match an operation of ``catalog``; else a PolicyError naming it and the close ones."""
        for decision in LISTS:
            for i, text in enumerate(getattr(self, decision)):
                problem = Selector(text).problem(catalog)
                if problem:
                    raise PolicyError(f"{where}: policy.{decision}[{i}]: {problem} (a selector is {SELECTORS})")

    def as_dict(self) -> dict[str, object]:
        """The policy as written in full (what the cell identity and run.json hold)."""
        return {"deny": list(self.deny), "ask": list(self.ask), "allow": list(self.allow), "user": self.user,
                "default": self.fallback}  # fmt: skip

    def bind(self, catalog: Catalog) -> Enforcer:
        """The policy over one episode's catalog: what the loop asks before each canonical call runs."""
        return Enforcer(self, catalog)


def _selectors(value: object, key: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]  # `deny: repo_delete`: one selector, not its letters
    if not isinstance(value, list | tuple):
        raise PolicyError(f"{where}: policy.{key} must be a list of selectors, got {short(value)}")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip() or item != item.strip():
            raise PolicyError(f"{where}: policy.{key}[{i}] must be a selector ({SELECTORS}), got {short(item)}")
        if item.startswith("!") and item[1:] not in ANNOTATIONS:
            raise PolicyError(f"{where}: policy.{key}[{i}] {item!r}: '!' negates an annotation only ({SELECTORS})")
        if item.startswith("category:") and not item.removeprefix("category:"):
            raise PolicyError(f"{where}: policy.{key}[{i}]: 'category:' needs a category name")
        out.append(item)
    return tuple(dict.fromkeys(out))


def _plain(value: object) -> object:
    """An OmegaConf node (a run config) as plain containers; anything else as it is."""
    try:
        from omegaconf import OmegaConf
    except ImportError:  # pragma: no cover - omegaconf comes with hydra, a dependency
        return value
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def policy_mapping(value: object, where: str) -> dict[str, object]:
    """A policy as written (suite.yaml's or a run's), its keys and types checked; {} when absent."""
    value = _plain(value)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where}: policy must be a mapping {{deny: [...], ask: [...], allow: [...]}}, "
                          f"got {short(value)}")  # fmt: skip
    unknown = sorted(str(k) for k in value if k not in KEYS)
    if unknown:
        near = closest(unknown[0], KEYS)
        tip = f"; did you mean {near[0]}?" if near else ""
        raise PolicyError(f"{where}: policy: unknown key(s) {unknown}{tip} (keys: {', '.join(KEYS)})")
    out: dict[str, object] = {key: _selectors(value[key], key, where) for key in LISTS if key in value}
    for key, choices in (("user", USERS), ("default", DEFAULTS)):
        if key in value and value[key] is not None:
            if value[key] not in choices:
                raise PolicyError(f"{where}: policy.{key} must be one of {', '.join(choices)}, got {short(value[key])}")
            out[key] = str(value[key])
    return out


def make_policy(*layers: Mapping[str, object]) -> Policy | None:
    """The policy of checked mappings (:func:`policy_mapping`), later ones replacing earlier keys; None if empty."""
    merged: dict[str, Any] = {}  # checked by policy_mapping: Policy's own fields, of their types
    for layer in layers:
        merged.update(layer)
    if not any(merged.get(key) for key in LISTS) and merged.get("default") in (None, "allow"):
        return None  # nothing denied or asked: no policy, and the cell keeps the identity it had
    return Policy(**merged)


def parse_policy(value: object, where: str) -> Policy | None:
    """A policy as written, checked (:func:`policy_mapping`); None when it denies and asks nothing."""
    return make_policy(policy_mapping(value, where))


RUN_WHERE = "policy (the run config: +policy.deny=[...])"


def cell_policy(suite_layer: Mapping[str, object], run_layer: object, catalog: Catalog) -> Policy | None:
    """A cell's policy: the suite's (checked at load), then the run's keys over it; selectors checked on ``catalog``.

    Raises PolicyError naming the run's setting when it is malformed or names nothing.
    """
    run = policy_mapping(run_layer, RUN_WHERE)
    policy = make_policy(suite_layer, run)
    if policy is not None:
        policy.check(catalog, RUN_WHERE if run else "suite.yaml")
    return policy


@dataclass(frozen=True)
class PolicyVerdict:
    """What became of one call under the policy."""

    outcome: str
    """``allow``, ``deny``, ``approved`` or ``refused`` (:data:`ALLOWED`, ...)."""
    text: str = ""
    """For a call that does not run: the error the model gets back."""
    error_type: ErrorType | None = None
    """``policy_denied`` or ``policy_refused`` for a call that does not run."""

    @property
    def runs(self) -> bool:
        return self.outcome in (ALLOWED, APPROVED)


class Enforcer:
    """A policy over one catalog; the episode loop asks :meth:`judge` before every canonical call runs."""

    def __init__(self, policy: Policy, catalog: Catalog) -> None:
        self.policy = policy
        self.catalog = catalog

    def judge(self, operation: str) -> PolicyVerdict:
        """Whether the call to ``operation`` runs, and what the model is told when it does not."""
        op = self.catalog.get(operation) or Operation(operation, "", {"type": "object"})
        ruling = self.policy.rule(op)
        if ruling.decision == "allow":
            return PolicyVerdict(ALLOWED)
        if ruling.decision == "ask" and self.policy.user == "approve":
            return PolicyVerdict(APPROVED)
        if ruling.decision == "ask":
            text = (
                f"Operation '{operation}' needs the user's approval ({ruling.rule}); the user was asked and refused. "
                "It was not run. Do not send it again: do the task with other operations if they can, or tell "
                "the user it was not done."
            )
            return PolicyVerdict(REFUSED, text, ErrorType.POLICY_REFUSED)
        text = (
            f"Operation '{operation}' is not permitted by the operation policy ({ruling.rule}); it was not run, and "
            "no tool can run it. Do the task with other operations if they can, or tell the user it is not permitted."
        )
        return PolicyVerdict(DENIED, text, ErrorType.POLICY_DENIED)
