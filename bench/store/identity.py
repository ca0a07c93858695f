"""What makes a cell and an episode themselves: identity hashes, readable labels and episode keys.

A cell is identified by a hash of everything that can change an episode: the resolved surface
(kind and parameters), the model settings that shape a reply (provider model id or the embedded
weights' sha256, calling mode, prompt format, temperature, max_tokens, n_ctx, seed), the suite
(name, catalog content, system prompt, step limit), the stuck-episode stop, the scoring version, and
what the surface shows and runs (:func:`surface_text`, :func:`surface_code`). An episode's key adds its
task's content hash and the repeat, so a sweep over a parameter, an edited task, an edited catalog or
an edited surface never reuses an old episode.

A surface enters the identity twice. Its *text*: the system text and every tool a first turn can show
(``Surface.candidate_tools``: the static block; for preselect, whose tools depend on the request, the
typed tool of every candidate), as the model would read them (tool order and schema key order kept).
Its *code*: the source of the module that defines the surface class (and its session class), of every
module of the same package those import, directly or through each other (code mode's ``_code_calls``,
``_sdk``, ``_exec``; ``lazy`` for ``search``; ``listing``), of a file beside them that they name (code
mode's ``_code_runtime.py``, run as text in the sandbox), and of the contract modules whose texts every
surface returns (:data:`CONTRACT_MODULES`). The code is hashed, not declared: an error text, a meta
answer or a routing rule that changes shows in no first turn, and a declared version would be forgotten
when one of them is edited. The price is that any edit of those files, a comment too, makes new cells.
Hashes are of file contents (line endings normalised) by module name, never of paths, addresses or
times, so a copy of the repository elsewhere, another process or another hash seed gives the same key.

Keys are readable (suite, surface label, model label, mode, task id, repeat) but the readable part
is only a prefix: the hash at the end keeps two episodes apart however their ids are spelled (``a/b``
and ``a b``) and however long they are.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from surfbench.bench.contracts.surface import Surface
    from surfbench.bench.models.spec import ModelConfig
    from surfbench.bench.suites.suite_model import Task

SCORING_VERSION = 2
"""Bumped whenever the scorer's verdict on the same trace can change; part of every cell's identity."""

MODEL_IDENTITY_FIELDS = (
    "provider", "model", "embedded", "mode", "prompt_format", "chat_format", "temperature", "max_tokens",
    "n_ctx", "seed", "script_suite",
)  # fmt: skip
"""Model settings that can change what the model answers (threads, keys, descriptions cannot)."""

KEY_PREFIX_CHARS = 96
"""The readable part of a key is cut here; the hash after it is never cut."""


def canonical_hash(value: object, length: int = 12) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, compact), first ``length`` hex digits."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def task_hash(task: Task) -> str:
    """Content hash of a task: every field that the loop or the scorer reads (not where it came from)."""
    content: dict[str, object] = {}
    for f in fields(task):
        if f.name in ("source", "catalog"):
            continue
        content[f.name] = getattr(task, f.name)
    catalog = getattr(task, "catalog", None)
    if catalog is not None:  # a task with its own catalog (BFCL): its functions are part of it
        content["catalog"] = catalog.content_hash
    return canonical_hash(_plain(content), 16)


def _plain(value: object) -> object:
    """Dataclasses, tuples and mappings as plain JSON values (for hashing)."""
    if is_dataclass(value):
        return _plain_fields(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _plain_fields(value: DataclassInstance | type[DataclassInstance]) -> dict[str, object]:
    """A dataclass's compared fields as plain JSON values."""
    return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.compare}


ADDED_IDENTITY_FIELDS: dict[str, object] = {
    "cache_control": None,  # a prompt-cache breakpoint changes the request
    "repeat_penalty": None,  # sent with every request
    "stop_on_repeated_call": None,  # a cut answer is another answer (the stop in effect: ModelConfig.stop_in_step)
    "server": "llama-cpp-python",  # another engine
    "flash_attn": "off",  # attention computed in another order
}
"""Settings that joined the identity after runs were recorded, each with the value it leaves out of the identity:
at that value a cell keeps the id it had before the setting existed."""


