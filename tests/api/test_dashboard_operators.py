"""The operators' pages and the schedules' pages over HTTP, as a browser without script uses
them: operators only, CSRF on every form, a confirmation page before each destructive action, a
secret or token shown once, revoking that ends a session, bulk cancel that says what it did,
"Schedule this" from the New export form, and a schedule's page with its next times and a
refused firing's reason."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from reportexport.core.records import NO_ENDPOINT_NOTE
from reportexport.objects import ObjectStore
from reportexport.services.exports import Acting, ExportService, Fairness
from reportexport.services.schedules import ScheduleService
from reportexport.store import Database, Outcome
from reportexport.web.dashboard.format import zoned_text
from tests.dashboard_session import Signed, sign_in
from tests.helpers import (
    API_QUERIES,
    DAILY,
    Clock,
    catalog_for,
    given_up,
    make_runner,
    runtime_for,
)

HTML = "text/html; charset=utf-8"


@pytest.fixture
def dash(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    catalog = catalog_for(sources_dir, None, {**API_QUERIES, "orders_of_day": DAILY})
    tokens = {
        name: jobs_db.users.add_user(name, role)[1]
        for name, role in (("alice", "user"), ("bob", "user"), ("olga", "operator"))
    }
    runtime = runtime_for(jobs_db, catalog, local_objects)
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "db": jobs_db, "runtime": runtime,
               "catalog": catalog, "objects": local_objects}  # fmt: skip


def signed(dash: Any, who: str) -> Signed:
    return sign_in(dash["client"], dash["tokens"][who])


def get(dash: Any, who: Signed, path: str) -> Any:
    return dash["client"].get(path, headers=who.headers, follow_redirects=False)


def post(dash: Any, who: Signed, path: str, **fields: str) -> Any:
    return dash["client"].post(
        path, data=who.form(**fields), headers=who.headers, follow_redirects=False
    )


def flash_of(answer: Any) -> str:
    """The flash message a redirect carries (what the next page shows once)."""
    import base64
    import json

    cookie = answer.cookies.get("rx_flash", "")
    return str(json.loads(base64.urlsafe_b64decode(cookie.encode()))["text"]) if cookie else ""


OPERATOR_PAGES = (
    "/operators", "/operators/side-effects", "/operators/side-effects?show=waiting",
    "/operators/webhooks", "/operators/people", "/operators/groups", "/operators/workers",
    "/operators/audit",
)  # fmt: skip


def test_the_operators_pages_are_for_operators_only(dash: Any) -> None:
    alice, olga = signed(dash, "alice"), signed(dash, "olga")
    for path in OPERATOR_PAGES:
        refused = get(dash, alice, path)
        assert (refused.status_code, refused.headers["content-type"]) == (403, HTML), path
        assert "For operators only" in refused.text
        shown = get(dash, olga, path)
        assert shown.status_code == 200, (path, shown.text[:500])
        assert 'aria-label="Operators\' pages"' in unescape(shown.text)
    assert 'href="/operators"' not in get(dash, alice, "/jobs").text
    assert 'href="/operators"' in get(dash, olga, "/jobs").text
    assert get(dash, alice, "/schedules").status_code == 200


def test_a_given_up_side_effect_is_re_driven_after_a_question(dash: Any) -> None:
    olga = signed(dash, "olga")
    job_id = given_up(dash)
    listed = get(dash, olga, "/operators/side-effects")
    assert f'data-effect="{job_id}/emit_failed_webhook"' in listed.text
    assert "HTTP 503 from the receiver" in listed.text
    path = f"/operators/side-effects/{job_id}/emit_failed_webhook/redrive"
    forged = dash["client"].post(path, data={"confirmed": "yes"}, headers=olga.headers)
    assert forged.status_code == 403
    assert "This form has expired" in forged.text
    asked = post(dash, olga, path, back="/operators/side-effects")
    assert asked.status_code == 200
    assert "Re-drive emit_failed_webhook of export" in unescape(asked.text)
    done = post(dash, olga, path, confirmed="yes", back="/operators/side-effects")
    assert (done.status_code, done.headers["location"]) == (303, "/operators/side-effects")
    assert "is due again" in flash_of(done)
    assert f'data-effect="{job_id}/' not in get(dash, olga, "/operators/side-effects").text
    waiting = get(dash, olga, "/operators/side-effects?show=waiting").text
    assert f'data-effect="{job_id}/emit_failed_webhook"' in waiting
    again = post(dash, olga, path, confirmed="yes", back="https://elsewhere.example/")
    assert again.headers["location"] == "/operators/side-effects"  # never another site
    assert "Nothing was re-driven" in flash_of(again)
    audit = get(dash, olga, "/operators/audit").text
    assert 'data-action="redrive_side_effect"' in audit
    assert audit.count('data-action="redrive_side_effect"') == 1


def test_a_rotated_secret_is_shown_once_and_audited(dash: Any) -> None:
    olga = signed(dash, "olga")
    endpoint = dash["db"].endpoints.add_webhook_endpoint(
        owner="alice", url="https://hooks.example.com/in", secret="whsec_" + "a" * 32
    )
    path = f"/operators/webhooks/{endpoint.id}/rotate"
    assert "Rotate the secret" in post(dash, olga, path).text
    shown = post(dash, olga, path, confirmed="yes")
    assert shown.status_code == 200
    assert shown.headers["cache-control"] == "no-store"
    new_secret = dash["db"].endpoints.get_webhook_endpoint(endpoint.id).secret
    assert new_secret != endpoint.secret
    assert f'<code id="secret">{new_secret}</code>' in shown.text
    assert "signs events too until" in shown.text
    listing = get(dash, olga, "/operators/webhooks").text
    assert new_secret not in listing
    assert endpoint.secret not in listing
    assert "rotated; the previous one signs until" in listing
    disabled = post(dash, olga, f"/operators/webhooks/{endpoint.id}/disable", confirmed="yes")
    assert "is disabled" in flash_of(disabled)
    actions = re.findall(r'data-action="([a-z_]+)"', get(dash, olga, "/operators/audit").text)
    assert actions == ["disable_webhook_endpoint", "rotate_webhook_secret"]


def test_a_test_event_for_an_endpoint_disabled_since_the_page_was_loaded_is_refused(
    dash: Any,
) -> None:
    """Send a test event pressed on a page loaded before the endpoint was disabled (in another
    tab, by another operator): nothing is sent, and a 409 page says it is disabled and why."""
    olga = signed(dash, "olga")
    endpoint = dash["db"].endpoints.add_webhook_endpoint(
        owner="alice", url="https://hooks.example.com/in", secret="whsec_" + "a" * 32
    )
    listing = get(dash, olga, "/operators/webhooks").text
    assert f'action="/operators/webhooks/{endpoint.id}/test"' in listing
    post(dash, olga, f"/operators/webhooks/{endpoint.id}/disable", confirmed="yes")
    refused = post(dash, olga, f"/operators/webhooks/{endpoint.id}/test")
    assert (refused.status_code, refused.headers["content-type"]) == (409, HTML)
    said = unescape(refused.text)
    assert "Endpoint disabled" in said
    assert (
        f"No test event was sent: webhook endpoint {endpoint.id} is disabled (removed by olga)"
        in said
    )
    assert 'href="/operators/webhooks"' in refused.text
    actions = re.findall(r'data-action="([a-z_]+)"', get(dash, olga, "/operators/audit").text)
    assert actions == ["disable_webhook_endpoint"]


def test_an_endpoint_added_from_the_page_shows_its_secret_once(dash: Any) -> None:
    olga = signed(dash, "olga")
    refused = post(dash, olga, "/operators/webhooks", url="ftp://x", receiver="person",
                   owner="alice")  # fmt: skip
    assert refused.status_code == 422
    assert 'id="add-problem"' in refused.text
    assert 'aria-invalid="true"' in refused.text
    added = post(dash, olga, "/operators/webhooks", url="https://hooks.example.com/all",
                 receiver="everyone")  # fmt: skip
    assert added.status_code == 200
    assert "every event" in added.text
    secret = re.search(r'<code id="secret">(whsec_[^<]+)</code>', added.text)
    assert secret is not None
    assert secret.group(1) not in get(dash, olga, "/operators/webhooks").text


def test_the_webhook_form_does_what_it_says_about_whose_events(dash: Any) -> None:
    """The Person field starts at the operator's own name, as its hint says; emptied, with
    "one person" chosen, it is a question (422), never an endpoint for the operator nor the
    global one."""
    olga = signed(dash, "olga")
    shown = get(dash, olga, "/operators/webhooks").text
    assert re.search(r'<input id="endpoint-owner" name="owner" value="olga"', shown)
    assert "leave empty for the global endpoint" not in shown
    url = "https://hooks.example.com/exports"
    emptied = post(dash, olga, "/operators/webhooks", url=url, receiver="person", owner="")
    assert emptied.status_code == 422
    assert "name the person whose exports' events it receives" in unescape(emptied.text)
    assert re.search(r'id="endpoint-owner"[^>]*aria-invalid="true"', emptied.text)
    assert dash["db"].endpoints.list_webhook_endpoints(None) == []
    unknown = post(dash, olga, "/operators/webhooks", url=url, receiver="nobody", owner="olga")
    assert unknown.status_code == 422
    assert re.search(r'id="receiver-person"[^>]*aria-invalid="true"', unknown.text)
    mine = post(dash, olga, "/operators/webhooks", url=url, receiver="person", owner="olga")
    alices = post(dash, olga, "/operators/webhooks", url=url, receiver="person", owner="alice")
    everyone = post(dash, olga, "/operators/webhooks", url=url, receiver="everyone", owner="")
    assert [a.status_code for a in (mine, alices, everyone)] == [200, 200, 200]
    owners = sorted(str(e.owner) for e in dash["db"].endpoints.list_webhook_endpoints(None))
    assert owners == ["None", "alice", "olga"]


def test_bulk_cancel_names_every_ticked_export_it_could_not_cancel(dash: Any) -> None:
    """Forty ticked at once, of which most cannot be canceled for three reasons: the message
    counts and names them all, whole (it used to be cut where the cookie's limit fell)."""
    olga = signed(dash, "olga")
    exports, db = dash["runtime"].exports, dash["db"]
    alice = Acting(name="alice")

    def ten() -> list[int]:  # a person's limit of unfinished exports
        return [exports.create(alice, "products", {"category": "toys"}).job.id for _ in range(10)]

    stopped = ten()
    for job_id in stopped:
        exports.cancel(alice, job_id)
    failed = ten()
    for claim in db.queue.claim_jobs("w1", limit=10, lease_seconds=60):
        db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    made = stopped + failed + ten()
    missing = [made[-1] + 1000 + n for n in range(5)]
    ticked = {"job": [str(n) for n in made + missing], "csrf-token": olga.csrf, "back": "/jobs",
              "confirmed": "yes"}  # fmt: skip
    done = dash["client"].post("/jobs/cancel", data=ticked, headers=olga.headers,
                               follow_redirects=False)  # fmt: skip
    words = flash_of(done)
    assert "10 exports are canceled" in words
    assert "25 exports could not be:" in words
    assert ": canceled already" in words
    assert ": failed already" in words
    assert f"#{missing[0]}, #{missing[1]}, #{missing[2]}, #{missing[3]} and 1 more: no such " in (
        words
    )
    assert words.endswith("no such export.") or words.endswith("already.")


def test_an_announcement_with_no_endpoint_is_completed_not_a_problem(dash: Any) -> None:
    """An export's webhook effect that had nowhere to go says so plainly beside "completed";
    its Last problem stays empty."""
    db = dash["db"]
    job = dash["runtime"].exports.create(Acting(name="alice"), "products", {"category": "toys"})
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    for claimed in db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now):
        db.effects.complete_side_effect(claimed, now=now, note=NO_ENDPOINT_NOTE)
    page = get(dash, signed(dash, "alice"), f"/jobs/{job.job.id}").text
    row = re.search(r"<code>emit_failed_webhook</code>.*?</tr>", page, re.S)
    assert row is not None
    assert "with nothing to deliver: no webhook endpoint receives these events" in row.group(0)
    last_problem = re.search(r'data-label="Last problem">(.*?)</td>', row.group(0), re.S)
    assert last_problem is not None
    assert last_problem.group(1) == ""


