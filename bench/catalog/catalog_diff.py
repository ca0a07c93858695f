"""What a change to a tool catalog does, operation by operation: the core of ``surfbench diff OLD NEW`` (issue 54).

Operations are matched by name; of the ones left over, a removed and an added operation similar enough are
guessed to be one operation renamed (:func:`rename_score`). The parameters of every matched pair are compared
keyword by keyword (:func:`schema_changes`), and each change is classed as *breaking* (a call that was valid
against the old catalog may now be rejected, or the name a caller uses is gone) or *compatible*.

The comparison is conservative: what it cannot analyse (``not``, ``$ref``, ``patternProperties``...) is
reported as ``schema_changed`` and counted as breaking, so a diff that says "not breaking" can be trusted more
than one that says "breaking".
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from surfbench.bench.base.markdown import markdown_table
from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.catalog.schema_diff import SCHEMA_KINDS as SCHEMA_KINDS
from surfbench.bench.catalog.schema_diff import SchemaChange, schema_changes

OPERATION_KINDS = ("removed", "renamed", "added", "changed", "moved")
"""Kinds of :class:`OperationChange`, in the order a diff lists them."""

NAME_WEIGHT = 0.3
"""Weight of name similarity in :func:`rename_score`: a rename is exactly what changed, so it counts least."""
DESCRIPTION_WEIGHT = 0.45
"""Weight of description similarity in :func:`rename_score`: what the operation does, the surest sign of one."""
PARAMETER_WEIGHT = 0.25
"""Weight of the Jaccard similarity of the argument names in :func:`rename_score`."""

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NAME_SPLIT = re.compile(r"[\s_.\-]+")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class OperationChange:
    """What happened to one operation between two catalogs."""

    kind: str
    """``removed``, ``renamed`` (a guess), ``added``, ``changed`` or ``moved``."""
    name: str
    """The operation's name: in the new catalog, or the old one's for ``removed``."""
    old_name: str | None
    """The old name of a ``renamed`` operation; None otherwise."""
    score: float | None
    """The :func:`rename_score` of a ``renamed`` operation; None otherwise."""
    description_changed: bool
    """The operation's description differs (``renamed`` and ``changed`` only)."""
    schema_changes: tuple[SchemaChange, ...]
    """How its parameters changed (``renamed`` and ``changed`` only)."""
    old_position: int | None
    """Index of the operation in the old catalog (0-based); None when ``added``."""
    new_position: int | None
    """Index of the operation in the new catalog (0-based); None when ``removed``."""

    @property
    def breaking(self) -> bool:
        """Whether old callers may fail: a removal, a rename (they use the old name), a breaking schema change."""
        if self.kind in ("removed", "renamed"):
            return True
        return self.kind == "changed" and any(change.breaking for change in self.schema_changes)


@dataclass(frozen=True)
class CatalogDiff:
    """Every operation change from one catalog to another (:func:`diff_catalogs`)."""

    old_name: str
    new_name: str
    old_count: int
    """Operations in the old catalog."""
    new_count: int
    """Operations in the new catalog."""
    changes: tuple[OperationChange, ...]
    """Removed, renamed, added, changed, moved; each kind by name."""

    @property
    def breaking(self) -> tuple[OperationChange, ...]:
        """The changes that may make an old caller fail."""
        return tuple(change for change in self.changes if change.breaking)

    @property
    def unchanged(self) -> int:
        """Operations of the new catalog with the same name, description, schema and relative place as before."""
        return self.new_count - sum(1 for change in self.changes if change.kind != "removed")

    @property
    def order_changed(self) -> bool:
        """The operations common to both catalogs (by name) are in a different relative order."""
        return any(change.kind == "moved" for change in self.changes) or _common_order_changed(self.changes)

    def count(self, kind: str) -> int:
        """How many operation changes are of ``kind``."""
        return sum(1 for change in self.changes if change.kind == kind)


