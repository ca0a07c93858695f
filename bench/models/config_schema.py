"""The typed schema of a model config: each field's type and allowed range, checked in one place.

Taken as Hydra parses them, model settings ran experiments nobody asked for: ``model.max_tokens=abc``
was recorded as the string ``"abc"``, ``model.max_tokens=-5`` ran as a cell ``[max_tokens=-5]``,
``model.tokenizer=bogus`` passed without a word. :class:`~surfbench.bench.models.ModelConfig` declares
each field's type by its annotation (``int``, ``float``, ``str``, ``X | None``, a ``Literal``) and its
range or choices by :func:`ranged` / :func:`one_of` / :func:`registered` (a plugin's name, bench.contracts.plugins)
metadata; :func:`checked` holds every field of a config to that before the config (let alone a run
folder) exists. A wrong value is a one-line :class:`~surfbench.bench.base.config.ConfigError` naming the
field, the value and what is allowed, with the override (``model.max_tokens=abc``) when the value came
from one. Nothing is coerced but a whole number where a number belongs (``temperature=1`` is ``1.0``,
the same experiment).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict, TypeVar, cast

from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.validation import json_type_name
from surfbench.bench.contracts import plugins

Where = Callable[[str, object], str]
"""``(field, value) -> "configs/model/m.yaml: max_tokens='abc'"`` or ``"model.max_tokens=abc"``."""
T = TypeVar("T")


class FieldMeta(TypedDict, total=False):
    """A field's metadata, as :func:`ranged`, :func:`one_of` and :func:`registered` write it."""

    range: tuple[float, float | None]
    choices: tuple[str, ...]
    null: str
    registry: str


def ranged(default: T, low: float, high: float | None, null: str = "") -> T:
    """A dataclass field whose number must lie in ``[low, high]`` (``high`` None: no upper bound).

    ``null``: what null means, for a field that may be null (``"no budget"``).
    """
    return dataclasses.field(default=default, metadata={"range": (low, high), "null": null})


def one_of(default: T, choices: Sequence[str], null: str = "") -> T:
    """A dataclass field whose text must be one of ``choices``."""
    return dataclasses.field(default=default, metadata={"choices": tuple(choices), "null": null})


def registered(default: str, kind: str) -> str:
    """A dataclass field whose text must name a plugin of ``kind`` (bench.contracts.plugins: ``providers``)."""
    return dataclasses.field(default=default, metadata={"registry": kind})


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _allowed(base: object, meta: FieldMeta) -> str:
    """What a field accepts, in words: ``a whole number, 1 or more and at most 256``, ``one of gguf, ...``."""
    origin = typing.get_origin(base) or base
    if origin is typing.Literal:
        return "one of " + ", ".join(typing.get_args(base))
    if "choices" in meta:
        return "one of " + ", ".join(meta["choices"])
    low, high = meta.get("range", (None, None))
    kinds: dict[object, str] = {
        int: "a whole number",
        float: "a number",
        str: "text",
        dict: "a mapping",
        bool: "true or false",
    }
    kind = kinds.get(origin, str(origin))
    if low is None:
        return kind
    if high is None:
        return f"{kind}, {_number(low)} or more"
    if origin is int:  # the wording of bench.run.overrides for the run's own settings
        return f"{kind}, {_number(low)} or more and at most {_number(high)}"
    return f"{kind} from {_number(low)} to {_number(high)}"


def _base(hint: object) -> tuple[object, bool]:
    """(the annotation without ``None``, whether ``None`` is allowed)."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return (args[0] if len(args) == 1 else hint), len(args) < len(typing.get_args(hint))
    return hint, False


def _kind(base: object) -> type:
    """The Python type a field's values have: ``str`` for a ``Literal`` of texts, ``dict`` for ``dict[str, Any]``."""
    origin = typing.get_origin(base) or base
    return str if origin is typing.Literal else cast(type, origin)  # a dataclass field's annotation


def _fits(base: object, meta: FieldMeta, value: object) -> tuple[bool, object]:
    """(whether ``value`` is of the field's type and in its range, the value as the config keeps it)."""
    kind = _kind(base)
    if kind is bool:  # true or false, not 1 or "yes"
        return isinstance(value, bool), value
    if kind in (str, dict):
        if not isinstance(value, kind):
            return False, value
        choices = typing.get_args(base) if typing.get_origin(base) is typing.Literal else meta.get("choices")
        return choices is None or value in choices, value
    if kind not in (int, float) or isinstance(value, bool):  # bool is an int in Python: true is not 1
        return False, value
    if not isinstance(value, int) and not (kind is float and isinstance(value, float)):
        return False, value  # max_tokens=1.5 or 1e3: a whole number is asked for, not rounded
    low, high = meta.get("range", (None, None))
    inside = (low is None or value >= low) and (high is None or value <= high)
    return inside, float(value) if kind is float else value


def checked(schema: type, data: Mapping[str, Any], where: Where) -> dict[str, Any]:
    """``data`` with each field it sets checked against the ``schema`` dataclass's type, range or choices.

    Raises ConfigError at the first value that does not fit (see the module docstring); keys that are
    not fields are left to the caller, which refuses them with the list of known ones.
    """
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    out = dict(data)
    for key, value in data.items():
        if key not in fields:
            continue
        base, nullable = _base(hints[key])
        meta = cast(FieldMeta, fields[key].metadata)
        if value is None and _kind(base) is dict:
            out[key] = {}  # `limits:` with nothing under it: no limits declared
            continue
        if value is None and nullable:
            continue
        kind = meta.get("registry")
        if kind and isinstance(value, str) and ":" not in value and value not in plugins.names(kind):
            known, tip = ", ".join(plugins.names(kind)), plugins.close_names(kind, value)  # "; did you mean x?"
            raise ConfigError(f"{where(key, value)}: must be a registered {plugins.KINDS[kind]}, one of {known}{tip}")
        ok, kept = (False, value) if value is None else _fits(base, meta, value)
        if not ok:
            allowed = _allowed(base, meta) + (f", or null ({meta.get('null') or 'unset'})" if nullable else "")
            same = isinstance(value, _kind(base)) or (_kind(base) is float and isinstance(value, int))
            got = "" if same and not isinstance(value, bool) else f", got {json_type_name(value)}"
            raise ConfigError(f"{where(key, value)}: must be {allowed}{got}")
        out[key] = kept
    return out
