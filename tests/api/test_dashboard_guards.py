"""Every dashboard route is guarded by its router: signed in (a live page's data: 401 instead
of the sign-in page), an operator for the operators' pages, and this session's CSRF token on
every form. Only signing in, the lifecycle, the API's documentation, an e-mail's signed
unsubscribe link and the static files are open. A route added without its guard fails
`test_every_dashboard_route_is_guarded`."""

from __future__ import annotations

from collections.abc import Iterator
from html import escape
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from reportexport.services.exports import Acting
from reportexport.web.dashboard.guards import SameSession, operator, signed_in, signed_in_feed
from reportexport.web.problems import routes_of
from tests.dashboard_session import Signed, sign_in
from tests.helpers import runtime_for

HTML = "text/html; charset=utf-8"
OPEN = {
    ("GET", "/"), ("GET", "/sign-in"), ("POST", "/sign-in"), ("GET", "/lifecycle"),
    ("GET", "/docs"), ("GET", "/redoc"), ("GET", "/favicon.ico"), ("GET", "/sign-in/company"),
    ("GET", "/sign-in/company/callback"),
    # An e-mail's unsubscribe link: its signature allows it (RFC 8058: no session, no token).
    ("GET", "/unsubscribe/{token}"), ("POST", "/unsubscribe/{token}"),
}  # fmt: skip
FEEDS = {"/jobs/events", "/jobs/state", "/schedules/preview"}


def dashboard_routes(app: FastAPI) -> Iterator[tuple[str, str, Any]]:
    """(method, path, route) of every route that is not the API's."""
    for route in routes_of(app):
        original = getattr(route, "original_route", route)
        module = getattr(route.endpoint, "__module__", "") if hasattr(route, "endpoint") else ""
        if isinstance(original, APIRoute) and (
            not route.include_in_schema or module.startswith("reportexport.web.dashboard")
        ):
            for method in sorted(route.methods):
                yield method, route.path, route


def guards_of(dependant: Dependant) -> list[Any]:
    """Every dependency a route runs, its dependencies' own included."""
    found = []
    for sub in dependant.dependencies:
        found.append(sub.call)
        found += guards_of(sub)
    return found


def unguarded(app: FastAPI) -> list[str]:
    """The dashboard routes that lack the guard they need."""
    missing = []
    for method, path, route in dashboard_routes(app):
        guards = guards_of(route.dependant)
        csrf = any(isinstance(g, SameSession) for g in guards)
        if (method, path) in OPEN:
            needed = {"no guard": not guards}
        elif path in FEEDS:
            needed = {"signed in (401)": signed_in_feed in guards}
        else:
            needed = {"signed in": signed_in in guards}
            if path == "/operators" or path.startswith("/operators/"):
                needed["an operator"] = operator in guards
            needed["the CSRF token"] = csrf if method == "POST" else not csrf
        missing += [f"{method} {path}: {what}" for what, held in needed.items() if not held]
    return missing


def test_every_dashboard_route_is_guarded(api: dict[str, Any]) -> None:
    app = api["client"].app
    seen = {(method, path) for method, path, _ in dashboard_routes(app)}
    assert seen >= OPEN
    assert {("GET", path) for path in FEEDS} <= seen
    assert len(seen) >= 40, sorted(seen)
    assert unguarded(app) == []


def test_a_route_added_without_its_guard_is_found(api: dict[str, Any]) -> None:
    app = runtime_for(api["db"], api["catalog"], api["objects"]).app()
    extra = APIRouter(include_in_schema=False)
    extra.get("/jobs/{job_id}/notes")(lambda job_id: {})
    extra.post("/operators/notes")(lambda: {})
    app.include_router(extra)
    assert unguarded(app) == [
        "GET /jobs/{job_id}/notes: signed in",
        "POST /operators/notes: signed in",
        "POST /operators/notes: an operator",
        "POST /operators/notes: the CSRF token",
    ]


