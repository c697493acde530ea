"""The HTTP API page: the app's OpenAPI document as Markdown, one section per tag, then the
schemas. Plain Markdown, so the page needs no script to read."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tools.docs.markdown import NOTICE, code, sentence

METHODS = ("get", "head", "post", "put", "patch", "delete")
# Patterns longer than this (date bounds written out as regular expressions) are left to the
# document itself: on a page they are unreadable.
LONGEST_PATTERN = 80

Schema = Mapping[str, Any]


def http_api_page(document: Mapping[str, Any]) -> str:
    info = document["info"]
    schemes = document.get("components", {}).get("securitySchemes", {})
    parts = [
        NOTICE.format(source="the application's OpenAPI document (`/openapi.json`)"),
        "\n\n# HTTP API\n\n",
        f"{info['title']} {info['version']}, OpenAPI {document['openapi']}. ",
        "The service serves this document at `/openapi.json`, with Swagger UI at `/docs` and "
        "ReDoc at `/redoc`. It describes the demo catalog's saved queries; a service describes "
        "its own catalog's.\n\n",
        info.get("description", "").strip() + "\n\n",
    ]
    for name, scheme in schemes.items():
        parts.append(
            f"**Authentication.** Operations marked *token* take `Authorization: "
            f"{str(scheme.get('scheme', name)).capitalize()} TOKEN` ({name}): "
            f"{scheme.get('description', '')}\n\n"
        )
    operations = list(_operations(document))
    names = {op["operationId"]: op.get("summary", op["operationId"]) for _, _, op in operations}
    common = _common_responses([op for _, _, op in operations])
    if common:
        parts.append("## Shared answers {#shared-answers}\n\nMany operations may answer:\n\n")
        parts += [_response(status, response, names) + "\n" for status, response in common.items()]
        parts.append("\n")
    for tag in dict.fromkeys(_tag(op) for _, _, op in operations):
        parts.append(f"## {tag.capitalize()}\n\n")
        for method, path, operation in operations:
            if _tag(operation) == tag:
                parts.append(_operation(method, path, operation, names, common))
    parts.append("## Schemas\n\n")
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        parts.append(f"### {name} {{#{_schema_anchor(name)}}}\n\n")
        if schema.get("description"):
            parts.append(sentence(schema["description"]) + "\n\n")
        parts.append("\n".join(_schema_lines(schema, 0)) + "\n\n")
    return "".join(parts).rstrip("\n") + "\n"


def _operations(document: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield method, path, item[method]


def _tag(operation: Mapping[str, Any]) -> str:
    return str((operation.get("tags") or ["other"])[0])


def _common_responses(operations: list[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The answers that most operations document alike (401, 405, 503, ...), to be written
    once; an operation that has one of them refers to it."""
    counts: dict[str, list[Mapping[str, Any]]] = {}
    for operation in operations:
        for status, response in operation.get("responses", {}).items():
            counts.setdefault(status, []).append(response)
    common = {}
    for status, responses in sorted(counts.items()):
        most = max(responses, key=responses.count)
        if responses.count(most) * 2 > len(operations):
            common[status] = most
    return common


