"""A schedule's outside addresses get its announcements through a real SMTP server on loopback
(aiosmtpd): no link to the dashboard, the file attached when it is at most the address's size
(gzip-compressed when asked) or a signed download link, a link that takes the address off the
schedule, and nothing once the address is removed."""

from __future__ import annotations

import gzip
import time
from collections.abc import Iterator

import httpx
import pytest

from reportexport.core.links import (
    LinkError,
    UnsubscribeLink,
    address_digest,
    verify_download,
    verify_unsubscribe,
)
from reportexport.core.records import Schedule
from reportexport.mail.smtp import SmtpServer
from reportexport.objects import ObjectStore
from reportexport.runners.effects.runner import EffectsRunner
from reportexport.store import Database
from tests.effects.smtp_server import Mailbox, running_mailbox
from tests.helpers import Clock, failed_job, make_runner, succeeded_job

PARTNER = "partner@example.org"
DAY = {"day": "2026-12-02"}
ORDERS = {"title": "Orders of one day"}
CSV = b"a,b\n1,2\n"  # what succeeded_job publishes


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    with running_mailbox(Mailbox()) as running:
        yield running


@pytest.fixture
def schedule(db: Database) -> Schedule:
    db.users.add_user("alice", "user")
    created = db.schedules.create(
        owner="alice", saved_query="orders_by_day", parameters=DAY, cron="0 6 * * *",
        time_zone="UTC", ends_at=None, next_fire_at=None, created_by="alice", max_per_owner=5,
    )  # fmt: skip
    assert created is not None
    return created[0]


def runner_for(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox
) -> EffectsRunner:
    runner = make_runner(db, objects, http, clock, link_seconds=600)
    runner.context.mail = SmtpServer(
        host=mailbox.host, port=mailbox.port, security="none", user="", password="",
        sender="reports@example.com", timeout_seconds=10,
    )  # fmt: skip
    runner.context.link_secret = b"link secret"
    runner.context.schedule_address = db.schedules.address
    runner.context.owner_refusal = lambda job: None
    return runner


def add(db: Database, schedule: Schedule, limit: int | None = None, *, gz: bool = False) -> None:
    db.schedules.add_address(schedule.id, PARTNER, attach_max_bytes=limit, attach_gzip=gz,
                             added_by="olga")  # fmt: skip


def text_of(message: object) -> str:
    body = message.get_body(preferencelist=("plain",))  # type: ignore[attr-defined]
    assert body is not None
    return str(body.get_content())


def test_an_outside_address_gets_a_signed_download_link_and_no_dashboard_link(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    add(db, schedule)
    job_id = succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    runner_for(db, objects, http, clock, mailbox).run_once()

    (message,) = mailbox.messages_to(PARTNER)
    assert message["Subject"] == "Orders of one day — 2026-12-02 — ready"
    assert message.get_content_type() == "multipart/alternative"  # nothing attached
    text = text_of(message)
    assert "The export Orders of one day of alice's schedule is ready." in text
    assert "olga added this address to alice's schedule." in text
    assert "/jobs/" not in text
    assert "Download it (the link works until " in text
    link = text.split("Download it", 1)[1].split(": ", 1)[1].split()[0]
    job = db.jobs.get_job(job_id).job
    assert job.object_key is not None
    # The object store's own link (served by the service at the public URL), signed for the
    # link's lifetime: a reader without an account opens it.
    assert link.startswith("http://127.0.0.1:8000/api/downloads/")
    token = link.rsplit("/", 1)[1]
    assert verify_download(b"links", token) == (job.object_key, "orders.csv")
    with pytest.raises(LinkError, match="expired"):
        verify_download(b"links", token, now=time.time() + 601)
    url = message["List-Unsubscribe"].removeprefix("<").removesuffix(">")
    assert verify_unsubscribe(b"link secret", url.rsplit("/", 1)[1]) == UnsubscribeLink(
        None, address_digest(PARTNER), schedule.id
    )
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.address, delivery.person, delivery.delivered_at is not None) == (
        PARTNER, None, True,
    )  # fmt: skip


@pytest.mark.parametrize(("limit", "gz", "attached"), [
    (len(CSV), False, ("text/csv", "orders.csv", CSV)),
    (len(CSV) - 1, False, None),
    (200, True, ("application/gzip", "orders.csv.gz", CSV)),
    (10, True, None),  # the gzip header alone is more than 10 bytes
])  # fmt: skip
def test_the_file_is_attached_when_it_is_at_most_the_addresss_size(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule, limit: int, gz: bool, attached: tuple[str, str, bytes] | None,
) -> None:  # fmt: skip
    add(db, schedule, limit, gz=gz)
    succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    runner_for(db, objects, http, clock, mailbox).run_once()

    (message,) = mailbox.messages_to(PARTNER)
    files = list(message.iter_attachments())
    if attached is None:
        assert files == []
        assert "Download it" in text_of(message)
        return
    (part,) = files
    content = part.get_payload(decode=True)
    assert isinstance(content, bytes)
    if gz:
        content = gzip.decompress(content)
    assert (part.get_content_type(), part.get_filename(), content) == attached
    assert f"The file is attached: {attached[1]}" in text_of(message)
    assert "Download it" not in text_of(message)


