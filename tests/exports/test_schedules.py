"""Scheduled exports end to end with an injected clock, on SQLite and PostgreSQL: daily firings
that make one job each with its file and webhook, the catch-up policy, refusals shown on the
schedule, a pause when the parameters no longer validate, racing schedulers, and a firing
taken up again after its process stopped half way."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reportexport.core.catalog import Catalog
from reportexport.core.records import JobFilter
from reportexport.objects import ObjectStore, open_object_store
from reportexport.runners.effects.handlers import Context
from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.services.errors import NotFoundError, OverLimitError
from reportexport.services.exports import Acting, ExportService, Fairness
from reportexport.services.schedules import ScheduleLimits, ScheduleService
from reportexport.store import Database, open_database
from tests.effects.receiver import Receiver, running_receiver
from tests.helpers import GRAPH, catalog_for, wait_for

QUERIES: dict[str, Any] = {
    "orders_of_day": {
        "source": "demo",
        "title": "Orders of one day",
        "sql": "SELECT order_id, order_date FROM orders WHERE order_date = :day",
        "parameters": {"day": {"type": "date"}},
    },
}
ALICE = Acting(name="alice", role="user")
BOB = Acting(name="bob", role="user")
PARIS = "Europe/Paris"


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def at(*fields: int) -> datetime:
    return datetime(*fields, tzinfo=UTC)  # type: ignore[misc]


@pytest.fixture
def catalog(sources_dir: Path) -> Catalog:
    return catalog_for(sources_dir, None, QUERIES)


@pytest.fixture
def objects(tmp_path: Path) -> ObjectStore:
    return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"links")


@pytest.fixture
def clock() -> Clock:
    return Clock(at(2026, 12, 1, 6))


def services(
    db: Database,
    catalog: Catalog,
    objects: ObjectStore,
    clock: Clock,
    *,
    max_active: int = 10,
    process: str = "p1",
) -> tuple[ExportService, ScheduleService]:
    exports = ExportService(
        jobs=db.jobs, effects=db.effects, downloads=db.jobs, catalog=catalog, objects=objects,
        link_secret=b"links", fairness=Fairness(max_active=max_active, max_per_window=1000),
        clock=clock, firings=db.schedules,
    )  # fmt: skip
    schedules = ScheduleService(
        schedules=db.schedules, exports=exports, catalog=catalog,
        limits=ScheduleLimits(max_per_person=3), process=process, clock=clock,
    )  # fmt: skip
    return exports, schedules


def daily_yesterday(service: ScheduleService, person: Acting = ALICE) -> int:
    view = service.create(
        person, "orders_of_day", {"day": {"relative": "yesterday"}},
        cron="0 8 * * *", time_zone=PARIS,
    )  # fmt: skip
    return view.schedule.id


def scheduled_jobs(db: Database) -> list[Any]:
    jobs = db.jobs.list_jobs(JobFilter(limit=100)).jobs
    return sorted((job for job in jobs if job.schedule_id is not None), key=lambda j: j.id)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver(Receiver()) as running:
        yield running


def test_three_days_of_daily_firings_make_one_job_a_day_with_its_file_and_webhook(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock, receiver: Receiver
) -> None:
    _exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    view = service.show(ALICE, schedule_id)
    assert view.description == "At 08:00 every day (Europe/Paris)"
    assert view.next_times == [at(2026, 12, d, 7) for d in range(1, 6)]
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret="whsec_" + "a" * 32)
    worker = Worker(db, catalog, objects, WorkerSettings(poll_seconds=0.05))
    with httpx.Client(timeout=5) as http:
        context = Context(
            store=db.endpoints,
            deliveries=db.deliveries,
            objects=objects,
            client=http,
            allow_private=True,
        )
        runner = EffectsRunner(db, context, GRAPH, RunnerSettings(poll_seconds=0.05))
        worker.start()
        runner.start()
        try:
            for day in (1, 2, 3):
                clock.now = at(2026, 12, day, 7, 0, 3)  # 08:00:03 in Paris
                assert service.fire_due() == 1
                assert service.fire_due() == 0  # the same firing never twice
                (job, *_) = reversed(scheduled_jobs(db))
                assert job.parameters == {"day": f"2026-{11 if day == 1 else 12}-"
                                                 f"{30 if day == 1 else day - 1:02d}"}  # fmt: skip
                wait_for(
                    lambda job_id=job.id: db.jobs.get_job(job_id).job.status == "succeeded",
                    60,
                    'db.jobs.get_job(job_id).job.status == "succeeded"',
                    every=0.05,
                )
                wait_for(
                    lambda day=day: len(receiver.received) == day,
                    60,
                    "len(receiver.received) == day",
                    every=0.05,
                )
        finally:
            worker.stop(grace_seconds=5)
            runner.stop()
    jobs = scheduled_jobs(db)
    assert len(jobs) == 3
    assert {job.schedule_id for job in jobs} == {schedule_id}
    for job in jobs:
        assert job.object_key is not None
        assert objects.stat(job.object_key).size == job.object_bytes
    events = [json.loads(r.body) for r in receiver.received]
    assert [e["data"]["schedule_id"] for e in events] == [schedule_id] * 3
    assert [e["data"]["job_id"] for e in events] == [job.id for job in jobs]
    firings = service.show(ALICE, schedule_id).firings
    assert [(f.scheduled_for, f.missed, f.job_id) for f in firings] == [
        (at(2026, 12, d, 7), 0, job.id) for d, job in zip((3, 2, 1), reversed(jobs), strict=True)
    ]
    assert all(f.query_hash == catalog.queries["orders_of_day"].content_hash for f in firings)


def test_after_downtime_a_schedule_fires_once_and_the_job_says_how_many_times_it_missed(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    clock.now = at(2026, 12, 4, 9)  # down since before the first firing, three days ago
    assert service.fire_due() == 1
    (job,) = scheduled_jobs(db)
    assert job.parameters == {"day": "2026-12-03"}
    view = exports.job(ALICE, job.id)
    assert view.firing is not None
    assert (view.firing.scheduled_for, view.firing.missed) == (at(2026, 12, 4, 7), 3)
    assert service.show(ALICE, schedule_id).schedule.next_fire_at == at(2026, 12, 5, 7)


def test_a_firing_refused_by_the_owners_cap_is_shown_and_the_schedule_keeps_firing(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    exports, service = services(db, catalog, objects, clock, max_active=1)
    schedule_id = daily_yesterday(service)
    waiting = exports.create(ALICE, "orders_of_day", {"day": "2026-01-01"}).job
    clock.now = at(2026, 12, 1, 7, 0, 1)
    assert service.fire_due() == 0
    view = service.show(ALICE, schedule_id)
    (refused,) = view.firings
    assert (refused.job_id, refused.refusal_code) == (None, "max_active")
    assert "at most 1 may be at once" in (refused.refusal or "")
    assert view.schedule.paused_at is None
    exports.cancel(ALICE, waiting.id)
    clock.now = at(2026, 12, 2, 7, 0, 1)
    assert service.fire_due() == 1


def test_parameters_that_no_longer_validate_pause_the_schedule_with_the_reason(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock, sources_dir: Path
) -> None:
    _, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    changed = {**QUERIES["orders_of_day"], "sql": "SELECT * FROM orders WHERE order_date = :d",
               "parameters": {"d": {"type": "date"}}}  # fmt: skip
    _, later = services(db, catalog_for(sources_dir, None, {"orders_of_day": changed}), objects,
                        clock)  # fmt: skip
    clock.now = at(2026, 12, 1, 7, 0, 1)
    assert later.fire_due() == 0
    view = later.show(ALICE, schedule_id)
    assert view.schedule.paused_at == clock.now
    assert "could not run" in (view.schedule.pause_reason or "")
    assert view.firings[0].refusal_code == "invalid_parameters"
    assert view.next_times == []
    clock.now = at(2026, 12, 2, 7, 0, 1)
    assert later.fire_due() == 0  # paused: nothing more, nothing caught up
    assert len(later.show(ALICE, schedule_id).firings) == 1


def test_schedulers_racing_in_two_processes_make_one_job_per_firing(
    database_url: str, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    first = open_database(database_url, GRAPH)
    second = open_database(database_url, GRAPH)
    try:
        _, one = services(first, catalog, objects, clock, process="one")
        _, two = services(second, catalog, objects, clock, process="two")
        for person in (ALICE, BOB):
            for cron in ("0 8 * * *", "*/30 * * * *", "0 * * * *"):
                one.create(person, "orders_of_day", {"day": "2024-03-05"}, cron=cron,
                           time_zone=PARIS)  # fmt: skip
        made: list[int] = []
        for hours in range(1, 4):
            clock.now = at(2026, 12, 1, 6) + timedelta(hours=hours, seconds=1)
            threads = [
                threading.Thread(target=lambda s=s: made.append(s.fire_due()))
                for s in (one, two, one, two)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
        jobs = scheduled_jobs(first)
        firings = [f for s in one.list(ALICE) + one.list(BOB) for f in one.show(
            ALICE if s.schedule.owner == "alice" else BOB, s.schedule.id).firings]  # fmt: skip
    finally:
        first.close()
        second.close()
    # Per owner each hour: "0 8" once (at 07:00 UTC), "*/30" and "0 *" once each (each fires
    # once for its latest time, as the clock jumps an hour at a time).
    assert sum(made) == len(jobs) == len(firings) == 2 * (1 + 3 + 3)
    assert len({f.job_id for f in firings}) == len(firings)
    assert all(f.job_id is not None for f in firings)


def test_a_firing_left_half_done_is_made_once_by_any_process(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    _exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    schedule = service.show(ALICE, schedule_id).schedule
    clock.now = at(2026, 12, 1, 7, 0, 1)
    # A process takes the firing and stops before making its job...
    taken = db.schedules.take(
        schedule,
        scheduled_for=at(2026, 12, 1, 7),
        next_fire_at=at(2026, 12, 2, 7),
        missed=0,
        fired_by="gone",
        fired_at=clock.now,
    )
    assert taken is not None
    assert service.fire_due() == 0  # not due again: the schedule moved on
    clock.now += timedelta(seconds=30)
    assert service.fire_due() == 0  # too soon to take it up
    clock.now += timedelta(seconds=40)
    assert service.fire_due() == 1  # taken up
    assert service.fire_due() == 0
    (job,) = scheduled_jobs(db)
    (firing,) = service.show(ALICE, schedule_id).firings
    assert (firing.job_id, firing.fired_by) == (job.id, "gone")


def test_a_firing_whose_job_was_made_but_not_recorded_gets_that_same_job(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    schedule = service.show(ALICE, schedule_id).schedule
    clock.now = at(2026, 12, 1, 7, 0, 1)
    db.schedules.take(schedule, scheduled_for=at(2026, 12, 1, 7), next_fire_at=at(2026, 12, 2, 7),
                      missed=0, fired_by="gone", fired_at=clock.now)  # fmt: skip
    made = exports.create_scheduled(
        "alice", "orders_of_day", {"day": "2026-11-30"}, schedule_id=schedule_id,
        key=f"schedule-{schedule_id}-20261201T070000.000000Z",
    )  # fmt: skip
    clock.now += timedelta(minutes=5)
    service.fire_due()
    (job,) = scheduled_jobs(db)
    assert job.id == made.job.id
    assert service.show(ALICE, schedule_id).firings[0].job_id == job.id


def test_run_now_pause_resume_delete_and_the_per_person_limit(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    _exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    now_job = service.run_now(ALICE, schedule_id).job
    assert now_job.parameters == {"day": "2026-11-30"}
    (manual,) = service.show(ALICE, schedule_id).firings
    assert (manual.manual, manual.job_id) == (True, now_job.id)
    with pytest.raises(NotFoundError):
        service.show(BOB, schedule_id)  # another person's schedule does not exist for bob
    paused = service.pause(ALICE, schedule_id)
    assert (paused.schedule.pause_reason, paused.next_times) == ("paused by alice", [])
    clock.now = at(2026, 12, 3, 12)
    assert service.fire_due() == 0
    resumed = service.resume(ALICE, schedule_id)
    assert resumed.schedule.next_fire_at == at(2026, 12, 4, 7)  # no catching up on a pause
    service.delete(ALICE, schedule_id)
    assert service.list(ALICE) == []
    with pytest.raises(NotFoundError):
        service.show(ALICE, schedule_id)
    for _ in range(3):
        daily_yesterday(service)
    with pytest.raises(OverLimitError, match="has 3 schedules"):
        daily_yesterday(service)


def test_a_schedule_is_refused_by_name_when_its_parts_are_wrong(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    from reportexport.core.parameters import ParameterError
    from reportexport.services.errors import InvalidInputError

    _, service = services(db, catalog, objects, clock)

    def create(**overrides: Any) -> None:
        fields: dict[str, Any] = {"cron": "0 8 * * *", "time_zone": PARIS}
        parameters = overrides.pop("parameters", {"day": {"relative": "yesterday"}})
        service.create(ALICE, "orders_of_day", parameters, **{**fields, **overrides})

    for overrides, field in (
        ({"cron": "0 8 * *"}, "cron"),
        ({"time_zone": "Mars/Olympus"}, "time_zone"),
        ({"ends_at": at(2026, 11, 1)}, "ends_at"),
        ({"ends_at": at(2026, 12, 1, 6, 30)}, "cron"),  # ends before it would first fire
        ({"parameters": {"day": {"relative": "someday"}}}, "parameters.day"),
    ):
        with pytest.raises(InvalidInputError) as raised:
            create(**overrides)
        assert raised.value.field == field, overrides
    with pytest.raises(ParameterError, match="day"):
        create(parameters={"day": "yesterday"})  # a literal must be a date


def test_a_purge_takes_the_firings_of_the_jobs_it_removes(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    exports, service = services(db, catalog, objects, clock)
    schedule_id = daily_yesterday(service)
    job = service.run_now(ALICE, schedule_id).job
    exports.cancel(ALICE, job.id)
    purge = db.retention.purge(datetime.now(UTC) + timedelta(seconds=1), person="olga")
    assert (purge.jobs, purge.schedule_firings) == (1, 1)
    assert service.show(ALICE, schedule_id).firings == []


def test_a_schedule_firing_more_often_than_the_minimum_period_is_refused_naming_cron(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    from reportexport.services.errors import InvalidInputError

    _, service = services(db, catalog, objects, clock)  # the default minimum: one minute
    daily = {"day": {"relative": "yesterday"}}
    with pytest.raises(InvalidInputError) as raised:
        service.create(ALICE, "orders_of_day", daily, cron="* * * * * *", time_zone=PARIS)
    assert raised.value.field == "cron"
    assert raised.value.detail == (
        "'* * * * * *' fires 1 second after its firing of 2026-12-02 00:00:00 (Europe/Paris): "
        "the shortest gap allowed between two firings is 1 minute"
    )
    # 01:30 and 02:30 are an hour apart but for the spring-forward day, when 02:30 fires at
    # 03:00: half an hour; the preview says it, and a minimum of 45 minutes refuses it.
    shown = service.preview("30 1,2 * * *", PARIS)
    assert shown.period == (
        "Firings at least 30 minutes apart; the shortest gap allowed is 1 minute."
    )
    strict = ScheduleService(
        schedules=db.schedules, exports=service.exports, catalog=catalog,
        limits=ScheduleLimits(min_period_seconds=45 * 60), clock=clock,
    )  # fmt: skip
    twice = "30 1,2 * * *"
    for refused in (
        lambda: strict.create(ALICE, "orders_of_day", daily, cron=twice, time_zone=PARIS),
        lambda: strict.preview(twice, PARIS),
    ):
        with pytest.raises(InvalidInputError, match="fires 30 minutes after its firing of "
                           r"2027-03-28 01:30:00 \(Europe/Paris\)"):  # fmt: skip
            refused()
    assert service.list(ALICE) == []
    assert strict.preview("30 1 * * *", PARIS).shortest_gap == timedelta(hours=23)


def test_the_upgrade_pauses_schedules_below_the_minimum_period_and_resume_refuses_them(
    db: Database, catalog: Catalog, objects: ObjectStore, clock: Clock
) -> None:
    """Schedules made under a lower minimum (or before there was one) are paused with the
    reason; the others are left alone, and a paused one cannot fire again as it is."""
    from reportexport.services.errors import InvalidInputError
    from reportexport.services.schedules import pause_too_frequent

    exports, _ = services(db, catalog, objects, clock)
    lax = ScheduleService(schedules=db.schedules, exports=exports, catalog=catalog,
                          limits=ScheduleLimits(min_period_seconds=1), clock=clock)  # fmt: skip
    daily = {"day": {"relative": "yesterday"}}
    every_second = lax.create(ALICE, "orders_of_day", daily, cron="* * * * * *", time_zone=PARIS)
    every_day = lax.create(ALICE, "orders_of_day", daily, cron="0 8 * * *", time_zone=PARIS)
    paused = pause_too_frequent(db.schedules, timedelta(minutes=1), clock())
    assert [(s.id, reason) for s, reason in paused] == [(
        every_second.schedule.id,
        "'* * * * * *' fires 1 second after its firing of 2026-12-02 00:00:00 (Europe/Paris): "
        "the shortest gap allowed between two firings is 1 minute; delete this schedule and "
        "make one that fires less often",
    )]  # fmt: skip
    shown = {v.schedule.id: v.schedule.pause_reason for v in lax.list(ALICE)}
    assert shown == {every_second.schedule.id: paused[0][1], every_day.schedule.id: None}
    assert pause_too_frequent(db.schedules, timedelta(minutes=1), clock()) == []  # once
    _, service = services(db, catalog, objects, clock)
    with pytest.raises(InvalidInputError, match="delete this schedule and make one"):
        service.resume(ALICE, every_second.schedule.id)
