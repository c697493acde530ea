"""Counts for /metrics, read from the database at scrape time in one snapshot, so every
process agrees and the figures agree with each other."""

from __future__ import annotations

from typing import Any

from reportexport.core.records import MetricsSnapshot
from reportexport.store.caps import SourceCaps
from reportexport.store.driver import Driver, Row
from reportexport.store.schedules import ScheduleStore


class Metrics:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.caps = SourceCaps(driver)
        self.schedules = ScheduleStore(driver)

    def metrics_snapshot(self) -> MetricsSnapshot:
        with self.driver.read() as session:
            totals = session.row("export_totals")
            effects = session.rows("side_effect_totals")
            by_status = session.rows("jobs_by_status")
            edges = session.rows("transitions_by_edge")
            waiting = session.row("waiting_owners")
            oldest = session.row("oldest_queued")
            caps = self.caps.read(session)
            schedules = self.schedules.read_totals(session)
        return MetricsSnapshot(
            jobs_by_status={r["status"]: int(r["n"]) for r in by_status},
            transitions={
                (r["from_status"], r["to_status"], r["actor"]): int(r["n"]) for r in edges
            },
            exports=int(_value(totals, "n") or 0),
            export_rows=int(_value(totals, "rows_total") or 0),
            export_bytes=int(_value(totals, "bytes_total") or 0),
            export_seconds=float(_value(totals, "seconds_total") or 0),
            effect_attempts={r["effect"]: int(r["attempts"]) for r in effects},
            effects_given_up={r["effect"]: int(r["given_up"]) for r in effects},
            source_caps=tuple(caps),
            owners_waiting=int(_value(waiting, "owners") or 0),
            longest_owner_queue=int(_value(waiting, "longest") or 0),
            oldest_queued_seconds=max(0.0, float(_value(oldest, "seconds") or 0.0)),
            schedules=schedules,
        )


def _value(row: Row | None, name: str) -> Any:
    return None if row is None else row[name]
