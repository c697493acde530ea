"""Announcements by e-mail through a real SMTP server on loopback (aiosmtpd): the messages are
received and parsed; a refused address is given up alone; a copy sent again after a runner died
before recording the first carries the same Message-ID; values arrive inert."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import httpx
import pytest

from reportexport.core.links import UnsubscribeLink, address_digest, verify_unsubscribe
from reportexport.mail.message import Announcement, build_message, one_line, subject
from reportexport.mail.smtp import SmtpServer
from reportexport.objects import ObjectStore
from reportexport.runners.effects.runner import EffectsRunner
from reportexport.store import Database
from reportexport.webhooks.signing import new_secret
from tests.effects.receiver import Receiver
from tests.effects.smtp_server import Mailbox, running_mailbox
from tests.helpers import Clock, failed_job, make_runner, succeeded_job

ALICE = "alice@example.com"
ORDERS = {"title": "Orders of one day", "notify": True}
DAY = {"day": "2026-12-02"}


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with running_mailbox(Mailbox()) as running:
        yield running


@pytest.fixture
def alice(db: Database) -> str:
    person, _ = db.users.add_user("alice", "user")
    db.users.set_email(person.id, ALICE)
    return ALICE


def mail_runner(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    **settings: Any,
) -> EffectsRunner:  # fmt: skip
    runner = make_runner(db, objects, http, clock, **settings)
    runner.context.mail = SmtpServer(
        host=mailbox.host, port=mailbox.port, security="none", user="", password="",
        sender="reports@example.com", timeout_seconds=10,
    )  # fmt: skip
    return runner


def parts(message: EmailMessage) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",))
    markup = message.get_body(preferencelist=("html",))
    assert text is not None
    assert markup is not None
    return str(text.get_content()), str(markup.get_content())


def test_an_export_that_ends_mails_its_owner_a_text_and_an_html_part(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    job_id = succeeded_job(db, objects, options=ORDERS, parameters=DAY)
    assert mail_runner(db, objects, http, clock, mailbox).run_once() == 2
    (message,) = mailbox.messages_to(alice)
    assert message["Subject"] == "Orders of one day — 2026-12-02 — ready"
    assert (message["From"], message["To"]) == ("reports@example.com", alice)
    assert message["Message-ID"].startswith(f"<reportexport.{job_id}.emit_done_webhook.")
    assert message["Message-ID"].endswith("@example.com>")
    assert message["Auto-Submitted"] == "auto-generated"
    text, markup = parts(message)
    assert "Your export Orders of one day is ready." in text
    assert "day: 2026-12-02" in text
    assert "rows: 1" in text
    assert "file: orders.csv" in text
    assert f"http://127.0.0.1:8000/jobs/{job_id}" in text
    assert f'<a href="http://127.0.0.1:8000/jobs/{job_id}">' in markup
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.address, delivery.attempts, delivery.last_status) == (alice, 1, 250)
    assert delivery.delivered_at is not None
    effects = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}  # type: ignore[arg-type]
    assert effects["emit_done_webhook"].completed_at is not None


def test_a_failed_export_mails_the_reason(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    failed_job(db, options=ORDERS, parameters=DAY)
    mail_runner(db, objects, http, clock, mailbox).run_once()
    (message,) = mailbox.messages_to(alice)
    assert message["Subject"] == "Orders of one day — 2026-12-02 — failed"
    text, _ = parts(message)
    assert "did not succeed" in text
    assert "reason: column x does not exist" in text


def test_a_refused_address_is_given_up_alone_while_the_other_destinations_are_delivered(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    receiver: Receiver, alice: str,
) -> None:  # fmt: skip
    """A 5xx at RCPT is for good: that address is given up at its first attempt, the webhook
    endpoint gets its event, and the side effect shows the given-up address to operators."""
    endpoint = db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url, secret=new_secret()
    )
    mailbox.refused.add(alice)
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = mail_runner(db, objects, http, clock, mailbox)
    assert runner.run_once() == 1
    hook, mail = db.deliveries.job_deliveries(job_id)
    assert (hook.endpoint_id, hook.delivered_at is not None) == (endpoint.id, True)
    assert (mail.address, mail.attempts, mail.last_status) == (alice, 1, 550)
    assert mail.given_up_at is not None
    assert mail.last_error == "SMTP 550: 5.1.1 no such mailbox here"
    assert mailbox.received == []
    assert len(receiver.received) == 1
    row = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}["emit_failed_webhook"]  # type: ignore[arg-type]
    assert row.given_up_at is not None
    assert row.last_error == f"given up: {alice}: SMTP 550: 5.1.1 no such mailbox here"
    clock.advance(24 * 3600)
    assert runner.run_once() == 0  # given up: not tried again

    mailbox.refused.clear()  # the mailbox exists now: an operator re-drives that address alone
    assert db.deliveries.redrive_delivery(mail.id, now=clock())
    assert runner.run_once() == 1
    assert len(mailbox.messages_to(alice)) == 1
    assert len(receiver.received) == 1


def test_a_server_that_does_not_answer_costs_an_attempt_and_is_tried_again(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = mail_runner(db, objects, http, clock, mailbox)
    up = runner.context.mail
    assert up is not None
    with running_mailbox(Mailbox()) as gone:  # a port nobody listens on once it stops
        port = gone.port
    runner.context.mail = SmtpServer(**{**up.__dict__, "port": port})
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.waiting) == (1, True)
    assert "ConnectionRefusedError" in (delivery.last_error or "")
    runner.context.mail = up
    clock.advance(3600)
    assert runner.run_once() == 1
    assert len(mailbox.messages_to(alice)) == 1


def test_a_copy_sent_again_after_a_runner_died_before_recording_has_the_same_message_id(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Delivery is at least once: the server accepted the message, the runner died before it
    wrote that down; the next runner sends it again, recognisably the same message."""

    class Killed(BaseException):
        """The process ends here: nothing after this line runs."""

    job_id = succeeded_job(db, objects, options=ORDERS, parameters=DAY)
    first = mail_runner(db, objects, http, clock, mailbox, claim_seconds=60)

    def die(*args: object, **kwargs: object) -> bool:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(db.deliveries, "record_delivery_attempt", die)
        with pytest.raises(Killed):
            first.run_once()
    assert len(mailbox.messages_to(alice)) == 1
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.delivered_at) == (0, None)  # nothing was recorded

    successor = mail_runner(db, objects, http, clock, mailbox, runner_id="successor")
    assert successor.run_once() == 0  # the dead runner's claim holds
    clock.advance(61)
    assert successor.run_once() == 1
    copies = mailbox.messages_to(alice)
    assert len(copies) == 2
    assert copies[0]["Message-ID"] == copies[1]["Message-ID"]
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.delivered_at is not None) == (1, True)


