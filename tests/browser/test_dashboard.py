"""Browser flows in a real headless Chromium (Debian's package) driven by Playwright.

Each flow runs at a desktop and a phone viewport against `reportexport serve` over the demo
data, saves a screenshot under var/screenshots/, fails on a page error or a Content-Security-
Policy violation, and runs axe-core on every page it visits (no serious or critical violation).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest

from reportexport.links import sign_download

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = Path(os.environ.get("REPORTEXPORT_SCREENSHOTS", "var/screenshots"))
VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}
LONG = "x" * 3000
SPOOF = "evil\u202e and the rest of the line"
EXTRA_QUERIES = """
[queries.slow]
title = "A slow export"
source = "demo"
sql = "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)"

[queries.broken]
title = "A broken export"
source = "demo"
sql = "SELECT no_such_column FROM orders"

[queries.every_kind]
title = "Every kind of parameter"
description = "One parameter of each type, each with a default."
source = "demo"
sql = \"\"\"
SELECT :flag AS flag, :color AS color, :since AS since, :ratio AS ratio, :label AS label,
       :count AS count, :day AS day, :note AS note
\"\"\"
parameters.flag = { type = "boolean", default = true, description = "On unless unticked" }
parameters.color = { type = "enum", choices = ["red", "green", "blue"], default = "green" }
parameters.since = { type = "timestamp", default = "2024-03-05T10:00:00+01:00" }
parameters.ratio = { type = "number", default = 0.5, min = 0, max = 1 }
parameters.label = { type = "string", default = "AB", pattern = "[A-Z]+", max_length = 5000 }
parameters.count = { type = "integer", default = 7, min = 1, max = 9 }
parameters.day = { type = "date", default = "2024-02-29" }
parameters.note = { type = "string", required = false, max_length = 5000 }
"""


def require_chromium() -> str:
    if CHROMIUM is not None:
        return CHROMIUM
    message = "Chromium NOT FOUND (apt-get install chromium): browser tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)


@contextmanager
def serving(
    home: Path, edit_catalog: Callable[[str], str] = str, **settings: str
) -> Iterator[dict[str, Any]]:
    """`reportexport serve` over a fresh demo in `home` (its catalog as `edit_catalog` makes
    it), with these settings (environment variables without their REPORTEXPORT_ prefix); its
    base URL and the first people's tokens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env |= {
        "REPORTEXPORT_HOME": str(home),
        "REPORTEXPORT_MAX_EXPORTS_PER_MINUTE": "1000",
        "REPORTEXPORT_MAX_ACTIVE_EXPORTS": "1000",
    }
    env |= {f"REPORTEXPORT_{name.upper()}": value for name, value in settings.items()}
    demo = subprocess.run(
        [sys.executable, "-m", "reportexport", "demo", "--rows", "5000"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    tokens = dict(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", demo.stdout))
    catalog = home / "catalog.toml"
    catalog.write_text(edit_catalog(catalog.read_text()) + EXTRA_QUERIES)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = home / "serve.log"
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "reportexport", "serve", "--port", str(port),
             "--grace-seconds", "1"],
            env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    try:
        yield {"base": base, "tokens": tokens, "home": home, "env": env}
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_chromium()
    with serving(tmp_path_factory.mktemp("dashboard") / "var") as running:
        yield running


def api(service: dict[str, Any], method: str, path: str, who: str = "demo", **kw: Any) -> Any:
    headers = {"Authorization": f"Bearer {service['tokens'][who]}"}
    answer = httpx.request(method, service["base"] + path, headers=headers, timeout=30, **kw)
    answer.raise_for_status()
    return answer.json()


@pytest.fixture(params=list(VIEWPORTS))
def viewport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Watched:
    """A page and what went wrong on it: script errors, CSP violations, JSON navigations."""

    def __init__(self, page: Any, viewport: str) -> None:
        self.page = page
        self.viewport = viewport
        self.troubles: list[str] = []
        self.json_pages: list[str] = []
        page.on("pageerror", lambda exc: self.troubles.append(f"page error: {exc}"))
        page.on("console", self._console)
        page.on("response", self._response)

    def _console(self, message: Any) -> None:
        text = message.text
        if "cdn.redoc.ly" in text:  # ReDoc's own logo from its CDN, refused on purpose
            return
        # An error page opened on purpose is not a trouble; a script's failure is.
        # gate: allow forbidden-alias -- Playwright's console message type, not a job status
        failure = message.type == "error" and "Failed to load resource" not in text
        if "Content Security Policy" in text or failure:
            self.troubles.append(f"console: {text}")

    def _response(self, response: Any) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            kind = response.headers.get("content-type", "")
            disposition = response.headers.get("content-disposition", "")
            if "json" in kind and "attachment" not in disposition and response.status != 302:
                self.json_pages.append(response.url)


@contextmanager
def browsing(service: dict[str, Any], viewport: str, **options: Any) -> Iterator[Watched]:
    """A page in a fresh headless Chromium context at `viewport` (with context `options`,
    e.g. timezone_id); it may reach this server only. Fails on any trouble seen on it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=require_chromium(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        context = browser.new_context(
            base_url=service["base"],
            permissions=["notifications"],
            **VIEWPORTS[viewport],
            **options,
        )
        context.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
        context.route("**/__axe__.js", _serve_axe)
        context.add_init_script(NOTIFICATIONS_RECORDED)
        context.set_default_timeout(30_000)
        seen = Watched(context.new_page(), viewport)
        yield seen
        browser.close()
    assert seen.troubles == []
    assert seen.json_pages == []


@pytest.fixture
def watched(service: dict[str, Any], viewport: str) -> Iterator[Watched]:
    with browsing(service, viewport) as seen:
        yield seen


# Notifications are recorded rather than shown (the headless browser has no desktop).
NOTIFICATIONS_RECORDED = """
window.__notified = [];
window.Notification = class {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { window.__notified.push(title); }
};
"""


def _axe_source() -> str:
    return (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


def _serve_axe(route: Any) -> None:
    route.fulfill(body=_axe_source(), content_type="application/javascript")


def accessible(page: Any) -> None:
    """axe-core on the page as it is: no serious or critical violation. Its script comes from
    this origin (a routed URL), so the page's own Content-Security-Policy stays on."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(url="/__axe__.js")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == [], f"{page.url}: {bad}"


def fits(page: Any) -> None:
    """Nothing makes the page wider than its viewport (long values wrap)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"{page.url} is {width} px wide"


def shot(seen: Watched, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen.page.screenshot(path=str(SCREENSHOTS / f"{name}-{seen.viewport}.png"), full_page=True)


def sign_in(page: Any, service: dict[str, Any], who: str = "demo") -> None:
    page.goto("/sign-in")
    accessible(page)
    page.fill("#token", service["tokens"][who])
    page.click("form button[type=submit]")
    page.wait_for_url("**/jobs")
    assert f"Signed in as {who}" in page.text_content("#flash")


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


def default_shown(spec: dict[str, Any]) -> Any:
    """What a control should show for the catalog's default of a parameter, by its type."""
    default = spec.get("default")
    if spec["type"] == "boolean":
        return bool(default)
    if default is None:
        return ""
    if spec["type"] == "timestamp":  # the picker shows the same instant in UTC
        return datetime.fromisoformat(str(default)).astimezone(UTC).replace(tzinfo=None)
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


def test_the_readme_walkthrough(watched: Watched, service: dict[str, Any]) -> None:
    """ "Exports in five minutes", as the README tells it, at a phone and a desktop."""
    page = watched.page
    sign_in(page, service)
    shot(watched, "walkthrough-1-exports")
    accessible(page)
    page.click("nav >> text=New export")
    page.wait_for_url("**/exports/new")
    for query in api(service, "GET", "/api/saved-queries"):
        page.goto(f"/exports/new?saved_query={query['name']}")
        for spec in query["parameters"]:
            shown, wanted = control_shows(page, spec), default_shown(spec)
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
    page.click("dialog >> text=Cancel the export")
    page.wait_for_selector("#flash")
    assert "is canceled" in page.text_content("#flash")
    assert "canceled by its owner" in page.text_content("#timeline")
    assert "delete_temp_object" in page.text_content("#effects")
    shot(watched, "walkthrough-5-canceled")
    page.click("nav >> text=Lifecycle")
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
    assert "runs export #" in page.text_content("#flash")
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
    page.click("#next-page")
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
    page.click("form[role=search] button[type=submit]")
    titles = page.eval_on_selector_all(
        "#jobs tbody td[data-label='Saved query']", "cells => cells.map(c => c.textContent)"
    )
    assert titles
    assert set(titles) == {"A broken export"}
    page.fill("#q", f"#{first_ids[0]}")
    page.select_option("#saved_query", "")
    page.select_option("#status", "")
    page.click("form[role=search] button[type=submit]")
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