def test_the_job_page_shows_each_destination_of_its_announcement(dash: Any) -> None:
    """One row per destination, fixed when the export ended: its attempts, when it was
    delivered or given up, and its last problem, with the address shown as text."""
    db = dash["db"]
    endpoint = db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    alice = db.users.user_by_name("alice")
    db.users.set_email(alice.id, "alice@example.com")
    job = dash["runtime"].exports.create(
        Acting(name="alice"), "products", {"category": "toys"}, notify=True
    )
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    (claimed,) = db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now)
    hook, mail = db.deliveries.job_deliveries(job.job.id)
    db.deliveries.record_delivery_attempt(
        claimed.token, mail.id, now=now, status=550, problem="SMTP 550: <no> such mailbox",
        delivered=False, next_attempt_at=now, give_up=True,
    )  # fmt: skip
    page = get(dash, signed(dash, "alice"), f"/jobs/{job.job.id}").text
    table = re.search(r'<table id="deliveries".*?</table>', page, re.S)
    assert table is not None
    rows = re.findall(r"<tr><td data-label=\"Effect\">.*?</tr>", table.group(0), re.S)
    assert len(rows) == 2
    assert f"webhook endpoint {endpoint.id}" in rows[0]
    assert "alice@example.com" in rows[1]
    assert "SMTP 550: &lt;no&gt; such mailbox" in rows[1]
    assert hook.attempts == 0


