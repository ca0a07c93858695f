"""Typed field readers shared by the suite and task checks: one type per field, one-line errors.

A wrong type is named as such (``field 'id' must be a string, got integer 42``), never coerced.
:mod:`surfbench.bench.suites.format_checks` and :mod:`surfbench.bench.suites.matcher_format` build on these; this module
knows nothing about suites or tasks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, NoReturn

import yaml

from surfbench.bench.base.bounded import ReadRefused, read_text
from surfbench.bench.base.config import ConfigError
from surfbench.bench.base.validation import closest, json_type_name, parse_problem, short

# libyaml when present: ten times faster on a big task file, and it bounds nesting itself
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SuiteError(ConfigError):
    """A malformed suite or task file: names the file, the task and the field."""

    def __init__(self, message: str) -> None:
        # one line, always: the CLI prints it as one, and a user's text may hold any line break
        super().__init__(" ".join(str(message).splitlines()))


def _fail(where: str, message: str) -> NoReturn:
    raise SuiteError(f"{where}: {message}")


def _got(value: object) -> str:
    return "nothing" if value is None else f"{json_type_name(value)} {short(value)}"


def read_yaml(path: Path, kind: str = "suite file") -> object:
    """Parse one YAML file; anything unreadable (missing, a folder, not UTF-8, bad syntax) is a SuiteError.

    ``kind`` (``suite file``, ``task file``) picks the size limit (bench/base/bounded.py); a file over it, a
    FIFO or a device is a SuiteError too.
    """
    try:
        text = read_text(path, kind)
    except ReadRefused as exc:
        _fail(str(path), exc.problem)
    except FileNotFoundError:
        _fail(str(path), "file not found")
    except IsADirectoryError:
        _fail(str(path), "is a directory, not a file")
    except UnicodeDecodeError as exc:
        _fail(str(path), f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        _fail(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}")
    try:
        return yaml.load(text, Loader=_YAML_LOADER)
    except yaml.YAMLError as exc:
        _fail(str(path), f"invalid YAML: {exc}")
    except (ValueError, OverflowError, RecursionError) as exc:  # a 5,000-digit number, a 30 February
        _fail(str(path), f"invalid YAML: {parse_problem(exc)}")


def no_unknown(data: Iterable[object], allowed: AbstractSet[str], where: str) -> None:
    """Refuse keys outside ``allowed``, with a did-you-mean."""
    unknown = sorted(str(k) for k in set(data) - allowed)
    if unknown:
        near = closest(unknown[0], allowed)
        tip = f" (did you mean {near[0]!r}?)" if near else ""
        _fail(where, f"unknown key {unknown[0]!r}{tip}; allowed: {', '.join(sorted(allowed))}")


def text(
    data: Mapping[str, object], key: str, where: str, *, required: bool = False, empty: bool = False
) -> str | None:
    """A string field (None when absent); ``empty``: an empty string is allowed."""
    value = data.get(key)
    if value is None:
        if required:
            _fail(where, f"field {key!r} is required")
        return None
    if not isinstance(value, str):
        _fail(where, f"field {key!r} must be a string, got {_got(value)}")
    if not empty and not value.strip():
        _fail(where, f"field {key!r} must not be empty")
    return value


def boolean(data: Mapping[str, object], key: str, where: str) -> bool | None:
    """A true/false field (None when absent): ``"yes"`` or ``1`` are errors, not truthy."""
    value = data.get(key)
    if value is not None and not isinstance(value, bool):
        _fail(where, f"field {key!r} must be true or false, got {_got(value)}")
    return value


def mapping(data: Mapping[str, object], key: str, where: str) -> dict[str, object]:
    """A mapping field ({} when absent)."""
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        _fail(where, f"field {key!r} must be a mapping, got {_got(value)}")
    return dict(value)


def items(data: Mapping[str, object], key: str, where: str) -> list[object]:
    """A list field ([] when absent)."""
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        _fail(where, f"field {key!r} must be a list, got {_got(value)}")
    return value


def strings(data: Mapping[str, object], key: str, where: str, *, one_ok: bool = False) -> list[str]:
    """A list of non-empty strings ([] when absent); ``one_ok``: a lone string is a list of one."""
    value = data.get(key)
    if one_ok and isinstance(value, str):
        value = [value]
    if value is not None and not isinstance(value, list):
        _fail(where, f"field {key!r} must be a list of strings, got {_got(value)}")
    for i, item in enumerate(value or []):
        if not isinstance(item, str) or not item.strip():
            _fail(where, f"{key}[{i}] must be a non-empty string, got {_got(item)}")
    return list(value or [])
