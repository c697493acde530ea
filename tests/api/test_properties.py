"""No input poisons the store: arbitrary text and JSON through every entry point.

A catalog with every parameter type (free text included) is driven with Hypothesis through
the HTTP API (arbitrary JSON, sent as the bytes a client could send: lone surrogates as JSON
escapes, NaN, huge numbers), the dashboard's form (arbitrary bytes, percent-encoded) and the
command line (called in process, with the text Python hands over from argv: surrogate escapes
included). Every answer is below 500; after every accepted input the owner's and the
operator's lists, the job's API page and dashboard page, and `jobs list` still answer.

The number of examples comes from $REPORTEXPORT_EXAMPLES (the CI profile bounds it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes

import httpx
import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportexport.entrypoints import cli
from reportexport.store import Database
from tests.dashboard_session import Signed, sign_in
from tests.helpers import EXAMPLES, catalog_for, runtime_for

PROFILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)  # fmt: skip

EVERY_TYPE: dict[str, Any] = {
    "everything": {
        "source": "demo",
        "title": "Every parameter type",
        "sql": "SELECT :s AS s, :code AS code, :i AS i, :x AS x, :b AS b, :d AS d, :t AS t, "
        ":e AS e, :key AS k, :saved_query AS q",
        "parameters": {
            "s": {"type": "string", "required": False},
            "code": {"type": "string", "required": False, "min_length": 2, "max_length": 3,
                     "pattern": "[A-Z]+"},
            "i": {"type": "integer", "required": False, "min": -5, "max": 5},
            "x": {"type": "number", "required": False, "min": 0, "max": 100},
            "b": {"type": "boolean", "required": False},
            "d": {"type": "date", "required": False, "min": "2024-01-01", "max": "2024-12-31"},
            "t": {"type": "timestamp", "required": False},
            "e": {"type": "enum", "required": False, "choices": ["a", "b"]},
            # Named like the dashboard form's own fields once were.
            "key": {"type": "string", "required": False},
            "saved_query": {"type": "string", "required": False},
        },
    },
}  # fmt: skip
NAMES = list(EVERY_TYPE["everything"]["parameters"])

HOSTILE = [
    "\ud800", "a\udcff", "\x00", "A\x00B", "\u202eevil", "\u2066isolate", "\ufeff", "",
    "x" * 100_000, "=1+1", "'; DROP TABLE jobs; --", "\n\r\t", "\U0001f600",
]  # fmt: skip
# Values at and just past every bound of the catalog below: dates, lengths, patterns, offsets.
BOUNDARIES = [
    "2023-12-31", "2024-01-01", "2024-12-31", "2025-01-01", "2024-02-29", "2024-13-01",
    "A", "AB", "ABC", "ABCD", "ab", "a", "b", "c",
    "2024-03-05T10:00:00+00:00", "2024-03-05T10:00:00", "2024-03-05T10:00:00+14:00",
    "2024-03-05T10:00:00-12:00", "2024-03-05T10:00:00+25:00", "9999-12-31T23:59:59Z",
    "0001-01-01T00:00:00Z", "true", "false", "1e400", "-0", "NaN",
]  # fmt: skip
texts = st.one_of(
    st.text(),
    st.text(st.characters(codec=None, categories=["Cs", "Cc", "Cf", "Zs"])),
    st.sampled_from(HOSTILE),
    st.sampled_from(BOUNDARIES),
)
numbers = st.one_of(
    st.integers(-8, 8),
    st.integers(95, 105),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(2**70),
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), numbers, texts),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
parameters = st.dictionaries(st.one_of(st.sampled_from(NAMES), texts), json_values, max_size=5)
bodies = st.one_of(
    st.fixed_dictionaries({"saved_query": st.sampled_from(["everything", "nope"]),
                           "parameters": parameters}),
    st.dictionaries(texts, json_values, max_size=3),
    json_values,
)  # fmt: skip


@pytest.fixture
def world(
    jobs_db: Database, local_objects: Any, sources_dir: Path, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, EVERY_TYPE)
    people = {"alice": "user", "olga": "operator"}
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people.items()}
    runtime = runtime_for(
        jobs_db, catalog, local_objects,
        max_active_exports=100_000, max_exports_per_minute=100_000,
    )  # fmt: skip
    app = runtime.app()
    with TestClient(app, raise_server_exceptions=False) as client:
        yield {"client": client, "app": app, "tokens": tokens, "db": jobs_db}


def headers(world: dict[str, Any], who: str = "alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {world['tokens'][who]}"}


def session(world: dict[str, Any], who: str = "alice") -> Signed:
    """A dashboard session of `who`, signed in once per world."""
    sessions = world.setdefault("sessions", {})
    if who not in sessions:
        sessions[who] = sign_in(world["client"], world["tokens"][who])
    signed: Signed = sessions[who]
    return signed


def signed_in(world: dict[str, Any], who: str = "alice") -> dict[str, str]:
    """The dashboard's session cookie, as a browser sends it."""
    return session(world, who).headers


