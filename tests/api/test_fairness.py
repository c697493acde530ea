"""Every route that creates a job holds the cap, the rate limit and Idempotency-Key.

The routes are found, not listed by hand: each POST route of the application is called with a
plausible request, and those after which there is one job more are the creating routes. The
test fails when a route creates jobs that the checks below do not cover.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from reportexport.store import Database, JobFilter
from reportexport.web.problems import routes_of
from tests.dashboard_session import Signed, sign_in
from tests.helpers import API_QUERIES, catalog_for, runtime_for

BODY = {"saved_query": "products", "parameters": {"category": "toys"}}
Create = Callable[[str | None], httpx.Response]


@pytest.fixture
def build(
    jobs_db: Database, local_objects: Any, sources_dir: Path
) -> Iterator[Callable[..., dict[str, Any]]]:
    catalog = catalog_for(sources_dir, None, API_QUERIES)
    tokens = {name: jobs_db.users.add_user(name, role)[1] for name, role in
              (("alice", "user"), ("olga", "operator"))}  # fmt: skip
    clients: list[TestClient] = []

    def make(**settings: Any) -> dict[str, Any]:
        app = runtime_for(jobs_db, catalog, local_objects, **settings).app()
        client = TestClient(app, raise_server_exceptions=False)
        clients.append(client)
        return {"client": client, "app": app, "tokens": tokens, "db": jobs_db}

    yield make
    for client in clients:
        client.close()


def bearer(world: dict[str, Any], who: str = "alice") -> dict[str, str]:
    return {"Authorization": f"Bearer {world['tokens'][who]}"}


def session(world: dict[str, Any], who: str = "alice") -> Signed:
    """A dashboard session of `who` (signed in once per world)."""
    sessions = world.setdefault("sessions", {})
    if who not in sessions:
        sessions[who] = sign_in(world["client"], world["tokens"][who])
    signed: Signed = sessions[who]
    return signed


def cookie(world: dict[str, Any], who: str = "alice") -> dict[str, str]:
    return session(world, who).headers


def count(world: dict[str, Any], owner: str = "alice") -> int:
    return len(world["db"].jobs.list_jobs(JobFilter(owner=owner, limit=1000)).jobs)


def first_job(world: dict[str, Any]) -> int:
    return world["db"].jobs.list_jobs(JobFilter(owner="alice", limit=1000)).jobs[-1].id


def creators(world: dict[str, Any]) -> dict[str, Create]:
    """How each job-creating route is called; `key` is an idempotency key or None."""
    client: TestClient = world["client"]

    def api_create(key: str | None) -> httpx.Response:
        extra = {"Idempotency-Key": key} if key else {}
        return client.post("/api/exports", json=BODY, headers={**bearer(world), **extra})

    def api_rerun(key: str | None) -> httpx.Response:
        extra = {"Idempotency-Key": key} if key else {}
        path = f"/api/exports/{first_job(world)}/rerun"
        return client.post(path, headers={**bearer(world, "olga"), **extra})

    def dashboard_create(key: str | None) -> httpx.Response:
        form = session(world).form(**{"saved-query": "products", "category": "toys",
                                        "form-key": key or ""})  # fmt: skip
        return client.post("/exports/new", data=form, headers=cookie(world),
                           follow_redirects=False)  # fmt: skip

    def dashboard_rerun(key: str | None) -> httpx.Response:
        form = session(world).form(key=key or "")
        return client.post(f"/jobs/{first_job(world)}/rerun", data=form,
                           headers=cookie(world), follow_redirects=False)  # fmt: skip

    def schedule_run(key: str | None) -> httpx.Response:
        extra = {"Idempotency-Key": key} if key else {}
        mine = client.get("/api/schedules", headers=bearer(world)).json()
        if not mine:
            body = {**BODY, "cron": "0 8 * * *", "time_zone": "UTC"}
            mine = [client.post("/api/schedules", json=body, headers=bearer(world)).json()]
        path = f"/api/schedules/{mine[0]['id']}/run"
        return client.post(path, headers={**bearer(world), **extra})

    def dashboard_schedule_run(key: str | None) -> httpx.Response:
        mine = client.get("/api/schedules", headers=bearer(world)).json()
        if not mine:
            body = {**BODY, "cron": "0 8 * * *", "time_zone": "UTC"}
            mine = [client.post("/api/schedules", json=body, headers=bearer(world)).json()]
        form = session(world).form(key=key or "")
        return client.post(f"/schedules/{mine[0]['id']}/run", data=form, headers=cookie(world),
                           follow_redirects=False)  # fmt: skip

    return {
        "POST /api/exports": api_create,
        "POST /api/schedules/{schedule_id}/run": schedule_run,
        "POST /schedules/{schedule_id}/run": dashboard_schedule_run,
        "POST /api/exports/{job_id}/rerun": api_rerun,
        "POST /exports/new": dashboard_create,
        "POST /jobs/{job_id}/rerun": dashboard_rerun,
    }


def refused(response: httpx.Response) -> bool:
    return response.status_code == 429


def test_the_creating_routes_are_exactly_the_ones_checked(
    build: Callable[..., dict[str, Any]],
) -> None:
    world = build()
    assert world["client"].post("/api/exports", json=BODY, headers=bearer(world)).is_success
    known = creators(world)
    found = set()
    routes = list(routes_of(world["app"]))  # included routers' routes among them
    for route in routes:
        original = getattr(route, "original_route", route)
        if not isinstance(original, APIRoute) or "POST" not in route.methods:
            continue
        label = f"POST {route.path}"
        before = count(world)
        if label in known:
            known[label](None)
        else:  # anything else, called as a person would with a real job's id
            path = route.path.format(job_id=first_job(world), endpoint_id=1, schedule_id=1,
                                     effect="emit_failed_webhook", name="alice",
                                     group="finance", delivery_id=1,
                                     channel_id=1, token="forged", person="alice",
                                     address="p@example.com")  # fmt: skip
            world["client"].post(path, json=BODY, headers={**bearer(world), **cookie(world)})
        if count(world) > before:
            found.add(label)
    assert found == set(known)


@pytest.mark.parametrize("route", list(creators({"client": None, "tokens": {}})))
def test_the_cap_of_unfinished_exports_holds(
    build: Callable[..., dict[str, Any]], route: str
) -> None:
    world = build(max_active_exports=3)
    client = world["client"]
    assert client.post("/api/exports", json=BODY, headers=bearer(world)).status_code == 201
    create = creators(world)[route]
    while count(world) < 3:
        assert not refused(create(None))
    answer = create(None)
    assert refused(answer), (route, answer.status_code, answer.text[:300])
    assert count(world) == 3


@pytest.mark.parametrize("route", list(creators({"client": None, "tokens": {}})))
def test_the_rate_limit_holds(build: Callable[..., dict[str, Any]], route: str) -> None:
    world = build(max_exports_per_minute=3)
    client = world["client"]
    job = client.post("/api/exports", json=BODY, headers=bearer(world)).json()["id"]
    client.post(f"/api/exports/{job}/cancel", headers=bearer(world))
    create = creators(world)[route]
    while count(world) < 3:
        made = create(None)
        assert not refused(made)
        if made.status_code < 400 and "rerun" not in route:
            newest = world["db"].jobs.list_jobs(JobFilter(owner="alice", limit=1)).jobs[0].id
            client.post(f"/api/exports/{newest}/cancel", headers=bearer(world))
    answer = create(None)
    assert refused(answer), (route, answer.status_code)
    assert count(world) == 3


@pytest.mark.parametrize("route", list(creators({"client": None, "tokens": {}})))
def test_a_repeated_idempotency_key_makes_one_job(
    build: Callable[..., dict[str, Any]], route: str
) -> None:
    world = build()
    world["client"].post("/api/exports", json=BODY, headers=bearer(world))
    create = creators(world)[route]
    key = secrets.token_urlsafe(8)
    before = count(world)
    first, again = create(key), create(key)
    assert (first.status_code < 400, again.status_code < 400) == (True, True)
    assert count(world) == before + 1


def test_twenty_concurrent_creates_through_the_service_make_ten_jobs(
    database_url: str, sources_dir: Path, tmp_path: Path
) -> None:
    """On SQLite and PostgreSQL, each thread a process of its own: its own connections."""
    from concurrent.futures import ThreadPoolExecutor

    from reportexport.objects import open_object_store
    from reportexport.services.errors import OverLimitError
    from reportexport.services.exports import Acting
    from reportexport.store import open_database
    from tests.helpers import GRAPH

    catalog = catalog_for(sources_dir, None, API_QUERIES)
    objects = open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"x")
    barrier = threading.Barrier(20)

    def attempt(_: int) -> bool:
        database = open_database(database_url, GRAPH)
        try:
            exports = runtime_for(database, catalog, objects, max_active_exports=10).exports
            barrier.wait()
            exports.create(Acting(name="racer"), "products", {"category": "toys"})
            return True
        except OverLimitError:
            return False
        finally:
            database.close()

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(attempt, range(20)))
    assert outcomes.count(True) == 10
