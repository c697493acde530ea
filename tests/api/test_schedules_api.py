"""Scheduled exports over HTTP: creating one shows its next times in its own time zone, people
see only their own, bad input names the field, pause/resume/run/delete, and the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.helpers import catalog_for, runtime_for

QUERIES: dict[str, Any] = {
    "orders_of_day": {
        "source": "demo",
        "title": "Orders of one day",
        "sql": "SELECT order_id, order_date FROM orders WHERE order_date = :day",
        "parameters": {"day": {"type": "date"}},
    },
}
WEEKDAYS_AT_8 = {
    "saved_query": "orders_of_day",
    "parameters": {"day": {"relative": "yesterday"}},
    "cron": "0 8 * * 1-5",
    "time_zone": "Europe/Paris",
}


@pytest.fixture
def api(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, QUERIES)
    people = (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in people}
    runtime = runtime_for(jobs_db, catalog, local_objects, max_schedules=2)
    with TestClient(runtime.app()) as client:
        client.headers_of = {  # type: ignore[attr-defined]
            name: {"Authorization": f"Bearer {token}"} for name, token in tokens.items()
        }
        yield client


def as_(client: Any, who: str) -> dict[str, str]:
    return client.headers_of[who]  # type: ignore[no-any-return]


def test_a_schedule_shows_its_next_times_in_its_own_time_zone(api: Any) -> None:
    response = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice"))
    assert response.status_code == 201, response.text
    schedule = response.json()
    assert schedule["owner"] == "alice"
    assert schedule["parameters"] == {"day": {"relative": "yesterday"}}
    assert "08:00" in schedule["description"]
    assert "Europe/Paris" in schedule["description"]
    assert len(schedule["next_times"]) >= 3
    for next_time in schedule["next_times"]:
        local = datetime.fromisoformat(next_time["local"])
        assert (local.hour, local.minute) == (8, 0)
        assert local.weekday() < 5
        assert datetime.fromisoformat(next_time["at"]) == local
    assert schedule["next_fire_at"] == schedule["next_times"][0]["at"]
    assert schedule["paused_at"] is None
    assert schedule["firings"] == []


def test_people_see_their_own_schedules_and_operators_everyone(api: Any) -> None:
    mine = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice")).json()
    path = f"/api/schedules/{mine['id']}"
    assert [s["id"] for s in api.get("/api/schedules", headers=as_(api, "alice")).json()] == [
        mine["id"]
    ]
    assert api.get("/api/schedules", headers=as_(api, "bob")).json() == []
    for method, suffix in (("GET", ""), ("POST", "/pause"), ("POST", "/run"), ("DELETE", "")):
        foreign = api.request(method, path + suffix, headers=as_(api, "bob"))
        assert foreign.status_code == 404, (method, suffix)
        assert foreign.headers["content-type"] == "application/problem+json"
    assert api.get(path, headers=as_(api, "olga")).json()["id"] == mine["id"]
    assert len(api.get("/api/schedules", headers=as_(api, "olga")).json()) == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"cron": "0 25 * * *"}, "cron"),
        ({"cron": "0 8 30 2 *"}, "cron"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"time_zone": "localtime"}, "time_zone"),  # the server's own zone
        ({"time_zone": "Factory"}, "time_zone"),  # tzdata's placeholder, offset -00
        ({"saved_query": "nope"}, "saved_query"),
        ({"parameters": {"day": {"relative": "next tuesday"}}}, "day"),
        ({"parameters": {"day": "not a date"}}, "day"),
        ({"parameters": {}}, "day"),
        ({"ends_at": "2020-01-01T00:00:00Z"}, "ends_at"),
    ],
)
def test_bad_input_is_422_naming_the_field(api: Any, change: dict[str, Any], field: str) -> None:
    response = api.post("/api/schedules", json=WEEKDAYS_AT_8 | change, headers=as_(api, "alice"))
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert field in response.text
    assert api.get("/api/schedules", headers=as_(api, "alice")).json() == []


def test_a_zone_in_other_letter_case_is_refused_with_the_one_meant(api: Any) -> None:
    body = WEEKDAYS_AT_8 | {"time_zone": "europe/paris"}
    response = api.post("/api/schedules", json=body, headers=as_(api, "alice"))
    assert response.status_code == 422
    assert response.json()["detail"] == (
        "'europe/paris' is not an IANA time zone: did you mean Europe/Paris?"
    )


@pytest.mark.parametrize(
    "ends_at",
    ["2099-01-31T18:00:00+01:00", "2099-01-31T17:00:00Z", "2099-01-31t17:00:00.5z",
     "2099-01-31T17:00:00.123456789-00:00"],
)  # fmt: skip
def test_ends_at_takes_an_rfc_3339_date_time(api: Any, ends_at: str) -> None:
    body = WEEKDAYS_AT_8 | {"ends_at": ends_at}
    response = api.post("/api/schedules", json=body, headers=as_(api, "alice"))
    assert response.status_code == 201, response.text
    kept = datetime.fromisoformat(response.json()["ends_at"])
    assert kept.replace(microsecond=0) == datetime(2099, 1, 31, 17, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ends_at", "why"),
    [
        ("2099-01-31", "ends_at: '2099-01-31' is not a timestamp (RFC 3339)"),
        ("2099-01-31T18:00:00", "ends_at: '2099-01-31T18:00:00' needs a UTC offset, as in "
         "2024-03-05T10:00:00Z or +01:00"),
        (4102444800, "body.ends_at: give an RFC 3339 date-time with its UTC offset "
         "(2027-01-31T18:00:00+01:00 or ...Z), not 4102444800"),
        ("2099-02-30T18:00:00Z", "ends_at: '2099-02-30T18:00:00Z' is not a valid timestamp"),
        ("2099-01-31 18:00:00Z", "ends_at: '2099-01-31 18:00:00Z' is not an RFC 3339 timestamp: "
         "a T goes between the date and the time"),
        ("9999-12-31T23:59:59-23:59", "ends_at: '9999-12-31T23:59:59-23:59' is not within "
         "0001-01-02 to 9999-12-30"),
    ],
)  # fmt: skip
def test_an_ends_at_that_is_not_rfc_3339_is_refused_saying_what_is_wanted(
    api: Any, ends_at: Any, why: str
) -> None:
    body = WEEKDAYS_AT_8 | {"ends_at": ends_at}
    response = api.post("/api/schedules", json=body, headers=as_(api, "alice"))
    assert response.status_code == 422
    assert response.json()["detail"] == why


def test_a_schedule_is_created_once_per_idempotency_key(api: Any) -> None:
    """A retried request gets the schedule the first made (200), as a retried export does;
    another request with the same key is a conflict; without a key each request makes one."""
    once = as_(api, "alice") | {"Idempotency-Key": "nightly-1"}
    first = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=once)
    again = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=once)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    other = api.post("/api/schedules", json=WEEKDAYS_AT_8 | {"cron": "0 9 * * *"}, headers=once)
    assert other.status_code == 409
    assert other.json()["detail"] == (
        f"this Idempotency-Key already names schedule {first.json()['id']}, a different request"
    )
    bobs = api.post("/api/schedules", json=WEEKDAYS_AT_8,
                    headers=as_(api, "bob") | {"Idempotency-Key": "nightly-1"})  # fmt: skip
    assert bobs.status_code == 201  # keys are each person's own
    assert len(api.get("/api/schedules", headers=as_(api, "alice")).json()) == 1
    assert api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice")).status_code \
        == 201  # fmt: skip
    assert len(api.get("/api/schedules", headers=as_(api, "alice")).json()) == 2
    api.delete(f"/api/schedules/{first.json()['id']}", headers=as_(api, "alice"))
    gone = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=once)
    assert gone.status_code == 409
    assert "which was deleted since" in gone.json()["detail"]


def test_a_schedule_firing_every_second_is_refused_and_the_preview_says_why(api: Any) -> None:
    body = WEEKDAYS_AT_8 | {"cron": "* * * * * *"}
    refused = api.post("/api/schedules", json=body, headers=as_(api, "alice"))
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("'* * * * * *' fires 1 second after its firing")
    assert refused.json()["detail"].endswith("the shortest gap allowed between two firings is "
                                             "1 minute")  # fmt: skip
    # In the schedule's own zone: the firing the message names is on the same day then (in
    # another zone it is on another day for an hour or more of each day).
    preview = api.get("/api/schedule-preview", params={"cron": "* * * * * *",
                      "time_zone": body["time_zone"]}, headers=as_(api, "alice"))  # fmt: skip
    assert preview.status_code == 422
    assert preview.json()["detail"] == refused.json()["detail"]
    shown = api.get("/api/schedule-preview", params={"cron": "0 8 * * 1-5",
                    "time_zone": "Europe/Paris"}, headers=as_(api, "alice")).json()  # fmt: skip
    assert shown["description"] == "At 08:00 on Monday through Friday (Europe/Paris)"
    assert (shown["shortest_gap_seconds"], shown["min_period_seconds"]) == (86400, 60)
    assert shown["period"] == "Firings at least 1 day apart; the shortest gap allowed is 1 minute."
    assert len(shown["next_times"]) == 5
    assert api.get("/api/schedule-preview", params={"cron": "0 8 * * *", "time_zone": "UTC"}
                   ).status_code == 401  # fmt: skip


def test_pause_resume_run_and_delete(api: Any) -> None:
    created = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice")).json()
    path = f"/api/schedules/{created['id']}"
    paused = api.post(f"{path}/pause", headers=as_(api, "alice")).json()
    assert paused["paused_at"] is not None
    assert paused["next_fire_at"] is None
    assert paused["pause_reason"] == "paused by alice"
    again = api.post(f"{path}/pause", headers=as_(api, "alice"))
    assert again.status_code == 409
    resumed = api.post(f"{path}/resume", headers=as_(api, "alice")).json()
    assert resumed["paused_at"] is None
    assert resumed["next_fire_at"] is not None

    run = api.post(f"{path}/run", headers=as_(api, "alice"))
    assert run.status_code == 201, run.text
    job = run.json()
    assert (job["status"], job["schedule_id"], job["owner"]) == ("queued", created["id"], "alice")
    detail = api.get(f"/api/exports/{job['id']}", headers=as_(api, "alice")).json()
    assert detail["firing"]["manual"] is True
    assert detail["firing"]["schedule_id"] == created["id"]
    firings = api.get(path, headers=as_(api, "alice")).json()["firings"]
    assert [f["job_id"] for f in firings] == [job["id"]]

    assert api.delete(path, headers=as_(api, "alice")).status_code == 204
    assert api.get(path, headers=as_(api, "alice")).status_code == 404
    assert api.get("/api/schedules", headers=as_(api, "alice")).json() == []
    # The export it made stays.
    assert api.get(f"/api/exports/{job['id']}", headers=as_(api, "alice")).status_code == 200


def test_a_person_has_at_most_max_schedules(api: Any) -> None:
    for _ in range(2):
        ok = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice"))
        assert ok.status_code == 201
    over = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice"))
    assert over.status_code == 429
    assert "max_schedules" in over.text or "schedules" in over.json()["detail"]
    assert api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "bob")).status_code == (
        201
    )


def test_schedules_show_in_the_metrics(api: Any) -> None:
    created = api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "alice")).json()
    api.post("/api/schedules", json=WEEKDAYS_AT_8, headers=as_(api, "bob"))
    api.post(f"/api/schedules/{created['id']}/pause", headers=as_(api, "alice"))
    api.post(f"/api/schedules/{created['id']}/run", headers=as_(api, "alice"))
    text = api.get("/metrics").text
    samples = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in text.splitlines()
        if line.startswith("reportexport_schedule")
    }
    assert samples, text
    assert not any("status" in name or "state" in name for name in samples)
    firing = [value for name, value in samples.items() if "firings_total" in name]
    assert sum(firing) >= 1, samples
    paused = [value for name, value in samples.items() if "paused" in name]
    assert paused == [1.0], samples