def model_settings(cfg: ModelConfig, mode: str) -> dict[str, object]:
    """Every model setting that shapes an episode, as set (the embedded weights by name): what a label compares.

    :func:`model_identity` is this with each :data:`ADDED_IDENTITY_FIELDS` entry left out at its old value and
    the weights named by their sha256; a setting added to the identity is in both, and so labels itself.
    """
    out: dict[str, object] = {name: getattr(cfg, name, None) for name in MODEL_IDENTITY_FIELDS}
    out["mode"] = mode
    for name, old in ADDED_IDENTITY_FIELDS.items():
        out[name] = cfg.stop_in_step(mode) if name == "stop_on_repeated_call" else getattr(cfg, name, old)
    return out


def model_identity(cfg: ModelConfig, mode: str) -> dict[str, object]:
    """The model settings that shape an episode, with the embedded weights named by their sha256."""
    out = {
        name: value
        for name, value in model_settings(cfg, mode).items()
        if name not in ADDED_IDENTITY_FIELDS or value != ADDED_IDENTITY_FIELDS[name]
    }
    if cfg.provider == "local" and cfg.embedded:
        from surfbench.bench.models.local import embedded

        out["embedded"] = {"name": cfg.embedded, "sha256": embedded(cfg.embedded).sha256}
    return out


