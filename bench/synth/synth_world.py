"""The world ``surfbench synth`` draws arguments from: the suite's own data, never invented ids.

In order of preference: the suite's world hook (``synth/templates.yaml`` ``world: world.py:pools``, a
function of a fresh backend's state that returns named pools of bundles: the forge's scenario, the git
suite's fixture repository); else what the backend holds: the records of its state and, for a live MCP
server, the answers of its own list and read operations (called once, with the arguments their schemas
require); else each argument's schema (enum, examples, default, format, type). A bundle is one coherent
set of values (an issue: owner, repo, index, title, author ...), so the arguments of one call agree.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from surfbench.bench.catalog.catalog import Catalog, Operation
from surfbench.bench.contracts.backend import Backend, Closable
from surfbench.bench.suites.hooks import load_hook
from surfbench.bench.suites.suite_model import Suite, Task
from surfbench.bench.synth.synth_spec import SynthSpec, name_parts

READ_WORDS = frozenset({"list", "get", "read", "search", "show", "find", "status", "log", "view", "describe"})
"""Name parts of an operation that reads (for a server that declares no ``readOnlyHint``)."""
SEARCH_WORDS = frozenset({"q", "query", "search", "keyword", "term", "terms", "text", "pattern"})
"""Arguments a word of the world's own text can fill (what a search looks for)."""
MAX_RECORDS = 400
"""Records kept from the state and the live answers (enough for variety, small enough to search)."""
SCHEMA_STRINGS = {"date": "2026-12-01", "date-time": "2026-12-01T09:00:00Z", "email": "dave@example.org",
                  "uri": "https://example.org/hook", "url": "https://example.org/hook"}  # fmt: skip


@dataclass
class World:
    """Pools of bundles and the scalar values seen per key."""

    pools: dict[str, list[dict[str, object]]] = field(default_factory=dict)
    values: dict[str, list[object]] = field(default_factory=dict)
    source: str = "schema"
    """Where the values came from: ``hook``, ``state``, ``live`` (an MCP server's answers) or ``schema``."""
    state: dict[str, Any] = field(default_factory=dict)
    """A fresh backend's state (empty for a suite whose backend keeps none)."""
    workdir: str | None = None
    """What names the server's own data folder in an argument: ``"."`` for a live server started in its
    working copy (``fixture``, no ``cwd``), for a ``repo_path`` or ``root`` nothing else gives a value to."""

    def records(self) -> list[dict[str, object]]:
        return self.pools.get("*", [])


def world_task() -> Task:
    """The task a world's backend starts from (the suite's default scenario)."""
    return Task(id="synth-world", turns=("(synth world)",))


def build_world(suite: Suite, spec: SynthSpec) -> World:
    """The world of ``suite``: its hook's pools, else its state's records and a live server's answers."""
    if suite.backend_spec is None:  # canned results only: nothing to read, the schema is the world
        return World()
    backend = suite.new_backend(world_task())
    try:
        state = backend.state() if keeps_state(suite) else {}
        if spec.world_hook:
            hook = load_hook(_hook_spec(spec), spec.source, "world")
            world = World({str(k): [dict(b) for b in v] for k, v in dict(hook(state)).items()}, source="hook")
        else:
            world = World(source="state" if state else "schema", workdir=_workdir(suite))
            harvest(state, world)
            if suite.backend_spec == "mcp":
                declared = declares_reads(suite.catalog)
                for op in (o for o in suite.catalog if reads(o, declared)):
                    _read_back(backend, op, world)
        world.state = state
    finally:
        if isinstance(backend, Closable):
            backend.close()
    for bundles in world.pools.values():
        for bundle in bundles:
            for key, value in bundle.items():
                _remember(world, key, value)
    return world


def _workdir(suite: Suite) -> str | None:
    """``"."`` for a live server started in its working copy (``fixture`` or ``setup``, no ``cwd``): the folder."""
    server = getattr(suite.mcp, "server", None)  # bench.mcp.mcp_spec.ServerSpec, read without importing bench.mcp
    if suite.backend_spec == "mcp" and server is not None and (server.fixture or server.setup) and not server.cwd:
        return "."
    return None


