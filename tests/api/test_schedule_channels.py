"""A schedule's chat channels over HTTP: operators register channels (for one person's
schedules alone, with `schedules_only`), a schedule's owner adds those registered for them,
operators add any; nobody learns of a channel that is not theirs, nor its URL."""

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

URL = "https://hooks.slack.com/services/T0/B0/secret-part"


@pytest.fixture
def api(
    jobs_db: Database, local_objects: ObjectStore, sources_dir: Path
) -> Iterator[dict[str, Any]]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    runtime = runtime_for(jobs_db, catalog, local_objects, chat_hosts="hooks.slack.com")
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db}


def channel(api: dict[str, Any], name: str, owner: str | None, *, only: bool = True) -> int:
    body = {"url": URL, "name": name, "owner": owner, "schedules_only": only}
    made = call(api, "olga", "POST", "/api/chat-channels", json=body)
    assert made.status_code == 201, made.text
    assert made.json()["schedules_only"] is only
    return int(made.json()["id"])


def test_the_owner_adds_a_channel_registered_for_them_once_and_lists_it(
    api: dict[str, Any],
) -> None:
    schedule = schedule_of(api, "alice")
    mine = channel(api, "#alice-reports", "alice")
    path = f"/api/schedules/{schedule}/channels/{mine}"
    first = call(api, "alice", "PUT", path)
    assert first.status_code == 201, first.text
    again = call(api, "alice", "PUT", path)
    assert again.status_code == 200
    assert again.json() == first.json()
    listed = call(api, "alice", "GET", f"/api/schedules/{schedule}/channels")
    assert listed.status_code == 200
    (shown,) = listed.json()
    assert {k: shown[k] for k in ("schedule_id", "channel_id", "name", "host", "owner",
                                  "added_by", "removed_at")} == {
        "schedule_id": schedule, "channel_id": mine, "name": "#alice-reports",
        "host": "hooks.slack.com", "owner": "alice", "added_by": "alice", "removed_at": None,
    }  # fmt: skip
    assert "secret-part" not in listed.text + first.text  # the URL carries the credential
    # Its own schedule's channels are nobody else's to see, nor to change.
    assert call(api, "bob", "GET", f"/api/schedules/{schedule}/channels").status_code == 404
    assert call(api, "bob", "DELETE", path).status_code == 404

    assert call(api, "alice", "DELETE", path).status_code == 204
    gone = call(api, "alice", "DELETE", path)
    assert gone.status_code == 404
    assert gone.json()["detail"] == f"chat channel {mine} is not one of schedule {schedule}'s"
    assert call(api, "alice", "GET", f"/api/schedules/{schedule}/channels").json() == []


def test_an_owner_may_not_add_anothers_or_a_shared_channel_and_learns_nothing_of_it(
    api: dict[str, Any],
) -> None:
    """Another person's channel, a channel for everyone's schedules and one that does not
    exist are refused alike: who has which channel is not an owner's to learn."""
    schedule = schedule_of(api, "alice")
    bobs = channel(api, "#bob", "bob")
    shared = channel(api, "#sales", None)
    for channel_id in (bobs, shared, 999):
        refused = call(api, "alice", "PUT", f"/api/schedules/{schedule}/channels/{channel_id}")
        assert refused.status_code == 404, refused.text
        assert refused.json()["detail"] == f"no chat channel {channel_id}"
    # An operator adds any channel to anyone's schedule, and that is audited.
    added = call(api, "olga", "PUT", f"/api/schedules/{schedule}/channels/{shared}")
    assert added.status_code == 201, added.text
    assert added.json()["added_by"] == "olga"
    latest = api["db"].audit.entries(AuditFilter(limit=10)).records[0]
    assert (latest.person, latest.action, latest.object_id, latest.detail) == (
        "olga", "add_schedule_channel", str(schedule),
        f"chat channel {shared}, on the schedule of alice",
    )  # fmt: skip
    # The owner sees it and may take it off their schedule.
    listed = call(api, "alice", "GET", f"/api/schedules/{schedule}/channels").json()
    assert [(c["channel_id"], c["owner"]) for c in listed] == [(shared, None)]
    assert (
        call(api, "alice", "DELETE", f"/api/schedules/{schedule}/channels/{shared}").status_code
        == 204
    )


def test_a_removed_channel_is_refused_and_shown_removed_where_it_was_added(
    api: dict[str, Any],
) -> None:
    schedule = schedule_of(api, "alice")
    mine = channel(api, "#alice", "alice")
    spare = channel(api, "#alice-2", "alice")
    assert (
        call(api, "alice", "PUT", f"/api/schedules/{schedule}/channels/{mine}").status_code == 201
    )
    for removed in (mine, spare):
        assert call(api, "olga", "DELETE", f"/api/chat-channels/{removed}").status_code == 204
    refused = call(api, "alice", "PUT", f"/api/schedules/{schedule}/channels/{spare}")
    assert refused.status_code == 404
    assert refused.json()["detail"] == f"chat channel {spare} was removed"
    (shown,) = call(api, "alice", "GET", f"/api/schedules/{schedule}/channels").json()
    assert shown["channel_id"] == mine
    assert shown["removed_at"] is not None


def test_a_channel_registered_for_everyone_takes_every_export_unless_for_schedules_only(
    api: dict[str, Any],
) -> None:
    everyones = channel(api, "#all", None, only=False)
    listed = call(api, "olga", "GET", "/api/chat-channels").json()
    assert [(c["id"], c["schedules_only"]) for c in listed] == [(everyones, False)]
    body = {"url": URL, "name": "#x", "owner": None}  # schedules_only defaults to false
    made = call(api, "olga", "POST", "/api/chat-channels", json=body)
    assert made.json()["schedules_only"] is False
    wrong = call(api, "olga", "POST", "/api/chat-channels", json={**body, "schedules_only": "yes"})
    assert wrong.status_code == 422
