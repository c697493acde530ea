"""Schedules and their firings. A firing is keyed by (schedule, scheduled time): whichever
process moves a due schedule to its next time (a compare-and-set) records the firing, and the
key makes a second record of the same time impossible."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reportexport.core.records import (
    AuditEntry,
    Firing,
    Recipient,
    Schedule,
    ScheduleAddress,
    ScheduleChannel,
    ScheduleTotals,
)
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver, Row
from reportexport.store.errors import StoreError


class ScheduleStore:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def create(
        self,
        *,
        owner: str,
        saved_query: str,
        parameters: Mapping[str, Any],
        cron: str,
        time_zone: str,
        ends_at: datetime | None,
        next_fire_at: datetime | None,
        created_by: str,
        max_per_owner: int,
        idempotency_key: str | None = None,
    ) -> tuple[Schedule, bool] | None:
        """The new schedule and True; the one an earlier request with `idempotency_key` made
        (deleted since, or not) and False; or None when its owner has `max_per_owner` already
        (each checked in the same transaction, under the owner's lock)."""
        params = {
            "owner": owner,
            "saved_query": saved_query,
            "parameters": self.codec.json(dict(parameters)),
            "cron": cron,
            "time_zone": time_zone,
            "ends_at": self._moment(ends_at),
            "next_fire_at": self._moment(next_fire_at),
            "created_by": created_by,
            "idempotency_key": idempotency_key,
        }
        with self.driver.write() as session:
            session.serialise(f"owner:{owner}")
            if idempotency_key is not None:
                earlier = session.row("schedule_by_idempotency_key", params)
                if earlier is not None:
                    return self._schedule(earlier), False
            count = session.row("schedules_of_owner", params)
            if count is not None and int(count["n"]) >= max_per_owner:
                return None
            row = session.row("create_schedule", params)
        return self._schedule(row), True

    def get(self, schedule_id: int) -> Schedule | None:
        with self.driver.read() as session:
            row = session.row("get_schedule", {"id": schedule_id})
        return None if row is None else self._schedule(row)

    def listed(
        self, owner: str | None, limit: int = 100, *, before: int | None = None
    ) -> list[Schedule]:
        """An owner's schedules (everyone's when `owner` is None), newest first, below the
        id `before`."""
        params = {"owner": owner, "limit": limit, "before": before}
        with self.driver.read() as session:
            rows = session.rows("list_schedules", params)
        return [self._schedule(row) for row in rows]

    def pause(
        self, schedule_id: int, *, now: datetime, reason: str, audit: AuditEntry | None = None
    ) -> Schedule | None:
        """The paused schedule; None when it was paused already or does not exist. `audit`
        is written in the same transaction when it pauses."""
        params = {"id": schedule_id, "now": self.codec.moment(now), "reason": reason}
        with self.driver.write() as session:
            row = session.row("pause_schedule", params)
            if row is not None and audit is not None:
                write_entry(session, audit)
        return None if row is None else self._schedule(row)

    def resume(self, schedule_id: int, *, next_fire_at: datetime | None) -> Schedule | None:
        params = {"id": schedule_id, "next_fire_at": self._moment(next_fire_at)}
        with self.driver.write() as session:
            row = session.row("resume_schedule", params)
        return None if row is None else self._schedule(row)

    def delete(self, schedule_id: int, *, now: datetime) -> bool:
        params = {"id": schedule_id, "now": self.codec.moment(now)}
        with self.driver.write() as session:
            return session.row("delete_schedule", params) is not None

    def recipients(self, schedule_id: int) -> list[Recipient]:
        with self.driver.read() as session:
            rows = session.rows("schedule_recipients", {"schedule_id": schedule_id})
        return [self.codec.record(Recipient, row) for row in rows]

    def recipient(self, schedule_id: int, person: str) -> Recipient | None:
        params = {"schedule_id": schedule_id, "person": person}
        with self.driver.read() as session:
            row = session.row("schedule_recipient", params)
        return None if row is None else self.codec.record(Recipient, row)

    def add_recipient(
        self, schedule_id: int, person: str, *, added_by: str, audit: AuditEntry | None = None
    ) -> tuple[Recipient, bool]:
        """The recipient and True when added now; as they were added before and False."""
        params = {"schedule_id": schedule_id, "person": person, "added_by": added_by}
        with self.driver.write() as session:
            row = session.row("add_schedule_recipient", params)
            if row is None:
                earlier = session.row("schedule_recipient", params)
                if earlier is None:
                    raise StoreError(f"schedule {schedule_id} has no recipient {person!r}")
                return self.codec.record(Recipient, earlier), False
            if audit is not None:
                write_entry(session, audit)
        return self.codec.record(Recipient, row), True

    def remove_recipient(
        self, schedule_id: int, person: str, *, audit: AuditEntry | None = None
    ) -> bool:
        """False when they were no recipient of it."""
        params = {"schedule_id": schedule_id, "person": person}
        with self.driver.write() as session:
            removed = session.row("remove_schedule_recipient", params) is not None
            if removed and audit is not None:
                write_entry(session, audit)
        return removed

    def channels(self, schedule_id: int) -> list[ScheduleChannel]:
        with self.driver.read() as session:
            rows = session.rows("schedule_channels", {"schedule_id": schedule_id})
        return [self.codec.record(ScheduleChannel, row) for row in rows]

    def add_channel(
        self, schedule_id: int, channel_id: int, *, added_by: str, audit: AuditEntry | None = None
    ) -> tuple[ScheduleChannel, bool]:
        """The schedule's channel and True when added now; as it was added before and False."""
        params = {"schedule_id": schedule_id, "channel_id": channel_id, "added_by": added_by}
        with self.driver.write() as session:
            row = session.row("add_schedule_channel", params)
            if row is None:
                earlier = session.row("schedule_channel", params)
                if earlier is None:
                    raise StoreError(f"schedule {schedule_id} has no chat channel {channel_id}")
                return self.codec.record(ScheduleChannel, earlier), False
            if audit is not None:
                write_entry(session, audit)
        return self.codec.record(ScheduleChannel, row), True

    def remove_channel(
        self, schedule_id: int, channel_id: int, *, audit: AuditEntry | None = None
    ) -> bool:
        """False when the channel was not one of the schedule's."""
        params = {"schedule_id": schedule_id, "channel_id": channel_id}
        with self.driver.write() as session:
            removed = session.row("remove_schedule_channel", params) is not None
            if removed and audit is not None:
                write_entry(session, audit)
        return removed

    def addresses(self, schedule_id: int) -> list[ScheduleAddress]:
        with self.driver.read() as session:
            rows = session.rows("schedule_addresses", {"schedule_id": schedule_id})
        return [self.codec.record(ScheduleAddress, row) for row in rows]

    def address(self, schedule_id: int, address: str) -> ScheduleAddress | None:
        """The outside address of a schedule not deleted, or None."""
        params = {"schedule_id": schedule_id, "address": address}
        with self.driver.read() as session:
            row = session.row("schedule_address", params)
        return None if row is None else self.codec.record(ScheduleAddress, row)

    def person_at(self, address: str) -> str | None:
        """The person of this service (not revoked) whose address `address` (lower case) is."""
        with self.driver.read() as session:
            row = session.row("person_at_address", {"address": address})
        return None if row is None else str(row["name"])

    def add_address(
        self,
        schedule_id: int,
        address: str,
        *,
        attach_max_bytes: int | None,
        attach_gzip: bool,
        added_by: str,
        audit: AuditEntry | None = None,
    ) -> tuple[ScheduleAddress, bool]:
        """The outside address and True when added now; False when it was one already (what
        it gets attached is set again)."""
        params = {
            "schedule_id": schedule_id,
            "address": address,
            "attach_max_bytes": attach_max_bytes,
            "attach_gzip": int(attach_gzip),
            "added_by": added_by,
        }
        with self.driver.write() as session:
            row = session.row("add_schedule_address", params)
            added = row is not None
            if row is None:
                row = session.row("set_schedule_address", params)
                if row is None:
                    raise StoreError(f"schedule {schedule_id} has no address {address!r}")
            if audit is not None:
                write_entry(session, audit)
        return self.codec.record(ScheduleAddress, row), added

    def remove_address(
        self, schedule_id: int, address: str, *, audit: AuditEntry | None = None
    ) -> bool:
        """False when the address was not one of the schedule's."""
        params = {"schedule_id": schedule_id, "address": address}
        with self.driver.write() as session:
            removed = session.row("remove_schedule_address", params) is not None
            if removed and audit is not None:
                write_entry(session, audit)
        return removed

    def due(self, now: datetime, limit: int = 50) -> list[Schedule]:
        with self.driver.read() as session:
            rows = session.rows("due_schedules", {"now": self.codec.moment(now), "limit": limit})
        return [self._schedule(row) for row in rows]

    def take(
        self,
        schedule: Schedule,
        *,
        scheduled_for: datetime,
        next_fire_at: datetime | None,
        missed: int,
        fired_by: str,
        fired_at: datetime,
    ) -> Firing | None:
        """Move a due schedule on and record its firing, in one transaction; None when another
        process moved it first."""
        if schedule.next_fire_at is None:
            return None
        with self.driver.write() as session:
            moved = session.row(
                "advance_schedule",
                {
                    "id": schedule.id,
                    "expected": self.codec.moment(schedule.next_fire_at),
                    "next_fire_at": self._moment(next_fire_at),
                },
            )
            if moved is None:
                return None
            row = session.row(
                "record_firing",
                self._firing_key(schedule.id, scheduled_for)
                | {
                    "fired_at": self.codec.moment(fired_at),
                    "fired_by": fired_by,
                    "manual": False,
                    "missed": missed,
                },
            )
        return None if row is None else self._firing(row)

    def record_manual(self, schedule_id: int, *, now: datetime, fired_by: str) -> Firing:
        """A "run now" firing at `now`."""
        params = self._firing_key(schedule_id, now) | {
            "fired_at": self.codec.moment(now),
            "fired_by": fired_by,
            "manual": True,
            "missed": 0,
        }
        with self.driver.write() as session:
            row = session.row("record_firing", params)
        if row is None:
            raise StoreError(f"schedule {schedule_id} fired at this very instant already")
        return self._firing(row)

    def settle_job(self, firing: Firing, *, job_id: int, query_hash: str) -> bool:
        params = self._firing_key(firing.schedule_id, firing.scheduled_for) | {
            "job_id": job_id,
            "query_hash": query_hash,
        }
        with self.driver.write() as session:
            return session.row("settle_firing_job", params) is not None

    def settle_refusal(self, firing: Firing, *, code: str, message: str) -> bool:
        params = self._firing_key(firing.schedule_id, firing.scheduled_for) | {
            "refusal_code": code,
            "refusal": message,
        }
        with self.driver.write() as session:
            return session.row("settle_firing_refusal", params) is not None

    def unsettled(self, *, before: datetime, limit: int = 50) -> list[Firing]:
        """Firings recorded before `before` that have neither a job nor a refusal."""
        params = {"before": self.codec.moment(before), "limit": limit}
        with self.driver.read() as session:
            rows = session.rows("unsettled_firings", params)
        return [self._firing(row) for row in rows]

    def firings(self, schedule_id: int, limit: int = 20) -> list[Firing]:
        with self.driver.read() as session:
            rows = session.rows("firings_of_schedule", {"schedule_id": schedule_id, "limit": limit})
        return [self._firing(row) for row in rows]

    def firing_of_job(self, job_id: int) -> Firing | None:
        with self.driver.read() as session:
            row = session.row("firing_of_job", {"job_id": job_id})
        return None if row is None else self._firing(row)

    def totals(self) -> ScheduleTotals:
        with self.driver.read() as session:
            return self.read_totals(session)

    def read_totals(self, session: Any) -> ScheduleTotals:
        row = session.row("schedule_totals")
        if row is None:
            return ScheduleTotals()
        names = ("firing", "paused", "ended", "firings", "firing_jobs", "firing_refusals")
        counts = {name: int(row[name] or 0) for name in (*names, "missed")}
        return ScheduleTotals(**counts)

    def _firing_key(self, schedule_id: int, scheduled_for: datetime) -> dict[str, Any]:
        return {"schedule_id": schedule_id, "scheduled_for": self.codec.moment(scheduled_for)}

    def _moment(self, moment: datetime | None) -> Any:
        return None if moment is None else self.codec.moment(moment)

    def _schedule(self, row: Row | None) -> Schedule:
        if row is None:
            raise StoreError("the database returned no schedule row")
        schedule: Schedule = self.codec.record(Schedule, row)
        return schedule

    def _firing(self, row: Row) -> Firing:
        firing: Firing = self.codec.record(Firing, row)
        return firing
