"""What makes a cell and an episode themselves: identity hashes, readable labels and episode keys.

A cell is identified by a hash of everything that can change an episode: the resolved surface
(kind and parameters), the model settings that shape a reply (provider model id or the embedded
weights' sha256, calling mode, prompt format, temperature, max_tokens, n_ctx, seed), the suite
(name, catalog content, system prompt, step limit), the stuck-episode stop and the scoring
version. An episode's key adds its task's content hash and the repeat, so a sweep over a parameter,
an edited task or an edited catalog never reuses an old episode.

Keys are readable (suite, surface label, model label, mode, task id, repeat) but the readable part
is only a prefix: the hash at the end keeps two episodes apart however their ids are spelled (``a/b``
and ``a b``) and however long they are.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

SCORING_VERSION = 2
"""Bumped whenever the scorer's verdict on the same trace can change; part of every cell's identity."""

MODEL_IDENTITY_FIELDS = (
    "provider", "model", "embedded", "mode", "prompt_format", "chat_format", "temperature", "max_tokens",
    "n_ctx", "seed", "script_suite",
)  # fmt: skip
"""Model settings that can change what the model answers (threads, keys, descriptions cannot)."""

KEY_PREFIX_CHARS = 96
"""The readable part of a key is cut here; the hash after it is never cut."""


def canonical_hash(value: Any, length: int = 12) -> str:
    """sha256 of the canonical JSON of ``value`` (sorted keys, compact), first ``length`` hex digits."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def task_hash(task: Any) -> str:
    """Content hash of a task: every field that the loop or the scorer reads (not where it came from)."""
    content: dict[str, Any] = {}
    for f in fields(task):
        if f.name in ("source", "catalog"):
            continue
        content[f.name] = getattr(task, f.name)
    catalog = getattr(task, "catalog", None)
    if catalog is not None:  # a task with its own catalog (BFCL): its functions are part of it
        content["catalog"] = catalog.content_hash
    return canonical_hash(_plain(content), 16)


def _plain(value: Any) -> Any:
    """Dataclasses, tuples and mappings as plain JSON values (for hashing)."""
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value) if f.compare}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def model_identity(cfg: Any, mode: str) -> dict[str, Any]:
    """The model settings that shape an episode, with the embedded weights named by their sha256."""
    out: dict[str, Any] = {name: getattr(cfg, name, None) for name in MODEL_IDENTITY_FIELDS}
    out["mode"] = mode
    if getattr(cfg, "cache_control", None):  # a prompt-cache breakpoint changes the request; absent, old ids hold
        out["cache_control"] = cfg.cache_control
    if cfg.provider == "local" and cfg.embedded:
        from surfbench.bench.models.local import embedded

        out["embedded"] = {"name": cfg.embedded, "sha256": embedded(cfg.embedded).sha256}
    return out


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _flat(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flat(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    return {prefix: value}


def label(name: str, resolved: Mapping[str, Any], shipped: Mapping[str, Any] | None) -> str:
    """``name``, or ``name[k=3,...]`` naming every setting that differs from the shipped config file.

    Two cells that share a config name but were run with different overrides get different labels, so
    no table or figure can show them as one.
    """
    if shipped is None:
        return name
    mine, base = _flat("", dict(resolved)), _flat("", dict(shipped))
    diffs = [f"{k}={_value_text(mine.get(k))}" for k in sorted(set(mine) | set(base)) if mine.get(k) != base.get(k)]
    return f"{name}[{','.join(diffs)}]" if diffs else name


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
    """The early stop for stuck episodes (bench.stuck); None: off."""
    backend_options: dict[str, Any] = field(default_factory=dict)
    """The backend's options (sandbox limits, ...): they can change what a command does."""
    scoring_version: int = SCORING_VERSION

    @property
    def cell_id(self) -> str:
        return canonical_hash(_plain(self))

    def as_dict(self) -> dict[str, Any]:
        return {**_plain(self), "cell_id": self.cell_id}


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