def everything_still_answers(world: dict[str, Any], job_id: int | None = None) -> None:
    client: TestClient = world["client"]
    for who in ("alice", "olga"):
        listed = client.get("/api/exports?limit=200", headers=headers(world, who))
        assert listed.status_code == 200, listed.text
        listed.content.decode("utf-8")
        page = client.get("/jobs", headers=signed_in(world, who))
        assert page.status_code == 200
    if job_id is not None:
        assert client.get(f"/api/exports/{job_id}", headers=headers(world)).status_code == 200
        shown = client.get(f"/jobs/{job_id}", headers=signed_in(world))
        assert shown.status_code == 200


def assert_a_proper_answer(response: httpx.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"] == "application/problem+json"
        problem = response.json()
        assert problem["status"] == response.status_code


def test_the_api_takes_any_json_and_stays_whole(world: dict[str, Any]) -> None:
    @PROFILE
    @given(body=bodies, key=st.one_of(st.none(), st.text(st.characters(codec="ascii"), min_size=1,
                                                         max_size=40)))  # fmt: skip
    def check(body: Any, key: str | None) -> None:
        sent = json.dumps(body).encode("utf-8")  # lone surrogates travel as JSON escapes
        extra = {"Idempotency-Key": key} if key and key.isprintable() and key.strip() else {}
        response = world["client"].post(
            "/api/exports",
            content=sent,
            headers={**headers(world), **extra, "content-type": "application/json"},
        )
        assert_a_proper_answer(response)
        everything_still_answers(world, response.json()["id"] if response.is_success else None)

    check()


def json_operations(app: Any) -> list[tuple[str, str]]:
    """(method, path) of every operation of the API that takes a JSON body, ids filled in."""
    found = []
    for path, item in app.openapi()["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" in content:
                for name in ("{job_id}", "{schedule_id}", "{endpoint_id}"):
                    path = path.replace(name, "1")
                found.append((method.upper(), path))
    return found


def test_every_json_operation_takes_any_json_and_stays_whole(world: dict[str, Any]) -> None:
    """Schedules, webhook endpoints and every other body the API takes, as for exports."""
    operations = json_operations(world["app"])
    assert {"/api/exports", "/api/schedules", "/api/webhooks"} <= {p for _, p in operations}
    schedule_bodies = st.fixed_dictionaries(
        {"saved_query": st.sampled_from(["everything", "nope"]), "parameters": parameters},
        optional={"cron": st.one_of(texts, st.sampled_from(["0 8 * * 1", "*/5 * * * * *",
                                                             "0 8 30 2 *", "61 * * * *"])),
                  "time_zone": st.one_of(texts, st.sampled_from(["Europe/Paris", "Mars/Base"])),
                  "ends_at": texts, "url": texts},
    )  # fmt: skip

    @PROFILE
    @given(operation=st.sampled_from(operations), body=st.one_of(bodies, schedule_bodies))
    def check(operation: tuple[str, str], body: Any) -> None:
        method, path = operation
        response = world["client"].request(
            method, path, content=json.dumps(body).encode("utf-8"),
            headers={**headers(world), "content-type": "application/json"},
        )  # fmt: skip
        assert_a_proper_answer(response)
        everything_still_answers(world)
        for listing in ("/api/schedules", "/api/webhooks"):
            assert world["client"].get(listing, headers=headers(world, "olga")).status_code == 200

    check()


def test_the_list_takes_any_filter_and_stays_whole(world: dict[str, Any]) -> None:
    @PROFILE
    @given(query=st.dictionaries(st.sampled_from(["status", "saved_query", "owner", "limit",
                                                  "before", "after", "cursor", "x"]),
                                 st.binary(max_size=30), max_size=4))  # fmt: skip
    def check(query: dict[str, bytes]) -> None:
        encoded = "&".join(f"{k}={quote_from_bytes(v)}" for k, v in query.items())
        for who in ("alice", "olga"):
            response = world["client"].get(f"/api/exports?{encoded}", headers=headers(world, who))
            assert_a_proper_answer(response)

    check()


def test_the_dashboard_form_takes_any_bytes_and_stays_whole(world: dict[str, Any]) -> None:
    field = st.one_of(st.sampled_from(NAMES), st.binary(max_size=20).map(lambda b: b.decode(
        "latin-1")))  # fmt: skip

    @PROFILE
    @given(fields=st.lists(st.tuples(field, st.binary(max_size=300)), max_size=6))
    def check(fields: list[tuple[str, bytes]]) -> None:
        encoded = "&".join(
            f"{quote_from_bytes(name.encode('latin-1'))}={quote_from_bytes(value)}"
            for name, value in [
                ("csrf-token", session(world).csrf.encode()),
                ("saved-query", b"everything"),
                *fields,
            ]
        )
        response = world["client"].post(
            "/exports/new",
            content=encoded.encode("ascii"),
            headers={"content-type": "application/x-www-form-urlencoded", **signed_in(world)},
            follow_redirects=False,
        )
        assert response.status_code in (303, 422), response.text
        location = response.headers.get("location", "")
        job_id = int(location.rsplit("/", 1)[1]) if location.startswith("/jobs/") else None
        everything_still_answers(world, job_id)

    check()


def test_the_command_line_takes_any_arguments_and_stays_whole(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`reportexport export` over the API, called in process with any NAME=VALUE text."""
    from reportexport.entrypoints import client as remote

    def connect(settings: Any) -> TestClient:
        return TestClient(world["app"], headers=headers(world))

    monkeypatch.setattr(remote, "connect", connect)
    environment = {"REPORTEXPORT_SERVER": "http://testserver", "REPORTEXPORT_TOKEN": "unused"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    @PROFILE
    @given(items=st.lists(st.tuples(st.one_of(st.sampled_from(NAMES), texts), texts), max_size=4))
    def check(items: list[tuple[str, str]]) -> None:
        arguments = [f"--param={name}={value}" for name, value in items]  # any value, "-x" too
        code = cli.main(["export", "everything", *arguments])
        assert code in (0, 1, 2)
        captured = capsys.readouterr()
        if code != 0:
            assert len(captured.err.strip().splitlines()) == 1, captured.err
        assert cli.main(["jobs", "list"]) == 0
        capsys.readouterr()
        everything_still_answers(world)

    check()


def test_a_lone_surrogate_on_the_command_line_is_one_line_and_exit_2(
    world: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    for argument in ("s=a\udcff", "s\ud800=x", "s=\x00"):
        assert cli.main(["export", "everything", "--param", argument]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        err.encode("utf-8")
    assert cli.main(["export", "everything", "--param", "s=1", "--param", "s=2"]) == 2
    assert "is given more than once" in capsys.readouterr().err


def test_parameters_named_like_the_forms_own_fields_reach_the_job(world: dict[str, Any]) -> None:
    """A form's own fields have names no parameter can have: `key` and `saved_query` are
    parameters like any other."""
    signed = session(world)
    answer = world["client"].post(
        "/exports/new",
        data=signed.form(**{"saved-query": "everything", "form-key": "k1",
                            "key": "the key", "saved_query": "a query"}),
        headers=signed.headers, follow_redirects=False,
    )  # fmt: skip
    assert answer.status_code == 303, answer.text
    job_id = int(answer.headers["location"].split("?")[0].rsplit("/", 1)[1])
    job = world["client"].get(f"/api/exports/{job_id}", headers=headers(world)).json()["job"]
    assert job["saved_query"] == "everything"
    assert (job["parameters"]["key"], job["parameters"]["saved_query"]) == ("the key", "a query")


def test_an_undecodable_byte_in_the_form_is_refused_naming_the_field(
    world: dict[str, Any],
) -> None:
    """A browser that sends bytes that are not UTF-8 gets the form back with the field
    named, as the command line does; nothing is stored with U+FFFD in its place."""
    signed = session(world)
    sent = f"csrf-token={signed.csrf}&saved-query=everything&form-key=k2&s=a%FFb"
    answer = world["client"].post(
        "/exports/new", content=sent.encode("ascii"), follow_redirects=False,
        headers={**signed.headers, "content-type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert answer.status_code == 422, answer.text
    assert "not valid UTF-8" in answer.text
    listed = world["client"].get("/api/exports", headers=headers(world)).json()["jobs"]
    assert listed == []