def test_an_announcement_complete_with_a_disabled_destination_says_which_gave_up_and_why(
    dash: Any,
) -> None:
    """The announcement is complete (no destination is left to try), but its row does not
    stop at "completed": it names the destination it gave up on and why (the endpoint was
    disabled, by whom), and so does that destination's own row."""
    db, runtime = dash["db"], dash["runtime"]
    endpoint = runtime.webhooks.add(Acting(name="alice"), "https://hooks.example.com/in")
    job = runtime.exports.create(Acting(name="alice"), "products", {"category": "toys"})
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    runtime.webhooks.remove(Acting(name="olga", role="operator"), endpoint.id)
    with httpx.Client(timeout=2) as http:
        make_runner(db, dash["objects"], http, Clock()).run_once()
    found = db.jobs.get_job(job.job.id)
    assert found is not None
    (effect,) = found.side_effects
    assert effect.completed_at is not None
    page = unescape(get(dash, signed(dash, "alice"), f"/jobs/{job.job.id}").text)
    row = re.search(r"<code>emit_failed_webhook</code>.*?</tr>", page, re.S)
    assert row is not None
    said = (
        f"complete, but gave up on <bdi>webhook endpoint {endpoint.id}: disabled (removed by olga)"
    )
    assert said in row.group(0)
    table = re.search(r'<table id="deliveries".*?</table>', page, re.S)
    assert table is not None
    assert f"webhook endpoint {endpoint.id} <span" in table.group(0)
    assert "disabled (removed by olga)" in table.group(0)
    (cells,) = [r.count("<td ") for r in re.findall(r"<tr><td .*?</tr>", table.group(0), re.S)]
    assert cells == table.group(0).count('<th scope="col"')  # one destination cell, no more


