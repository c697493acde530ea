"""The OpenAPI document and the service agree on every value's shape, deterministically.

For every operation, every free-text query parameter and every leaf of a valid request body is
sent values at the edges of what text, numbers and instants can be: a NUL, a lone surrogate (as
the JSON escape a client may send), an emoji (a surrogate pair in ECMA-262's terms), numbers
beyond a double or a 64-bit integer, dates that the calendar does not have, times of day and
UTC offsets that do not exist. The service must refuse (422) exactly the requests the document
rejects, and accept every other one: a client or a fuzzer that follows the document is never
refused for its shape, and nothing the document forbids gets in.

What a random schemathesis run (`./scripts/fuzz`) finds becomes a case here, never a seed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import catalog_for, runtime_for

QUERIES: dict[str, Any] = {
    "typed": {
        "source": "demo",
        "title": "One row of every parameter type",
        "sql": "SELECT :word AS word, :count AS count, :share AS share, :day AS day, "
        ":moment AS moment",
        "parameters": {
            "word": {"type": "string", "max_length": 100},
            "count": {"type": "integer"},
            "share": {"type": "number"},
            "day": {"type": "date"},
            "moment": {"type": "timestamp"},
        },
    },
}
VALID_PARAMETERS = {
    "word": "x",
    "count": 1,
    "share": 0.5,
    "day": "2024-01-31",
    "moment": "2024-01-31T10:00:00Z",
}
# A valid request of every operation that takes a body; each leaf is then replaced by a probe.
BODIES: dict[str, dict[str, Any]] = {
    "create_export": {"saved_query": "typed", "parameters": VALID_PARAMETERS},
    "create_schedule": {
        "saved_query": "typed",
        "parameters": VALID_PARAMETERS,
        "cron": "0 8 * * *",
        "time_zone": "Europe/Paris",
        "ends_at": "2099-01-31T10:00:00Z",
    },
    "add_webhook": {"url": "https://hooks.example.com/exports", "everyone": False},
    "add_chat_channel": {
        "url": "https://hooks.example.com/services/T1/B2/x",
        "name": "#exports",
        "owner": "olga",
    },
    "create_group": {"name": "finance", "description": "the finance team"},
    "set_attribute": {"value": "FR"},
    "set_notify_always": {"notify_always": False},  # on needs an address: a rule of the record
}
# The path of an operation on a thing names one that exists.
PATH_VALUES = {"person": "olga", "attribute": "country", "name": "finance"}

# Probes as JSON text, so that a lone surrogate and numbers beyond a double are sent as a
# client would write them.
# Text probes are added to the end of the valid value, so that only they can make a difference.
TEXT = ["\\u0000", "\\ud800", "\\udfff", "\\udfff\\ud800", "\\ud83d\\ude00", "\\u00e9", "\\t"]
NUMBERS = ["1e400", "-1e400", "1" + "0" * 400, "9223372036854775808", "9223372036854775807",
           "1.7976931348623157e308", "1" + "0" * 308 + ".5", "2.5e-324"]  # fmt: skip
# Each probe's year is the test's to choose: an end must also be in the future, which is a rule
# of time and not of shape.
INSTANTS = [
    "YYYY-02-29T10:00:00Z", "YYYY-02-30T10:00:00Z", "YYYY-04-31T10:00:00Z",
    "YYYY-13-01T10:00:00Z", "YYYY-00-10T10:00:00Z", "YYYY-01-00T10:00:00Z",
    "YYYY-01-31T24:00:00Z", "YYYY-01-31T23:60:00Z", "YYYY-01-31T23:59:60Z",
    "YYYY-01-31T23:59:59.123456789Z", "YYYY-01-31T23:59:59.Z", "YYYY-01-31t10:00:00z",
    "YYYY-01-31 10:00:00+01:00", "YYYY-01-31T10:00:00+23:59", "YYYY-01-31T10:00:00+24:00",
    "YYYY-01-31T10:00:00-00:60", "YYYY-01-31T10:00:00", "YYYY-01-31",
    "0000-01-31T10:00:00Z", "9999-12-31T23:59:59-23:59",
]  # fmt: skip
JSON = {"Content-Type": "application/json"}
# A query parameter's probe is added to a valid value (a URL cannot carry a lone surrogate).
QUERY_VALUES = {"cron": "0 8 * * *", "time_zone": "Europe/Paris"}
QUERY_SUFFIXES = ["\x00", "", " caf\u00e9 \U0001f600", "\t"]
LEAP, COMMON = "2096", "2097"
DATES = ["2024-02-29", "2023-02-29", "2024-02-30", "2024-04-31", "2024-13-01", "2024-00-10",
         "2024-01-00", "0000-01-01", "0001-01-01", "9999-12-31", "2024-1-31",
         "2024-01-31T00:00:00Z"]  # fmt: skip


@pytest.fixture
def api(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, QUERIES)
    token = jobs_db.users.add_user("olga", "operator")[1]
    limits = {"max_active_exports": 10**6, "max_exports_per_minute": 10**6,
              "max_schedules": 10**6, "chat_hosts": "hooks.example.com"}  # fmt: skip
    app = runtime_for(jobs_db, catalog, local_objects, **limits).app()
    with TestClient(app) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def test_free_text_query_parameters_are_refused_exactly_as_the_document_says(api: Any) -> None:
    document = api.get("/openapi.json").json()
    tried = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            query = [p for p in operation.get("parameters", ()) if p["in"] == "query"]
            given = {p["name"]: QUERY_VALUES.get(p["name"], "ok") for p in query if p["required"]}
            for parameter in query:
                schema = parameter["schema"]
                if not _free_text(schema):
                    continue
                valid = Draft202012Validator(schema)
                name = parameter["name"]
                for suffix in QUERY_SUFFIXES:
                    value = QUERY_VALUES.get(name, "ok") + suffix
                    sent = api.request(method, path, params={**given, name: value})
                    assert sent.status_code != 500, sent.text
                    refused = sent.status_code == 422
                    assert refused == (not valid.is_valid(value)), (
                        f"{method.upper()} {path}?{name}={value!r}: "
                        f"{sent.status_code} {sent.text[:300]}"
                    )
                    tried += 1
    assert tried >= 4 * len(QUERY_SUFFIXES)


def test_every_operation_with_a_body_is_probed(api: Any) -> None:
    document = api.get("/openapi.json").json()
    with_body = {
        operation["operationId"]
        for item in document["paths"].values()
        for operation in item.values()
        if "requestBody" in operation
    }
    assert with_body == set(BODIES)


@pytest.mark.parametrize("operation_id", sorted(BODIES))
def test_every_body_leaf_is_refused_exactly_as_the_document_says(
    api: Any, operation_id: str
) -> None:
    document = api.get("/openapi.json").json()
    path, method, validator = _operation(document, operation_id)
    base = BODIES[operation_id]
    assert validator.is_valid(base)
    first = api.request(method, path, content=json.dumps(base), headers=JSON)
    assert first.status_code in (200, 201), first.text
    disagreements = []
    for leaf, probes in _probes(base):
        for probe in probes:
            text = _with(base, leaf, probe)
            documented = validator.is_valid(json.loads(text))
            answer = api.request(method, path, content=text, headers=JSON)
            assert answer.status_code != 500, (leaf, probe, answer.text)
            refused = answer.status_code == 422
            if refused == documented:
                disagreements.append(
                    f"{'.'.join(leaf)} = {probe[:60]}: the document "
                    f"{'accepts' if documented else 'rejects'} it, the service answered "
                    f"{answer.status_code} {answer.text[:200]}"
                )
    assert disagreements == []


def _free_text(schema: dict[str, Any]) -> bool:
    """A string schema, or an optional one, that takes more than a list of choices."""
    return any(
        alternative.get("type") == "string" and "enum" not in alternative
        for alternative in (schema, *schema.get("anyOf", ()))
    )


def _operation(document: dict[str, Any], operation_id: str) -> tuple[str, str, Any]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if operation.get("operationId") == operation_id:
                body = operation["requestBody"]["content"]["application/json"]["schema"]
                schema = {**body, "components": document["components"]}
                return path.format_map(PATH_VALUES), method, Draft202012Validator(schema)
    raise AssertionError(f"no operation {operation_id}")


def _probes(body: dict[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[Any]:
    """(path of a leaf, its probes as JSON text) for every leaf of `body`."""
    for key, value in body.items():
        leaf = (*prefix, key)
        if isinstance(value, dict):
            yield from _probes(value, leaf)
        elif isinstance(value, bool):
            yield leaf, ["1", '"true"', "null"]
        elif isinstance(value, int | float):
            yield leaf, NUMBERS
        elif key in ("moment", "ends_at"):
            yield leaf, [json.dumps(_year(i)) for i in INSTANTS]
        elif key == "day":
            yield leaf, [json.dumps(d) for d in DATES]
        else:
            yield leaf, [json.dumps(value)[:-1] + suffix + '"' for suffix in TEXT]


def _year(instant: str) -> str:
    return instant.replace("YYYY", LEAP if "-02-29" in instant else COMMON)


def _with(body: dict[str, Any], leaf: tuple[str, ...], probe: str) -> str:
    """`body` as JSON text with the value at `leaf` replaced by the JSON text `probe`."""
    marker = "\ue000probe\ue000"
    copy = json.loads(json.dumps(body))
    target = copy
    for key in leaf[:-1]:
        target = target[key]
    target[leaf[-1]] = marker
    return json.dumps(copy).replace(json.dumps(marker), probe, 1)
