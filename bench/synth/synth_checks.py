"""The checks a synthesized task gets, read off what the backend really did.

State checks come from the difference between the state before and after the reference calls:
a key that appeared (``exists: true``, and its fields that carry a value the request gave), one that
went (``exists: false``), a field that changed (its new value; text case- and space-insensitive), a
list of plain values that changed (its new members, in any order). Counters (``next_*``) are left out,
they change with any write; so is a commit id that changed (a branch's new head hashes the commit
count), but not one a new entry points at (the commit a new branch or tag starts from). Answer checks
come from the results: where the template says the answer is (a path into the result, a regular
expression over its text, or a yes/no field), else the first text field the request does not hold.

What is next to a change is checked too (:func:`context_checks`), so that a task passes only with the end
state the reference calls leave, not with any state that shows the change: the members of every collection
on the way to it (a mapping's exact keys: a repository deleted instead of its branch fails), the unchanged
fields of every record on the way (renaming a repository must not also make it private), the length of a list
on the way, and the things a removed value names (the label a removed issue label names, the entities a
removed relation joins: deleting them instead fails).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from surfbench.bench.suites.checks import lookup
from surfbench.bench.synth.synth_world import parse_result

MAX_STATE_CHECKS = 8
"""Checks on what changed (what went first, then what changed, then what appeared)."""
MAX_CONTEXT_CHECKS = 8
"""Checks on what is next to it (:func:`context_checks`)."""
MAX_KEYS = 60
"""A larger collection gets no check of its exact keys (the things it names get ``exists: true``)."""
MAX_FIELD_CHARS = 120
"""A longer text field (a file's content, an issue's body) is left out of a record's unchanged fields."""
NUMBERS = (("zero", "none", "no "), ("one",), ("two",), ("three",), ("four",), ("five",), ("six",), ("seven",),
           ("eight",), ("nine",), ("ten",))  # fmt: skip
"""How an answer may say a small count in words."""
SHA = re.compile(r"^[0-9a-f]{7,40}$")
"""A commit id the backend derived (a state check on it would test the hash, not the request)."""
MAX_ANSWER_CHARS = 40
"""A longer answer value is checked by its first words (what an answer that quotes it surely holds)."""


def _path(keys: list[str]) -> str | list[str]:
    return ".".join(keys) if not any("." in k for k in keys) else list(keys)


def _flat_values(args: Iterable[Mapping[str, object]]) -> tuple[set[str], dict[str, object]]:
    texts: set[str] = set()
    named: dict[str, object] = {}
    stack: list[Mapping[str, object]] = list(args)
    while stack:
        for key, value in stack.pop(0).items():
            if isinstance(value, Mapping):
                stack.append(value)
                continue
            named[key] = value
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, Mapping):  # an array of objects (create_entities): its fields were given too
                    stack.append(v)
                elif isinstance(v, str):
                    texts.add(" ".join(v.casefold().split()))
                elif isinstance(v, int | float) and not isinstance(v, bool):
                    texts.add(f"#{v}")
    return texts, named