def test_the_job_page_names_a_chat_channel_destination(dash: Any) -> None:
    db = dash["db"]
    channel = db.channels.add_chat_channel(owner=None, name="#exports", url="https://c.example/a")
    job = dash["runtime"].exports.create(Acting(name="alice"), "products", {"category": "toys"})
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    page = get(dash, signed(dash, "alice"), f"/jobs/{job.job.id}").text
    table = re.search(r'<table id="deliveries".*?</table>', page, re.S)
    assert table is not None
    (row,) = re.findall(r"<tr><td data-label=\"Effect\">.*?</tr>", table.group(0), re.S)
    assert f'data-label="Destination">chat channel {channel.id}</td>' in row
    assert row.count("<td ") == table.group(0).count('<th scope="col"') == 7


def test_revoking_a_token_from_the_page_ends_that_persons_session(dash: Any) -> None:
    olga, bob = signed(dash, "olga"), signed(dash, "bob")
    assert get(dash, bob, "/jobs").status_code == 200
    listed = get(dash, olga, "/operators/people").text
    assert re.search(r'data-person="bob".*?1 session', listed, re.S)
    done = post(dash, olga, "/operators/people/bob/revoke-token", confirmed="yes")
    assert "bob's token is revoked; their dashboard sessions ended" in flash_of(done)
    assert get(dash, bob, "/jobs").headers["location"].startswith("/sign-in")
    api = dash["client"].get(
        "/api/exports", headers={"Authorization": f"Bearer {dash['tokens']['bob']}"}
    )
    assert api.status_code == 401
    assert "revoked" in get(dash, olga, "/operators/people").text
    mine = post(dash, olga, "/operators/people/olga/revoke", confirmed="yes")
    assert "cannot revoke your own token" in flash_of(mine)
    token = post(dash, olga, "/operators/people/bob/token", confirmed="yes")
    fresh = re.search(r'<code id="secret">(rxp_[^<]+)</code>', token.text)
    assert fresh is not None
    assert sign_in(dash["client"], fresh.group(1)).session_id


