"""A schedule's outside addresses over HTTP: operators add them (always audited), with what the
address gets attached; the schedule's owner sees and removes them but adds none (a person of
this service is added as a recipient); an address outside `email_domains` or that is not one
plain mailbox is refused naming `address`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.core.records import AuditFilter
from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import API_QUERIES, call, catalog_for, runtime_for, schedule_of

PARTNER = "partner@example.org"


@pytest.fixture
def api(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    runtime = runtime_for(jobs_db, catalog, local_objects,
                          email_domains="example.org,example.com")  # fmt: skip
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db}


def test_an_operator_adds_an_address_with_its_attachment_rule_and_the_owner_sees_it(
    api: dict[str, Any],
) -> None:
    schedule = schedule_of(api, "alice")
    path = f"/api/schedules/{schedule}/addresses/Partner@Example.org"
    first = call(api, "olga", "PUT", path, params={"attach_max_bytes": 5_000_000})
    assert first.status_code == 201, first.text
    assert first.json() | {"added_at": None} == {
        "schedule_id": schedule, "address": PARTNER, "attach_max_bytes": 5_000_000,
        "attach_gzip": False, "added_by": "olga", "added_at": None,
    }  # fmt: skip
    again = call(api, "olga", "PUT", path, params={"attach_max_bytes": 1000, "attach_gzip": True})
    assert again.status_code == 200, again.text
    assert (again.json()["attach_max_bytes"], again.json()["attach_gzip"]) == (1000, True)

    listed = call(api, "alice", "GET", f"/api/schedules/{schedule}/addresses")
    assert listed.status_code == 200
    assert [a["address"] for a in listed.json()] == [PARTNER]
    assert call(api, "bob", "GET", f"/api/schedules/{schedule}/addresses").status_code == 404

    audit = api["db"].audit.entries(AuditFilter(action="add_schedule_address")).records
    assert [(e.person, e.object_id) for e in audit] == [("olga", str(schedule))] * 2
    assert "partner@example.org (the file attached up to 1,000 bytes after gzip)" in (
        audit[0].detail or ""
    )


def test_the_owner_may_not_add_an_address_but_removes_one(api: dict[str, Any]) -> None:
    schedule = schedule_of(api, "alice")
    path = f"/api/schedules/{schedule}/addresses/{PARTNER}"
    refused = call(api, "alice", "PUT", path)
    assert refused.status_code == 403, refused.text
    assert "a person of this service is added as a recipient" in refused.json()["detail"]
    assert api["db"].schedules.addresses(schedule) == []

    assert call(api, "olga", "PUT", path).status_code == 201
    assert call(api, "bob", "DELETE", path).status_code == 404
    assert call(api, "alice", "DELETE", path).status_code == 204
    gone = call(api, "alice", "DELETE", path)
    assert gone.status_code == 404
    assert "is not one of schedule" in gone.json()["detail"]
    removed = api["db"].audit.entries(AuditFilter(action="remove_schedule_address")).records
    assert [e.person for e in removed] == ["alice"]


def test_a_persons_address_is_refused_naming_them(api: dict[str, Any]) -> None:
    """A person of this service is added as a recipient, whose access is checked: their address
    (in any case) is no outside address."""
    users = api["db"].users
    users.set_email(users.user_by_name("bob").id, "Bob@Example.com")
    schedule = schedule_of(api, "alice")
    refused = call(api, "olga", "PUT", f"/api/schedules/{schedule}/addresses/bob@example.COM")
    assert refused.status_code == 422, refused.text
    assert refused.json()["parameter"] == "address"
    assert (
        "the address of bob, a person of this service: add them as a recipient"
        in (refused.json()["detail"])
    )
    assert api["db"].schedules.addresses(schedule) == []


@pytest.mark.parametrize(("address", "params", "field"), [
    ("someone@elsewhere.net", {}, "address"),  # outside email_domains
    ("a/b@example.org", {}, None),  # cannot stand in a path: no such route
    ("no-at-sign.example.org", {}, "address"),
    (PARTNER, {"attach_max_bytes": 0}, "attach_max_bytes"),
    (PARTNER, {"attach_max_bytes": 10_000_001}, "attach_max_bytes"),
])  # fmt: skip
def test_a_wrong_address_or_size_is_refused_naming_it(
    api: dict[str, Any], address: str, params: dict[str, Any], field: str | None
) -> None:
    schedule = schedule_of(api, "alice")
    answer = call(api, "olga", "PUT", f"/api/schedules/{schedule}/addresses/{address}",
                  params=params)  # fmt: skip
    assert answer.status_code == (404 if field is None else 422), answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    if field is not None:  # the service's refusal names it, or the document's validation
        problem = answer.json()
        named = {problem.get("parameter")}
        named |= {e["location"].rsplit(".", 1)[-1] for e in problem.get("errors", ())}
        assert field in named, problem
    assert api["db"].schedules.addresses(schedule) == []


def test_a_schedules_answer_links_its_addresses(api: dict[str, Any]) -> None:
    document = api["client"].get("/openapi.json").json()
    created = document["paths"]["/api/schedules"]["post"]["responses"]["201"]
    assert created["links"]["AddScheduleAddress"]["operationId"] == "add_schedule_address"
