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
from reportexport.parameter_schema import END, parameters_schema

# A name, or (where loopback and private ranges are allowed) an IPv4 address or [IPv6]; an
# optional port; a path and query without spaces. A name's last label starts with a letter, so
# no name reads as an address.
_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_NAME = f"(?:{_LABEL}\\.)*[A-Za-z](?:[A-Za-z0-9-]{{0,61}}[A-Za-z0-9])?"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = f"(?:{_OCTET}\\.){{3}}{_OCTET}"
_PORT = (
    "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?"
)
_TARGET = "(?:/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?(?:\\?[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*)?"


def webhook_url_pattern(*, allow_private: bool) -> str:
    host = f"(?:{_NAME}|{_IPV4})" if allow_private else _NAME
    return f"^https?://{host}{_PORT}{_TARGET}{END}"


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
    webhook["properties"]["url"] = {
        "type": "string",
        "maxLength": 2000,
        "pattern": webhook_url_pattern(allow_private=parts.webhooks_allow_private),
        "description": "where events are sent: http(s), a host name"
        + (" or address" if parts.webhooks_allow_private else "")
        + ", no credentials; every address the name resolves to is checked at each delivery",
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
