"""Two JSON Schemas compared keyword by keyword, each difference classed breaking or compatible (issue 54).

Used by bench/catalog/catalog_diff.py for the parameters of an operation in two versions of a catalog. A change
is *breaking* when a call that was valid against the old schema may be rejected by the new one. Conservative:
what it cannot analyse (``not``, ``$ref``, ``patternProperties``...) is ``schema_changed`` and breaking.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import TypeGuard, cast

from surfbench.bench.base.validation import short
from surfbench.bench.catalog.catalog import JSON_TYPES

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


_ANNOTATIONS = frozenset(("title", "examples", "$comment", "deprecated", "readOnly", "writeOnly"))
_LOWER_BOUNDS = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties")
_HANDLED = frozenset(
    ("type", "nullable", "enum", "const", "description", "default", "properties", "required", "additionalProperties",
     "items", "anyOf", "oneOf", "allOf", "pattern", "format", "multipleOf", "uniqueItems",
     *_LOWER_BOUNDS, *_UPPER_BOUNDS, *_ANNOTATIONS)
)  # fmt: skip
_ALL_TYPES = frozenset(JSON_TYPES)


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


def schema_changes(old: Mapping[str, object], new: Mapping[str, object], path: str = "") -> list[SchemaChange]:
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


def _as_schema(value: object) -> dict[str, object]:
    """A schema as a dict: ``true`` (or absent) accepts anything, ``false`` nothing."""
    if isinstance(value, Mapping):
        return dict(value)
    if value is None or value is True:
        return {}
    if value is False:
        return {"not": {}}
    return {"$invalid": value}  # not a schema at all: any difference is reported by the generic comparison


def _compare(old_value: object, new_value: object, path: str, out: list[SchemaChange]) -> None:
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


def _before_after(old: Mapping[str, object], new: Mapping[str, object], key: str, limit: int = 40) -> str:
    before = short(old[key], limit) if key in old else "(none)"
    after = short(new[key], limit) if key in new else "(none)"
    return f"{before} -> {after}"


def _accepted(schema: Mapping[str, object]) -> frozenset[str]:
    """The JSON types a schema's ``type`` (and OpenAPI's ``nullable``) lets through; every type when absent."""
    declared = schema.get("type")
    if declared is None:
        return _ALL_TYPES
    names = {declared} if isinstance(declared, str) else {str(t) for t in cast(Iterable[object], declared)}
    if "number" in names:
        names.add("integer")  # every integer is a number
    if schema.get("nullable") is True:
        names.add("null")
    return frozenset(names)


def _type_text(schema: Mapping[str, object]) -> str:
    declared = schema.get("type")
    text = "/".join(str(t) for t in declared) if isinstance(declared, list) else str(declared or "any")
    return text + (" (nullable)" if schema.get("nullable") is True and declared is not None else "")


def _compare_types(old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]) -> None:
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


def _allowed_values(schema: Mapping[str, object]) -> list[object] | None:
    """The values an ``enum`` (or a ``const``, as an enum of one) allows; None when neither limits them."""
    if isinstance(schema.get("enum"), list):
        return list(cast(list[object], schema["enum"]))
    if "const" in schema:
        return [schema["const"]]
    return None


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _values_text(values: Sequence[object]) -> str:
    shown = ", ".join(short(v, 30) for v in values[:8])
    return shown + (f" and {len(values) - 8} more" if len(values) > 8 else "")


def _compare_values(old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]) -> None:
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


def _compare_annotations(
    old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]
) -> None:
    if old.get("description") != new.get("description"):
        detail = _before_after(old, new, "description")
        out.append(SchemaChange(_join(path, "description"), "description_changed", False, detail))
    if ("default" in old) != ("default" in new) or old.get("default") != new.get("default"):
        out.append(SchemaChange(_join(path, "default"), "default_changed", False, _before_after(old, new, "default")))
    for key in sorted(_ANNOTATIONS):
        if old.get(key) != new.get(key):
            out.append(SchemaChange(_join(path, key), "annotation_changed", False, _before_after(old, new, key)))


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _bound_tighter(key: str, before: object, after: object, lower: bool) -> bool:
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


def _compare_bounds(old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]) -> None:
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


def _mapping(value: object) -> Mapping[str, object]:
    """``properties`` when it is a mapping, else none."""
    return cast(Mapping[str, object], value) if isinstance(value, Mapping) else {}


def _names(value: object) -> set[str]:
    """``required`` as names when it is a list, else none."""
    return {str(r) for r in value or ()} if isinstance(value, list) else set()


def _compare_object(old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]) -> None:
    old_props = _mapping(old.get("properties"))
    new_props = _mapping(new.get("properties"))
    old_required = _names(old.get("required"))
    new_required = _names(new.get("required"))
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


def _compare_items(old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]) -> None:
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


def _structural(schema: Mapping[str, object]) -> str:
    """A schema without its annotations and combinations, canonical: what it accepts, to compare with a branch."""
    keep = {
        k: v
        for k, v in schema.items()
        if k not in _ANNOTATIONS and k not in ("description", "default", "anyOf", "oneOf", "allOf")
    }
    return _canonical(keep)


def _branches(value: object) -> Counter[str]:
    return Counter(_structural(_as_schema(b)) for b in value) if isinstance(value, list) else Counter()


def _compare_combinations(
    old: Mapping[str, object], new: Mapping[str, object], path: str, out: list[SchemaChange]
) -> None:
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
            detail = f"{key} imposed ({len(cast(Sized, after or ()))} branches)" + (
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
