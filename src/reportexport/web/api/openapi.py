"""The OpenAPI document, made to say what the service really accepts.

FastAPI describes an export request as "a saved query name and any object"; here it becomes one
alternative per saved query open to everyone (the document is the same for everyone, so it names
no query guarded by an access rule), each with its parameters' exact schema (see
`parameter_schema`), so a client or a fuzzer that follows the schema is never refused for its
shape. Webhook URLs are described as the registration check reads them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from reportexport.core.parameter_schema import parameters_schema
from reportexport.timetable.firings import (
    CRON_PATTERN,
    RELATIVE_DATES,
    RELATIVE_PATTERN,
    TIME_ZONE_PATTERN,
)
from reportexport.web.api.models import NOTIFY
from reportexport.web.deps import AppParts
from reportexport.webhooks.ssrf import chat_url_pattern, webhook_url_pattern


def refined_schema(app: FastAPI, parts: AppParts) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    components = schema["components"]["schemas"]
    queries = parts.exports.public_queries()
    components["ExportIn"] = {
        "title": "ExportIn",
        "description": "A saved query of the catalog and its parameters (this document, the "
        "same for everyone, describes the queries open to everyone; `GET /api/saved-queries` "
        "lists those you may run).",
        "oneOf": [
            {
                "type": "object",
                "title": query.title,
                "properties": {
                    "saved_query": {"const": query.name},
                    "parameters": parameters_schema(query.parameters),
                    "notify": {"type": "boolean", "default": False, "description": NOTIFY},
                },
                "required": ["saved_query"]
                + (["parameters"] if _requires_parameters(query) else []),
                "additionalProperties": False,
            }
            for query in queries
        ]
        or [{"not": {}}],
    }
    components["ScheduleIn"] = _schedule_schema(components["ScheduleIn"], queries)
    webhook = components["WebhookIn"]
    private = parts.webhooks.allow_private
    webhook["properties"]["url"] = {
        "type": "string",
        "maxLength": 2000,
        "pattern": webhook_url_pattern(allow_private=private),
        "description": "where events are sent: http(s), a host name"
        + (" (or a loopback or private address)" if private else "")
        + ", no credentials or fragment; every address the name resolves to is checked at "
        "each delivery",
    }
    webhook["additionalProperties"] = False
    chat = components["ChatChannelIn"]
    hosts = parts.chat.chat_hosts
    chat["properties"]["url"] = {
        "type": "string",
        "maxLength": 2000,
        "pattern": chat_url_pattern(hosts, allow_private=parts.chat.allow_private),
        "description": "the channel's incoming-webhook URL: http(s) on a host the setting "
        f"chat_hosts names ({', '.join(hosts) if hosts else 'none here: it is empty'}), no "
        "credentials or fragment; every address the name resolves to is checked at each sending",
    }
    names = [query.name for query in queries]
    for operation in schema["paths"].get("/api/saved-queries/{name}", {}).values():
        for parameter in operation.get("parameters", ()):
            if parameter["name"] == "name":
                parameter["schema"] = {"type": "string", "enum": names}
    return schema


def _schedule_schema(generated: dict[str, Any], queries: list[Any]) -> dict[str, Any]:
    """One alternative per saved query, as for an export, where a date or timestamp parameter
    may also be relative; the time zone shaped like an IANA name (which is checked)."""
    common = {
        name: field
        for name, field in generated["properties"].items()
        if name not in ("saved_query", "parameters")
    }
    common["time_zone"] = {**common["time_zone"], "pattern": TIME_ZONE_PATTERN}
    common["cron"] = {**common["cron"], "pattern": CRON_PATTERN}
    relative = {
        "type": "object",
        "properties": {
            "relative": {
                "anyOf": [
                    {"enum": list(RELATIVE_DATES)},
                    {"type": "string", "pattern": RELATIVE_PATTERN},
                ]
            }
        },
        "required": ["relative"],
        "additionalProperties": False,
        "description": "evaluated in the schedule's time zone when it fires",
    }
    alternatives = []
    for query in queries:
        parameters = parameters_schema(query.parameters)
        for name, spec in query.parameters.items():
            if spec.type in ("date", "timestamp"):
                parameters["properties"][name] = {
                    "anyOf": [parameters["properties"][name], relative]
                }
        alternatives.append(
            {
                "type": "object",
                "title": query.title,
                "properties": {
                    "saved_query": {"const": query.name},
                    "parameters": parameters,
                    **common,
                },
                "required": sorted(
                    {"saved_query", *generated.get("required", ())}
                    | ({"parameters"} if _requires_parameters(query) else set())
                ),
                "additionalProperties": False,
            }
        )
    return {
        "title": "ScheduleIn",
        "description": "A saved query of the catalog, its parameters, and when to run it.",
        "oneOf": alternatives or [{"not": {}}],
    }


def _requires_parameters(query: Any) -> bool:
    return any(spec.required and spec.default is None for spec in query.parameters.values())
