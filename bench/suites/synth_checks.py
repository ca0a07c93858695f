"""The checks a synthesized task gets, read off what the backend really did.

State checks come from the difference between the state before and after the reference calls:
a key that appeared (``exists: true``, and its fields that carry a value the request gave), one that
went (``exists: false``), a field that changed (its new value; text case- and space-insensitive), a
list of plain values that changed (its new members, in any order). Counters (``next_*``) are left out,
they change with any write; so is a commit id that changed (a branch's new head hashes the commit
count), but not one a new entry points at (the commit a new branch or tag starts from). Answer checks
come from the results: where the template says the answer is (a path into the result, a regular
expression over its text, or a yes/no field), else the first text field the request does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from surfbench.bench.suites.synth_world import parse_result

MAX_STATE_CHECKS = 8
NUMBERS = (("zero", "none", "no "), ("one",), ("two",), ("three",), ("four",), ("five",), ("six",), ("seven",),
           ("eight",), ("nine",), ("ten",))  # fmt: skip
"""How an answer may say a small count in words."""
SHA = re.compile(r"^[0-9a-f]{7,40}$")
"""A commit id the backend derived (a state check on it would test the hash, not the request)."""
MAX_ANSWER_CHARS = 40
"""A longer answer value is checked by its first words (what an answer that quotes it surely holds)."""


def _path(keys: list[str]) -> Any:
    return ".".join(keys) if not any("." in k for k in keys) else list(keys)


def _flat_values(args: Iterable[Mapping[str, Any]]) -> tuple[set[str], dict[str, Any]]:
    texts: set[str] = set()
    named: dict[str, Any] = {}
    stack: list[Mapping[str, Any]] = list(args)
    while stack:
        for key, value in stack.pop(0).items():
            if isinstance(value, Mapping):
                stack.append(value)
                continue
            named[key] = value
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str):
                    texts.add(" ".join(v.casefold().split()))
                elif isinstance(v, int | float) and not isinstance(v, bool):
                    texts.add(f"#{v}")
    return texts, named


def state_checks(before: Any, after: Any, args: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """State checks that hold after the calls and say what they did (empty: the calls changed nothing)."""
    texts, named = _flat_values(args)
    gone: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    added: list[dict[str, Any]] = []

    def leaf(keys: list[str], value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            return {"path": _path(keys), "match": value}
        if isinstance(value, list) and all(not isinstance(v, Mapping | list) for v in value):
            return {"path": _path(keys), "match": {"$set": list(value)}}
        return {"path": _path(keys), "equals": value}

    def given(key: str, value: Any) -> bool:
        if isinstance(value, str):
            return " ".join(value.casefold().split()) in texts
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return all(" ".join(v.casefold().split()) in texts for v in value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return f"#{value}" in texts  # a number the request gave (a count of seconds, approvals)
        return key in named and named[key] == value and not isinstance(value, Mapping)

    def appeared(keys: list[str], value: Any, top: bool = True) -> None:
        if not isinstance(value, Mapping):
            added.append(leaf(keys, value))
            return
        if top:
            added.append({"path": _path(keys), "exists": True})
        for key, sub in value.items():
            if isinstance(sub, Mapping):
                appeared([*keys, str(key)], sub, False)
            elif isinstance(sub, list) and sub and all(isinstance(v, Mapping) for v in sub):
                for i, item in enumerate(sub):
                    appeared([*keys, str(key), str(i)], item, False)
            elif given(str(key), sub) or (isinstance(sub, str) and SHA.match(sub)):  # a commit it points at
                added.append(leaf([*keys, str(key)], sub))

    def walk(keys: list[str], a: Any, b: Any) -> None:
        if a == b:
            return
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in b:
                if key not in a:
                    appeared([*keys, str(key)], b[key])
                else:
                    walk([*keys, str(key)], a[key], b[key])
            gone.extend({"path": _path([*keys, str(k)]), "exists": False} for k in a if k not in b)
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
        elif not (keys and keys[-1].startswith("next_")) and not (isinstance(b, str) and SHA.match(b)
                                                                  and not given(keys[-1], b)):  # fmt: skip
            changed.append(leaf(keys, b))

    walk([], before, after)
    return (gone + changed + added)[:MAX_STATE_CHECKS]


# -- answers -------------------------------------------------------------------------------------------------
def result_text(result: Any) -> str:
    """A result as the verification's answer repeats it: every field's value, one per line (text as it is)."""
    data = parse_result(result)
    if isinstance(data, str):
        return data
    return "\n".join(_shown(v) for v in leaves(data))


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def leaves(data: Any) -> list[Any]:
    """The scalar values of a result, breadth first (the top fields before nested ones)."""
    out: list[Any] = []
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


def at(data: Any, path: str) -> list[Any]:
    """The values at a dotted path (``*`` for every item of a list or mapping)."""
    found = [data]
    for key in [k for k in path.split(".") if k]:
        nxt: list[Any] = []
        for item in found:
            if key == "*":
                nxt.extend(item.values() if isinstance(item, Mapping) else item if isinstance(item, list) else [])
            elif isinstance(item, Mapping) and key in item:
                nxt.append(item[key])
            elif isinstance(item, list) and key.isdigit() and int(key) < len(item):
                nxt.append(item[int(key)])
        found = nxt
    return found


def _short(value: Any) -> str | None:
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


def answer_check(spec: Any, results: list[Any], request: str) -> tuple[dict[str, Any] | None, str | None]:
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
        values = at(data, str(spec.get("path", "")))
        if not values or not isinstance(values[0], bool):
            return None, f"empty_answer: no yes/no at {spec.get('path')!r}"
        # YAML reads an unquoted true: / false: key as a boolean
        said = spec.get(values[0], spec.get(str(values[0]).lower()))
        words = [str(w) for w in said or (["yes"] if values[0] else ["no"])]
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