def keeps_state(suite: Suite) -> bool:
    """Whether the suite's backend reports a state that checks can read (a live server needs a state function)."""
    if suite.backend_spec is None:
        return False
    return suite.backend_spec != "mcp" or bool(suite.backend_options.get("state"))


def _hook_spec(spec: SynthSpec) -> str:
    head, _, attr = str(spec.world_hook).rpartition(":")
    return f"{spec.folder / 'synth' / head}:{attr}"


def reads(op: Operation, declared: bool = False) -> bool:
    """Whether an operation only reads.

    As declared when the catalog declares it (``declared``: some operation of the catalog is marked
    read-only), else by its name (``list_notes``, ``get_note``).
    """
    if op.read_only or declared:
        return op.read_only
    return bool({p.lower() for p in name_parts(op.name)} & READ_WORDS) and not op.destructive


def declares_reads(catalog: Catalog) -> bool:
    """Whether the catalog marks which operations only read (then the marks are what counts, not the names)."""
    return any(o.read_only for o in catalog)


def _read_back(backend: Backend, op: Operation, world: World) -> None:
    """Call a read operation once with what its schema requires; keep the records of its answer."""
    args: dict[str, object] = {}
    for param in op.required:
        value = world_value(world, param, op, random.Random(0))
        if value is None:
            return
        args[param] = value
    try:
        result = backend.call(op.name, args)
    except Exception:  # a read the server refuses teaches nothing; the others still do
        return
    world.source = "live"
    parsed = parse_result(result)
    if isinstance(parsed, str):  # a server that answers in text (mcp-server-git): its records and its lists
        parsed = text_records(parsed) or _listed(parsed, op, world)
    harvest(parsed, world)


QUOTED = re.compile(r"'([A-Za-z][\w-]{0,19})'")
"""A value a string argument's description offers in quotes, where its schema has no enum."""
TEXT_FIELD = re.compile(r"^\s*([A-Za-z][A-Za-z _-]{0,30}):\s+(\S.*)$")


def text_records(text: str) -> list[dict[str, str]]:
    """``Key: value`` lines as records (``Commit: 'ab12'`` / ``Message: 'first'``), a new one when a key repeats.

    Plain text is what many servers answer; a field's key is lower-cased, spaces to ``_``, quotes stripped.
    """
    records: list[dict[str, str]] = []
    record: dict[str, str] = {}
    for line in text.splitlines():
        match = TEXT_FIELD.match(line)
        if not match:
            continue
        key = match.group(1).strip().lower().replace(" ", "_").replace("-", "_")
        if key in record:
            records.append(record)
            record = {}
        record[key] = match.group(2).strip().strip("'\"")
    if record:
        records.append(record)
    return records


def _listed(text: str, op: Operation, world: World) -> list[dict[str, str]]:
    """Remember a text answer that is a list of short names under what the operation reads.

    ``* main`` / ``  feature`` from ``git_branch``: each under ``branch``; nothing for any other text.
    """
    lines = [line.strip().lstrip("*-+ ").strip() for line in text.splitlines() if line.strip()]
    subject = [p.lower() for p in name_parts(op.name) if p.lower() not in READ_WORDS]
    if not lines or not subject or len(lines) > 50 or any(len(x) > 60 or " " in x for x in lines):
        return []
    for line in lines:
        _remember(world, _singular(subject[-1]), line)
    return []


def parse_result(result: object) -> object:
    """A result as data: JSON text parsed, MCP content parts joined; other text as it is."""
    if isinstance(result, Mapping) and isinstance(result.get("content"), list):
        texts = [str(p.get("text", "")) for p in result["content"] if isinstance(p, Mapping)]
        result = result.get("structuredContent") or "\n".join(texts)
    if isinstance(result, str):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result


