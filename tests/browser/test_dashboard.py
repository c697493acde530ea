"""Browser flows in a real headless Chromium (Debian's package) driven by Playwright.

Each flow runs at a desktop and a phone viewport against `reportexport serve` over the demo
data, saves a screenshot under var/screenshots/, fails on a page error or a Content-Security-
Policy violation, and runs axe-core on every page it visits (no serious or critical violation).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from reportexport.core.links import sign_download, sign_unsubscribe
from tests.browser.pages import (
    Watched,
    accessible,
    api,
    browsing,
    fits,
    follow,
    require_chromium,
    serving,
    shot,
    sign_in,
)

LONG = "x" * 3000
SPOOF = "evil\u202e and the rest of the line"


def status_of(page: Any) -> str:
    return str(page.text_content("#status")).strip()


def wait_live(page: Any, wanted: str, timeout: float = 60_000) -> None:
    """Wait for the job page to show `wanted` by itself: the page is never reloaded."""
    page.wait_for_function(
        "wanted => document.getElementById('status').textContent.trim() === wanted",
        arg=wanted,
        timeout=timeout,
    )


def running_jobs(service: dict[str, Any], who: str, query: str, count: int) -> list[int]:
    ids = [
        api(service, "POST", "/api/exports", who, json={"saved_query": query})["id"]
        for _ in range(count)
    ]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = {api(service, "GET", f"/api/exports/{i}", who)["job"]["status"] for i in ids}
        if states == {"running"}:
            return ids
        time.sleep(0.2)
    raise AssertionError(f"jobs {ids} did not start")


def cancel_all(service: dict[str, Any], who: str, ids: list[int]) -> None:
    for job_id in ids:
        httpx.post(
            f"{service['base']}/api/exports/{job_id}/cancel",
            headers={"Authorization": f"Bearer {service['tokens'][who]}"},
        )


def default_shown(spec: dict[str, Any], zone: str) -> Any:
    """What a control should show for the catalog's default of a parameter, by its type (a
    timestamp in the browser's time zone `zone`)."""
    default = spec.get("default")
    if spec["type"] == "boolean":
        return bool(default)
    if default is None:
        return ""
    if spec["type"] == "timestamp":  # the picker shows the same instant in the reader's zone
        moment = datetime.fromisoformat(str(default))
        return moment.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    if spec["type"] in ("number", "integer"):
        return float(default)
    return str(default)


def control_shows(page: Any, spec: dict[str, Any]) -> Any:
    control = page.locator(f"#param-{spec['name']}")
    if spec["type"] == "boolean":
        return control.is_checked()
    value = control.input_value()
    if spec["type"] in ("number", "integer"):
        return float(value) if value else ""
    if spec["type"] == "timestamp" and value:
        return datetime.fromisoformat(value)
    return value


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_chromium()
    with serving(tmp_path_factory.mktemp("dashboard") / "var") as running:
        yield running