# -- what the guards answer ---------------------------------------------------------------------


URL = "https://hooks.example.com/c"


@pytest.fixture
def site(api: dict[str, Any]) -> dict[str, Any]:
    """Something for every path to name: an export of alice's, a schedule, an endpoint."""
    runtime = runtime_for(api["db"], api["catalog"], api["objects"])
    olga = Acting(name="olga", role="operator")
    job = runtime.exports.create(Acting(name="alice"), "products", {"category": "toys"}).job.id
    schedule = runtime.schedules.create(
        olga, "products", {"category": "toys"}, cron="0 8 * * *", time_zone="UTC"
    ).schedule.id
    endpoint = runtime.webhooks.add(olga, "https://hooks.example.com/a", owner="alice").id
    runtime.access.create_group(olga, "finance")
    runtime.access.add_member(olga, "finance", "bob")
    channel = api["db"].channels.add_chat_channel(owner=None, name="#all", url=URL).id
    values = {"job_id": job, "schedule_id": schedule, "endpoint_id": endpoint, "name": "bob",
              "effect": "emit_failed_webhook", "group": "finance", "person": "bob",
              "channel_id": channel, "address": "partner@example.com"}  # fmt: skip
    return {**api, "values": values}


def guarded(site: dict[str, Any], method: str) -> list[str]:
    return [
        path.format(**site["values"])
        for m, path, _ in dashboard_routes(site["client"].app)
        if m == method and (m, path) not in OPEN and path not in FEEDS
    ]


def as_who(site: dict[str, Any], who: str) -> Signed:
    return sign_in(site["client"], site["tokens"][who])


def test_a_signed_out_browser_is_sent_to_sign_in_and_brought_back(site: dict[str, Any]) -> None:
    client = site["client"]
    client.cookies.clear()
    for path in guarded(site, "GET"):
        answer = client.get(f"{path}?cursor=7", follow_redirects=False)
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/sign-in?next={quote(path + '?cursor=7', '')}"
    for path in guarded(site, "POST"):
        answer = client.post(path, data={"confirmed": "yes"}, follow_redirects=False)
        assert (answer.status_code, answer.headers["location"]) == (303, "/sign-in"), path
        # a form's address is no page to come back to: the page it was sent from is
        sent_from = client.post(
            path, headers={"Referer": "http://testserver/schedules"}, follow_redirects=False
        )
        assert sent_from.headers["location"] == "/sign-in?next=%2Fschedules", path
    for path in FEEDS:
        refused = client.get(path)
        assert (refused.status_code, refused.headers["content-type"]) == (
            401,
            "application/problem+json",
        )
    assert site["db"].users.user_by_name("bob").token_revoked_at is None  # nothing was done


def test_the_open_pages_and_the_static_files_need_no_session(site: dict[str, Any]) -> None:
    client = site["client"]
    client.cookies.clear()
    for path in ("/sign-in", "/lifecycle", "/docs", "/redoc", "/static/app.js"):
        assert client.get(path).status_code == 200, path
    assert client.get("/", follow_redirects=False).headers["location"] == "/sign-in"


def test_someone_else_than_an_operator_gets_the_same_page_everywhere(
    site: dict[str, Any],
) -> None:
    client = site["client"]
    alice = as_who(site, "alice")
    operators = [p for p in guarded(site, "GET") + guarded(site, "POST") if p.startswith("/oper")]
    assert len(operators) >= 14
    for path in operators:
        method = client.post if path in guarded(site, "POST") else client.get
        refused = method(path, headers=alice.headers)  # with or without a form
        assert (refused.status_code, refused.headers["content-type"]) == (403, HTML), path
        assert "For operators only" in refused.text
    sent = client.post("/operators/people", data=alice.form(name="mallory"), headers=alice.headers)
    assert sent.status_code == 403
    assert site["db"].users.user_by_name("mallory") is None