def _kept_in_order(order: Sequence[str], rank: Mapping[str, int]) -> set[str]:
    """A longest subsequence of ``order`` whose ``rank`` increases: the operations that did not move.

    Patience sorting, O(n log n); of equally long ones, the one ending earliest in ``order`` at each length.
    Kept here (not difflib): ``SequenceMatcher`` matches contiguous blocks and is not a longest subsequence.
    """
    tails: list[int] = []  # tails[k]: index into order of the smallest rank ending a kept run of length k + 1
    tail_ranks: list[int] = []  # their ranks, for the search
    before: list[int] = [-1] * len(order)
    for i, name in enumerate(order):
        k = bisect.bisect_left(tail_ranks, rank[name])
        before[i] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(i)
            tail_ranks.append(rank[name])
        else:
            tails[k], tail_ranks[k] = i, rank[name]
    out, i = set(), tails[-1] if tails else -1
    while i >= 0:
        out.add(order[i])
        i = before[i]
    return out


def _common_order_changed(changes: Sequence[OperationChange]) -> bool:
    """Whether the ``changed`` operations alone (a moved one that changed too is ``changed``) show a reordering."""
    moved = [c for c in changes if c.kind == "changed" and c.old_position is not None and c.new_position is not None]
    by_old = [c.name for c in sorted(moved, key=lambda c: c.old_position or 0)]
    by_new = [c.name for c in sorted(moved, key=lambda c: c.new_position or 0)]
    return by_old != by_new


# ---- renames ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Profile:
    """What :func:`rename_score` compares of one operation, computed once per operation."""

    name_words: tuple[str, ...]
    name_text: str
    description_words: tuple[str, ...]
    properties: frozenset[str]


def _profile(op: Operation) -> _Profile:
    words = tuple(w.lower() for w in _NAME_SPLIT.split(_CAMEL.sub(" ", op.name)) if w)
    props = op.parameters.get("properties")
    return _Profile(
        name_words=words,
        name_text=" ".join(words),
        description_words=tuple(_WORD.findall(op.description.lower())),
        properties=frozenset(props) if isinstance(props, Mapping) else frozenset(),
    )


def _ratio(a: Sequence[str], b: Sequence[str]) -> float:
    if not a and not b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _length_bound(a: Sequence[str], b: Sequence[str]) -> float:
    """An upper bound of :func:`_ratio` from the lengths alone (difflib's ``real_quick_ratio``)."""
    total = len(a) + len(b)
    return 1.0 if total == 0 else 2.0 * min(len(a), len(b)) / total


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def _score(old: _Profile, new: _Profile) -> float:
    name = (_ratio(old.name_words, new.name_words) + _ratio(old.name_text, new.name_text)) / 2
    description = _ratio(old.description_words, new.description_words)
    parameters = _jaccard(old.properties, new.properties)
    return NAME_WEIGHT * name + DESCRIPTION_WEIGHT * description + PARAMETER_WEIGHT * parameters


def _score_bound(old: _Profile, new: _Profile) -> float:
    """An upper bound of :func:`_score` that costs no matching: skips pairs that cannot reach the threshold."""
    name = (_length_bound(old.name_words, new.name_words) + _length_bound(old.name_text, new.name_text)) / 2
    description = _length_bound(old.description_words, new.description_words)
    parameters = _jaccard(old.properties, new.properties)
    return NAME_WEIGHT * name + DESCRIPTION_WEIGHT * description + PARAMETER_WEIGHT * parameters


def rename_score(old: Operation, new: Operation) -> float:
    """How much ``new`` looks like ``old`` under another name, in [0, 1] (1: same name, text and arguments).

    A weighted mean of three similarities:

    - name, weight :data:`NAME_WEIGHT` (0.3): the names are split into lower-case words (on ``_ - .``, spaces
      and camelCase); the mean of :class:`difflib.SequenceMatcher`'s ratio over the word sequences and over
      the words joined by spaces (so ``repo_get`` -> ``repository_get`` still scores, though no word matches);
    - description, weight :data:`DESCRIPTION_WEIGHT` (0.45): the ratio over the descriptions' lower-case words;
      what an operation does is what a rename keeps, so this weighs most;
    - parameters, weight :data:`PARAMETER_WEIGHT` (0.25): the Jaccard similarity of the argument names (both
      empty: 1); it weighs least because the operations of one API share many (``owner``, ``repo``).

    An operation renamed with its description and arguments unchanged scores at least 0.7, above the default
    threshold of :func:`diff_catalogs` (0.6), whatever its names.

    difflib is in the standard library: no dependency, deterministic, fast enough for the pairs a diff
    compares, and its ratio (2 * matches / total length) is a plain, documented measure. Embeddings would
    judge meaning better but need a model, which a diff of two files should not.
    """
    return _score(_profile(old), _profile(new))