def _value_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _flat(prefix: str, value: object) -> dict[str, object]:
    if isinstance(value, Mapping) and value:
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(_flat(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    return {prefix: value}


def label(name: str, resolved: Mapping[str, object], shipped: Mapping[str, object] | None) -> str:
    """``name``, or ``name[k=3,...]`` naming every setting that differs from the shipped config file.

    Two cells that share a config name but were run with different overrides get different labels, so
    no table or figure can show them as one.
    """
    if shipped is None:
        return name
    mine, base = _flat("", dict(resolved)), _flat("", dict(shipped))
    diffs = [f"{k}={_value_text(mine.get(k))}" for k in sorted(set(mine) | set(base)) if mine.get(k) != base.get(k)]
    return f"{name}[{','.join(diffs)}]" if diffs else name


CONTRACT_MODULES = ("surfbench.bench.contracts.surface", "surfbench.bench.base.validation")
"""Core modules whose texts every surface returns (a call to a tool not shown, invalid arguments)."""

_SIBLING = re.compile(r"[A-Za-z0-9_.-]+\.py")


def _ordered_hash(value: object) -> str:
    """sha256 of the JSON of ``value`` in its own order (the order a model reads it; sets sorted), 16 hex digits."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_stable)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _stable(value: object) -> object:
    return sorted(value, key=str) if isinstance(value, set | frozenset) else str(value)


def surface_text(surface: Surface) -> str:
    """Hash of what ``surface`` shows on a first turn: its system text and ``candidate_tools()``, in order."""
    tools = [[t.name, t.description, t.parameters] for t in surface.candidate_tools()]
    shown: dict[str, object] = {"system": surface.system_text(), "tools": tools}
    guidance: list[str] = getattr(surface, "guidance_candidates", list)()  # bench.catalog.guidance: every snippet
    if guidance:  # only with the option: other cells keep their ids
        shown["guidance"] = guidance
    return _ordered_hash(shown)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()[:16]


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` (imported or importable), or None."""
    origin = getattr(sys.modules.get(name), "__file__", None)
    if origin is None:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        origin = spec.origin if spec is not None else None
    path = Path(origin) if origin else None
    return path if path is not None and path.suffix == ".py" and path.is_file() else None


@functools.lru_cache(maxsize=512)
def _scan(path: Path, package: str, _stamp: tuple[int, int]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """A source file's hash, the modules it imports (absolute names) and the ``*.py`` names it holds as text."""
    data = path.read_bytes()
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return _digest(data), (), ()
    imports: list[str] = []
    named: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".") if package else []
            base = ".".join(parts[: len(parts) - node.level + 1] + [node.module or ""]) if node.level else node.module
            base = (base or "").strip(".")
            imports += [base, *(f"{base}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SIBLING.fullmatch(node.value):
            named.append(node.value)
    return _digest(data), tuple(imports), tuple(named)


def _walk(name: str, scope: str, out: dict[str, str]) -> None:
    """Add module ``name``, the modules of package ``scope`` it imports and the files beside it that it names."""
    path = _module_file(name)
    if name in out or path is None:
        return
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    stat = path.stat()
    digest, imports, named = _scan(path, package, (stat.st_mtime_ns, stat.st_size))
    out[name] = digest
    for file_name in named:
        sibling = path.parent / file_name
        key = f"{package}/{file_name}" if package else file_name
        if key not in out and sibling.is_file():
            out[key] = _digest(sibling.read_bytes())
    for imported in imports:
        if scope and imported.startswith(f"{scope}.") and imported not in CONTRACT_MODULES:
            _walk(imported, scope, out)


def surface_code(surface_cls: type) -> dict[str, str]:
    """Module (or file) -> hash of its source, for every source file of a surface's code (module docstring).

    A surface class defined where no source file is (``exec``) is named by its class source, or by name.
    """
    from surfbench.bench.contracts.surface import Session, Surface

    out: dict[str, str] = {}
    for name in CONTRACT_MODULES:
        _walk(name, "", out)
    session_cls = getattr(surface_cls, "session_class", Session)
    for cls in (*surface_cls.__mro__, *session_cls.__mro__):
        if not issubclass(cls, Surface | Session) or cls.__module__ in out:
            continue
        path = _module_file(cls.__module__)
        if path is not None:
            scope = cls.__module__ if path.name == "__init__.py" else cls.__module__.rpartition(".")[0]
            _walk(cls.__module__, scope, out)
            continue
        try:
            out[f"{cls.__module__}:{cls.__qualname__}"] = _digest(inspect.getsource(cls).encode("utf-8"))
        except (OSError, TypeError):
            out[f"{cls.__module__}:{cls.__qualname__}"] = "no source"
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class CellIdentity:
    """Everything that can change an episode of a cell; ``cell_id`` is its hash."""

    suite: str
    suite_setup: str
    """Hash of the suite's system prompt, step limit and step rule."""
    catalog_hash: str
    surface: dict[str, Any]
    """``{"kind": ..., "params": {...}}`` as resolved (overrides applied)."""
    model: dict[str, Any]
    """See :func:`model_identity`."""
    max_steps: int
    stop_on_repeat: int | None = None
    """The early stop for stuck episodes (bench.score.stuck); None: off."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """The backend's options (sandbox limits, ...): they can change what a command does."""
    scoring_version: int = SCORING_VERSION
    surface_text: str = ""
    """Hash of what the surface shows on a first turn (:func:`surface_text`)."""
    surface_code: dict[str, str] = field(default_factory=dict)
    """Module -> hash of each source file of the surface's code (:func:`surface_code`)."""
    policy: dict[str, Any] | None = field(default=None, compare=False)
    """The operation policy (bench.suites.policy), in full; None: none. Hashed only when set, so that a cell
    without a policy keeps the id it had before policies existed."""

    @property
    def cell_id(self) -> str:
        return canonical_hash(self._content())

    def _content(self) -> dict[str, object]:
        content = _plain_fields(self)  # fields with compare=False (the policy) are left out here
        return {**content, "policy": self.policy} if self.policy is not None else content

    def as_dict(self) -> dict[str, object]:
        return {**self._content(), "cell_id": self.cell_id}


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def readable(text: str) -> str:
    """``text`` with anything a file name cannot hold replaced by ``-`` (not unique: see :func:`episode_key`)."""
    return _UNSAFE.sub("-", text).strip("-") or "x"


def episode_key(prefix_parts: tuple[str, ...], cell_id: str, task_id: str, task_content: str, repeat: int) -> str:
    """A file-name-safe, collision-free episode key.

    The readable prefix (suite, surface, model, mode, task id, repeat) may be cut and may map two ids
    to the same text; the hash after it covers the cell, the exact task id, its content and the
    repeat, and is never cut.
    """
    digest = canonical_hash([cell_id, task_id, task_content, repeat], 16)
    head = readable("__".join((*prefix_parts, task_id)))[:KEY_PREFIX_CHARS].rstrip("-_.")
    return f"{head}__r{repeat}__{digest}"
