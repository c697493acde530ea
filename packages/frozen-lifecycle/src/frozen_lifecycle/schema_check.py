"""A small JSON Schema (2020-12) interpreter, standard library only.

It understands exactly the keywords that contracts/job-status-graph.schema.json uses and
refuses a schema with any other keyword, so the schema file stays the single source of
truth and cannot silently outgrow this interpreter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

SUPPORTED_KEYWORDS = frozenset(
    {
        "$schema", "$id", "$defs", "$ref", "title", "description",
        "type", "required", "properties", "additionalProperties", "propertyNames",
        "items", "minItems", "uniqueItems", "pattern",
    }
)  # fmt: skip

_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
}


class UnsupportedSchemaError(ValueError):
    """The schema uses a keyword this interpreter does not implement."""


def schema_errors(instance: Any, schema: Mapping[str, Any]) -> list[str]:
    """Every way `instance` breaks `schema`, as 'path: message' strings (empty when valid)."""
    return list(_check(instance, schema, schema, "$"))


def _check(
    value: Any, node: Mapping[str, Any], root: Mapping[str, Any], path: str
) -> Iterator[str]:
    unknown = set(node) - SUPPORTED_KEYWORDS
    if unknown:
        raise UnsupportedSchemaError(f"unsupported schema keyword(s): {', '.join(sorted(unknown))}")
    if "$ref" in node:
        yield from _check(value, _resolve(node["$ref"], root), root, path)
    expected = node.get("type")
    if expected is not None and not isinstance(value, _TYPES[expected]):
        yield f"{path}: expected {expected}, got {_describe(value)}"
        return
    if isinstance(value, dict):
        yield from _check_object(value, node, root, path)
    if isinstance(value, list):
        yield from _check_array(value, node, root, path)
    if isinstance(value, str) and "pattern" in node and not re.search(node["pattern"], value):
        yield f"{path}: {value!r} does not match {node['pattern']}"


def _check_object(
    value: dict[str, Any], node: Mapping[str, Any], root: Mapping[str, Any], path: str
) -> Iterator[str]:
    for key in node.get("required", ()):
        if key not in value:
            yield f"{path}: missing required property {key!r}"
    properties: Mapping[str, Any] = node.get("properties", {})
    extra = node.get("additionalProperties", True)
    for key, item in value.items():
        if "propertyNames" in node:
            yield from _check(key, node["propertyNames"], root, f"{path} key {key!r}")
        if key in properties:
            yield from _check(item, properties[key], root, f"{path}.{key}")
        elif extra is False:
            yield f"{path}: unexpected property {key!r}"
        elif isinstance(extra, dict):
            yield from _check(item, extra, root, f"{path}.{key}")


def _check_array(
    value: list[Any], node: Mapping[str, Any], root: Mapping[str, Any], path: str
) -> Iterator[str]:
    if len(value) < node.get("minItems", 0):
        yield f"{path}: needs at least {node['minItems']} item(s), has {len(value)}"
    if node.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if any(_json_equal(item, other) for other in seen):
                yield f"{path}: duplicate item {item!r}"
            else:
                seen.append(item)
    if "items" in node:
        for index, item in enumerate(value):
            yield from _check(item, node["items"], root, f"{path}[{index}]")


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#/"):
        raise UnsupportedSchemaError(f"only local references are supported, not {ref!r}")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node  # type: ignore[no-any-return]


def _json_equal(a: Any, b: Any) -> bool:
    # JSON Schema equality: 1 and true differ, although Python says 1 == True.
    return type(a) is type(b) and a == b


def _describe(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