BACK = {
    "/sign-out": "/jobs",
    "/jobs/{job_id}/cancel": "/jobs/{job_id}",
    "/jobs/{job_id}/rerun": "/jobs/{job_id}",
    "/jobs/{job_id}/notify": "/jobs/{job_id}",
    "/jobs/cancel": "/jobs?status=queued",
    "/exports/new": "/exports/new?saved_query=products",
    "/schedules/new": "/exports/new?saved_query=products",
    "/exports/notify-always": "/exports/new?saved_query=products",
    "/schedules/{schedule_id}/pause": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/resume": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/run": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/delete": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/recipients": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/recipients/{person}/remove": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/channels": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/channels/{channel_id}/remove": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/addresses": "/schedules/{schedule_id}",
    "/schedules/{schedule_id}/addresses/{address}/remove": "/schedules/{schedule_id}",
    "/operators/side-effects/{job_id}/{effect}/redrive": "/operators/side-effects?show=waiting",
    "/operators/webhooks": "/operators/webhooks",
    "/operators/webhooks/{endpoint_id}/rotate": "/operators/webhooks",
    "/operators/webhooks/{endpoint_id}/disable": "/operators/webhooks",
    "/operators/webhooks/{endpoint_id}/test": "/operators/webhooks",
    "/operators/people": "/operators/people",
    "/operators/people/{name}/token": "/operators/people",
    "/operators/people/{name}/revoke-token": "/operators/people",
    "/operators/people/{name}/revoke": "/operators/people",
    "/operators/groups": "/operators/groups",
    "/operators/groups/{group}/members": "/operators/groups/{group}",
    "/operators/groups/{group}/members/{name}/remove": "/operators/groups/{group}",
    "/operators/groups/{group}/delete": "/operators/groups/{group}",
}


@pytest.mark.parametrize("token", ["", "0" * 64, "other session"])
def test_a_form_without_the_sessions_token_changes_nothing_and_leads_back(
    site: dict[str, Any], token: str
) -> None:
    client = site["client"]
    other = as_who(site, "alice")
    olga = as_who(site, "olga")
    before = changes(site)
    posts = [path for m, path, _ in dashboard_routes(client.app) if m == "POST"]
    # Signing in, and an e-mail's unsubscribe link (its signature allows it), take no session.
    assert set(posts) - {"/sign-in", "/unsubscribe/{token}"} == set(BACK)
    for path, back in BACK.items():
        fields = {"confirmed": "yes", "saved-query": "products", "category": "toys",
                  "back": "/jobs?status=queued" if path == "/jobs/cancel"
                  else "/operators/side-effects?show=waiting", "job": str(site["values"]["job_id"]),
                  "name": "mallory", "url": "https://hooks.example.com/b", "owner": "alice",
                  "schedule-cron": "0 9 * * *"}  # fmt: skip
        if token:
            fields["csrf-token"] = other.csrf if token == "other session" else token
        url = path.format(**site["values"])
        refused = client.post(url, data=fields, headers=olga.headers, follow_redirects=False)
        assert (refused.status_code, refused.headers["content-type"]) == (403, HTML), url
        assert "This form has expired" in refused.text
        assert f'href="{escape(back.format(**site["values"]))}"' in refused.text, url
    assert client.get("/jobs", headers=olga.headers).status_code == 200  # still signed in
    assert changes(site) == before


def changes(site: dict[str, Any]) -> Any:
    """What any form could have changed: the exports, the schedule, the operators' audit."""
    bearer = {"Authorization": f"Bearer {site['tokens']['olga']}"}
    get = site["client"].get
    return (
        get("/api/exports", headers=bearer).json(),
        get(f"/api/schedules/{site['values']['schedule_id']}", headers=bearer).json(),
        get("/api/audit", headers=bearer).json(),
        [
            (u.name, u.token_hash, u.revoked_at, u.notify_always)
            for u in site["db"].users.list_users()
        ],
        [(g.name, g.member_count) for g in site["db"].groups.list_groups()],
    )