def test_values_arrive_inert_in_headers_and_html(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """A parameter value with a newline and a header cannot add a header or a recipient; HTML
    in a title or a value is shown as text."""
    hostile = {"day": "2026-12-02\r\nBcc: eve@example.com\r\n\r\n<script>alert(1)</script>"}
    options = {"title": "<b>Orders</b> & more", "notify": True}
    failed_job(db, options=options, parameters=hostile)
    mail_runner(db, objects, http, clock, mailbox).run_once()
    ((to, message),) = mailbox.received
    assert to == [alice]
    assert message["Bcc"] is None
    assert "\n" not in message["Subject"]
    assert "\r" not in message["Subject"]
    assert message["Subject"].startswith("<b>Orders</b> & more — 2026-12-02 Bcc: eve@")
    _, markup = parts(message)
    assert "<script>" not in markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert "<b>Orders</b>" not in markup
    assert "&lt;b&gt;Orders&lt;/b&gt; &amp; more" in markup


def test_without_an_smtp_server_an_address_is_given_up_at_once_and_shown_to_operators(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """No `smtp_host`: the address is given up at its first attempt with the reason in words,
    listed with the other given-up destinations, and not tried again; once sending is set up,
    an operator's re-drive delivers it."""
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = make_runner(db, objects, http, clock)
    assert runner.context.mail is None
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.given_up_at is not None) == (1, True)
    assert delivery.last_error == "no SMTP server is configured (smtp_host)"
    assert [d.id for d in db.deliveries.given_up_deliveries()] == [delivery.id]
    row = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}["emit_failed_webhook"]  # type: ignore[arg-type]
    assert row.given_up_at is not None
    assert row.last_error == f"given up: {alice}: no SMTP server is configured (smtp_host)"
    clock.advance(24 * 3600)
    assert runner.run_once() == 0

    configured = mail_runner(db, objects, http, clock, mailbox)
    assert db.deliveries.redrive_delivery(delivery.id, now=clock())
    assert configured.run_once() == 1
    assert len(mailbox.messages_to(alice)) == 1


