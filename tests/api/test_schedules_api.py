"""Scheduled exports over HTTP: creating one shows its next times in its own time zone, people
see only their own, bad input names the field, pause/resume/run/delete, and the metrics."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from reportexport.objects import ObjectStore
from reportexport.store import Database
from tests.api.test_api import runtime_for
from tests.exports.conftest import catalog_for
from tests.exports.conftest import jobs_db as jobs_db
from tests.exports.conftest import local_objects as local_objects
from tests.exports.conftest import sources_dir as sources_dir

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