def test_the_readme_walkthrough(watched: Watched, service: dict[str, Any]) -> None:
    """ "Exports in five minutes", as the README tells it, at a phone and a desktop."""
    page = watched.page
    sign_in(page, service)
    shot(watched, "walkthrough-1-exports")
    accessible(page)
    page.click("nav >> text=New export")
    page.wait_for_url("**/exports/new")
    zone = page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone")
    for query in api(service, "GET", "/api/saved-queries"):
        page.goto(f"/exports/new?saved_query={query['name']}")
        for spec in query["parameters"]:
            shown, wanted = control_shows(page, spec), default_shown(spec, zone)
            assert shown == wanted, f"{query['name']}.{spec['name']}: {shown!r} != {wanted!r}"
    page.goto("/exports/new")
    page.select_option("#choose-query", label="Orders of one day")
    page.wait_for_url("**/exports/new?saved_query=orders_by_day")
    assert "Every order placed on one day" in page.text_content("#export-form")
    accessible(page)
    shot(watched, "walkthrough-2-new-export")
    # Both slots of the demo source are taken, so the export waits in `queued` at first.
    blockers = running_jobs(service, "operator", "slow", 2)
    try:
        page.fill("#param-day", "2024-01-05")
        page.click("#export-button")
        page.wait_for_url(re.compile(r".*/jobs/\d+$"))
        page.evaluate("window.__same_page = true")
        assert status_of(page) == "queued"
        accessible(page)
        shot(watched, "walkthrough-3-queued")
    finally:
        cancel_all(service, "operator", blockers)
    wait_live(page, "succeeded")
    page.wait_for_selector("#download")
    assert page.evaluate("window.__same_page") is True, "the page was reloaded"
    timeline = page.text_content("#timeline")
    for state in ("queued", "running", "succeeded"):
        assert state in timeline
    accessible(page)
    fits(page)
    shot(watched, "walkthrough-4-succeeded")
    assert "bytes" in page.text_content("#download") or "kB" in page.text_content("#download")
    with page.expect_download() as download:
        page.click("#download")
    assert download.value.suggested_filename.startswith("orders_by_day-")
    page.click("#checksum summary")
    assert re.fullmatch(r"[0-9a-f]{64}", page.text_content("#sha256") or "")
    # Start a long export and cancel it while it runs: the timeline says who and why.
    page.goto("/exports/new?saved_query=slow")
    page.click("#export-button")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    wait_live(page, "running")
    page.click("#live button:has-text('Cancel export')")
    follow(page, "dialog >> text=Cancel the export")
    page.wait_for_selector("#flash")
    assert "is canceled" in page.text_content("#flash")
    assert "canceled by its owner" in page.text_content("#timeline")
    assert "delete_temp_object" in page.text_content("#effects")
    shot(watched, "walkthrough-5-canceled")
    page.click("nav >> text=Lifecycle")
    page.wait_for_url("**/lifecycle")  # the click only starts the navigation
    page.wait_for_selector("svg [data-state]")
    states = page.eval_on_selector_all("svg [data-state]", "els => els.map(e => e.dataset.state)")
    assert sorted(states) == sorted(["queued", "running", "succeeded", "failed", "canceled"])
    accessible(page)
    shot(watched, "walkthrough-6-lifecycle")


