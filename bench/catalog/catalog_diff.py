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

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from surfbench.bench.base.markdown import markdown_table
from surfbench.bench.base.validation import short
from surfbench.bench.catalog.catalog import JSON_TYPES, Catalog, Operation

SCHEMA_KINDS: dict[str, str] = {
    "required_added": "breaking: a new required argument, or an optional one made required",
    "property_removed": "breaking: an argument the old schema accepted is gone",
    "property_added": "compatible: a new optional argument",
    "required_removed": "compatible: a required argument made optional",
    "type_narrowed": "breaking: fewer types accepted (number -> integer, a type dropped from a list)",
    "type_widened": "compatible: more types accepted (integer -> number, null added)",
    "type_changed": "breaking: a different type, neither narrower nor wider",
    "enum_value_removed": "breaking: a value of an enum (or const) no longer allowed",
    "enum_value_added": "compatible: a new value of an enum",
    "enum_added": "breaking: values newly limited to an enum (or const)",
    "enum_removed": "compatible: the enum (or const) lifted",
    "description_changed": "compatible: a schema's description changed",
    "default_changed": "compatible: a default added, removed or changed",
    "annotation_changed": "compatible: title, examples, $comment, deprecated, readOnly/writeOnly or x-* changed",
    "additional_closed": "breaking: additionalProperties now false",
    "additional_opened": "compatible: additionalProperties no longer false",
    "constraint_tightened": "breaking: a bound raised or lowered to allow less, or pattern/format/multipleOf set",
    "constraint_loosened": "compatible: a bound or pattern/format/multipleOf relaxed or dropped",
    "union_changed": "anyOf/oneOf changed as a whole: compatible when branches were only added",
    "all_of_changed": "allOf changed as a whole: compatible when branches were only removed",
    "items_changed": "breaking: tuple-form items changed in length or form",
    "schema_changed": "breaking: a keyword this comparison does not analyse changed",
}
"""Every kind of :class:`SchemaChange` :func:`schema_changes` reports, and whether it breaks old calls."""

OPERATION_KINDS = ("removed", "renamed", "added", "changed", "moved")
"""Kinds of :class:`OperationChange`, in the order a diff lists them."""

NAME_WEIGHT = 0.3
"""Weight of name similarity in :func:`rename_score`: a rename is exactly what changed, so it counts least."""
DESCRIPTION_WEIGHT = 0.45
"""Weight of description similarity in :func:`rename_score`: what the operation does, the surest sign of one."""
PARAMETER_WEIGHT = 0.25
"""Weight of the Jaccard similarity of the argument names in :func:`rename_score`."""

_ANNOTATIONS = frozenset(("title", "examples", "$comment", "deprecated", "readOnly", "writeOnly"))
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_HANDLED = frozenset(
    ("type", "nullable", "enum", "const", "description", "default", "properties", "required", "additionalProperties",
     "items", "anyOf", "oneOf", "allOf", "pattern", "format", "multipleOf", "uniqueItems",
     *_LOWER_BOUNDS, *_UPPER_BOUNDS, *_ANNOTATIONS)
)  # fmt: skip
_ALL_TYPES = frozenset(JSON_TYPES)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NAME_SPLIT = re.compile(r"[\s_.\-]+")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class SchemaChange:
    """One difference between two parameter schemas."""

    path: str
    """Dot-joined keys from the schema root: ``properties.owner``, ``properties.labels.items.enum``; "" = root."""
    kind: str
    """One of :data:`SCHEMA_KINDS`."""
    breaking: bool
    """A call valid against the old schema may be rejected by the new one."""
    detail: str
    """What changed, for a person: ``new required argument 'milestone' (string)``."""


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


def _common_order_changed(changes: Sequence[OperationChange]) -> bool:
    """Whether the ``changed`` operations alone (a moved one that changed too is ``changed``) show a reordering."""
    moved = [c for c in changes if c.kind == "changed" and c.old_position is not None and c.new_position is not None]
    by_old = [c.name for c in sorted(moved, key=lambda c: c.old_position or 0)]
    by_new = [c.name for c in sorted(moved, key=lambda c: c.new_position or 0)]
    return by_old != by_new


# ---- schemas ----------------------------------------------------------------------------------------------------


