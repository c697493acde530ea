"""A schedule's chat channels get a delivery of each of its jobs' announcements, fixed in the
transaction that ends the job; a channel registered `schedules_only` gets nothing else."""

from __future__ import annotations

from datetime import UTC, datetime

from reportexport.core.records import Outcome
from reportexport.store import Database
from tests.helpers import a_schedule, ended_job_of, new_job, person, published

URL = "https://hooks.example.com/services/T0/B0/x"


def channel_ids(db: Database, job_id: int) -> list[int | None]:
    return [d.channel_id for d in db.deliveries.job_deliveries(job_id)]


def test_each_enabled_channel_of_the_schedule_gets_one_delivery(db: Database) -> None:
    person(db, "alice", None)
    schedule = a_schedule(db)
    team = db.channels.add_chat_channel(owner=None, name="#sales", url=URL, schedules_only=True)
    mine = db.channels.add_chat_channel(owner="alice", name="@alice", url=URL)
    gone = db.channels.add_chat_channel(owner=None, name="#old", url=URL, schedules_only=True)
    for channel in (team, mine, gone):
        added, now = db.schedules.add_channel(schedule.id, channel.id, added_by="operator")
        assert now
        assert (added.schedule_id, added.channel_id, added.added_by) == (
            schedule.id, channel.id, "operator",
        )  # fmt: skip
    assert db.channels.disable_chat_channel(gone.id, now=datetime.now(UTC), reason="removed")

    job_id = ended_job_of(db, schedule)

    # The owner's channel is fixed once, though it is also one of the schedule's.
    assert channel_ids(db, job_id) == [mine.id, team.id]


def test_a_channel_for_schedules_only_gets_no_other_export(db: Database) -> None:
    person(db, "alice", None)
    schedule = a_schedule(db)
    alices = db.channels.add_chat_channel(owner="alice", name="@a", url=URL, schedules_only=True)
    everyones = db.channels.add_chat_channel(owner=None, name="#e", url=URL, schedules_only=True)
    assert (alices.schedules_only, everyones.schedules_only) == (True, True)
    assert [c.schedules_only for c in db.channels.list_chat_channels()] == [True, True]
    db.schedules.add_channel(schedule.id, alices.id, added_by="alice")

    job = db.jobs.create_job(new_job(owner="alice"))[0]  # made by no schedule
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(lease=claim.lease, to_status="succeeded", published=published())
    assert db.queue.finish_jobs([outcome]) == [True]
    assert channel_ids(db, job.id) == []
    assert channel_ids(db, ended_job_of(db, schedule)) == [alices.id]


def test_channels_are_added_once_removed_and_a_deleted_schedule_fixes_none(db: Database) -> None:
    person(db, "alice", None)
    schedule = a_schedule(db)
    team = db.channels.add_chat_channel(owner=None, name="#sales", url=URL, schedules_only=True)
    first, added = db.schedules.add_channel(schedule.id, team.id, added_by="alice")
    again, added_again = db.schedules.add_channel(schedule.id, team.id, added_by="operator")
    assert (added, added_again) == (True, False)
    assert again == first
    assert db.schedules.channels(schedule.id) == [first]

    assert db.schedules.remove_channel(schedule.id, team.id)
    assert not db.schedules.remove_channel(schedule.id, team.id)
    assert db.schedules.channels(schedule.id) == []
    assert channel_ids(db, ended_job_of(db, schedule)) == []

    db.schedules.add_channel(schedule.id, team.id, added_by="alice")
    assert db.schedules.delete(schedule.id, now=datetime.now(UTC))
    assert channel_ids(db, ended_job_of(db, schedule)) == []
