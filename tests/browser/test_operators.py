"""The operators' pages and the schedules' pages in a real headless Chromium, at a desktop and
a phone viewport, each page checked by axe-core and photographed under var/screenshots/:

- an operator re-drives a given-up webhook, rotates an endpoint's secret and revokes a token
  from the dashboard alone (and adds the person, sends a test event, cancels in bulk, reads
  the workers and the audit);
- a user schedules "Orders of one day" for yesterday, every day at 08:00 Europe/Paris, from
  the New export form, and sees the next five firing times as the service computes them; a
  firing refused by the owner's cap is shown on the schedule with its reason.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from reportexport.composition import Runtime, load_settings
from reportexport.services.schedules import ScheduleService
from reportexport.web.dashboard.format import zoned_text
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
from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import wait_for

PARIS = "Europe/Paris"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A server whose webhooks may reach this machine and give up after two attempts."""
    require_chromium()
    home = tmp_path_factory.mktemp("operators") / "var"
    with serving(home, webhooks_allow_private="true", effects_max_attempts="2") as running:
        yield running


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver(Receiver()) as running:
        yield running


def as_token(service: dict[str, Any], token: str, method: str, path: str, **kw: Any) -> Any:
    answer = httpx.request(
        method, service["base"] + path, headers={"Authorization": f"Bearer {token}"},
        timeout=30, **kw,
    )  # fmt: skip
    answer.raise_for_status()
    return answer.json() if answer.content else None


def effect_of(service: dict[str, Any], token: str, job_id: int, name: str) -> dict[str, Any]:
    detail = as_token(service, token, "GET", f"/api/exports/{job_id}")
    """A side-effect row of a job ({} until the job is terminal and has it)."""
    found: dict[str, Any] = next((e for e in detail["side_effects"] if e["effect"] == name), {})
    return found


def confirm(page: Any, button: Any, answer: str) -> None:
    """Click a destructive action's button and say yes in its dialog."""
    button.click()
    follow(page, f"dialog button:has-text('{answer}')")