def schema_changes(old: Mapping[str, Any], new: Mapping[str, Any], path: str = "") -> list[SchemaChange]:
    """Every difference between two JSON Schemas that a caller could notice, classed (:data:`SCHEMA_KINDS`).

    Walks objects (``properties``, ``required``, ``additionalProperties``), arrays (``items``), enums, types
    and bounds recursively; ``anyOf``/``oneOf``/``allOf`` are compared as a whole. A keyword it does not
    analyse is reported as ``schema_changed``, breaking.

    Args:
        old: The schema before, e.g. an operation's ``parameters``.
        new: The schema after.
        path: Prefix of every reported path ("" for the root).

    Returns:
        The changes sorted by path, then kind (then detail); [] when the schemas are equal.
    """
    out: list[SchemaChange] = []
    _compare(old, new, path, out)
    return sorted(out, key=lambda change: (change.path, change.kind, change.detail))


def _join(path: str, *keys: str) -> str:
    return ".".join((path, *keys)) if path else ".".join(keys)


def _as_schema(value: Any) -> dict[str, Any]:
    """A schema as a dict: ``true`` (or absent) accepts anything, ``false`` nothing."""
    if isinstance(value, Mapping):
        return dict(value)
    if value is None or value is True:
        return {}
    if value is False:
        return {"not": {}}
    return {"$invalid": value}  # not a schema at all: any difference is reported by the generic comparison


def _compare(old_value: Any, new_value: Any, path: str, out: list[SchemaChange]) -> None:
    old, new = _as_schema(old_value), _as_schema(new_value)
    if old == new:
        return
    _compare_types(old, new, path, out)
    _compare_values(old, new, path, out)
    _compare_annotations(old, new, path, out)
    _compare_bounds(old, new, path, out)
    _compare_object(old, new, path, out)
    _compare_items(old, new, path, out)
    _compare_combinations(old, new, path, out)
    for key in sorted((old.keys() | new.keys()) - _HANDLED):
        if old.get(key) != new.get(key):
            if key.startswith("x-"):
                out.append(SchemaChange(_join(path, key), "annotation_changed", False, _before_after(old, new, key)))
            else:
                detail = f"keyword {key!r} changed (not analysed: treated as breaking)"
                out.append(SchemaChange(_join(path, key), "schema_changed", True, detail))


def _before_after(old: Mapping[str, Any], new: Mapping[str, Any], key: str, limit: int = 40) -> str:
    before = short(old[key], limit) if key in old else "(none)"
    after = short(new[key], limit) if key in new else "(none)"
    return f"{before} -> {after}"


def _accepted(schema: Mapping[str, Any]) -> frozenset[str]:
    """The JSON types a schema's ``type`` (and OpenAPI's ``nullable``) lets through; every type when absent."""
    declared = schema.get("type")
    if declared is None:
        return _ALL_TYPES
    names = {declared} if isinstance(declared, str) else {str(t) for t in declared}
    if "number" in names:
        names.add("integer")  # every integer is a number
    if schema.get("nullable") is True:
        names.add("null")
    return frozenset(names)


def _type_text(schema: Mapping[str, Any]) -> str:
    declared = schema.get("type")
    text = "/".join(str(t) for t in declared) if isinstance(declared, list) else str(declared or "any")
    return text + (" (nullable)" if schema.get("nullable") is True and declared is not None else "")