def _pair_renames(
    removed: Sequence[Operation], added: Sequence[Operation], threshold: float
) -> list[tuple[Operation, Operation, float]]:
    """Removed x added pairs guessed to be renames: the highest score first, each operation at most once."""
    old_profiles = {op.name: _profile(op) for op in removed}
    new_profiles = {op.name: _profile(op) for op in added}
    candidates: list[tuple[float, str, str]] = []
    for old in removed:
        for new in added:
            p, q = old_profiles[old.name], new_profiles[new.name]
            if _score_bound(p, q) < threshold:
                continue
            score = _score(p, q)
            if score >= threshold:
                candidates.append((-score, old.name, new.name))
    candidates.sort()  # best score first; ties by old name, then new name
    by_old = {op.name: op for op in removed}
    by_new = {op.name: op for op in added}
    taken_old: set[str] = set()
    taken_new: set[str] = set()
    pairs = []
    for negative, old_name, new_name in candidates:
        if old_name in taken_old or new_name in taken_new:
            continue
        taken_old.add(old_name)
        taken_new.add(new_name)
        pairs.append((by_old[old_name], by_new[new_name], -negative))
    return pairs


# ---- catalogs ---------------------------------------------------------------------------------------------------


def diff_catalogs(old: Catalog, new: Catalog, rename_threshold: float = 0.6) -> CatalogDiff:
    """What changed from ``old`` to ``new``, operation by operation.

    Operations are matched by name. Of those left over, removed x added pairs whose :func:`rename_score` is at
    least ``rename_threshold`` are paired greedily, highest score first (ties by old name, then new name), as
    ``renamed``; the rest are ``removed`` or ``added``. A matched operation whose description or parameters
    differ is ``changed``. When the operations common to both catalogs are in another relative order, the
    fewest that explain it are ``moved``: every common operation outside a longest sequence kept in the same
    relative order (one tool moved to the end is one move, not a shift of every tool after it).

    Args:
        old: The catalog before.
        new: The catalog after.
        rename_threshold: Lowest :func:`rename_score` taken as a rename; above 1 turns rename guessing off.

    Returns:
        The diff; its changes ordered removed, renamed, added, changed, moved, each by name.
    """
    old_index = {op.name: i for i, op in enumerate(old.operations)}
    new_index = {op.name: i for i, op in enumerate(new.operations)}
    removed = [op for op in old.operations if op.name not in new_index]
    added = [op for op in new.operations if op.name not in old_index]
    pairs = _pair_renames(removed, added, rename_threshold)
    renamed_old = {o.name for o, _, _ in pairs}
    renamed_new = {n.name for _, n, _ in pairs}

    changes: list[OperationChange] = []
    for op in removed:
        if op.name not in renamed_old:
            changes.append(OperationChange("removed", op.name, None, None, False, (), old_index[op.name], None))
    for before, after, score in pairs:
        changes.append(
            OperationChange(
                "renamed",
                after.name,
                before.name,
                score,
                before.description != after.description,
                tuple(schema_changes(before.parameters, after.parameters)),
                old_index[before.name],
                new_index[after.name],
            )
        )
    for op in added:
        if op.name not in renamed_new:
            changes.append(OperationChange("added", op.name, None, None, False, (), None, new_index[op.name]))

    common_old = [op.name for op in old.operations if op.name in new_index]
    common_new = [op.name for op in new.operations if op.name in old_index]
    stayed = _kept_in_order(common_old, {name: i for i, name in enumerate(common_new)})
    for name in common_old:
        before, after = old[name], new[name]
        found = tuple(schema_changes(before.parameters, after.parameters))
        described = before.description != after.description
        positions = (old_index[name], new_index[name])
        if found or described:
            changes.append(OperationChange("changed", name, None, None, described, found, *positions))
        elif name not in stayed:
            changes.append(OperationChange("moved", name, None, None, False, (), *positions))

    rank = {kind: i for i, kind in enumerate(OPERATION_KINDS)}
    changes.sort(key=lambda change: (rank[change.kind], change.name))
    return CatalogDiff(old.name, new.name, len(old), len(new), tuple(changes))