def test_an_operator_redrives_rotates_and_revokes_from_the_dashboard_alone(
    viewport: str, service: dict[str, Any], receiver: Receiver
) -> None:
    person = f"carol-{viewport}"
    with browsing(service, viewport) as watched:
        page = watched.page
        sign_in(page, service, who="operator")
        # The operator adds the person: their token is shown once.
        follow(page, "nav >> text=Operators")
        page.wait_for_url("**/operators")
        accessible(page)
        shot(watched, "operators-1-overview")
        follow(page, ".tabs >> text=People")
        page.fill("#name", person)
        follow(page, "#add-person-button")
        token = page.text_content("#secret") or ""
        assert token.startswith("rxp_")
        accessible(page)
        page.goto("/operators/people")
        assert token not in page.content()
        # The person registers an endpoint and exports; the receiver refuses twice.
        endpoint = as_token(service, token, "POST", "/api/webhooks", json={"url": receiver.url})
        receiver.script.extend([(500, {}, 0.0), (500, {}, 0.0)])
        job = as_token(
            service,
            token,
            "POST",
            "/api/exports",
            json={"saved_query": "customer_orders", "parameters": {"customer_id": 7}},
        )
        job_id = job["id"]
        wait_for(
            lambda: effect_of(service, token, job_id, "emit_done_webhook").get("given_up_at"),
            90,
            "the webhook to be given up",
            every=0.3,
        )
        # Re-drive it.
        follow(page, ".tabs >> text=Side effects")
        row = page.locator(f"tr[data-effect='{job_id}/emit_done_webhook']")
        assert "HTTP 500" in (row.text_content() or "")
        assert "2" in (row.locator("td[data-label=Attempts]").text_content() or "")
        accessible(page)
        fits(page)
        shot(watched, "operators-2-side-effects")
        confirm(page, row.locator("button:has-text('Re-drive')"), "Re-drive it")
        page.wait_for_selector("#flash")
        assert "is due again" in (page.text_content("#flash") or "")
        assert page.locator(f"tr[data-effect='{job_id}/emit_done_webhook']").count() == 0
        delivered = wait_for(
            lambda: effect_of(service, token, job_id, "emit_done_webhook").get("completed_at"),
            90,
            "the re-driven webhook",
            every=0.3,
        )
        assert delivered
        assert len(set(receiver.ids())) == 1  # one event id for every attempt
        page.goto("/operators/side-effects?show=waiting")
        accessible(page)
        # Rotate the endpoint's secret: the new one is shown once, and signs a test event.
        follow(page, ".tabs >> text=Webhooks")
        endpoint_row = page.locator(f"tr[data-endpoint='{endpoint['id']}']")
        assert person in (endpoint_row.text_content() or "")
        accessible(page)
        fits(page)
        shot(watched, "operators-3-webhooks")
        confirm(page, endpoint_row.locator("button:has-text('Rotate secret')"), "Rotate the secret")
        page.wait_for_selector("#shown-once")
        secret = page.text_content("#secret") or ""
        assert secret.startswith("whsec_")
        assert secret != endpoint["secret"]
        accessible(page)
        fits(page)
        shot(watched, "operators-4-new-secret")
        follow(page, "text=Back to webhook endpoints")
        assert secret not in page.content()
        before = len(receiver.received)
        endpoint_row = page.locator(f"tr[data-endpoint='{endpoint['id']}']")
        follow(page, endpoint_row.locator("button:has-text('Send a test event')"))
        page.wait_for_selector("#flash")
        assert "took the test event (HTTP 200)" in (page.text_content("#flash") or "")
        test_event = receiver.received[before]
        event = Webhook(secret).verify(test_event.body, test_event.headers)
        assert event["type"] == "webhook.test"
        # Revoke the person's token: their token and their dashboard session stop working.
        theirs = page.context.browser.new_context(base_url=service["base"])
        their_page = theirs.new_page()
        their_page.goto("/sign-in")
        their_page.fill("#token", token)
        their_page.click("form button[type=submit]")
        their_page.wait_for_url("**/jobs")
        follow(page, ".tabs >> text=People")
        person_row = page.locator(f"tr[data-person='{person}']")
        assert "1 session" in (person_row.text_content() or "")
        confirm(page, person_row.locator("button:has-text('Revoke token')"), "Revoke the token")
        page.wait_for_selector("#flash")
        assert "token is revoked; their dashboard sessions ended" in (
            page.text_content("#flash") or ""
        )
        assert "revoked" in (page.locator(f"tr[data-person='{person}'] [data-field=token]")
                             .text_content() or "")  # fmt: skip
        accessible(page)
        fits(page)
        shot(watched, "operators-5-people")
        their_page.goto("/jobs")
        assert "/sign-in" in their_page.url
        theirs.close()
        refused = httpx.get(f"{service['base']}/api/exports",
                            headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert refused.status_code == 401
        # Everything the operator did is in the audit, newest first.
        follow(page, ".tabs >> text=Audit")
        actions = page.eval_on_selector_all(
            "#audit tbody tr[data-action]", "rows => rows.map(r => r.dataset.action)"
        )
        assert actions[:5] == [
            "revoke_token", "test_webhook_endpoint", "rotate_webhook_secret",
            "redrive_side_effect", "add_person",
        ]  # fmt: skip
        accessible(page)
        fits(page)
        shot(watched, "operators-6-audit")
        follow(page, ".tabs >> text=Workers")
        assert page.locator("#workers tbody tr[data-process]").count() >= 1
        assert "serve" in (page.text_content("#workers") or "")
        accessible(page)
        fits(page)
        shot(watched, "operators-7-workers")


def test_an_operator_cancels_several_exports_at_once(
    watched: Watched, service: dict[str, Any]
) -> None:
    page = watched.page
    ids = [
        api(service, "POST", "/api/exports", json={"saved_query": "slow"})["id"] for _ in range(3)
    ]
    try:
        sign_in(page, service, who="operator")
        page.goto("/jobs?q=slow")
        for job_id in ids:
            page.check(f"#tick-{job_id}")
        accessible(page)
        shot(watched, "operators-8-bulk-cancel")
        confirm(page, page.locator("#bulk-cancel-button"), "Cancel them")
        page.wait_for_selector("#flash")
        flash = page.text_content("#flash") or ""
        assert "3 exports are canceled" in flash
        for job_id in ids:
            assert api(service, "GET", f"/api/exports/{job_id}")["job"]["status"] == "canceled"
        page.goto("/operators/audit?action=cancel_job")
        assert page.locator("#audit tbody tr[data-action=cancel_job]").count() >= 3
    finally:
        demo = {"Authorization": f"Bearer {service['tokens']['demo']}"}
        for job_id in ids:
            httpx.post(f"{service['base']}/api/exports/{job_id}/cancel", headers=demo)


def test_a_user_schedules_orders_of_yesterday_every_day_at_eight_in_paris(
    viewport: str, service: dict[str, Any]
) -> None:
    with browsing(service, viewport, timezone_id=PARIS, locale="en-GB") as watched:
        page = watched.page
        sign_in(page, service)
        page.goto("/exports/new?saved_query=orders_by_day")
        page.click("#schedule-this summary")
        assert page.input_value("#schedule-time-zone") == PARIS  # the browser's own zone
        assert page.input_value("#schedule-cron") == "0 8 * * *"
        page.wait_for_function(
            "() => document.getElementById('schedule-description').textContent"
            ".includes('At 08:00 every day (Europe/Paris)')"
        )
        page.fill("#schedule-cron", "0 8 * * 1")  # said in words as it is typed, with how
        page.wait_for_function(  # close its firings come (a week less the hour clocks skip)
            "() => document.getElementById('schedule-description').textContent"
            ".includes('on Monday (Europe/Paris). Firings at least 167 hours apart; the "
            "shortest gap allowed is 1 minute.')"
        )
        page.fill("#schedule-cron", "* * * * * *")  # ...with the minimum period it breaks...
        page.wait_for_function(
            "() => document.getElementById('schedule-description').textContent"
            ".includes('the shortest gap allowed between two firings is 1 minute')"
        )
        page.fill("#schedule-cron", "0 8 * * *")  # ...and back to every day
        page.wait_for_function(
            "() => document.getElementById('schedule-description').textContent"
            ".includes('every day')"
        )
        page.select_option("#schedule-relative-day", "yesterday")
        accessible(page)
        fits(page)
        shot(watched, "schedules-1-schedule-this")
        page.click("#schedule-button")
        page.wait_for_url(re.compile(r".*/schedules/\d+$"))
        assert "At 08:00 every day (Europe/Paris)" in (page.text_content("#flash") or "")
        schedule_id = int(page.url.rsplit("/", 1)[1])
        computed = api(service, "GET", f"/api/schedules/{schedule_id}")
        assert computed["parameters"] == {"day": {"relative": "yesterday"}}
        wanted = [
            zoned_text(datetime.fromisoformat(t["at"]), PARIS) for t in computed["next_times"]
        ]
        shown = page.eval_on_selector_all("#next-times time", "ts => ts.map(t => t.textContent)")
        assert shown == wanted
        assert len(shown) == 5
        assert all(", 08:00 CE" in text for text in shown)  # CET or CEST, at eight
        assert page.locator("#next-times .muted").count() == 0  # the reader's zone is the same
        assert "At 08:00 every day (Europe/Paris)" in (page.text_content("#description") or "")
        accessible(page)
        fits(page)
        shot(watched, "schedules-2-schedule")
        # A recipient, added on the page: the operator, who has an address and may run it.
        subprocess.run([sys.executable, "-m", "reportexport", "users", "email", "operator",
                        "operator@example.com"], env=service["env"], check=True,
                       capture_output=True)  # fmt: skip
        page.fill("#recipient-person", "operator")
        page.click("#add-recipient-button")
        page.wait_for_selector("#recipients [data-recipient=operator]")
        assert "operator gets an e-mail each time an export of schedule" in (
            page.text_content("#flash") or ""
        )
        accessible(page)
        fits(page)
        shot(watched, "schedules-2b-recipient")
        # A chat channel an operator registered for this person's schedules, picked on the page.
        channel = f"#reports-{viewport}"
        subprocess.run([sys.executable, "-m", "reportexport", "chat", "add",
                        "https://hooks.slack.com/services/T0/B0/x", "--name", channel, "--owner",
                        "demo", "--schedules-only"],
                       env={**service["env"], "REPORTEXPORT_CHAT_HOSTS": "hooks.slack.com"},
                       check=True, capture_output=True)  # fmt: skip
        page.reload()
        page.select_option("#channel-choice", label=f"{channel} (hooks.slack.com, demo's)")
        page.click("#add-channel-button")
        page.wait_for_selector(f"#channels li:has-text('{channel}')")
        assert f"{channel} gets a message each time an export of schedule" in (
            page.text_content("#flash") or ""
        )
        accessible(page)
        fits(page)
        shot(watched, "schedules-2c-chat-channel")
        # An outside address, which an operator adds on the same page; the owner sees it.
        page.context.clear_cookies()
        sign_in(page, service, who="operator")
        page.goto(f"/schedules/{schedule_id}")
        page.fill("#address-input", f"partner-{viewport}@example.org")
        page.fill("#attach-input", "5000000")
        page.check("#gzip-input")
        page.click("#add-address-button")
        page.wait_for_selector(f"#addresses [data-address='partner-{viewport}@example.org']")
        assert "gets an e-mail each time an export of schedule" in (
            page.text_content("#flash") or ""
        )
        accessible(page)
        fits(page)
        shot(watched, "schedules-2d-outside-address")
        page.context.clear_cookies()
        sign_in(page, service)
        page.goto(f"/schedules/{schedule_id}")
        assert "the file attached up to 5,000,000 bytes after gzip" in (
            page.text_content("#addresses") or ""
        )
        assert page.locator("#add-address").count() == 0
        accessible(page)
        follow(page, "nav >> text=Schedules")
        row = page.locator(f"tr[data-schedule='{schedule_id}']")
        assert (row.locator("[data-field=next]").text_content() or "").strip() == wanted[0]
        accessible(page)
        fits(page)
        shot(watched, "schedules-3-list")
        # A firing the owner's cap refuses, made by a scheduler whose clock is two days on.
        blocker = api(service, "POST", "/api/exports", json={"saved_query": "slow"})["id"]
        try:
            refused_by_cap(service)
        finally:
            api(service, "POST", f"/api/exports/{blocker}/cancel")
        page.goto(f"/schedules/{schedule_id}")
        firing = page.locator("#firings tbody tr[data-refused=max_active]")
        assert firing.count() >= 1
        text = firing.first.text_content() or ""
        assert "None made: the owner's cap of unfinished exports." in text
        assert "at most 1 may be at once" in text
        accessible(page)
        fits(page)
        shot(watched, "schedules-4-refused-firing")


def refused_by_cap(service: dict[str, Any]) -> None:
    """Fire every due schedule as a scheduler would two days from now, with a cap of one
    unfinished export per person (the owner has one running)."""
    environ = {**service["env"], "REPORTEXPORT_MAX_ACTIVE_EXPORTS": "1"}
    runtime = Runtime(load_settings(environ=environ))
    try:
        later = datetime.now(UTC) + timedelta(days=2)
        scheduler = ScheduleService(
            schedules=runtime.database.schedules, exports=runtime.exports,
            catalog=runtime.catalog, process="test-scheduler", clock=lambda: later,
        )  # fmt: skip
        scheduler.fire_due()
    finally:
        runtime.close()
