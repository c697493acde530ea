"""E-mail me when my export ends: asked at creation, on a job that has not ended, or always."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import API_QUERIES, auth, catalog_for, create, runtime_for


def give_address(db: Database, name: str, address: str | None) -> None:
    person = db.users.user_by_name(name)
    assert person is not None
    db.users.set_email(person.id, address)


def test_notify_at_creation_is_422_naming_notify_without_an_address(api: dict[str, Any]) -> None:
    refused = create(api, notify=True)
    assert refused.status_code == 422
    assert (refused.json()["parameter"], refused.json()["title"]) == ("notify", "No e-mail address")
    give_address(api["db"], "alice", "alice@example.com")
    assert create(api, notify=True).json()["notify"] is True


def test_a_job_asks_for_an_email_until_it_ends(api: dict[str, Any]) -> None:
    client: TestClient = api["client"]
    job = create(api).json()
    url = f"/api/exports/{job['id']}/notify"
    no_address = client.post(url, headers=auth(api, "alice"))
    assert (no_address.status_code, no_address.json()["parameter"]) == (422, "notify")
    give_address(api["db"], "alice", "alice@example.com")
    assert client.post(url, headers=auth(api, "bob")).status_code == 404  # not bob's
    olga = client.post(url, headers=auth(api, "olga"))  # the e-mail would go to alice
    assert olga.status_code == 403
    asked = client.post(url, headers=auth(api, "alice"))
    assert (asked.status_code, asked.json()["notify"]) == (200, True)
    assert client.get(f"/api/exports/{job['id']}", headers=auth(api, "alice")).json()["job"][
        "notify"
    ]
    assert client.post(f"/api/exports/{job['id']}/cancel", headers=auth(api, "alice")).is_success
    ended = client.post(url, headers=auth(api, "alice"))
    assert (ended.status_code, ended.json()["title"]) == (409, "Export ended")
    assert ended.headers["content-type"] == "application/problem+json"
    assert client.post("/api/exports/999999/notify", headers=auth(api, "alice")).status_code == 404
    assert client.post(url).status_code == 401


def test_a_person_sets_their_own_preference(api: dict[str, Any]) -> None:
    client: TestClient = api["client"]
    url = "/api/people/alice/notify-always"
    on = {"notify_always": True}
    refused = client.put(url, json=on, headers=auth(api, "alice"))
    assert (refused.status_code, refused.json()["parameter"]) == (422, "notify_always")
    give_address(api["db"], "alice", "alice@example.com")
    done = client.put(url, json=on, headers=auth(api, "alice"))
    assert (done.status_code, done.json()) == (
        200, {"name": "alice", "email": "alice@example.com", "notify_always": True}
    )  # fmt: skip
    assert api["db"].users.user_by_name("alice").notify_always is True
    assert client.put(url, json=on, headers=auth(api, "bob")).status_code == 404
    off = client.put(url, json={"notify_always": False}, headers=auth(api, "olga"))
    assert (off.status_code, off.json()["notify_always"]) == (200, False)
    assert api["db"].users.user_by_name("alice").notify_always is False
    audit = client.get("/api/audit?object_kind=person", headers=auth(api, "olga")).json()
    assert [(e["person"], e["action"], e["object_id"], e["detail"]) for e in audit["entries"]] == [
        ("olga", "set_notify_always", "alice", "off")
    ]  # a person's own choice is theirs; an operator's is recorded
    bad = client.put(url, json={"notify_always": "yes"}, headers=auth(api, "alice"))
    assert bad.status_code == 422
    nobody = client.put("/api/people/nobody/notify-always", json=on, headers=auth(api, "olga"))
    assert nobody.status_code == 404
    assert client.put(url, json=on).status_code == 401


def test_an_address_outside_email_domains_is_refused_when_asked(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> None:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    token = jobs_db.users.add_user("alice", "user")[1]
    give_address(jobs_db, "alice", "alice@gmail.com")
    runtime = runtime_for(jobs_db, catalog, local_objects, email_domains="corp.example")
    with TestClient(runtime.app()) as client:
        api = {"client": client, "tokens": {"alice": token}}
        refused = create(api, notify=True)
        assert (refused.status_code, refused.json()["parameter"]) == (422, "notify")
        assert "corp.example" in refused.json()["detail"]
        job = create(api).json()
        headers = auth(api, "alice")
        button = client.post(f"/api/exports/{job['id']}/notify", headers=headers)
        assert (button.status_code, button.json()["rule"]) == (422, "domain")
        always = {"notify_always": True}
        pref = client.put("/api/people/alice/notify-always", json=always, headers=headers)
        assert pref.status_code == 422
