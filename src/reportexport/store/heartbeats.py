"""Heartbeats: each process replaces its own row at every beat; everyone can read them all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reportexport.core.records import Heartbeat
from reportexport.store.driver import Driver, Row


class Heartbeats:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def beat(self, heartbeat: Heartbeat) -> None:
        """Record `heartbeat` as its process's latest (seen now, by the database's clock)."""
        codec = self.codec
        params = {
            "process": heartbeat.process,
            "host": heartbeat.host,
            "pid": heartbeat.pid,
            "kind": heartbeat.kind,
            "started_at": codec.moment(heartbeat.started_at),
            "active_jobs": codec.json(list(heartbeat.active_jobs)),
            "last_claim_at": self._moment(heartbeat.last_claim_at),
            "last_poll_at": self._moment(heartbeat.last_poll_at),
            "claims_paused_until": self._moment(heartbeat.claims_paused_until),
            "pause_reason": heartbeat.pause_reason,
            "paused_sources": codec.json(list(heartbeat.paused_sources)),
        }
        with self.driver.write() as session:
            session.rows("beat", params)

    def stopped(self, process: str) -> None:
        """Record that `process` stopped cleanly (now, by the database's clock)."""
        with self.driver.write() as session:
            session.rows("stop_heartbeat", {"process": process})

    def heartbeats(self) -> list[Heartbeat]:
        """Every process's last heartbeat, most recently seen first."""
        with self.driver.read() as session:
            rows = session.rows("heartbeats")
        return [self._heartbeat(row) for row in rows]

    def forget_heartbeats(self, *, before: datetime) -> None:
        """Drop the rows of processes not seen since `before`."""
        with self.driver.write() as session:
            session.rows("forget_heartbeats", {"before": self.codec.moment(before)})

    def _moment(self, moment: datetime | None) -> Any:
        return None if moment is None else self.codec.moment(moment)

    def _heartbeat(self, row: Row) -> Heartbeat:
        codec = self.codec

        def when(value: Any) -> datetime | None:
            return None if value is None else codec.moment_from(value)

        return Heartbeat(
            process=row["process"],
            host=row["host"],
            pid=int(row["pid"]),
            kind=row["kind"],
            started_at=codec.moment_from(row["started_at"]),
            active_jobs=tuple(int(job) for job in codec.json_from(row["active_jobs"])),
            last_claim_at=when(row["last_claim_at"]),
            last_poll_at=when(row["last_poll_at"]),
            claims_paused_until=when(row["claims_paused_until"]),
            pause_reason=row["pause_reason"],
            paused_sources=tuple(str(name) for name in codec.json_from(row["paused_sources"])),
            seen_at=when(row["seen_at"]),
            stopped_at=when(row["stopped_at"]),
            age_seconds=float(row["age_seconds"]),
        )