def test_a_person_added_from_the_page_gets_a_token_shown_once(dash: Any) -> None:
    olga = signed(dash, "olga")
    bad = post(dash, olga, "/operators/people", name="no spaces", role="user")
    assert bad.status_code == 422
    made = post(dash, olga, "/operators/people", name="carol", role="user")
    token = re.search(r'<code id="secret">(rxp_[^<]+)</code>', made.text)
    assert token is not None
    assert token.group(1) not in get(dash, olga, "/operators/people").text
    again = post(dash, olga, "/operators/people", name="carol", role="user")
    assert again.status_code == 409
    assert "already exists" in again.text
    assert re.findall(r'data-action="([a-z_]+)"', get(dash, olga, "/operators/audit").text) == [
        "add_person"
    ]


def test_bulk_cancel_asks_then_says_what_it_canceled_and_what_it_could_not(dash: Any) -> None:
    olga, alice = signed(dash, "olga"), signed(dash, "alice")
    exports = dash["runtime"].exports
    made = [
        exports.create(Acting(name="alice"), "products", {"category": "toys"}).job.id
        for _ in range(3)
    ]
    exports.cancel(Acting(name="alice"), made[2])
    listing = get(dash, olga, "/jobs").text
    assert f'id="tick-{made[0]}"' in listing
    assert f'id="tick-{made[2]}"' not in listing  # canceled: nothing to tick
    assert 'id="bulk-cancel"' not in get(dash, alice, "/jobs").text
    ticked: dict[str, Any] = {
        "job": [str(n) for n in made],
        "csrf-token": olga.csrf,
        "back": "/jobs",
    }
    client = dash["client"]
    asked = client.post("/jobs/cancel", data=ticked, headers=olga.headers)
    assert asked.status_code == 200
    assert f"#{made[0]}, #{made[1]}, #{made[2]}" in asked.text
    done = client.post("/jobs/cancel", data={**ticked, "confirmed": "yes"}, headers=olga.headers,
                       follow_redirects=False)  # fmt: skip
    assert done.headers["location"] == "/jobs"
    words = flash_of(done)
    assert f"2 exports are canceled (#{made[0]}, #{made[1]})" in words
    assert f"1 export could not be: #{made[2]}: canceled already" in words
    for job_id in made[:2]:
        history = exports.job(Acting(name="olga", role="operator"), job_id).detail.history
        assert [(h.to_status, h.person) for h in history] == [("canceled", "olga")]


