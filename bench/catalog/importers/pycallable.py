"""Python callables with Google-style docstrings become operations.

The signature gives the argument names, types and which are required (no default); the docstring's
``Args:`` section gives each argument's description; the summary gives the tool's description.
Schemas are strict (``additionalProperties: false``).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal, cast, get_args, get_origin

from surfbench.bench.catalog.catalog import CatalogError, Operation
from surfbench.bench.catalog.importers.common import exists, make_operation

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def type_schema(annotation: object, source: str, tool: str) -> dict[str, object]:
    """JSON Schema for a Python annotation (str, int, float, bool, list[X], dict, Literal, Optional)."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    schema: dict[str, object]
    if typing.is_typeddict(annotation):
        hints = typing.get_type_hints(annotation)
        required = [k for k in hints if k in cast(Any, annotation).__required_keys__]  # a TypedDict class
        schema = {
            "type": "object",
            "properties": {k: type_schema(v, source, tool) for k, v in hints.items()},
            "additionalProperties": False,
        }
        if required:
            schema["required"] = required
        return schema
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        schema = {"enum": list(args)}
        kinds = {_SCALARS.get(type(a)) for a in args}
        if len(kinds) == 1 and None not in kinds:
            schema["type"] = kinds.pop()
        return schema
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return type_schema(inner[0], source, tool)
        return {"anyOf": [type_schema(a, source, tool) for a in inner]}
    if annotation in (list, tuple, set) or origin in (list, tuple, set, Iterable):
        schema = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = type_schema(args[0], source, tool)
        return schema
    if annotation is dict or origin is dict:
        return {"type": "object"}
    raise CatalogError(source, f"unsupported annotation {annotation!r}", tool=tool)


def parse_google_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Return (description, {arg: description}) from a Google-style docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section = header.group(1)
            current = None
            continue
        if section is None:
            summary.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            match = _ARG_LINE.match(line)
            if match and (len(line) - len(line.lstrip())) <= 4:
                current = match.group(1).lstrip("*")
                args[current] = match.group(3).strip()
            elif current and line.strip():
                args[current] = f"{args[current]} {line.strip()}".strip()
    return " ".join(" ".join(summary).split()), args


def operation_from_callable(fn: Callable[..., object], source: str) -> Operation:
    name = getattr(fn, "__name__", None)
    if not name:
        raise CatalogError(source, f"{fn!r} has no __name__")
    description, arg_docs = parse_google_docstring(fn.__doc__ or "")
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # unresolvable forward references: fall back to raw annotations
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name in ("self", "cls"):
            continue
        schema = type_schema(hints.get(param.name, param.annotation), source, name)
        if param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
        elif param.default is not None and isinstance(param.default, str | int | float | bool):
            schema["default"] = param.default
        properties[param.name] = schema
    undocumented = set(arg_docs) - set(properties)
    if undocumented:
        raise CatalogError(source, f"docstring documents unknown argument(s) {sorted(undocumented)}", tool=name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    meta = getattr(fn, "__surfbench_op__", {})
    return make_operation(
        name,
        description,
        parameters,
        source,
        category=meta.get("category"),
        weight=meta.get("weight", 0.0),
        read_only=bool(meta.get("read_only", False)),
        destructive=bool(meta.get("destructive", False)),
    )


def package_name(path: Path) -> str | None:
    """The dotted name the import system finds this very file under (``surfbench.tasks.forge.backend``), or None.

    A hook in a package (a shipped suite's ``backend.py``) is importable by name too: loaded by path as
    well, it would be a second module of the same file (its classes unequal to the first's, its state
    twice). Tried: the file's packages under the ``surfbench`` namespace, and a lone module by its name.
    """
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    names = [".".join(parts if parts[:1] == ["surfbench"] else ["surfbench", *parts])] if parts else []
    if len(parts) == 1:
        names.append(parts[0])
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except Exception:  # noqa: BLE001 - a parent package that fails to import: load by path, as before
            continue
        if spec is not None and spec.origin and Path(spec.origin).resolve() == path:
            return name
    return None


def load_module(module_name: str, source: str) -> types.ModuleType:
    """Import a dotted module, or a ``.py`` file by path (by its package name when it has one)."""
    if module_name.endswith(".py"):
        path = Path(module_name)
        if not exists(path) or not path.is_file():
            raise CatalogError(source, f"no such file {module_name!r}")
        named = package_name(path)
        if named is not None:
            try:
                return importlib.import_module(named)
            except Exception as exc:
                raise CatalogError(source, f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
        unique = "surfbench_user_" + hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
        if unique in sys.modules:
            return sys.modules[unique]
        spec = importlib.util.spec_from_file_location(unique, path)
        if spec is None or spec.loader is None:
            raise CatalogError(source, f"cannot load {module_name!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[unique] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[unique]
            raise CatalogError(source, f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
        return module
    try:
        return importlib.import_module(module_name)
    except (ImportError, ValueError, TypeError) as exc:  # ValueError/TypeError: an empty or relative name
        raise CatalogError(source, f"cannot import module {module_name!r}: {exc}") from None


def import_callables(spec: str) -> list[Operation]:
    """Import ``module:attr`` (or ``file.py:attr``).

    attr is a function, a list of functions, or a class whose ``@operation`` methods become the
    operations (a backend); without attr, the module's own public functions.
    """
    module_name, _, attr = spec.rpartition(":") if spec.count(":") else (spec, "", "")
    module = load_module(module_name, spec)
    if attr:
        if not hasattr(module, attr):
            raise CatalogError(spec, f"module {module_name!r} has no attribute {attr!r}")
        target = getattr(module, attr)
        if isinstance(target, type):
            from surfbench.bench.catalog.catalog import operation_methods

            fns = operation_methods(target)
            if not fns:
                raise CatalogError(spec, f"class {attr!r} has no @operation methods")
        else:
            fns = list(target) if isinstance(target, list | tuple) else [target]
    else:
        fns = [
            obj
            for n, obj in vars(module).items()
            if inspect.isfunction(obj) and obj.__module__ == module.__name__ and not n.startswith("_")
        ]
    for fn in fns:
        if not callable(fn):
            raise CatalogError(spec, f"{fn!r} is not callable")
    return [operation_from_callable(fn, spec) for fn in fns]