def test_an_address_outside_email_domains_is_given_up_at_once_and_nothing_is_sent(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """An address set before `email_domains` (or given by a company sign-in) in a domain the
    setting leaves out is refused at sending: given up alone, with the reason in words."""
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.context.email_domains = ("corp.example",)
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.given_up_at is not None) == (1, True)
    assert delivery.last_error == (
        "e-mail goes only to corp.example (email_domains), not to 'example.com'"
    )
    assert mailbox.received == []

    runner.context.email_domains = ("corp.example", "example.com")
    assert db.deliveries.redrive_delivery(delivery.id, now=clock())
    assert runner.run_once() == 1
    assert len(mailbox.messages_to(alice)) == 1


def test_one_message_id_per_announcement_and_address() -> None:
    made = Announcement(
        job_id=7,
        effect="emit_done_webhook",
        succeeded=True,
        title="Orders of one day",
        parameters=DAY,
        job_url="http://x/jobs/7",
    )
    now = datetime.now(UTC)

    def mail(to: str) -> EmailMessage:
        return build_message(made, sender="reports@example.com", recipient=to, sent_at=now)

    assert mail(ALICE)["Message-ID"] == mail(ALICE)["Message-ID"]
    assert mail(ALICE)["Message-ID"] != mail("bob@example.com")["Message-ID"]
    assert subject(made) == "Orders of one day — 2026-12-02 — ready"
    assert one_line("a\u2028b\x85c\td") == "a b c d"


def test_an_address_that_is_not_one_plain_mailbox_is_refused_before_any_smtp(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox
) -> None:
    """An address from elsewhere (an identity provider's claim) that could end an SMTP command
    or a header is given up alone, and nothing is sent."""
    person, _ = db.users.add_user("alice", "user")
    db.users.set_email(person.id, "alice@example.com\r\nRCPT TO:<eve@example.com>")
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    mail_runner(db, objects, http, clock, mailbox).run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.given_up_at is not None) == (1, True)
    assert (delivery.last_error or "").startswith("not one plain mailbox: ")
    assert mailbox.received == []


def test_starttls_asked_of_a_server_without_it_sends_nothing_in_clear(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """With `smtp_security = starttls`, a server that does not offer STARTTLS gets no message
    (a downgrade is not followed); the address waits and is tried again."""
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = mail_runner(db, objects, http, clock, mailbox)
    assert runner.context.mail is not None
    runner.context.mail = SmtpServer(**{**runner.context.mail.__dict__, "security": "starttls"})
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.waiting) == (1, True)
    assert "STARTTLS" in (delivery.last_error or "")
    assert mailbox.received == []


@pytest.mark.parametrize("asked", [False, True])
def test_an_owner_who_asked_for_every_export_gets_one_email(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str, asked: bool,
) -> None:  # fmt: skip
    """The owner's preference on: an export that did not ask is mailed; one that asked too is
    mailed once."""
    assert db.users.set_notify_always("alice", True)
    options = {"title": "Orders of one day", **({"notify": True} if asked else {})}
    job_id = succeeded_job(db, objects, options=options, parameters=DAY)
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.run_once()
    clock.advance(3600)
    runner.run_once()
    (message,) = mailbox.messages_to(alice)
    assert message["Subject"] == "Orders of one day — 2026-12-02 — ready"
    assert len(mailbox.received) == 1
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.address, delivery.delivered_at is not None) == (alice, True)