def schedule_form(**overrides: str) -> dict[str, str]:
    return {
        "saved-query": "orders_of_day",
        "form-key": "k1",
        "day": "",
        "schedule-cron": "0 8 * * *",
        "schedule-time-zone": "Europe/Paris",
        "schedule-relative-day": "yesterday",
        "schedule-last-day": "",
        **overrides,
    }


def test_schedule_this_from_the_new_export_form(dash: Any) -> None:
    alice = signed(dash, "alice")
    form = get(dash, alice, "/exports/new?saved_query=orders_of_day").text
    assert 'id="schedule-this"' in form
    assert 'formaction="/schedules/new"' in form
    assert '<option value="yesterday">yesterday</option>' in form
    assert '<option value="Europe/Paris">Europe/Paris</option>' in form
    wrong = post(dash, alice, "/schedules/new", **schedule_form(**{"schedule-cron": "0 8 * *"}))
    assert wrong.status_code == 422
    assert 'id="why-schedule-cron"' in wrong.text
    assert '<details class="schedule-this" id="schedule-this" open>' in wrong.text
    assert '<option value="yesterday" selected>yesterday</option>' in wrong.text
    for zone in ("localtime", "Factory", "europe/paris"):  # not IANA names of places
        refused = post(
            dash, alice, "/schedules/new", **schedule_form(**{"schedule-time-zone": zone})
        )
        assert refused.status_code == 422
        assert 'id="why-schedule-time-zone"' in refused.text
    assert "did you mean Europe/Paris?" in refused.text
    made = post(dash, alice, "/schedules/new", **schedule_form())
    assert made.status_code == 303, made.text[:800]
    assert "At 08:00 every day (Europe/Paris)" in flash_of(made)
    shown = get(dash, alice, made.headers["location"])
    view = dash["runtime"].schedules.show(Acting(name="alice"), int(made.headers["location"][11:]))
    assert dict(view.schedule.parameters) == {"day": {"relative": "yesterday"}}
    times = re.findall(r'<time datetime="[^"]+" data-zone="Europe/Paris"[^>]*>([^<]+)</time>',
                       shown.text.split('id="next-times"')[1].split("</ol>")[0])  # fmt: skip
    assert times == [zoned_text(t, "Europe/Paris") for t in view.next_times]
    assert len(times) == 5
    assert all(", 08:00 CE" in t for t in times)
    preview = dash["client"].get("/schedules/preview?cron=0+8+*+*+1&time_zone=UTC",
                                 headers=alice.headers).json()  # fmt: skip
    assert preview["description"] == "At 08:00 on Monday (UTC)"
    assert len(preview["next_times"]) == 5
    assert preview["period"] == (
        "Firings at least 7 days apart; the shortest gap allowed is 1 minute."
    )
    bad = dash["client"].get("/schedules/preview?cron=nope&time_zone=UTC", headers=alice.headers)
    assert (bad.status_code, bad.json()["field"]) == (422, "cron")
    often = dash["client"].get("/schedules/preview?cron=*+*+*+*+*+*&time_zone=UTC",
                               headers=alice.headers)  # fmt: skip
    assert (often.status_code, often.json()["field"]) == (422, "cron")
    assert "the shortest gap allowed between two firings is 1 minute" in often.json()["problem"]


def test_a_double_submitted_schedule_form_makes_one_schedule(dash: Any) -> None:
    alice = signed(dash, "alice")
    made = post(dash, alice, "/schedules/new", **schedule_form())
    again = post(dash, alice, "/schedules/new", **schedule_form())
    assert (made.status_code, again.status_code) == (303, 303)
    assert again.headers["location"] == made.headers["location"]
    number = made.headers["location"].rsplit("/", 1)[1]
    assert flash_of(again) == f"Schedule #{number} was already made by this form."
    assert len(dash["runtime"].schedules.list(Acting(name="alice"))) == 1
    other = post(dash, alice, "/schedules/new", **schedule_form(**{"form-key": "k2"}))
    assert other.headers["location"] != made.headers["location"]  # a new form: a new schedule