def test_the_list_follows_its_jobs_live(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    sign_in(page, service)
    blockers = running_jobs(service, "operator", "slow", 2)
    try:
        body = {"saved_query": "customer_orders", "parameters": {"customer_id": 7}}
        job_id = api(service, "POST", "/api/exports", json=body)["id"]
        page.goto("/jobs")
        row = f"tr[data-job='{job_id}']"
        assert page.text_content(f"{row} [data-field=status]") == "queued"
        page.evaluate("window.__same_page = true")
    finally:
        cancel_all(service, "operator", blockers)
    page.wait_for_function(
        "row => document.querySelector(row + ' [data-field=status]').textContent === 'succeeded'",
        arg=row,
    )
    page.wait_for_selector(f"{row} a:has-text('Download')")
    assert page.evaluate("window.__same_page") is True
    accessible(page)
    fits(page)
    shot(watched, "list-live")


def test_the_list_takes_in_new_exports_and_the_job_page_its_timeline_live(
    watched: Watched, service: dict[str, Any]
) -> None:
    """Exports made elsewhere (here, over the API) appear in the open list and follow their
    status; a job's page shows its start in the timeline and facts while it runs."""
    page = watched.page
    sign_in(page, service)
    page.goto("/jobs")
    page.evaluate("window.__same_page = true")
    made = api(service, "POST", "/api/exports", json={"saved_query": "slow"})["id"]
    row = f"tr[data-job='{made}']"
    page.wait_for_selector(row, timeout=30_000)
    page.wait_for_function(
        "row => document.querySelector(row + ' [data-field=status]').textContent === 'running'",
        arg=row,
    )
    assert page.evaluate("window.__same_page") is True
    accessible(page)
    cancel_all(service, "demo", [made])  # the source's two slots, for the part below
    blockers = running_jobs(service, "operator", "slow", 2)
    mine: list[int] = []
    try:
        queued = api(service, "POST", "/api/exports", json={"saved_query": "slow"})["id"]
        mine.append(queued)
        page.goto(f"/jobs/{queued}")
        page.evaluate("window.__same_page = true")
        assert status_of(page) == "queued"
        assert "running" not in (page.text_content("#timeline tbody") or "")
        cancel_all(service, "operator", blockers[:1])
        wait_live(page, "running")
        page.wait_for_function(
            "() => document.getElementById('timeline').textContent.includes('running')"
        )
        assert "Started" in (page.text_content("#facts") or "")
        assert status_of(page) == "running"  # the timeline moved while it runs
        assert page.evaluate("window.__same_page") is True
        accessible(page)
        shot(watched, "job-running-timeline")
    finally:
        cancel_all(service, "operator", blockers)
        cancel_all(service, "demo", mine)


def test_the_form_tells_every_rule_and_every_problem(
    watched: Watched, service: dict[str, Any]
) -> None:
    page = watched.page
    sign_in(page, service)
    page.goto("/exports/new?saved_query=every_kind")
    assert "One parameter of each type" in page.text_content("#export-form")
    assert "On unless unticked" in page.text_content("[data-parameter=flag]")
    assert "UTC" in page.text_content("[data-parameter=since]")
    assert page.get_attribute("#param-count", "max") == "9"
    assert page.get_attribute("#param-label", "pattern") == "[A-Z]+"
    page.fill("#param-count", "12")
    page.click("#export-button")
    assert page.evaluate("document.getElementById('param-count').validity.rangeOverflow")
    assert "/exports/new" in page.url  # the browser held the form back
    # Without the browser's checks, the server names every problem at once.
    page.evaluate("document.getElementById('export-form').noValidate = true")
    page.fill("#param-label", "lower")
    page.fill("#param-ratio", "3")
    page.click("#export-button")
    page.wait_for_selector("#form-problems")
    problems = page.text_content("#form-problems")
    for name in ("count", "label", "ratio"):
        assert name in problems
        assert page.get_attribute(f"#param-{name}", "aria-invalid") == "true"
    assert "3 problems" in problems
    assert page.is_checked("#param-flag")  # what was sent is shown again
    accessible(page)
    fits(page)
    shot(watched, "form-every-problem")
    page.fill("#param-count", "8")
    page.fill("#param-label", "OK")
    page.fill("#param-ratio", "0.25")
    page.uncheck("#param-flag")
    page.click("#export-button")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    shown = page.text_content("#parameters")
    assert "no" in page.text_content("[data-parameter=flag]")
    assert "False" not in shown
    assert "green" in shown


def test_pickers_and_dates_follow_the_readers_zone_in_the_pages_language(
    viewport: str, service: dict[str, Any]
) -> None:
    """A German browser in Paris: the timestamp picker shows and takes Paris time (the export
    gets the same instant), and dates are written in English, the page's language."""
    with browsing(service, viewport, timezone_id="Europe/Paris", locale="de-DE") as watched:
        page = watched.page
        sign_in(page, service)
        page.goto("/exports/new?saved_query=every_kind")
        shown_default = datetime.fromisoformat(page.input_value("#param-since"))
        assert shown_default == datetime(2024, 3, 5, 10, 0)  # 09:00 UTC, in Paris
        assert "in your time zone (Europe/Paris)" in (page.text_content("#hint-since") or "")
        accessible(page)
        page.fill("#param-since", "2024-06-01T12:00:00")  # summer time: UTC+2
        page.click("#export-button")
        page.wait_for_url(re.compile(r".*/jobs/\d+$"))
        job_id = int(page.url.rsplit("/", 1)[1])
        sent = api(service, "GET", f"/api/exports/{job_id}")["job"]["parameters"]["since"]
        assert datetime.fromisoformat(sent) == datetime(2024, 6, 1, 10, 0, tzinfo=UTC)
        shown = page.text_content("[data-parameter=since] time") or ""
        assert "Jun 1, 2024" in shown, shown
        assert "Juni" not in (page.text_content("main") or "")
        assert "12:00:00" in shown  # Paris time, as the picker took it
        shot(watched, "picker-local-time")


def test_long_and_right_to_left_values_stay_in_their_place(
    watched: Watched, service: dict[str, Any]
) -> None:
    page = watched.page
    sign_in(page, service)
    job = api(service, "POST", "/api/exports",
              json={"saved_query": "every_kind", "parameters": {"note": LONG}})  # fmt: skip
    page.goto(f"/jobs/{job['id']}")
    wait_live(page, "succeeded")
    fits(page)
    spoofed = api(service, "POST", "/api/exports",
                  json={"saved_query": "every_kind", "parameters": {"note": SPOOF}})  # fmt: skip
    page.goto(f"/jobs/{spoofed['id']}")
    wait_live(page, "succeeded")
    page.wait_for_selector("#download")  # the finished page is in place: nothing swaps it now
    isolation = page.eval_on_selector(
        "[data-parameter=note] bdi", "b => getComputedStyle(b).unicodeBidi"
    )
    assert isolation == "isolate"
    fits(page)
    shot(watched, "hostile-values")


def test_no_dead_ends(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    theirs = api(service, "POST", "/api/exports", "operator", json={"saved_query": "broken"})
    sign_in(page, service)
    for path in ("/jobs/abc", "/jobs/99999999", f"/jobs/{theirs['id']}", "/nowhere"):
        answer = page.goto(path)
        assert answer.status == 404
        assert "html" in answer.headers["content-type"]
        assert page.locator("#token").count() == 0  # never the sign-in form
        assert page.locator("text=Back to your exports").count() == 1
        accessible(page)
    shot(watched, "missing-export")
    page.goto("/jobs?status=failed&q=nothing+like+this")
    assert "No export matches the search" in page.text_content("#empty")
    assert "status failed" in page.text_content("#empty")
    accessible(page)
    shot(watched, "empty-filtered")
    secret = (service["home"] / "link-secret").read_text().strip().encode()
    expired = sign_download(secret, "exports/1/x.csv", "x.csv", -10)
    answer = page.goto(f"/api/downloads/{expired}")
    assert answer.status == 410
    assert "This download link has expired" in page.text_content("h1")
    accessible(page)
    shot(watched, "expired-link")


def test_a_failed_export_explains_itself(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    sign_in(page, service)
    page.goto("/exports/new?saved_query=broken")
    page.click("#export-button")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    wait_live(page, "failed")
    page.wait_for_selector("#failure")
    assert "query_error" in page.text_content("#failure")
    assert "no_such_column" in page.text_content("#failure")
    accessible(page)
    page.click("#rerun")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))
    assert "was created to run export #" in page.text_content("#flash")
    shot(watched, "failed-export")


def test_notifications_are_opt_in(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    sign_in(page, service)
    blockers = running_jobs(service, "operator", "slow", 2)
    try:
        job = api(service, "POST", "/api/exports", json={"saved_query": "broken"})
        page.goto(f"/jobs/{job['id']}")
        assert page.get_attribute("#notify", "aria-pressed") == "false"
        page.click("#notify")
        assert page.get_attribute("#notify", "aria-pressed") == "true"
    finally:
        cancel_all(service, "operator", blockers)
    wait_live(page, "failed")
    page.wait_for_function("window.__notified.length > 0")
    assert page.evaluate("window.__notified") == [f"Export #{job['id']} failed"]


def test_an_operator_searches_sorts_and_pages_past_a_hundred(
    watched: Watched, service: dict[str, Any]
) -> None:
    page = watched.page
    existing = api(service, "GET", "/api/exports?limit=200", "operator")["jobs"]
    for _ in range(max(0, 105 - len(existing))):
        api(service, "POST", "/api/exports", "operator", json={"saved_query": "broken"})
    sign_in(page, service, who="operator")
    page.goto("/jobs")
    assert page.locator("#jobs tbody tr").count() == 100
    first_ids = page.eval_on_selector_all("tr[data-job]", "rows => rows.map(r => +r.dataset.job)")
    assert first_ids == sorted(first_ids, reverse=True)
    follow(page, "#next-page")
    more = page.eval_on_selector_all("tr[data-job]", "rows => rows.map(r => +r.dataset.job)")
    assert more
    assert max(more) < min(first_ids)
    accessible(page)
    shot(watched, "operator-page-two")
    page.goto("/jobs?sort=oldest")
    oldest = page.eval_on_selector_all("tr[data-job]", "rows => rows.map(r => +r.dataset.job)")
    assert oldest == sorted(oldest)
    page.goto("/jobs")
    page.select_option("#saved_query", label="A broken export")
    page.select_option("#status", "failed")
    follow(page, "form[role=search] button[type=submit]")
    titles = page.eval_on_selector_all(
        "#jobs tbody td[data-label='Saved query']", "cells => cells.map(c => c.textContent)"
    )
    assert titles
    assert set(titles) == {"A broken export"}
    page.fill("#q", f"#{first_ids[0]}")
    page.select_option("#saved_query", "")
    page.select_option("#status", "")
    follow(page, "form[role=search] button[type=submit]")
    found = page.eval_on_selector_all("tr[data-job]", "rows => rows.map(r => +r.dataset.job)")
    assert found == [first_ids[0]]
    accessible(page)
    shot(watched, "operator-search")


def test_the_api_documentation_works_offline(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if "127.0.0.1" not in r.url else None)
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .title")
    assert "reportexport" in page.text_content(".swagger-ui .title")
    shot(watched, "docs-swagger")
    page.goto("/redoc")
    page.wait_for_selector("redoc h1, [role=main] h1, h1", timeout=30_000)
    assert [u for u in outside if "cdn.redoc.ly" not in u] == []


def test_the_api_documentation_is_accessible_leads_back_and_takes_a_token(
    watched: Watched, service: dict[str, Any]
) -> None:
    """Swagger UI: an Authorize button that takes a person's token, "Try it out" answered 200
    with it; both documentation pages pass axe and lead back to the dashboard."""
    page = watched.page
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .title")
    accessible(page)
    page.click(".swagger-ui button.authorize")
    page.wait_for_selector(".modal-ux input")
    accessible(page)
    page.fill(".modal-ux input", service["tokens"]["demo"])
    page.click(".modal-ux button[type=submit]")
    page.click(".modal-ux button.btn-done")
    operation = "#operations-saved_queries-list_saved_queries"
    page.click(f"{operation} .opblock-summary-control")
    page.click(f"{operation} .try-out__btn")
    page.click(f"{operation} .execute")
    answered = f"{operation} .live-responses-table tbody .response-col_status"
    page.wait_for_selector(answered)
    assert page.text_content(answered).strip() == "200"
    assert "orders_by_day" in page.text_content(f"{operation} .live-responses-table tbody")
    accessible(page)
    shot(watched, "docs-authorized")
    page.click("#back-to-dashboard")
    page.wait_for_url("**/sign-in")  # signed out: the dashboard starts at signing in
    page.goto("/redoc")
    page.wait_for_selector("#redoc h1")
    accessible(page)
    shot(watched, "docs-redoc")
    page.click("#back-to-dashboard")
    page.wait_for_url("**/sign-in")


def test_signing_out_ends_the_session(watched: Watched, service: dict[str, Any]) -> None:
    page = watched.page
    sign_in(page, service)
    page.click("header button:has-text('Sign out')")
    page.wait_for_url("**/sign-in")
    assert "You are signed out" in page.text_content("#flash")
    page.goto("/jobs")
    assert "/sign-in" in page.url
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert "rx_session" not in cookies
    assert json.dumps(cookies).count(service["tokens"]["demo"]) == 0


def test_an_emails_unsubscribe_link_asks_first_then_stops_the_emails(
    watched: Watched, service: dict[str, Any]
) -> None:
    """The one-click link of an e-mail opened in a browser, signed out: a page that changes
    nothing until its button is pressed, then says the e-mails stopped; both pass axe."""
    name = f"carol-{watched.viewport}"
    for command in (["users", "add", name], ["users", "email", name, f"{name}@example.com"],
                    ["users", "notify-always", name, "on"]):  # fmt: skip
        subprocess.run([sys.executable, "-m", "reportexport", *command], env=service["env"],
                       check=True, capture_output=True)  # fmt: skip
    secret = (service["home"] / "link-secret").read_text().strip().encode()
    page = watched.page
    page.goto(f"/unsubscribe/{sign_unsubscribe(secret, name, f'{name}@example.com')}")
    page.wait_for_selector("#unsubscribe")
    accessible(page)
    page.click("#unsubscribe")
    page.wait_for_selector("#unsubscribed")
    assert f"{name} no longer gets an e-mail" in page.text_content("#unsubscribed")
    accessible(page)
    shot(watched, "unsubscribed")


def test_a_recipients_unsubscribe_link_takes_them_off_that_schedule(
    watched: Watched, service: dict[str, Any]
) -> None:
    """The link in a schedule's e-mail to one of its recipients, opened signed out: a page
    that changes nothing until its button is pressed, then says that schedule's e-mails stop;
    both pass axe."""
    name = f"dora-{watched.viewport}"
    for command in (["users", "add", name], ["users", "email", name, f"{name}@example.com"]):
        subprocess.run([sys.executable, "-m", "reportexport", *command], env=service["env"],
                       check=True, capture_output=True)  # fmt: skip
    body = {"saved_query": "slow", "cron": "0 8 * * *", "time_zone": "UTC"}
    schedule = api(service, "POST", "/api/schedules", json=body)["id"]
    api(service, "PUT", f"/api/schedules/{schedule}/recipients/{name}")
    secret = (service["home"] / "link-secret").read_text().strip().encode()
    token = sign_unsubscribe(secret, name, f"{name}@example.com", schedule_id=schedule)
    page = watched.page
    page.goto(f"/unsubscribe/{token}")
    page.wait_for_selector("#unsubscribe")
    accessible(page)
    page.click("#unsubscribe")
    page.wait_for_selector("#unsubscribed")
    said = page.text_content("#unsubscribed") or ""
    assert f"{name} no longer gets an e-mail when an export of schedule #{schedule} ends" in said
    assert api(service, "GET", f"/api/schedules/{schedule}/recipients") == []
    accessible(page)
    shot(watched, "unsubscribed-from-a-schedule")