@pytest.mark.parametrize("public_url", ["https://reports.example.com", "http://127.0.0.1:8000"])
def test_an_email_for_every_export_carries_a_one_click_unsubscribe_link(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str, public_url: str,
) -> None:  # fmt: skip
    """RFC 2369 and 8058: `List-Unsubscribe` names a signed link of the dashboard's public URL,
    whole on one line as it travels (never MIME-encoded), and over HTTPS
    `List-Unsubscribe-Post` says one POST is enough; both parts say it too. An e-mail asked for
    one export alone has nothing to unsubscribe from."""
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.context.users = db.users
    runner.context.link_secret = b"link secret"
    runner.context.public_url = public_url
    succeeded_job(db, objects, options=ORDERS, parameters=DAY)
    runner.run_once()
    (one_off,) = mailbox.messages_to(alice)
    assert one_off["List-Unsubscribe"] is None
    assert one_off["List-Unsubscribe-Post"] is None
    assert "Stop these e-mails" not in parts(one_off)[0]
    assert db.users.set_notify_always("alice", True)
    succeeded_job(db, objects, options={"title": "Orders of one day"}, parameters=DAY)
    runner.run_once()
    _, message = mailbox.messages_to(alice)
    (line,) = [h for h in mailbox.raw[1].split(b"\r\n") if h.startswith(b"List-Unsubscribe:")]
    url = line.removeprefix(b"List-Unsubscribe: <").removesuffix(b">").decode()
    assert url.startswith(f"{public_url}/unsubscribe/")
    assert message["List-Unsubscribe"] == f"<{url}>"
    token = url.rsplit("/", 1)[1]
    assert verify_unsubscribe(b"link secret", token) == UnsubscribeLink(
        "alice", address_digest(ALICE)
    )
    one_click = "List-Unsubscribe=One-Click" if public_url.startswith("https:") else None
    assert message["List-Unsubscribe-Post"] == one_click
    text, markup = parts(message)
    assert f"Stop these e-mails: {url}" in text
    assert f'<a href="{url}">Stop these e-mails</a>' in markup
    assert "whenever one of your exports ends" in text