def test_a_firing_refused_by_the_owners_cap_is_shown_with_its_reason(dash: Any) -> None:
    alice, bob = signed(dash, "alice"), signed(dash, "bob")
    runtime = dash["runtime"]
    made = post(dash, alice, "/schedules/new", **schedule_form())
    schedule_id = int(made.headers["location"].rsplit("/", 1)[1])
    runtime.exports.create(Acting(name="alice"), "products", {"category": "toys"})  # unfinished
    db = dash["db"]
    capped = ExportService(
        jobs=db.jobs, effects=db.effects, downloads=db.jobs, catalog=dash["catalog"],
        objects=dash["objects"], link_secret=b"secret", firings=db.schedules,
        fairness=Fairness(max_active=1, max_per_window=100),
    )  # fmt: skip
    tomorrow = datetime.now(UTC) + timedelta(days=2)
    ScheduleService(schedules=db.schedules, exports=capped, catalog=dash["catalog"],
                    clock=lambda: tomorrow).fire_due()  # fmt: skip
    page = get(dash, alice, f"/schedules/{schedule_id}").text
    assert 'data-refused="max_active"' in page
    assert "None made: the owner&#39;s cap of unfinished exports." in page
    assert "at most 1 may be at once" in page
    assert get(dash, bob, f"/schedules/{schedule_id}").status_code == 404
    olga = signed(dash, "olga")
    assert f'href="/schedules/{schedule_id}"' in get(dash, olga, "/schedules").text


def test_run_now_makes_an_export_whose_page_leads_back_to_its_schedule(dash: Any) -> None:
    alice = signed(dash, "alice")
    made = post(dash, alice, "/schedules/new", **schedule_form())
    here = made.headers["location"]
    run = post(dash, alice, f"{here}/run", key="once")
    assert run.status_code == 303
    job_page = get(dash, alice, run.headers["location"]).text
    assert f'made by <a href="{here}">schedule #' in job_page
    assert re.search(r'id="created-reason">created by <a href="/schedules/\d+">', job_page)
    assert "(run now)" in job_page
    twice = post(dash, alice, f"{here}/run", key="once")
    assert twice.headers["location"] == run.headers["location"]
    assert "already started" in flash_of(twice)
    paused = post(dash, alice, f"{here}/pause")
    assert "is paused" in flash_of(paused)
    assert 'id="resume"' in get(dash, alice, here).text
    assert "fires again" in flash_of(post(dash, alice, f"{here}/resume"))
    assert "Delete schedule #" in post(dash, alice, f"{here}/delete").text
    gone = post(dash, alice, f"{here}/delete", confirmed="yes")
    assert gone.headers["location"] == "/schedules"
    assert get(dash, alice, here).status_code == 404


def test_a_scheduled_exports_timeline_shows_its_firing_and_the_times_it_missed(dash: Any) -> None:
    alice = signed(dash, "alice")
    made = post(dash, alice, "/schedules/new", **schedule_form(**{"schedule-relative-day": ""},
                                                               day="2024-03-05"))  # fmt: skip
    schedule_id = int(made.headers["location"].rsplit("/", 1)[1])
    db, runtime = dash["db"], dash["runtime"]
    three_days_on = datetime.now(UTC) + timedelta(days=3)
    ScheduleService(schedules=db.schedules, exports=runtime.exports, catalog=dash["catalog"],
                    clock=lambda: three_days_on).fire_due()  # fmt: skip
    (firing,) = runtime.schedules.show(Acting(name="alice"), schedule_id).firings
    assert firing.job_id is not None
    assert firing.missed == 2
    page = get(dash, alice, f"/jobs/{firing.job_id}").text
    reason = page.split('id="created-reason">')[1].split("</td>")[0]
    assert f'created by <a href="/schedules/{schedule_id}">schedule #{schedule_id}</a>' in reason
    assert "firing for <time" in reason
    assert "2 earlier times missed" in reason
    history = runtime.exports.job(Acting(name="alice"), firing.job_id).detail.history
    assert history == ()  # creation is not a status change: no history row
    shown = get(dash, alice, f"/schedules/{schedule_id}").text
    assert f'href="/jobs/{firing.job_id}">export #{firing.job_id}</a>' in shown
    assert "2 earlier times skipped" in shown