def state_checks(before: object, after: object, args: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    """State checks that hold after the calls and say what they did (empty: the calls changed nothing)."""
    texts, named = _flat_values(args)
    gone: list[dict[str, object]] = []
    changed: list[dict[str, object]] = []
    added: list[dict[str, object]] = []
    places: list[tuple[list[str], object, bool]] = []  # where, what was there, whether a key came or went there

    def leaf(keys: list[str], value: object) -> dict[str, object]:
        if isinstance(value, str):
            return {"path": _path(keys), "match": value}
        if isinstance(value, list) and all(not isinstance(v, Mapping | list) for v in value):
            return {"path": _path(keys), "match": {"$set": list(value)}}
        return {"path": _path(keys), "equals": value}

    def given(key: str, value: object) -> bool:
        if isinstance(value, str):
            return " ".join(value.casefold().split()) in texts
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return all(" ".join(v.casefold().split()) in texts for v in value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return f"#{value}" in texts  # a number the request gave (a count of seconds, approvals)
        return key in named and named[key] == value and not isinstance(value, Mapping)

    def appeared(keys: list[str], value: object, top: bool = True) -> None:
        if not isinstance(value, Mapping):
            added.append(leaf(keys, value))
            places.append((keys, None, True))
            return
        if top:
            added.append({"path": _path(keys), "exists": True})
            places.append((keys, None, True))
        for key, sub in value.items():
            if isinstance(sub, Mapping):
                appeared([*keys, str(key)], sub, False)
            elif isinstance(sub, list) and sub and all(isinstance(v, Mapping) for v in sub):
                for i, item in enumerate(sub):
                    appeared([*keys, str(key), str(i)], item, False)
            elif given(str(key), sub) or (isinstance(sub, str) and SHA.match(sub)):  # a commit it points at
                added.append(leaf([*keys, str(key)], sub))

    def walk(keys: list[str], a: object, b: object) -> None:
        if a == b:
            return
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in b:
                if key not in a:
                    appeared([*keys, str(key)], b[key])
                else:
                    walk([*keys, str(key)], a[key], b[key])
            gone.extend({"path": _path([*keys, str(k)]), "exists": False} for k in a if k not in b)
            places.extend(([*keys, str(k)], [str(k), a[k]], True) for k in a if k not in b)
        elif isinstance(a, list) and isinstance(b, list) and any(isinstance(v, Mapping) for v in a + b):
            if len(a) == len(b):
                for i, (x, y) in enumerate(zip(a, b, strict=True)):
                    walk([*keys, str(i)], x, y)
            elif len(b) > len(a) and all(x in b for x in a):
                for i, y in enumerate(b):
                    if y not in a:
                        appeared([*keys, str(i)], y)
            else:
                changed.append({"path": _path(keys), "equals": b})
                places.append((keys, [x for x in a if x not in b], False))
        elif not (keys and keys[-1].startswith("next_")) and not (isinstance(b, str) and SHA.match(b)
                                                                  and not given(keys[-1], b)):  # fmt: skip
            changed.append(leaf(keys, b))
            places.append((keys, [x for x in a if x not in b] if isinstance(a, list) and isinstance(b, list) else a,
                           False))  # fmt: skip

    walk([], before, after)
    diff = (gone + changed + added)[:MAX_STATE_CHECKS]
    return diff + context_checks(before, after, places, {str(c["path"]) for c in diff})


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, bool | int | float) or (isinstance(value, str)
                                                                       and len(value) <= MAX_FIELD_CHARS)  # fmt: skip


def _kept(value: object) -> bool:
    """Whether a record's field goes into its unchanged fields: a short scalar, or a list of them."""
    return _scalar(value) or (isinstance(value, list) and all(_scalar(v) and v is not None for v in value))


def _words_of(value: object) -> list[str]:
    """The strings of a removed value, breadth first (what it names)."""
    return list(dict.fromkeys(w for w in leaves(value) if isinstance(w, str) and w.strip()))


def context_checks(before: object, after: object, places: list[tuple[list[str], object, bool]],
                   covered: set[str]) -> list[dict[str, object]]:  # fmt: skip
    """Checks that what is next to each change is as the calls left it.

    ``places``: where something changed, what was there (None: nothing), and whether a key came or went there.

    For each place: the things the removed value names (a key of that name in a mapping, up to two levels
    below the nearest enclosing record that has one: the whole collection's keys, or ``exists: true`` for a
    large one; a record of a list with a field of that name: ``contains`` it); then from the place up to the
    root, each mapping's exact keys (a collection, or the mapping a key came into or went from), each
    record's unchanged fields (one check, ``$extra: true``; at the root one check per field, and only when
    the root itself changed), each list's length. Paths ``covered`` by a check on the change are skipped.
    """
    out: dict[tuple[str, str], dict[str, object]] = {}

    def add(keys: list[str], kind: str, check: dict[str, object]) -> None:
        if keys and (str(_path(keys)), kind) not in out and (kind != "fields" or str(_path(keys)) not in covered):
            out[(str(_path(keys)), kind)] = {"path": _path(keys), **check}

    def key_set(keys: list[str], node: Mapping[str, object], name: str | None = None) -> None:
        if len(node) <= MAX_KEYS:
            add(keys, "keys", {"keys": [str(k) for k in node]})
        elif name is not None:
            add([*keys, name], "exists", {"exists": True})

    def fields(keys: list[str], node: Mapping[str, object]) -> None:
        found, old = lookup(before, keys)
        if not found or not isinstance(old, Mapping):
            return  # a record the calls made: its checks are those of what appeared
        same = {str(k): v for k, v in node.items() if not str(k).startswith(("next_", "$")) and _kept(v)
                and k in old and old[k] == v}  # fmt: skip
        if not keys:  # the root: one check per field
            for k, v in same.items():
                if k not in covered:
                    add([k], "fields", {"match": {"$set": list(v)}} if isinstance(v, list) else
                        {"match": v} if isinstance(v, str) else {"equals": v})  # fmt: skip
        elif same:
            add(keys, "fields", {"match": {**{k: {"$set": list(v)} if isinstance(v, list) else v
                                              for k, v in same.items()}, "$extra": True}})  # fmt: skip

    def named(place: list[str], word: str) -> None:
        for depth in range(len(place) - 1, -1, -1):
            found, scope = lookup(after, place[:depth])
            hits = _names(scope, place[:depth], word, place, before) if found else []
            for kind, keys, node in hits[:2]:
                if kind == "key":
                    key_set(keys, node, word)
                else:
                    add(keys, f"contains:{word}", {"contains": node})
            if hits:
                return

    for place, removed, keyed in places:
        for word in _words_of(removed)[:4]:
            named(place, word)
        for depth in range(len(place) - 1, -1, -1):
            keys = place[:depth]
            found, node = lookup(after, keys)
            if not found:
                continue
            if isinstance(node, Mapping):
                collection = bool(node) and all(isinstance(v, Mapping) for v in node.values())
                if keys and ((keyed and depth == len(place) - 1) or collection):
                    key_set(keys, node)
                if keys or len(place) == 1:
                    fields(keys, node)
            elif isinstance(node, list) and keys:
                add(keys, "len", {"len": len(node)})
    return list(out.values())[:MAX_CONTEXT_CHECKS]


def _names(
    scope: object, at: list[str], word: str, place: list[str], before: object
) -> list[tuple[str, list[str], Mapping[str, object]]]:
    """Where ``word`` is named at most two levels below ``scope``: ``(kind, path, node)``.

    A mapping with the key ``word`` (kind ``key``), or a list's record with a field of that value, as it was
    before the calls (kind ``item``); not in ``place`` itself.
    """
    hits: list[tuple[str, list[str], Mapping[str, object]]] = []
    level: list[tuple[list[str], object]] = [(at, scope)]
    for _ in range(2):
        below: list[tuple[list[str], object]] = []
        for keys, node in level:
            if keys == place[: len(keys)] and len(keys) == len(place):
                continue
            if isinstance(node, Mapping):
                if word in node and not _inside([*keys, word], place):
                    hits.append(("key", keys, node))
                below.extend(([*keys, str(k)], v) for k, v in node.items() if isinstance(v, Mapping | list))
            elif isinstance(node, list) and not _inside(keys, place):
                old = lookup(before, keys)[1]
                hits.extend(("item", keys, v) for v in node if isinstance(v, Mapping) and word in v.values()
                            and isinstance(old, list) and v in old)  # fmt: skip
        level = below
    return hits


def _inside(keys: list[str], place: list[str]) -> bool:
    """Whether ``keys`` is ``place`` or under it (the change itself, not something next to it)."""
    return keys[: len(place)] == place


# -- answers -------------------------------------------------------------------------------------------------
def result_text(result: object) -> str:
    """A result as the verification's answer repeats it: every field's value, one per line (text as it is)."""
    data = parse_result(result)
    if isinstance(data, str):
        return data
    return "\n".join(_shown(v) for v in leaves(data))


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def leaves(data: object) -> list[object]:
    """The scalar values of a result, breadth first (the top fields before nested ones)."""
    out: list[object] = []
    queue = [data]
    while queue:
        item = queue.pop(0)
        if isinstance(item, Mapping):
            queue.extend(item.values())
        elif isinstance(item, list):
            queue.extend(item)
        elif item is not None and item != "":
            out.append(item)
    return out


def at(data: object, path: str) -> list[object]:
    """The values at a dotted path (``*`` for every item of a list or mapping)."""
    found = [data]
    for key in [k for k in path.split(".") if k]:
        nxt: list[object] = []
        for item in found:
            if key == "*":
                nxt.extend(item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else [])
            elif isinstance(item, Mapping) and key in item:
                nxt.append(item[key])
            elif isinstance(item, list) and key.isdigit() and int(key) < len(item):
                nxt.append(item[int(key)])
        found = nxt
    return found


def _short(value: object) -> str | None:
    if isinstance(value, bool) or value is None or value == "" or isinstance(value, Mapping):
        return None
    if isinstance(value, list):
        return _short(value[0]) if value else None
    words = str(value).split()
    while words and not re.search(r"\w", words[0]):  # a Markdown mark ("#", "-") an answer may drop
        words.pop(0)
    text = " ".join(words)
    if len(text) > MAX_ANSWER_CHARS:
        text = " ".join(words[:4]).rstrip(".,;:")
    return text or None


def answer_check(spec: object, results: Sequence[object], request: str) -> tuple[dict[str, object] | None, str | None]:
    """``(answer check, None)``, or ``(None, reason)``.

    The reason is ``empty_answer`` when the result has no such value, ``answer_in_request`` when the
    request already says it (a model could answer without any call).
    """
    index = len(results) - 1
    if isinstance(spec, str) and re.match(r"^\d+:", spec):
        head, _, spec = spec.partition(":")
        index = int(head)
    if not results or index >= len(results):
        return None, "empty_answer: no result to read the answer from"
    raw = results[index]
    data = parse_result(raw)
    if isinstance(spec, Mapping):
        flags = at(data, str(spec.get("path", "")))
        if not flags or not isinstance(flags[0], bool):
            return None, f"empty_answer: no yes/no at {spec.get('path')!r}"
        # YAML reads an unquoted true: / false: key as a boolean
        said = spec.get(flags[0], spec.get(str(flags[0]).lower()))
        words = [str(w) for w in said or (["yes"] if flags[0] else ["no"])]
        return {"any_of": words}, None
    picked: list[str | None]
    if isinstance(spec, str) and spec.startswith("/") and spec.endswith("/") and len(spec) > 2:
        found = re.findall(spec[1:-1], result_text(raw), re.MULTILINE)
        picked = [_short(f[0] if isinstance(f, tuple) else f) for f in found]
    elif isinstance(spec, str) and spec:
        picked = [_short(v) for v in at(data, spec)]
    else:
        picked = [_short(v) for v in (leaves(data) if not isinstance(data, str) else _text_words(data))]
        picked = list[str | None]([p for p in picked if p and len(p) >= 2 and not _in(p, request)][:1])
    found = list(dict.fromkeys(p for p in picked if p))
    if not found:
        return None, "empty_answer: the result has no value for the answer"
    values = [v for v in found if not _in(v, request)][:2]  # of a list: the items the request does not say
    if not values:
        return None, f"answer_in_request: {found[0]!r}"
    if len(values) == 1 and values[0].isdigit() and int(values[0]) < len(NUMBERS):
        return {"any_of": [values[0], *NUMBERS[int(values[0])]]}, None  # a count: "2" or "two" ("none" for 0)
    return {"contains": values}, None


def _text_words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][\w./-]{3,}", text)


def _in(value: str, request: str) -> bool:
    return " ".join(value.casefold().split()) in " ".join(request.casefold().split())
