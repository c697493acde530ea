"""Each source's max_concurrent, held by the database for every worker on every machine.

A process publishes its catalog's caps when it starts; the last one to start wins, and a
change of what another process had set is returned (and logged by the caller), since two
catalogs that disagree are worth a look. A claim takes one of the source's slots or leaves the
job queued (see migrations 0008), so no number of workers runs more exports of a source at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from reportexport.core.records import CapChange, SourceCap
from reportexport.store.driver import Driver, Session


class SourceCaps:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def publish(self, caps: Mapping[str, int], *, process: str) -> list[CapChange]:
        """Make `caps` (source -> max_concurrent) the database's; what they changed that
        another process had set."""
        changes = []
        with self.driver.write() as session:
            session.serialise("source_caps")
            for source, cap in sorted(caps.items()):
                change = self._publish(session, source, cap, process)
                if change is not None:
                    changes.append(change)
        return changes

    def _publish(self, session: Session, source: str, cap: int, process: str) -> CapChange | None:
        if cap < 1:
            raise ValueError(f"max_concurrent of {source!r} must be at least 1, not {cap}")
        params = {"source": source, "max_concurrent": cap, "process": process}
        before = session.row("source_cap", params)
        session.rows("set_source_cap", params)
        slots = session.rows("source_slots_of", params)
        top = max((row["slot"] for row in slots), default=0)
        for number in range(top + 1, top + 1 + cap - len(slots)):
            session.rows("add_source_slot", {"source": source, "slot": number})
        free = sorted((row["slot"] for row in slots if row["job_id"] is None), reverse=True)
        for number in free[: max(0, len(slots) - cap)]:
            session.rows("remove_free_source_slot", {"source": source, "slot": number})
        if before is None or before["max_concurrent"] == cap:
            return None
        return CapChange(
            source=source,
            previous=int(before["max_concurrent"]),
            previous_set_by=before["set_by"],
            now=cap,
        )

    def caps(self) -> list[SourceCap]:
        """Every capped source: its cap, who set it when, and how many of its slots are taken."""
        with self.driver.read() as session:
            return self.read(session)

    def read(self, session: Session) -> list[SourceCap]:
        return [
            SourceCap(
                source=row["source"],
                max_concurrent=int(row["max_concurrent"]),
                set_by=row["set_by"],
                set_at=self.codec.moment_from(row["set_at"]),
                running=int(row["running"]),
            )
            for row in session.rows("source_caps")
        ]
