"""Heartbeats: each process replaces its own row at every beat; everyone can read them all."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from reportexport.records import Heartbeat


class HeartbeatQueries:
    text_encoded: bool

    def _fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        raise NotImplementedError

    def _timestamp(self, moment: datetime) -> Any:
        raise NotImplementedError

    def beat(self, heartbeat: Heartbeat) -> None:
        """Record `heartbeat` as its process's latest (seen now, by the database's clock)."""
        moment = self._timestamp
        self._fetch(
            "beat",
            {
                "process": heartbeat.process,
                "host": heartbeat.host,
                "pid": heartbeat.pid,
                "kind": heartbeat.kind,
                "started_at": moment(heartbeat.started_at),
                "active_jobs": json.dumps(list(heartbeat.active_jobs)),
                "last_claim_at": _or_none(moment, heartbeat.last_claim_at),
                "claims_paused_until": _or_none(moment, heartbeat.claims_paused_until),
                "pause_reason": heartbeat.pause_reason,
                "paused_sources": json.dumps(list(heartbeat.paused_sources)),
            },
        )

    def heartbeats(self) -> list[Heartbeat]:
        """Every process's last heartbeat, most recently seen first."""
        return [self._heartbeat(row) for row in self._fetch("heartbeats", {})]

    def forget_heartbeats(self, *, before: datetime) -> None:
        self._fetch("forget_heartbeats", {"before": self._timestamp(before)})

    def _heartbeat(self, row: Mapping[str, Any]) -> Heartbeat:
        def when(value: Any) -> datetime | None:
            return None if value is None else _moment(value)

        def listed(value: Any) -> list[Any]:
            return list(json.loads(value) if isinstance(value, str) else value)

        return Heartbeat(
            process=row["process"],
            host=row["host"],
            pid=int(row["pid"]),
            kind=row["kind"],
            started_at=_moment(row["started_at"]),
            active_jobs=tuple(int(job) for job in listed(row["active_jobs"])),
            last_claim_at=when(row["last_claim_at"]),
            claims_paused_until=when(row["claims_paused_until"]),
            pause_reason=row["pause_reason"],
            paused_sources=tuple(str(name) for name in listed(row["paused_sources"])),
            seen_at=when(row["seen_at"]),
            age_seconds=float(row["age_seconds"]),
        )


def _moment(value: Any) -> datetime:
    """A timestamp as PostgreSQL gives it, or as SQLite keeps it (ISO text)."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _or_none(convert: Any, moment: datetime | None) -> Any:
    return None if moment is None else convert(moment)
