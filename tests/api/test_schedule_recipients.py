"""A schedule's recipients over HTTP: who may be added (a person who may run the saved query
with the owner's bound values, and has an address), what a recipient may do with the exports
(see and download them, nothing else), and who removes whom."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.core.records import AuditFilter
from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.effects.smtp_server import Mailbox, running_mailbox
from tests.helpers import API_QUERIES, auth, catalog_for, run_by_a_worker, runtime_for

QUERIES: dict[str, Any] = {
    **API_QUERIES,
    "invoices": {
        "source": "demo",
        "title": "Invoices of the finance team",
        "sql": "SELECT order_id, amount FROM orders WHERE order_id < 20",
        "access": ["finance"],
    },
    "my_customers": {
        "source": "demo",
        "title": "Customers of my country",
        "sql": "SELECT customer_id, country FROM customers WHERE country = :country",
        "parameters": {"country": {"type": "string", "bind": "country"}},
    },
}
DAILY = {"cron": "0 8 * * *", "time_zone": "UTC"}


@pytest.fixture
def api(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("carol", "user"), ("dan", "user"),
              ("olga", "operator"))  # fmt: skip
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    for name in ("alice", "bob", "carol", "olga"):  # dan has no address
        user = jobs_db.users.user_by_name(name)
        assert user is not None
        jobs_db.users.set_email(user.id, f"{name}@example.com")
    with TestClient(runtime_for(jobs_db, catalog, local_objects).app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db, "catalog": catalog,
               "objects": local_objects}  # fmt: skip


def call(api: dict[str, Any], who: str, method: str, path: str, **kwargs: Any) -> Any:
    return api["client"].request(method, path, headers=auth(api, who), **kwargs)


def schedule_of(api: dict[str, Any], who: str, saved_query: str, **parameters: Any) -> int:
    body = {"saved_query": saved_query, "parameters": parameters, **DAILY}
    made = call(api, who, "POST", "/api/schedules", json=body)
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def add(api: dict[str, Any], who: str, schedule_id: int, person: str) -> Any:
    return call(api, who, "PUT", f"/api/schedules/{schedule_id}/recipients/{person}")


def ran(api: dict[str, Any], schedule_id: int) -> int:
    """A job of the schedule, run now and finished by a worker."""
    made = call(api, "alice", "POST", f"/api/schedules/{schedule_id}/run")
    assert made.status_code == 201, made.text
    job_id = int(made.json()["id"])
    assert run_by_a_worker(api["db"], api["catalog"], api["objects"], job_id) == "succeeded"
    return job_id


def test_the_owner_adds_a_recipient_once_and_lists_them(api: dict[str, Any]) -> None:
    schedule_id = schedule_of(api, "alice", "products", category="toys")
    first = add(api, "alice", schedule_id, "bob")
    assert first.status_code == 201, first.text
    assert first.json()["person"] == "bob"
    assert first.json()["added_by"] == "alice"
    again = add(api, "alice", schedule_id, "bob")
    assert again.status_code == 200
    assert again.json() == first.json()
    listed = call(api, "alice", "GET", f"/api/schedules/{schedule_id}/recipients")
    assert [r["person"] for r in listed.json()] == ["bob"]
    # Another person's schedule does not exist for them, recipients or not.
    for who in ("bob", "carol"):
        assert add(api, who, schedule_id, "carol").status_code == 404
        assert call(api, who, "GET", f"/api/schedules/{schedule_id}/recipients").status_code == 404


def test_a_recipient_is_a_person_with_an_address(api: dict[str, Any]) -> None:
    schedule_id = schedule_of(api, "alice", "products", category="toys")
    unknown = add(api, "alice", schedule_id, "nobody")
    assert unknown.status_code == 404
    assert "no person 'nobody'" in unknown.json()["detail"]
    no_address = add(api, "alice", schedule_id, "dan")
    assert no_address.status_code == 422
    assert (no_address.json()["parameter"], no_address.json()["rule"]) == ("person", "email")
    assert "dan has no e-mail address" in no_address.json()["detail"]
    assert api["db"].users.revoke_user("carol", now=datetime.now(UTC))
    assert add(api, "alice", schedule_id, "carol").status_code == 404


def test_a_person_receives_only_what_they_may_run_themselves(api: dict[str, Any]) -> None:
    call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    call(api, "olga", "PUT", "/api/groups/finance/members/alice")
    invoices = schedule_of(api, "alice", "invoices")
    # The owner learns that bob may not, not which of bob's groups or attributes is missing.
    refused = add(api, "alice", invoices, "bob")
    assert refused.status_code == 403
    assert "access_rule" not in refused.json()
    assert refused.json()["detail"] == (
        "bob may not receive 'invoices': they may not run it as its owner does"
    )
    told = add(api, "olga", invoices, "bob")
    assert told.status_code == 403
    assert told.json()["access_rule"] == "queries.invoices.access"
    assert "does not include bob" in told.json()["detail"]
    call(api, "olga", "PUT", "/api/groups/finance/members/bob")
    assert add(api, "alice", invoices, "bob").status_code == 201

    for who, country in (("alice", "FR"), ("bob", "DE"), ("carol", "FR")):
        answer = call(api, "olga", "PUT", f"/api/people/{who}/attributes/country",
                      json={"value": country})  # fmt: skip
        assert answer.status_code in (200, 201, 204), answer.text
    customers = schedule_of(api, "alice", "my_customers")
    assert add(api, "alice", customers, "bob").status_code == 403
    other_country = add(api, "olga", customers, "bob")
    assert other_country.status_code == 403
    assert other_country.json()["access_rule"] == "parameters.country.bind"
    assert "whose value for bob is not alice's" in other_country.json()["detail"]
    assert add(api, "alice", customers, "carol").status_code == 201


def test_a_recipient_sees_and_downloads_the_export_and_changes_nothing(
    api: dict[str, Any],
) -> None:
    schedule_id = schedule_of(api, "alice", "products", category="toys")
    assert add(api, "alice", schedule_id, "bob").status_code == 201
    job_id = ran(api, schedule_id)

    download = call(api, "alice", "GET", f"/api/exports/{job_id}/download",
                    follow_redirects=False)  # fmt: skip
    assert download.status_code == 302, download.text
    shown = call(api, "bob", "GET", f"/api/exports/{job_id}")
    assert shown.status_code == 200, shown.text
    seen = shown.json()
    assert seen["job"]["owner"] == "alice"
    # What the owner's destinations were, who downloaded, and why: the owner's.
    assert (seen["deliveries"], seen["downloads"]) == ([], [])
    assert [e["last_error"] for e in seen["side_effects"]] == [None] * len(seen["side_effects"])
    download = call(api, "bob", "GET", f"/api/exports/{job_id}/download", follow_redirects=False)
    assert download.status_code == 302, download.text
    assert call(api, "bob", "GET", f"/api/exports/{job_id}/schema").status_code == 200
    for method, path in (("POST", f"/api/exports/{job_id}/rerun"),
                         ("POST", f"/api/exports/{job_id}/cancel"),
                         ("POST", f"/api/exports/{job_id}/notify")):  # fmt: skip
        assert call(api, "bob", method, path).status_code == 404, path
    # The owner sees that bob was sent it, by name; an operator sees the address.
    owners = call(api, "alice", "GET", f"/api/exports/{job_id}").json()["deliveries"]
    assert [(d["address"], d["last_error"]) for d in owners] == [("bob", None)]
    operators = call(api, "olga", "GET", f"/api/exports/{job_id}").json()["deliveries"]
    assert [d["address"] for d in operators] == ["bob@example.com"]
    assert call(api, "carol", "GET", f"/api/exports/{job_id}").status_code == 404

    removed = call(api, "bob", "DELETE", f"/api/schedules/{schedule_id}/recipients/bob")
    assert removed.status_code == 204
    assert call(api, "bob", "GET", f"/api/exports/{job_id}").status_code == 404
    again = call(api, "bob", "DELETE", f"/api/schedules/{schedule_id}/recipients/bob")
    assert again.status_code == 404


def test_a_recipient_who_loses_access_no_longer_sees_the_export(api: dict[str, Any]) -> None:
    call(api, "olga", "POST", "/api/groups", json={"name": "finance"})
    for who in ("alice", "bob"):
        call(api, "olga", "PUT", f"/api/groups/finance/members/{who}")
    schedule_id = schedule_of(api, "alice", "invoices")
    assert add(api, "alice", schedule_id, "bob").status_code == 201
    job_id = ran(api, schedule_id)
    assert call(api, "bob", "GET", f"/api/exports/{job_id}").status_code == 200
    call(api, "olga", "DELETE", "/api/groups/finance/members/bob")
    assert call(api, "bob", "GET", f"/api/exports/{job_id}").status_code == 404
    assert call(api, "alice", "GET", f"/api/exports/{job_id}").status_code == 200


def test_a_deleted_schedules_recipients_no_longer_see_its_exports(api: dict[str, Any]) -> None:
    schedule_id = schedule_of(api, "alice", "products", category="toys")
    assert add(api, "alice", schedule_id, "bob").status_code == 201
    job_id = ran(api, schedule_id)
    assert call(api, "bob", "GET", f"/api/exports/{job_id}").status_code == 200
    assert call(api, "alice", "DELETE", f"/api/schedules/{schedule_id}").status_code == 204
    assert call(api, "bob", "GET", f"/api/exports/{job_id}").status_code == 404
    assert call(api, "alice", "GET", f"/api/exports/{job_id}").status_code == 200


def test_the_owner_or_an_operator_removes_anyone_and_an_operators_change_is_audited(
    api: dict[str, Any],
) -> None:
    schedule_id = schedule_of(api, "alice", "products", category="toys")
    assert add(api, "olga", schedule_id, "bob").status_code == 201
    assert add(api, "alice", schedule_id, "carol").status_code == 201
    # A recipient removes themselves only.
    path = f"/api/schedules/{schedule_id}/recipients"
    assert call(api, "bob", "DELETE", f"{path}/carol").status_code == 404
    assert call(api, "alice", "DELETE", f"{path}/carol").status_code == 204
    assert call(api, "olga", "DELETE", f"{path}/bob").status_code == 204
    assert call(api, "alice", "GET", path).json() == []
    audit = api["db"].audit.entries(AuditFilter(limit=10)).records
    assert [(a.person, a.action, a.object_id) for a in audit][:2] == [
        ("olga", "remove_recipient", str(schedule_id)),
        ("olga", "add_recipient", str(schedule_id)),
    ]


def test_the_services_own_runner_mails_the_recipients_of_a_firing(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> None:
    """Through the composition root: the effects runner the service starts asks the export
    service whether each recipient may still see the export before it mails them."""
    catalog = catalog_for(sources_dir, None, QUERIES)
    tokens = {name: jobs_db.users.add_user(name, "user")[1] for name in ("alice", "bob", "carol")}
    for name in ("bob", "carol"):
        user = jobs_db.users.user_by_name(name)
        assert user is not None
        jobs_db.users.set_email(user.id, f"{name}@example.com")
    with running_mailbox(Mailbox()) as mailbox:
        runtime = runtime_for(jobs_db, catalog, local_objects, smtp_host=mailbox.host,
                              smtp_port=mailbox.port, smtp_security="none",
                              smtp_from="reports@example.com")  # fmt: skip
        with TestClient(runtime.app()) as client:
            api = {"client": client, "tokens": tokens, "db": jobs_db, "catalog": catalog,
                   "objects": local_objects}  # fmt: skip
            schedule_id = schedule_of(api, "alice", "products", category="toys")
            assert add(api, "alice", schedule_id, "bob").status_code == 201
            assert add(api, "alice", schedule_id, "carol").status_code == 201
            path = f"/api/schedules/{schedule_id}/recipients/carol"
            assert call(api, "carol", "DELETE", path).status_code == 204
            job_id = ran(api, schedule_id)
            runtime.effects_runner(restart_loops=False).run_once()
        (message,) = mailbox.messages_to("bob@example.com")
        assert mailbox.messages_to("carol@example.com") == []
    text = message.get_body(preferencelist=("plain",))
    assert text is not None
    assert "alice's schedule" in str(text.get_content())
    assert f"/jobs/{job_id}" in str(text.get_content())