def harvest(value: object, world: World) -> None:
    """Every record (a mapping with scalar fields) in ``value``, into the pool ``*``; every scalar by its key."""
    pool = world.pools.setdefault("*", [])
    stack: list[object] = [value]
    while stack:
        item = stack.pop(0)
        if isinstance(item, Mapping):
            scalars = {str(k): v for k, v in item.items() if _scalar(v)}
            if scalars and len(pool) < MAX_RECORDS and scalars not in pool:
                pool.append(scalars)
            for key, sub in item.items():
                if _scalar(sub):
                    _remember(world, str(key), sub)
                elif isinstance(sub, list):  # a list of names or texts (observations, topics): each member
                    for member in sub:
                        if isinstance(member, str):
                            _remember(world, str(key), member)
            stack.extend(v for v in item.values() if isinstance(v, Mapping | list))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, Mapping | list))


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float | bool) and value != ""


def _remember(world: World, key: str, value: object) -> None:
    if not _scalar(value) or isinstance(value, bool):
        return
    seen = world.values.setdefault(key, [])
    if value not in seen and len(seen) < 50:
        seen.append(value)


SYNONYMS = {"revision": ("commit", "sha", "hash"), "sha": ("commit", "hash"), "ref": ("commit", "branch"),
            "target": ("branch", "commit"), "files": ("modified", "path"), "file": ("modified", "path"),
            "paths": ("modified", "path")}  # fmt: skip
"""Other keys a value of an argument is commonly held under (a ``revision`` is a commit a log shows)."""


def aliases(param: str, more: bool = False) -> list[str]:
    """Record keys that may hold an argument's value.

    Itself, then its last part (``note_id`` -> ``id``); with ``more`` (a world read off a server, not a
    suite's hook, whose pools name their keys), the thing a name or id belongs to (``branch_name`` ->
    ``branch``) and common synonyms (``revision`` -> ``commit``).
    """
    parts = [p for p in param.split("_") if p]
    last = parts[-1] if parts else param
    keys = [param, last, "name" if param.endswith("name") else param]
    if more:
        keys += [parts[-2] if len(parts) >= 2 and last in ("name", "id") else param, *SYNONYMS.get(last.lower(), ())]
    return list(dict.fromkeys(keys))


def generic_bundles(world: World, op: Operation) -> list[dict[str, object]]:
    """Records that fill the most of ``op``'s required arguments, as bundles keyed by argument name.

    Not the name of what ``op`` creates: a record's name is one the world holds, so the create would change nothing.
    """
    required = [p for p in op.required if not names_new_thing(op, p)]
    if not required:
        return [{}]
    best: list[dict[str, object]] = []
    score = 0
    for record in world.records():
        bundle = {}
        for param in required:
            for key in aliases(param, more=True):
                if key in record and _fits(op, param, record[key]):
                    bundle[param] = record[key]
                    break
        if len(bundle) > score:
            best, score = [bundle], len(bundle)
        elif len(bundle) == score and score and bundle not in best:
            best.append(bundle)
    return best or [{}]


def _fits(op: Operation, param: str, value: object) -> bool:
    """Whether a world value has the argument's schema type (an id string is no integer)."""
    return _fits_kind(((op.parameters.get("properties") or {}).get(param) or {}).get("type"), value)


def world_value(world: World, param: str, op: Operation, rng: random.Random) -> object:
    """A value for an argument no bundle filled: one the world has seen under its name, else the schema's.

    An object argument, or an array of objects, is built from its schema: each required field (every field
    when none is required) valued the same way by its own name, one item for an array (``entities: [{name,
    entityType, observations}]``). None when some field has no value.
    """
    schema = (op.parameters.get("properties") or {}).get(param) or {}
    if world.source != "hook" and "enum" not in schema and names_new_thing(op, param):
        return fresh_name(world, param, rng)
    value = _seen(world, aliases(param, world.source != "hook"), schema.get("type"), schema, rng)
    if value is not None:
        return value
    value = schema_value(schema, rng)
    if value is None and schema.get("type") == "string":  # "Whether to list local branches ('local'), ..."
        options = QUOTED.findall(str(schema.get("description") or ""))
        value = options[0] if options else None
    if value is None and param.lower() in SEARCH_WORDS and schema.get("type", "string") == "string":
        words = sorted({w.lower() for vs in world.values.values() for v in vs if isinstance(v, str)
                        for w in re.findall(r"[A-Za-z]{4,}", v)})  # fmt: skip
        return rng.choice(words) if words else None
    if value is None and world.workdir and schema.get("type", "string") == "string" and names_folder(param):
        return world.workdir
    if value is None:
        value = _built(world, param, schema, rng, 0, (), _removes(op), world.source != "hook" and _creates(op))
    return value


