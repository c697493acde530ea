"""The one sanctioned way to remove rows: purge terminal jobs finished before a date.

Jobs are never deleted in normal operation (the database refuses it). Parameters may hold
personal data, though, so a purge removes terminal jobs finished before `before` with their
history, side-effect rows, delivery records and download records, in one transaction that
first writes its own record; while that record is open, the database's delete guards let this
transaction remove exactly those rows (see migrations 0009). On PostgreSQL only the tables'
owner holds DELETE; the service role cannot purge.
"""

from __future__ import annotations

import getpass
from datetime import datetime

from reportexport.core.records import Purge
from reportexport.store.driver import Driver


class Retention:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def purge(self, before: datetime, *, person: str) -> Purge:
        """Remove terminal jobs finished before `before`; the purge's record, with counts."""
        if before.tzinfo is None:
            raise ValueError("a purge's date needs a time zone")
        if not person.strip():
            raise ValueError("a purge names the person who asked for it")
        params = {"before": self.codec.moment(before)}
        with self.driver.write() as session:
            started = session.row(
                "begin_purge", {**params, "person": person, "os_user": _os_user()}
            )
            assert started is not None
            counts = {
                "deliveries": session.count("purge_deliveries", params)
                + session.count("purge_destination_deliveries", params),
                "downloads": session.count("purge_downloads", params),
                "history_rows": session.count("purge_history", params),
                "side_effect_rows": session.count("purge_side_effects", params),
                "schedule_firings": session.count("purge_firings", params),
                "reruns_unlinked": session.count("purge_unlink_reruns", params),
                "jobs": session.count("purge_jobs", params),
            }
            row = session.row("complete_purge", {"id": started["id"], **counts})
        purge: Purge = self.codec.record(Purge, row)  # type: ignore[arg-type]
        return purge

    def purgeable(self, before: datetime) -> int:
        """How many jobs a purge with this date would remove."""
        with self.driver.read() as session:
            row = session.row("purgeable", {"before": self.codec.moment(before)})
        return int(row["jobs"]) if row else 0

    def purges(self) -> list[Purge]:
        """Every purge ever made, newest first."""
        with self.driver.read() as session:
            return [self.codec.record(Purge, row) for row in session.rows("purges")]


def _os_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None