def _operation(
    method: str,
    path: str,
    operation: Mapping[str, Any],
    names: Mapping[str, str],
    common: Mapping[str, Mapping[str, Any]],
) -> str:
    lines = [f"### {operation.get('summary', path)} {{#{operation['operationId']}}}", ""]
    token = " · *token*" if operation.get("security") else ""
    lines += [f"{code(method.upper() + ' ' + path)}{token}", ""]
    if operation.get("description"):
        lines += [operation["description"].strip(), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["**Parameters**", ""]
        for parameter in parameters:
            facts = [parameter["in"], _type(parameter.get("schema", {}))]
            facts += ["required"] if parameter.get("required") else []
            facts += _constraints(parameter.get("schema", {}))
            text = parameter.get("description") or parameter.get("schema", {}).get("description")
            lines.append(f"- {code(parameter['name'])} ({'; '.join(facts)}){_then(text)}")
        lines.append("")
    body = operation.get("requestBody")
    if body:
        for media, content in body.get("content", {}).items():
            needed = ", required" if body.get("required") else ""
            lines += [
                f"**Request body** ({code(media)}{needed}): {_type(content.get('schema', {}))}",
                "",
            ]
    lines += ["**Responses**", ""]
    shared = []
    for status, response in sorted(operation.get("responses", {}).items()):
        if common.get(status) == response:
            shared.append(code(status))
        else:
            lines.append(_response(status, response, names))
    if shared:
        lines.append(f"- {', '.join(shared)}: see [shared answers](#shared-answers).")
    return "\n".join(lines) + "\n\n"


def _response(status: str, response: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """One answer: its code, what it means, its body by media type, and where to go next."""
    shapes: dict[str, list[str]] = {}
    for media, value in response.get("content", {}).items():
        if value.get("schema"):
            shapes.setdefault(_type(value["schema"]), []).append(code(media))
    line = f"- {code(status)} {sentence(response.get('description'))}"
    line += "".join(f" {shape} ({', '.join(media)})." for shape, media in shapes.items())
    links = response.get("links", {})
    if links:
        line += " Next: " + ", ".join(
            f"[{names.get(link['operationId'], link['operationId'])}](#{link['operationId']})"
            for link in links.values()
        )
        line += "."
    return line


def _then(text: str | None) -> str:
    return f": {sentence(text)}" if text else ""


def _schema_anchor(name: str) -> str:
    return "schema-" + name.lower()


def _type(schema: Schema) -> str:
    """A schema in a few words: its type, or the schema it names."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_schema_anchor(name)})"
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        kinds = [_type(option) for option in alternatives if option.get("type") != "null"]
        nullable = len(kinds) < len(alternatives)
        return " or ".join(dict.fromkeys(kinds)) + (" or null" if nullable else "")
    if "const" in schema:
        return code(json.dumps(schema["const"]))
    if "enum" in schema:
        return "one of " + ", ".join(code(json.dumps(value)) for value in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return "array of " + _type(schema.get("items", {}))
    if isinstance(kind, list):
        kind = " or ".join(str(k) for k in kind)
    text = str(kind or ("object" if "properties" in schema else "any"))
    title = str(schema.get("title", ""))
    if text == "object" and title.isidentifier() and "properties" in schema:
        return f"[{title}](#{_schema_anchor(title)})"  # a component, written out in place
    return f"{text} ({schema['format']})" if "format" in schema else text


def _constraints(schema: Schema) -> list[str]:
    """Bounds, lengths, patterns and defaults, of the schema or of its one non-null option."""
    options = [o for o in schema.get("anyOf", ()) if o.get("type") != "null"]
    if len(options) == 1:
        schema = {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}
    found = []
    for key, words in (
        ("minimum", "at least"),
        ("maximum", "at most"),
        ("exclusiveMinimum", "more than"),
        ("exclusiveMaximum", "less than"),
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
    ):
        if key in schema:
            value = schema[key]
            text = words.format(value) if "{}" in words else f"{words} {value}"
            found.append(text[:-1] if value == 1 and text.endswith("s") else text)
    patterns = [schema.get("pattern"), *(part.get("pattern") for part in schema.get("allOf", ()))]
    for pattern in filter(None, patterns):
        found.append(
            f"pattern {code(pattern)}"
            if len(pattern) <= LONGEST_PATTERN
            else f"a pattern of {len(pattern):,} characters (in `/openapi.json`)"
        )
    if "default" in schema:
        found.append(f"default {code(json.dumps(schema['default']))}")
    return found


def _schema_lines(schema: Schema, depth: int) -> list[str]:
    """The properties of an object (nested objects indented under theirs), or the alternatives
    of a choice, as list items."""
    indent = "    " * depth
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives and all("properties" in option for option in alternatives):
        lines = [f"{indent}One of:", ""] if depth == 0 else []
        for option in alternatives:
            lines.append(f"{indent}- **{option.get('title', 'object')}**")
            lines += _schema_lines(option, depth + 1)
        return lines
    properties = schema.get("properties")
    if not properties:
        return [f"{indent}{_type(schema)}."] if depth == 0 else []
    required = set(schema.get("required", ()))
    lines = []
    for name, field in properties.items():
        facts = [_type(field)]
        facts += ["required"] if name in required else []
        facts += _constraints(field)
        lines.append(
            f"{indent}- {code(name)} ({'; '.join(facts)}){_then(field.get('description'))}"
        )
        lines += _schema_lines(field, depth + 1) if "properties" in field or _choice(field) else []
    if schema.get("additionalProperties") is False and depth == 0:
        lines.append(f"{indent}- no other field")
    return lines


def _choice(schema: Schema) -> bool:
    alternatives = schema.get("oneOf") or schema.get("anyOf") or ()
    return bool(alternatives) and all("properties" in option for option in alternatives)
