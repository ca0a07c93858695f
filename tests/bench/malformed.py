"""A deterministic corpus of malformed model outputs (well over 1,000), by category.

Each sample is what a model could send back: ``text`` (the assistant text, prompted mode or a small
model writing its call as text) and/or ``native`` (``(name, arguments, id)`` triples as they arrive in
a response's ``tool_calls`` field). ``expect`` is the class the harness must put it in:

- ``call``: at least one call is parsed and dispatched (it may still be rejected by the surface);
- ``parse_failure``: the output claimed a call that could not be parsed, and is recorded as such;
- ``text``: no call at all (a plain answer);
- ``any``: several readings are defensible; only "no crash, classified" is checked.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

GOOD = {"name": "issue_get", "arguments": {"owner": "acme", "repo": "web", "number": 12}}
OPS = ["issue_get", "issue_create", "pull_list", "repo_get", "label_add", "commit_list"]


@dataclass(frozen=True)
class Sample:
    category: str
    expect: str
    text: str = ""
    native: tuple[tuple[Any, Any, Any], ...] = field(default_factory=tuple)


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _wrap(body: str, style: int) -> str:
    return [
        f"```json\n{body}\n```",
        f"<tool_call>\n{body}\n</tool_call>",
        f"<tool_call>{body}",
        f"```\n{body}\n```",
        f"```tool_call\n{body}",
    ][style % 5]


def broken_json(rng: random.Random) -> list[Sample]:
    out = []
    good = _dump(GOOD)
    for i in range(160):  # a call cut anywhere, in every wrapper
        cut = rng.randint(1, len(good) - 2)
        out.append(Sample("broken_json", "any", _wrap(good[:cut], i)))
    mangles = [
        lambda s: s.replace('"', "'"),
        lambda s: s.replace(":", "", 1),
        lambda s: s.replace(",", ",,", 1),
        lambda s: s[:-1] + ",}",
        lambda s: s.replace('"name"', "name"),
        lambda s: s + "}}}}",
        lambda s: "{" + s,
        lambda s: s.replace("12", "1 2"),
        lambda s: s.replace('"acme"', '"ac\nme"'),
        lambda s: s.replace("{", "[", 1),
    ]
    for i in range(100):
        out.append(Sample("broken_json", "parse_failure", _wrap(mangles[i % len(mangles)](good), i % 2)))
    return out


def wrong_types(rng: random.Random) -> list[Sample]:
    out = []
    values: list[Any] = [None, 0, 1.5, True, "x", [], [1, 2], {"a": {"b": []}}, "", "{}", "null", -1e308]
    for i, v in enumerate(values * 9):
        which = i % 4
        if which == 0:  # arguments of a wrong type
            body = _dump({"name": "issue_get", "arguments": v})
            out.append(Sample("wrong_types", "call" if isinstance(v, dict | str) else "any", _wrap(body, i)))
        elif which == 1:  # name of a wrong type
            body = _dump({"name": v, "arguments": {"number": 1}})
            out.append(Sample("wrong_types", "any", _wrap(body, i)))
        elif which == 2:  # argument values of wrong types
            body = _dump({"name": "issue_get", "arguments": {"owner": v, "repo": [v], "number": str(v)}})
            out.append(Sample("wrong_types", "call", _wrap(body, i)))
        else:  # the whole call is not an object
            out.append(Sample("wrong_types", "any", _wrap(_dump([v, v]), i)))
    return out


def huge_strings(rng: random.Random) -> list[Sample]:
    out = []
    for i, size in enumerate([10_000, 100_000, 250_000, 1_000_000] * 5):
        blob = "".join(rng.choice('ab c{}"\\:') for _ in range(1000)) * (size // 1000)
        kind = i % 4
        if kind == 0:
            out.append(Sample("huge_strings", "call", _wrap(_dump({**GOOD, "arguments": {"title": blob}}), i)))
        elif kind == 1:
            out.append(Sample("huge_strings", "any", blob))
        elif kind == 2:
            out.append(Sample("huge_strings", "any", '{"name": "' * (size // 10)))
        else:
            out.append(Sample("huge_strings", "any", native=(("issue_get", '{"title": "' + blob, "c1"),)))
    return out


def unknown_tools(rng: random.Random) -> list[Sample]:
    out = []
    names = [
        "delete_everything",
        "forge_issue_gett",
        "issue_get",
        "Forge_Issue_Get",
        "forge.issue.get",
        "rm -rf /",
        "forge_issue_get()",
        "../../etc/passwd",
        "__import__('os')",
        "ＦＯＲＧＥ",
        "forge_" + "x" * 500,
    ]
    for i in range(120):
        name = names[i % len(names)] if i < 66 else f"{rng.choice(OPS)}_{rng.randint(0, 999)}"
        args = {"owner": "acme", "number": i}
        if i % 2:
            out.append(Sample("unknown_tool", "call", _wrap(_dump({"name": name, "arguments": args}), i)))
        else:
            out.append(Sample("unknown_tool", "call", native=((name, _dump(args), f"c{i}"),)))
    return out


def empty_names(rng: random.Random) -> list[Sample]:
    out = []
    shapes: list[dict[str, Any]] = [
        {"name": "", "arguments": {}},
        {"name": "   ", "arguments": {"a": 1}},
        {"arguments": {"number": 1}},
        {"function": {"arguments": "{}"}},
        {"tool": None},
        {"name": "\t\n"},
    ]
    for i in range(60):
        out.append(Sample("empty_name", "parse_failure", _wrap(_dump(shapes[i % len(shapes)]), i % 2)))
    for i in range(40):
        name = ["", "  ", None, 0][i % 4]
        out.append(Sample("empty_name", "parse_failure", native=((name, '{"number": 1}', f"c{i}"),)))
    return out


def deep_nesting(rng: random.Random) -> list[Sample]:
    out = []
    for i, depth in enumerate([50, 500, 1_000, 5_000, 20_000, 100_000] * 6):
        nested = "[" * depth + "]" * depth
        half = "{" * depth
        kind = i % 4
        if kind == 0:
            out.append(
                Sample("deep_nesting", "any", _wrap('{"name": "issue_get", "arguments": {"a": ' + nested + "}}", i))
            )
        elif kind == 1:
            out.append(Sample("deep_nesting", "any", _wrap(half, i)))
        elif kind == 2:
            out.append(Sample("deep_nesting", "any", native=(("issue_get", '{"a": ' + nested + "}", "c"),)))
        else:
            out.append(Sample("deep_nesting", "any", "Here: " + '{"name": "x", "arguments": ' * (depth // 50)))
    return out


def invalid_utf8(rng: random.Random) -> list[Sample]:
    out = []
    for i in range(110):
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(1, 60)))
        junk = raw.decode("utf-8", errors="surrogateescape")  # lone surrogates, as a lax decoder yields
        kind = i % 5
        if kind == 0:
            out.append(Sample("invalid_utf8", "any", junk))
        elif kind == 1:
            body = _dump({"name": "issue_get", "arguments": {"title": junk}})
            out.append(Sample("invalid_utf8", "call", _wrap(body, i)))
        elif kind == 2:
            out.append(Sample("invalid_utf8", "any", _wrap('{"name": "issue_get' + junk, i)))
        elif kind == 3:
            out.append(Sample("invalid_utf8", "call", native=((f"issue_get{junk}", "{}", "c"),)))
        else:
            out.append(Sample("invalid_utf8", "any", "\x00\ufffd\ud800" + junk + "\udfff"))
    return out


def call_in_prose(rng: random.Random) -> list[Sample]:
    out = []
    intros = [
        "Sure! I will look that up.",
        "Let me check.",
        "Calling the tool now:",
        "I think {x} is right.",
        'The answer might be {"a": 1} but let me verify:',
        "First, ",
        "OK",
    ]
    for i in range(160):
        intro = intros[i % len(intros)]
        call = _dump({**GOOD, "arguments": {"owner": "acme", "repo": "web", "number": i}})
        kind = i % 4
        if kind == 0:
            text = f"{intro} {call} Then I will summarise."
        elif kind == 1:
            text = f"{intro}\n```json\n{call}\n```\nDone."
        elif kind == 2:
            text = f"{intro}\n<tool_call>\n{call}\n</tool_call>\n<tool_call>\n{call}\n</tool_call>"
        else:
            text = f"{intro} {call[:-1]}"  # the closing brace forgotten, as small models do
        out.append(Sample("call_in_prose", "call", text))
    return out


def plain_text(rng: random.Random) -> list[Sample]:
    out = []
    texts = [
        "",
        " ",
        "The issue is closed.",
        "I cannot do that.",
        "{}",
        "{not json}",
        "```\n```",
        "```python\nprint(1)\n```",
        "Use the {owner}/{repo} form.",
        "<tool_call></tool_call>",
        "null",
        "[]",
        "¯\\_(ツ)_/¯",
        "\x1b[31mred",
    ]
    for i in range(70):
        t = texts[i % len(texts)]
        out.append(Sample("plain_text", "any" if "tool_call" in t else "text", t * (1 + i // len(texts))))
    return out


def native_malformed(rng: random.Random) -> list[Sample]:
    out = []
    args: list[Any] = [
        '{"number": 1',
        "{'number': 1}",
        "number=1",
        "",
        None,
        "[]",
        '"str"',
        "{}" * 3,
        "\ud800",
        '{"number": NaN}',
        '{"number": 1e999}',
        {"number": 1},
    ]
    for i in range(120):
        a = args[i % len(args)]
        calls = (("issue_get", a, f"c{i}"),) * (1 + i % 3)
        out.append(Sample("native_malformed", "call", native=calls))
    return out


def corpus(seed: int = 20261130) -> list[Sample]:
    rng = random.Random(seed)
    makers = [
        broken_json,
        wrong_types,
        huge_strings,
        unknown_tools,
        empty_names,
        deep_nesting,
        invalid_utf8,
        call_in_prose,
        plain_text,
        native_malformed,
    ]
    return [s for make in makers for s in make(rng)]