REMOVE_WORDS = frozenset({"delete", "remove", "unlink", "detach", "drop", "revoke"})
CREATE_WORDS = frozenset({"create", "add", "new", "insert", "make", "register"})
IDENTITY_KEYS = frozenset({"name", "title"})
"""Fields that are what a created thing is called: a create needs one the world does not hold yet."""
NEW_NAMES = ("Juniper", "Dana Reyes", "Orion Labs", "Maple", "Harbor", "Nova", "Quill", "Tern", "Birch",
             "Cobalt", "Lark", "Fennel")  # fmt: skip
"""Values for a created thing's name when the world holds every name it has seen (no hook, no templates)."""


FOLDER_WORDS = frozenset({"repo", "repository", "root", "dir", "directory", "folder", "workdir", "workspace",
                          "project"})  # fmt: skip


def names_folder(param: str) -> bool:
    """An argument that names the data folder itself: ``repo_path``, ``repository``, ``root_dir``, ``workspace``."""
    parts = {p.lower() for p in name_parts(param)}
    return bool(parts & FOLDER_WORDS) and parts <= FOLDER_WORDS | {"path"}


def _creates(op: Operation) -> bool:
    """Whether an operation brings something new into being (then its name must be new, or nothing changes)."""
    return not _removes(op) and bool({p.lower() for p in name_parts(op.name)} & CREATE_WORDS)


def names_new_thing(op: Operation, param: str) -> bool:
    """Whether a top-level argument names what ``op`` creates.

    ``branch_name`` of ``git_create_branch``, ``name`` of ``create_label``; not ``entityName`` of
    ``add_observations`` (a reference to something that exists).
    """
    if not _creates(op):
        return False
    parts = [p.lower() for p in name_parts(param)]
    if not parts or parts[-1] not in IDENTITY_KEYS:
        return False
    if len(parts) == 1:
        return True
    subject = {_singular(p.lower()) for p in name_parts(op.name)}
    return _singular(parts[-2]) in subject


def fresh_name(world: World, key: str, rng: random.Random) -> str:
    """A name the world does not hold under ``key`` (the created thing's own name), drawn with ``rng``."""
    held = {str(v).lower() for k in (key, "name", "title") for v in world.values.get(k, [])}
    free = [n for n in NEW_NAMES if n.lower() not in held]
    return rng.choice(free) if free else f"{rng.choice(NEW_NAMES)} {rng.randint(2, 99)}"


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def _removes(op: Operation) -> bool:
    """Whether an operation takes things away (then an object argument names one that exists)."""
    return op.destructive or bool({p.lower() for p in name_parts(op.name)} & REMOVE_WORDS)


def _kind(schema: Mapping[str, object]) -> object:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(schema.get("properties"), Mapping):
        return "object"
    return kind