def test_a_failure_is_said_without_its_reason(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    add(db, schedule, 1000)
    failed_job(db, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    runner_for(db, objects, http, clock, mailbox).run_once()
    (message,) = mailbox.messages_to(PARTNER)
    text = text_of(message)
    assert "The export Orders of one day of alice's schedule did not succeed." in text
    assert "column x does not exist" not in text
    assert "alice sees why on the dashboard." in text
    assert list(message.iter_attachments()) == []


def test_an_address_removed_after_the_job_ended_is_given_up_alone(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    add(db, schedule)
    alice = db.users.user_by_name("alice")
    assert alice is not None
    db.users.set_email(alice.id, "alice@example.com")
    job_id = succeeded_job(db, objects, options={**ORDERS, "notify": True}, parameters=DAY,
                           schedule_id=schedule.id)  # fmt: skip
    assert db.schedules.remove_address(schedule.id, PARTNER)
    runner_for(db, objects, http, clock, mailbox).run_once()

    assert mailbox.messages_to(PARTNER) == []
    assert len(mailbox.messages_to("alice@example.com")) == 1
    partner = next(d for d in db.deliveries.job_deliveries(job_id) if d.person is None)
    assert partner.given_up_at is not None
    assert partner.last_error == (
        f"{PARTNER} is no longer one of schedule {schedule.id}'s addresses (it was removed, "
        "or the schedule deleted)"
    )
    # An address taken off holds nothing open: the announcement is complete, not given up.
    (announced,) = [e for e in db.jobs.get_job(job_id).side_effects
                    if e.effect == "emit_done_webhook"]  # fmt: skip
    assert (announced.completed_at is not None, announced.given_up_at) == (True, None)


def test_the_file_goes_outside_only_while_its_owner_may_download_it_and_it_is_stored(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    add(db, schedule, 1000)
    refused = succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    runner = runner_for(db, objects, http, clock, mailbox)
    runner.context.owner_refusal = lambda job: "the access rule x = finance does not include alice"
    runner.run_once()
    assert mailbox.messages_to(PARTNER) == []
    (delivery,) = db.deliveries.job_deliveries(refused)
    assert delivery.given_up_at is not None
    assert delivery.last_error == (
        "its owner may no longer download the file: the access rule x = finance does not "
        "include alice"
    )

    expired = succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    clock.advance(3601)  # succeeded_job's file is kept an hour
    runner_for(db, objects, http, clock, mailbox).run_once()
    assert mailbox.messages_to(PARTNER) == []
    (delivery,) = db.deliveries.job_deliveries(expired)
    assert delivery.last_error == "the file expired before it could be sent"


def test_an_export_compressed_already_is_attached_as_it_is(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    packed = gzip.compress(CSV, mtime=0)
    add(db, schedule, 1000, gz=True)
    succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id,
                  file_name="orders.csv.gz", content=packed)  # fmt: skip
    runner_for(db, objects, http, clock, mailbox).run_once()
    (message,) = mailbox.messages_to(PARTNER)
    (part,) = message.iter_attachments()
    assert (part.get_content_type(), part.get_filename()) == ("application/gzip", "orders.csv.gz")
    assert part.get_payload(decode=True) == packed  # not compressed twice


def test_a_copy_sent_again_after_a_runner_died_is_the_same_message(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The server accepted the message and the runner died before writing that down: the next
    runner sends it again with the same Message-ID and the same attached bytes."""

    class Killed(BaseException):
        """The process ends here: nothing after this line runs."""

    def die(*args: object, **kwargs: object) -> bool:
        raise Killed

    add(db, schedule, 1000, gz=True)
    succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
    with monkeypatch.context() as patch:
        patch.setattr(db.deliveries, "record_delivery_attempt", die)
        with pytest.raises(Killed):
            runner_for(db, objects, http, clock, mailbox).run_once()
    clock.advance(3000)  # past the dead runner's claim, within the file's hour
    runner_for(db, objects, http, clock, mailbox).run_once()
    first, again = mailbox.messages_to(PARTNER)
    assert first["Message-ID"] == again["Message-ID"]
    attached = [next(m.iter_attachments()).get_payload(decode=True) for m in (first, again)]
    assert attached[0] == attached[1]


def test_the_daily_cap_holds_for_an_outside_address(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, mailbox: Mailbox,
    schedule: Schedule,
) -> None:  # fmt: skip
    add(db, schedule)
    runner = runner_for(db, objects, http, clock, mailbox)
    runner.context.email_daily_cap = 1
    jobs = [succeeded_job(db, objects, options=ORDERS, parameters=DAY, schedule_id=schedule.id)
            for _ in range(2)]  # fmt: skip
    runner.run_once()
    assert len(mailbox.messages_to(PARTNER)) == 1
    last = [d for job in jobs for d in db.deliveries.job_deliveries(job)][-1]
    assert last.given_up_at is not None
    assert "received 1 e-mails in the last 24 hours" in (last.last_error or "")