def test_past_the_daily_cap_an_address_is_given_up_alone_until_a_day_has_passed(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """A runaway schedule does not flood an inbox: past `email_daily_cap` e-mails in 24 hours
    to one address, in any case, the next e-mail there is given up with the reason while other
    addresses still get theirs; re-driven once the day has passed, it is delivered."""
    bob, _ = db.users.add_user("bob", "user")
    db.users.set_email(bob.id, "bob@example.com")
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.context.email_daily_cap = 2
    for _ in range(2):
        failed_job(db, options=ORDERS, parameters=DAY)
        clock.advance(3600)
        assert runner.run_once() == 1
    assert len(mailbox.messages_to(alice)) == 2

    person = db.users.user_by_name("alice")
    assert person is not None
    db.users.set_email(person.id, "Alice@EXAMPLE.com")  # the same inbox
    capped = failed_job(db, options=ORDERS, parameters=DAY)
    other = failed_job(db, owner="bob", options=ORDERS, parameters=DAY)
    runner.run_once()
    (refused,) = db.deliveries.job_deliveries(capped)
    assert (refused.attempts, refused.given_up_at is not None) == (1, True)
    assert refused.last_error == (
        "Alice@EXAMPLE.com received 2 e-mails in the last 24 hours, the most it may "
        "(email_daily_cap = 2)"
    )
    (delivered,) = db.deliveries.job_deliveries(other)
    assert delivered.delivered_at is not None
    assert len(mailbox.received) == 3

    clock.advance(23 * 3600 + 1800)  # the first e-mail is over 24 hours old, the second not
    assert db.deliveries.redrive_delivery(refused.id, now=clock())
    runner.run_once()
    assert len(mailbox.messages_to("Alice@EXAMPLE.com")) == 1
    (again,) = db.deliveries.job_deliveries(capped)
    assert again.delivered_at is not None


def test_a_schedules_recipient_is_mailed_with_who_made_them_one_until_they_may_not_see_it(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    """The recipient's e-mail says whose schedule it is, and carries a link that stops that
    schedule's e-mails to them; access is asked again before each e-mail: a refusal gives that
    address up alone."""
    bob, _ = db.users.add_user("bob", "user")
    db.users.set_email(bob.id, "bob@example.com")
    created = db.schedules.create(
        owner="alice", saved_query="orders_by_day", parameters=DAY, cron="0 6 * * *",
        time_zone="UTC", ends_at=None, next_fire_at=None, created_by="alice", max_per_owner=5,
    )  # fmt: skip
    assert created is not None
    schedule = created[0]
    db.schedules.add_recipient(schedule.id, "bob", added_by="alice")
    asked: list[tuple[str, int]] = []
    refusals = {"bob": None}

    def recipient_refusal(person: str, job: Any, address: str) -> str | None:
        asked.append((person, job.id, address))
        return refusals[person]

    options = {**ORDERS, "notify": False}
    first = succeeded_job(db, objects, options=options, parameters=DAY, schedule_id=schedule.id)
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.context.recipient_refusal = recipient_refusal
    runner.context.link_secret = b"link secret"
    runner.run_once()
    (message,) = mailbox.messages_to("bob@example.com")
    assert mailbox.messages_to(alice) == []
    text, markup = parts(message)
    assert "The export Orders of one day of alice's schedule is ready." in text
    assert "alice made you a recipient of this schedule." in text
    assert "alice made you a recipient of this schedule." in markup
    assert f"http://127.0.0.1:8000/jobs/{first}" in text
    url = message["List-Unsubscribe"].removeprefix("<").removesuffix(">")
    assert f"Stop these e-mails: {url}" in text
    assert verify_unsubscribe(b"link secret", url.rsplit("/", 1)[1]) == UnsubscribeLink(
        "bob", address_digest("bob@example.com"), schedule.id
    )
    assert asked == [("bob", first, "bob@example.com")]

    refusals["bob"] = "the access rule queries.orders_by_day.access = finance does not include bob"
    second = succeeded_job(db, objects, options=options, parameters=DAY, schedule_id=schedule.id)
    runner.run_once()
    assert len(mailbox.messages_to("bob@example.com")) == 1
    (delivery,) = db.deliveries.job_deliveries(second)
    assert (delivery.person, delivery.attempts) == ("bob", 1)
    assert delivery.given_up_at is not None
    assert delivery.last_error == refusals["bob"]


def test_an_owner_who_receives_their_own_schedule_gets_a_link_that_stops_it_alone(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    alice: str,
) -> None:  # fmt: skip
    created = db.schedules.create(
        owner="alice", saved_query="orders_by_day", parameters=DAY, cron="0 6 * * *",
        time_zone="UTC", ends_at=None, next_fire_at=None, created_by="alice", max_per_owner=5,
    )  # fmt: skip
    assert created is not None
    schedule = created[0]
    db.schedules.add_recipient(schedule.id, "alice", added_by="alice")
    runner = mail_runner(db, objects, http, clock, mailbox)
    runner.context.link_secret = b"link secret"
    runner.context.recipient_refusal = lambda person, job, address: None
    options = {**ORDERS, "notify": False}
    succeeded_job(db, objects, options=options, parameters=DAY, schedule_id=schedule.id)
    runner.run_once()
    (message,) = mailbox.messages_to(alice)
    text, _ = parts(message)
    assert "Your export Orders of one day is ready." in text
    assert "You asked for an e-mail each time this schedule makes an export." in text
    url = message["List-Unsubscribe"].removeprefix("<").removesuffix(">")
    assert verify_unsubscribe(b"link secret", url.rsplit("/", 1)[1]) == UnsubscribeLink(
        "alice", address_digest(ALICE), schedule.id
    )
