"""A schedule's outside addresses get a delivery of each of its jobs' announcements, fixed in the
transaction that ends the job, with no person: the deliveries to a person's address name them."""

from __future__ import annotations

from datetime import UTC, datetime

from reportexport.store import Database
from tests.helpers import a_schedule, ended_job_of, person


def destinations(db: Database, job_id: int) -> list[tuple[str | None, str | None]]:
    return [(d.address, d.person) for d in db.deliveries.job_deliveries(job_id)]


def test_each_outside_address_gets_one_delivery_without_a_person(db: Database) -> None:
    person(db, "alice", "Alice@Example.com")
    person(db, "bob", "bob@example.com")
    schedule = a_schedule(db)
    db.schedules.add_recipient(schedule.id, "bob", added_by="alice")
    for address in ("partner@example.org", "alice@example.com", "bob@example.com"):
        added, now = db.schedules.add_address(schedule.id, address, attach_max_bytes=None,
                                              attach_gzip=False, added_by="olga")  # fmt: skip
        assert now
        assert (added.address, added.added_by) == (address, "olga")

    job_id = ended_job_of(db, schedule, notify=True)

    # The owner's and the recipient's addresses are fixed once, whatever their case.
    assert sorted(destinations(db, job_id), key=str) == sorted([
        ("Alice@Example.com", "alice"), ("bob@example.com", "bob"),
        ("partner@example.org", None),
    ], key=str)  # fmt: skip


def test_an_address_added_again_keeps_its_place_and_takes_the_new_attachment_rule(
    db: Database,
) -> None:
    person(db, "alice", None)
    schedule = a_schedule(db)
    first, added = db.schedules.add_address(schedule.id, "p@example.org", attach_max_bytes=None,
                                            attach_gzip=False, added_by="olga")  # fmt: skip
    again, added_again = db.schedules.add_address(
        schedule.id, "p@example.org", attach_max_bytes=5000, attach_gzip=True, added_by="oscar"
    )
    assert (added, added_again) == (True, False)
    assert (again.added_by, again.added_at) == (first.added_by, first.added_at)
    assert (again.attach_max_bytes, again.attach_gzip) == (5000, True)
    assert db.schedules.addresses(schedule.id) == [again]
    assert db.schedules.address(schedule.id, "p@example.org") == again


def test_a_removed_address_and_a_deleted_schedule_fix_none(db: Database) -> None:
    person(db, "alice", None)
    schedule = a_schedule(db)
    db.schedules.add_address(schedule.id, "p@example.org", attach_max_bytes=1, attach_gzip=False,
                             added_by="olga")  # fmt: skip
    assert db.schedules.remove_address(schedule.id, "p@example.org")
    assert not db.schedules.remove_address(schedule.id, "p@example.org")
    assert db.schedules.addresses(schedule.id) == []
    assert destinations(db, ended_job_of(db, schedule)) == []

    db.schedules.add_address(schedule.id, "p@example.org", attach_max_bytes=None,
                             attach_gzip=False, added_by="olga")  # fmt: skip
    assert db.schedules.delete(schedule.id, now=datetime.now(UTC))
    assert db.schedules.address(schedule.id, "p@example.org") is None
    assert destinations(db, ended_job_of(db, schedule)) == []
