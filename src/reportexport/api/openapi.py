"""The OpenAPI document, made to say what the service really accepts.

FastAPI describes an export request as "a saved query name and any object"; here it becomes one
alternative per saved query of the catalog, each with its parameters' exact schema (see
`parameter_schema`), so a client or a fuzzer that follows the schema is never refused for its
shape. Webhook URLs are described as the registration check reads them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from reportexport.api.deps import AppParts
from reportexport.parameter_schema import parameters_schema
from reportexport.webhooks.ssrf import webhook_url_pattern


def refined_schema(app: FastAPI, parts: AppParts) -> dict[str, Any]:
    schema = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
    )
    components = schema["components"]["schemas"]
    queries = parts.exports.saved_queries()
    components["ExportIn"] = {
        "title": "ExportIn",
        "description": "A saved query of the catalog and its parameters.",
        "oneOf": [
            {
                "type": "object",
                "title": query.title,
                "properties": {
                    "saved_query": {"const": query.name},
                    "parameters": parameters_schema(query.parameters),
                },
                "required": ["saved_query"]
                + (["parameters"] if _requires_parameters(query) else []),
                "additionalProperties": False,
            }
            for query in queries
        ]
        or [{"not": {}}],
    }
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
    names = [query.name for query in queries]
    for operation in schema["paths"].get("/api/saved-queries/{name}", {}).values():
        for parameter in operation.get("parameters", ()):
            if parameter["name"] == "name":
                parameter["schema"] = {"type": "string", "enum": names}
    return schema


def _requires_parameters(query: Any) -> bool:
    return any(spec.required and spec.default is None for spec in query.parameters.values())