def _compare_types(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    before, after = _accepted(old), _accepted(new)
    if before == after:
        return
    detail = f"type {_type_text(old)} -> {_type_text(new)}"
    if before < after:
        out.append(SchemaChange(_join(path, "type"), "type_widened", False, detail))
    elif after < before:
        out.append(SchemaChange(_join(path, "type"), "type_narrowed", True, detail))
    else:
        out.append(SchemaChange(_join(path, "type"), "type_changed", True, detail))


def _allowed_values(schema: Mapping[str, Any]) -> list[Any] | None:
    """The values an ``enum`` (or a ``const``, as an enum of one) allows; None when neither limits them."""
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    return None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _values_text(values: Sequence[Any]) -> str:
    shown = ", ".join(short(v, 30) for v in values[:8])
    return shown + (f" and {len(values) - 8} more" if len(values) > 8 else "")


def _compare_values(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    before, after = _allowed_values(old), _allowed_values(new)
    if before is None and after is None:
        return
    where = _join(path, "enum" if "enum" in old or "enum" in new else "const")
    if before is None and after is not None:
        out.append(SchemaChange(where, "enum_added", True, f"values now limited to {_values_text(after)}"))
        return
    if after is None and before is not None:
        out.append(SchemaChange(where, "enum_removed", False, f"no longer limited to {_values_text(before)}"))
        return
    assert before is not None and after is not None
    old_keys, new_keys = {_canonical(v) for v in before}, {_canonical(v) for v in after}
    removed = [v for v in before if _canonical(v) not in new_keys]
    added = [v for v in after if _canonical(v) not in old_keys]
    if removed:
        out.append(SchemaChange(where, "enum_value_removed", True, f"no longer allowed: {_values_text(removed)}"))
    if added:
        out.append(SchemaChange(where, "enum_value_added", False, f"newly allowed: {_values_text(added)}"))


def _compare_annotations(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    if old.get("description") != new.get("description"):
        detail = _before_after(old, new, "description")
        out.append(SchemaChange(_join(path, "description"), "description_changed", False, detail))
    if ("default" in old) != ("default" in new) or old.get("default") != new.get("default"):
        out.append(SchemaChange(_join(path, "default"), "default_changed", False, _before_after(old, new, "default")))
    for key in sorted(_ANNOTATIONS):
        if old.get(key) != new.get(key):
            out.append(SchemaChange(_join(path, key), "annotation_changed", False, _before_after(old, new, key)))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bound_tighter(key: str, before: Any, after: Any, lower: bool) -> bool:
    """Whether moving bound ``key`` from ``before`` to ``after`` (either None: absent) allows fewer values."""
    if isinstance(before, bool) or isinstance(after, bool):  # draft 4's exclusiveMinimum/Maximum flags
        if before in (None, False) and after in (None, False):
            return False
        return after is True or not (before is True and after in (None, False))
    if before is None:
        return True
    if after is None:
        return False
    if not (_is_number(before) and _is_number(after)):
        return True  # not numbers: cannot tell, so the cautious answer
    return bool(after > before) if lower else bool(after < before)


def _is_multiple(value: float, of: float) -> bool:
    if of == 0:
        return False
    quotient = value / of
    return math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9)


def _compare_bounds(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    def report(key: str, tighter: bool) -> None:
        kind = "constraint_tightened" if tighter else "constraint_loosened"
        out.append(SchemaChange(_join(path, key), kind, tighter, f"{key} {_before_after(old, new, key)}"))

    for keys, lower in ((_LOWER_BOUNDS, True), (_UPPER_BOUNDS, False)):
        for key in keys:
            if old.get(key) != new.get(key):
                report(key, _bound_tighter(key, old.get(key), new.get(key), lower))
    for key in ("pattern", "format"):
        if old.get(key) != new.get(key):
            report(key, key in new)  # set or changed: treated as tighter (a new pattern may reject old values)
    if old.get("multipleOf") != new.get("multipleOf"):
        before, after = old.get("multipleOf"), new.get("multipleOf")
        if after is None:
            report("multipleOf", False)
        elif before is None or not (_is_number(before) and _is_number(after)):
            report("multipleOf", True)
        else:
            report("multipleOf", not _is_multiple(before, after))  # 2 -> 1 allows more; 2 -> 4 or 2 -> 3 less
    if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
        report("uniqueItems", bool(new.get("uniqueItems")))


def _compare_object(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    old_props = old.get("properties") if isinstance(old.get("properties"), Mapping) else {}
    new_props = new.get("properties") if isinstance(new.get("properties"), Mapping) else {}
    old_required = {str(r) for r in old.get("required") or ()} if isinstance(old.get("required"), list) else set()
    new_required = {str(r) for r in new.get("required") or ()} if isinstance(new.get("required"), list) else set()
    assert old_props is not None and new_props is not None
    for name in sorted(old_props.keys() | new_props.keys() | old_required | new_required):
        where = _join(path, "properties", name)
        was, now = name in old_props, name in new_props
        if was and not now:
            what = "required" if name in old_required else "optional"
            out.append(SchemaChange(where, "property_removed", True, f"{what} argument {name!r} removed"))
            continue
        if now and not was and name not in new_required:
            kind = _type_text(_as_schema(new_props[name]))
            out.append(SchemaChange(where, "property_added", False, f"new optional argument {name!r} ({kind})"))
            continue
        if now and not was:
            kind = _type_text(_as_schema(new_props[name]))
            out.append(SchemaChange(where, "required_added", True, f"new required argument {name!r} ({kind})"))
            continue
        if was:
            _compare(old_props[name], new_props[name], where, out)
        if name in new_required and name not in old_required:
            out.append(SchemaChange(where, "required_added", True, f"argument {name!r} is now required"))
        elif name in old_required and name not in new_required:
            out.append(SchemaChange(where, "required_removed", False, f"argument {name!r} is now optional"))
    before, after = old.get("additionalProperties", True), new.get("additionalProperties", True)
    if before == after:
        return
    where = _join(path, "additionalProperties")
    if after is False:
        out.append(SchemaChange(where, "additional_closed", True, "arguments not declared are now rejected"))
    elif before is False:
        out.append(SchemaChange(where, "additional_opened", False, "arguments not declared are now accepted"))
    else:
        _compare(before, after, where, out)


def _compare_items(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    before, after = old.get("items"), new.get("items")
    if before == after:
        return
    where = _join(path, "items")
    if isinstance(before, list) or isinstance(after, list):
        if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
            for i, (b, a) in enumerate(zip(before, after, strict=True)):
                _compare(b, a, _join(where, str(i)), out)
        else:
            out.append(SchemaChange(where, "items_changed", True, "tuple items changed in length or form"))
        return
    _compare(before, after, where, out)


def _structural(schema: Mapping[str, Any]) -> str:
    """A schema without its annotations and combinations, canonical: what it accepts, to compare with a branch."""
    keep = {
        k: v
        for k, v in schema.items()
        if k not in _ANNOTATIONS and k not in ("description", "default", "anyOf", "oneOf", "allOf")
    }
    return _canonical(keep)


def _branches(value: Any) -> Counter[str]:
    return Counter(_structural(_as_schema(b)) for b in value) if isinstance(value, list) else Counter()


def _compare_combinations(old: Mapping[str, Any], new: Mapping[str, Any], path: str, out: list[SchemaChange]) -> None:
    for key in ("anyOf", "oneOf", "allOf"):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        old_branches, new_branches = _branches(before), _branches(after)
        added, removed = sum((new_branches - old_branches).values()), sum((old_branches - new_branches).values())
        if key == "allOf":
            kind, breaking = "all_of_changed", added > 0 or before is None  # every branch must hold: more is tighter
            detail = f"allOf: {added} branch(es) added, {removed} removed"
        elif before is None:
            # a union where there was none: old values still pass when one branch is the old schema itself
            breaking = _structural(old) not in new_branches
            kind = "union_changed"
            detail = f"{key} imposed ({len(after or ())} branches)" + (
                "" if breaking else "; one branch is the old schema"
            )
        elif after is None:
            kind, breaking, detail = "union_changed", False, f"{key} dropped: fewer constraints"
        else:
            kind, breaking = "union_changed", removed > 0
            detail = f"{key}: {added} branch(es) added, {removed} removed or changed"
        if not added and not removed and before is not None and after is not None:
            kind, breaking, detail = "union_changed", False, f"{key}: branches reworded or reordered"
        out.append(SchemaChange(_join(path, key), kind, breaking, detail))


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


def _ratio(a: Sequence[Any], b: Sequence[Any]) -> float:
    if not a and not b:
        return 1.0
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


def _length_bound(a: Sequence[Any], b: Sequence[Any]) -> float:
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
    differ is ``changed``. When the operations common to both catalogs are in another relative order, every
    other common operation whose index among them moved is ``moved``.

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
    rank_old = {name: i for i, name in enumerate(common_old)}
    rank_new = {name: i for i, name in enumerate(common_new)}
    order_changed = common_old != common_new
    for name in common_old:
        before, after = old[name], new[name]
        found = tuple(schema_changes(before.parameters, after.parameters))
        described = before.description != after.description
        positions = (old_index[name], new_index[name])
        if found or described:
            changes.append(OperationChange("changed", name, None, None, described, found, *positions))
        elif order_changed and rank_old[name] != rank_new[name]:
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


def to_json(diff: CatalogDiff) -> dict[str, Any]:
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