# ---- reports ----------------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _operation_detail(change: OperationChange) -> str:
    if change.kind == "removed":
        return "no longer in the catalog: calls by this name fail"
    if change.kind == "added":
        return "new operation"
    if change.kind == "moved":
        assert change.old_position is not None and change.new_position is not None
        return f"position {change.old_position + 1} -> {change.new_position + 1}"
    parts = []
    if change.kind == "renamed":
        parts.append(f"renamed from {change.old_name}? (similarity {change.score or 0:.2f}, a guess)")
    if change.description_changed:
        parts.append("description changed")
    if change.schema_changes:
        n = len(change.schema_changes)
        broken = sum(1 for c in change.schema_changes if c.breaking)
        parts.append(f"{n} schema change{'s' if n != 1 else ''} ({broken} breaking)")
    return "; ".join(parts)


def summary_line(diff: CatalogDiff) -> str:
    """``96 operations -> 95: 1 added, 2 removed, 1 renamed (guesses), 3 changed (2 breaking), order changed: no``."""
    changed = [c for c in diff.changes if c.kind == "changed"]
    return (
        f"{diff.old_count} operations -> {diff.new_count}: {diff.count('added')} added, "
        f"{diff.count('removed')} removed, {diff.count('renamed')} renamed (guesses), "
        f"{len(changed)} changed ({sum(1 for c in changed if c.breaking)} breaking), "
        f"order changed: {_yes(diff.order_changed)}"
    )


def format_markdown(diff: CatalogDiff) -> str:
    """The diff for a person: :func:`summary_line`, then a table of one row per operation change and per schema change.

    Positions in the table count from 1; :func:`to_json` keeps the 0-based indices.
    """
    if not diff.changes:
        return summary_line(diff) + "\n\nNo operation changed.\n"
    rows: list[list[str]] = []
    for change in diff.changes:
        rows.append([change.kind, f"`{change.name}`", _yes(change.breaking), _cell(_operation_detail(change))])
        for sub in change.schema_changes:
            where = f"`{change.name}` `{sub.path or '(root)'}`"
            rows.append([f"↳ {sub.kind}", _cell(where), _yes(sub.breaking), _cell(sub.detail)])
    return summary_line(diff) + "\n\n" + markdown_table(["change", "operation", "breaking", "detail"], rows) + "\n"


def to_json(diff: CatalogDiff) -> dict[str, object]:
    """The diff as plain JSON values: the summary counts and every change with its schema changes."""
    return {
        "old": {"name": diff.old_name, "count": diff.old_count},
        "new": {"name": diff.new_name, "count": diff.new_count},
        "summary": {
            **{kind: diff.count(kind) for kind in OPERATION_KINDS},
            "unchanged": diff.unchanged,
            "breaking": len(diff.breaking),
            "order_changed": diff.order_changed,
        },
        "changes": [
            {
                "kind": change.kind,
                "name": change.name,
                "old_name": change.old_name,
                "score": None if change.score is None else round(change.score, 4),
                "breaking": change.breaking,
                "description_changed": change.description_changed,
                "old_position": change.old_position,
                "new_position": change.new_position,
                "schema_changes": [
                    {"path": sc.path, "kind": sc.kind, "breaking": sc.breaking, "detail": sc.detail}
                    for sc in change.schema_changes
                ],
            }
            for change in diff.changes
        ],
    }
