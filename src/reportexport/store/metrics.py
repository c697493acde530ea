"""Counts for /metrics, read from the database at scrape time, so every process agrees."""

from __future__ import annotations

from reportexport.records import MetricsSnapshot
from reportexport.store.users import UsersQueries


class MetricsQueries(UsersQueries):
    def metrics_snapshot(self) -> MetricsSnapshot:
        (totals,) = self._fetch("export_totals", {})
        effects = self._fetch("side_effect_totals", {})
        (oldest,) = self._fetch("oldest_queued", {})
        return MetricsSnapshot(
            jobs_by_status={r["status"]: int(r["n"]) for r in self._fetch("jobs_by_status", {})},
            transitions={
                (r["from_status"], r["to_status"], r["actor"]): int(r["n"])
                for r in self._fetch("transitions_by_edge", {})
            },
            exports=int(totals["n"]),
            export_rows=int(totals["rows_total"]),
            export_bytes=int(totals["bytes_total"]),
            export_seconds=float(totals["seconds_total"]),
            effect_attempts={r["effect"]: int(r["attempts"]) for r in effects},
            effects_given_up={r["effect"]: int(r["given_up"]) for r in effects},
            oldest_queued_seconds=max(0.0, float(oldest["seconds"] or 0.0)),
        )
