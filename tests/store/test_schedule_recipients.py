"""A schedule's recipients get an e-mail delivery of each of its jobs' announcements, fixed
in the transaction that ends the job, each naming the person it goes to."""

from __future__ import annotations

from datetime import UTC, datetime

from reportexport.core.records import Outcome
from reportexport.store import Database
from tests.helpers import a_schedule, ended_job_of, new_job, person, published


def test_each_recipient_with_an_address_gets_a_delivery_naming_them(db: Database) -> None:
    person(db, "alice", "alice@example.com")
    person(db, "bob", "bob@example.com")
    person(db, "carol", None)  # no address: nothing to fix
    person(db, "dave", "dave@example.com")
    schedule = a_schedule(db)
    for name in ("bob", "carol", "dave"):
        recipient, added = db.schedules.add_recipient(schedule.id, name, added_by="alice")
        assert added
        assert (recipient.person, recipient.added_by) == (name, "alice")
    assert db.users.suspend_user("dave", now=datetime.now(UTC), by="operator", reason="away")

    job_id = ended_job_of(db, schedule, notify=True)

    assert [(d.address, d.person) for d in db.deliveries.job_deliveries(job_id)] == [
        ("alice@example.com", "alice"),
        ("bob@example.com", "bob"),
    ]


def test_an_address_already_fixed_for_the_job_is_not_fixed_twice(db: Database) -> None:
    person(db, "alice", "alice@example.com")
    schedule = a_schedule(db)
    db.schedules.add_recipient(schedule.id, "alice", added_by="alice")
    job_id = ended_job_of(db, schedule, notify=True)
    assert [(d.address, d.person) for d in db.deliveries.job_deliveries(job_id)] == [
        ("alice@example.com", "alice")
    ]


def test_recipients_are_added_once_and_removed(db: Database) -> None:
    person(db, "alice", None)
    person(db, "bob", "bob@example.com")
    schedule = a_schedule(db)
    first, added = db.schedules.add_recipient(schedule.id, "bob", added_by="alice")
    again, added_again = db.schedules.add_recipient(schedule.id, "bob", added_by="operator")
    assert (added, added_again) == (True, False)
    assert again == first
    assert db.schedules.recipients(schedule.id) == [first]
    assert db.schedules.recipient(schedule.id, "bob") == first

    assert db.schedules.remove_recipient(schedule.id, "bob")
    assert not db.schedules.remove_recipient(schedule.id, "bob")
    assert db.schedules.recipients(schedule.id) == []
    assert db.deliveries.job_deliveries(ended_job_of(db, schedule)) == []


def test_a_job_made_by_no_schedule_goes_to_no_recipient(db: Database) -> None:
    person(db, "alice", None)
    person(db, "bob", "bob@example.com")
    schedule = a_schedule(db)
    db.schedules.add_recipient(schedule.id, "bob", added_by="alice")
    job = db.jobs.create_job(new_job(owner="alice"))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(lease=claim.lease, to_status="succeeded", published=published())
    assert db.queue.finish_jobs([outcome]) == [True]
    assert db.deliveries.job_deliveries(job.id) == []


def test_a_deleted_schedules_recipients_are_sent_nothing(db: Database) -> None:
    """A job still running when its schedule was deleted ends without its recipients."""
    person(db, "alice", None)
    person(db, "bob", "bob@example.com")
    schedule = a_schedule(db)
    db.schedules.add_recipient(schedule.id, "bob", added_by="alice")
    assert db.schedules.delete(schedule.id, now=datetime.now(UTC))
    assert db.deliveries.job_deliveries(ended_job_of(db, schedule)) == []
    assert db.schedules.recipient(schedule.id, "bob") is None
