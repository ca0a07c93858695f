"""OpenAPI 3.0/3.1 and Swagger 2.0 importer.

One operation per path + method: ``operationId`` is the name (or ``<method>_<path>`` when absent), the
first tag is the category, and path, query and body (or form) parameters are merged into one object
schema. Local ``$ref`` pointers are resolved inline; a reference cycle is an error naming the tool.
A name providers reject as a tool name (``repos/get``) becomes a valid one (``repos__get``); the map
is kept per source (:func:`surfbench.bench.catalog.provider_limits.name_map_for`).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping
from typing import Any, cast

from surfbench.bench.catalog.catalog import CatalogError, Operation
from surfbench.bench.catalog.importers.common import make_operation
from surfbench.bench.catalog.provider_limits import record_name_map, safe_names

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
PARAM_LOCATIONS = ("path", "query", "formData")
# Keys of an OpenAPI parameter or schema that carry meaning for a tool schema; the rest (examples,
# xml, x-go-name, ...) is documentation noise that would only inflate the tool block.
SCHEMA_KEYS = (
    "type", "description", "enum", "items", "properties", "required", "format", "default", "minimum",
    "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "additionalProperties", "oneOf", "anyOf", "allOf", "nullable", "const",
)  # fmt: skip


class _Resolver:
    def __init__(self, doc: Mapping[str, object], source: str) -> None:
        self.doc = doc
        self.source = source

    def lookup(self, ref: str, tool: str) -> object:
        if not ref.startswith("#/"):
            raise CatalogError(self.source, f"only local $ref pointers are supported, got {ref!r}", tool=tool)
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise CatalogError(self.source, f"dangling $ref {ref!r}", tool=tool)
            node = node[part]
        return node

    def resolve(self, node: object, tool: str, chain: tuple[str, ...] = ()) -> object:
        """Inline every ``$ref`` below ``node``; ``chain`` holds the refs being expanded (cycle check)."""
        if isinstance(node, list):
            return [self.resolve(item, tool, chain) for item in node]
        if not isinstance(node, Mapping):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise CatalogError(self.source, "$ref must be a string", tool=tool)
            if ref in chain:
                loop = " -> ".join((*chain[chain.index(ref) :], ref))
                raise CatalogError(self.source, f"$ref cycle: {loop}", tool=tool)
            target = self.resolve(self.lookup(ref, tool), tool, (*chain, ref))
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if siblings and isinstance(target, Mapping):
                return {**target, **cast(dict[str, object], self.resolve(siblings, tool, chain))}  # a dict: one back
            return target
        return {k: self.resolve(v, tool, chain) for k, v in node.items()}


def _clean(schema: object) -> object:
    """Keep the schema keywords a model needs, recursively; merge ``allOf`` of objects."""
    if isinstance(schema, list):
        return [_clean(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    if "allOf" in schema and all(isinstance(s, Mapping) and "properties" in s for s in schema["allOf"]):
        merged: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        schema = {**{k: v for k, v in schema.items() if k != "allOf"}, **merged}
    out: dict[str, Any] = {}
    for key in SCHEMA_KEYS:
        if key not in schema:
            continue
        value = schema[key]
        if key == "properties" and isinstance(value, Mapping):
            out[key] = {name: _clean(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "oneOf", "anyOf", "allOf"):
            out[key] = _clean(value)
        else:
            out[key] = copy.deepcopy(value)
    if out.get("required") == []:
        del out["required"]
    return out


def _param_schema(param: Mapping[str, object]) -> dict[str, object]:
    """Swagger 2 puts the type on the parameter; OpenAPI 3 puts it under ``schema``."""
    base = param.get("schema") if isinstance(param.get("schema"), Mapping) else param
    schema = cast(dict[str, object], _clean(base))  # base is a mapping: cleaned, a dict
    if isinstance(schema.get("required"), bool):  # Swagger 2: "required" belongs to the parameter
        del schema["required"]
    if param.get("description") and "description" not in schema:
        schema["description"] = param["description"]
    if schema.get("type") == "file":
        schema["type"] = "string"
        schema.setdefault("description", "file contents")
    return schema


def _fallback_name(method: str, path: str) -> str:
    return f"{method}_{re.sub(r'[^A-Za-z0-9]+', '_', path).strip('_')}"


def import_openapi(doc: object, source: str) -> list[Operation]:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("paths"), Mapping):
        raise CatalogError(source, "OpenAPI/Swagger document has no 'paths' object")
    resolver = _Resolver(doc, source)
    ops: list[Operation] = []
    for path, item in doc["paths"].items():
        if not isinstance(path, str):
            raise CatalogError(source, f"path {path!r} must be a string")
        if not isinstance(item, Mapping):
            raise CatalogError(source, f"path {path!r} is not an object")
        shared = item.get("parameters") or []
        if not isinstance(shared, list):
            raise CatalogError(source, f"path {path!r}: 'parameters' must be a list")
        for method in METHODS:
            spec = item.get(method)
            if spec is None:
                continue
            if not isinstance(spec, Mapping):
                raise CatalogError(source, f"{method.upper()} {path} is not an object")
            name = spec.get("operationId") or _fallback_name(method, path)
            ops.append(_operation(resolver, name, method, path, spec, shared, source))
    # GitHub's `repos/update-org-ruleset`: no provider takes `/` in a tool name; the map is kept
    # (bench.catalog.provider_limits)
    renamed = safe_names(op.name for op in ops)
    record_name_map(source, renamed)
    return [dataclasses.replace(op, name=renamed[op.name]) if op.name in renamed else op for op in ops]


def _operation(
    resolver: _Resolver,
    name: str,
    method: str,
    path: str,
    spec: Mapping[str, object],
    shared: list[object],
    source: str,
) -> Operation:
    properties: dict[str, Any] = {}
    required: list[str] = []
    body: Any = None
    own = spec.get("parameters") or []
    if not isinstance(own, list):
        raise CatalogError(source, f"{method.upper()} {path}: 'parameters' must be a list", tool=name)
    params = cast(list[object], resolver.resolve(list(shared) + own, name))  # a list resolves to a list
    for param in params:
        if not isinstance(param, Mapping) or not isinstance(param.get("name"), str):
            raise CatalogError(source, f"a parameter of {method.upper()} {path} has no name", tool=name)
        where = param.get("in")
        if where == "body":
            body = param.get("schema", {})
            body_required = bool(param.get("required"))
            continue
        if where not in PARAM_LOCATIONS:
            continue  # headers and cookies are transport, not arguments a model chooses
        properties[param["name"]] = _param_schema(param)
        if param.get("required"):
            required.append(param["name"])
    request_body = spec.get("requestBody")
    if request_body is not None:
        request_body = resolver.resolve(request_body, name)
        content = request_body.get("content", {}) if isinstance(request_body, Mapping) else {}
        if not isinstance(content, Mapping):
            raise CatalogError(source, f"{method.upper()} {path}: requestBody.content must be an object", tool=name)
        media: Any = content.get("application/json") or next(iter(content.values()), {})
        body = media.get("schema", {}) if isinstance(media, Mapping) else {}
        body_required = isinstance(request_body, Mapping) and bool(request_body.get("required"))
    if body is not None:
        body = _clean(resolver.resolve(body, name))
        body_props = body.get("properties") if isinstance(body, Mapping) else None
        if isinstance(body_props, Mapping) and not (set(body_props) & set(properties)):
            properties.update(body_props)
            body_required_names = body.get("required", [])
            if not isinstance(body_required_names, list):
                raise CatalogError(source, f"{method.upper()} {path}: body 'required' must be a list", tool=name)
            required += [r for r in body_required_names if r in body_props]
        else:
            properties["body"] = body
            if body_required:
                required.append("body")
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(dict.fromkeys(required))
    # the summary, then the description, exactly as the document has them (no whitespace trimmed)
    summary = " ".join(str(spec[k]) for k in ("summary", "description") if spec.get(k))
    tags = spec.get("tags") or []
    if not isinstance(tags, list):
        raise CatalogError(source, f"{method.upper()} {path}: 'tags' must be a list", tool=name)
    return make_operation(
        name,
        summary or f"{method.upper()} {path}",
        parameters,
        source,
        category=tags[0] if tags else None,
        read_only=method in ("get", "head", "options"),
        destructive=method == "delete",
    )