def _built(world: World, name: str, schema: Mapping[str, object], rng: random.Random, depth: int,
           outer: tuple[str, ...] = (), existing: bool = False, new: bool = False) -> object:  # fmt: skip
    """A structured value (object, array) from its schema, each scalar seen in the world under its name.

    A scalar's keys, in order: its own name's (``aliases``), the singular of an array's name (``entityNames``:
    ``name``), then the names of what holds it (``observations[].contents``: ``observations``). With
    ``existing`` (an operation that removes), an object is a whole record of the world that has its required
    fields (a relation that exists, to delete), else it is put together field by field (a new one, to create).
    With ``new`` (an operation that creates), an object's ``name`` or ``title`` is one the world does not hold
    (``create_entities``: an entity that is not there yet; one that is would change nothing).
    """
    kind = _kind(schema)
    if depth > 4:
        return None
    if kind == "array":
        raw = schema.get("items")
        items: Mapping[str, object] = raw if isinstance(raw, Mapping) else {}
        item = _built(world, name, items, rng, depth + 1, outer, existing, new)
        return None if item is None else [item]
    if kind == "object":
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props:
            return None
        required = [p for p in cast("list[str]", schema.get("required") or []) if p in props]  # a JSON Schema's
        if existing and required:
            kinds = {p: _kind(props[p]) if isinstance(props[p], Mapping) else None for p in required}
            records = [{p: r[p] for p in required} for r in world.records()
                       if all(p in r and _fits_kind(kinds[p], r[p]) for p in required)]  # fmt: skip
            if records:
                return rng.choice(records)
        out: dict[str, object] = {}
        for field_name in required or list(props):
            sub = props[field_name] if isinstance(props[field_name], Mapping) else {}
            if new and str(field_name).lower() in IDENTITY_KEYS and _kind(sub) in ("string", None):
                out[str(field_name)] = fresh_name(world, str(field_name), rng)
                continue
            got = _built(world, str(field_name), sub, rng, depth + 1, (*outer, name))
            if got is None and required:
                return None
            if got is not None:
                out[str(field_name)] = got
        return out or None
    value = _seen(world, _keys_of(name, outer, world.source != "hook"), kind, schema, rng)
    return value if value is not None else schema_value(schema, rng, depth)


def _seen(world: World, keys: list[str], kind: object, schema: Mapping[str, object], rng: random.Random) -> object:
    """A value the world holds under the first of ``keys`` that has one of type ``kind`` (None: none, or an enum)."""
    for key in keys:
        seen = [v for v in world.values.get(key, []) if _fits_kind(kind, v)]
        if seen and "enum" not in schema:
            return rng.choice(seen)
    return None


def _keys_of(name: str, outer: tuple[str, ...], more: bool = False) -> list[str]:
    """The world keys a nested scalar may be found under (see :func:`_built`; ``more``: :func:`aliases`')."""
    singular = _singular((name_parts(name) or [name])[-1].lower())
    keys = [*aliases(name, more), singular, *(SYNONYMS.get(singular, ()) if more else ())]
    for holder in reversed(outer):
        keys += aliases(holder)
    return list(dict.fromkeys(k for k in keys if k))


def _fits_kind(kind: object, value: object) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return (kind == "string" or kind is None) and isinstance(value, str)


def schema_value(schema: Mapping[str, object], rng: random.Random, depth: int = 0) -> object:
    """A value from an argument's schema alone: an enum member, an example, the default, a format, a type."""
    if schema.get("enum"):
        return rng.choice(list(cast("list[object]", schema["enum"])))  # the shapes of a JSON Schema's keywords
    if schema.get("examples"):
        return list(cast("list[object]", schema["examples"]))[0]
    if schema.get("default") not in (None, ""):
        return schema["default"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(schema.get("anyOf"), list):
        options = [
            s for s in cast("list[object]", schema["anyOf"]) if isinstance(s, Mapping) and s.get("type") != "null"
        ]
        return schema_value(options[0], rng, depth + 1) if options and depth < 4 else None
    if kind == "string":
        return SCHEMA_STRINGS.get(str(schema.get("format")))
    if kind == "integer":
        return int(cast("float", schema.get("minimum", 1) or 1))
    if kind == "number":
        return float(cast("float", schema.get("minimum", 1) or 1))
    if kind == "boolean":
        return True
    if kind == "array" and depth < 4:
        item = schema_value(cast("Mapping[str, object]", schema.get("items") or {}), rng, depth + 1)
        return None if item is None else [item]
    return None


def pool_bundles(world: World, pool: str | None, op: Operation) -> list[dict[str, object]]:
    """The bundles a plan draws from: its named pool, else the records that fit its first operation."""
    if pool is not None:
        return list(world.pools.get(pool, []))
    if world.source == "hook":
        return [{}]
    return generic_bundles(world, op)


def catalog_has(catalog: Catalog, names: Iterable[str]) -> bool:
    return all(n in catalog for n in names)
