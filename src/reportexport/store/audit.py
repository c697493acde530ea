"""The operators' audit: an append-only record of who did what to which object, and when.

A role that carries out an operator's action writes its entry with `write_entry` in the
action's own transaction, so an action is recorded exactly when it happened; the table refuses
UPDATE and DELETE (and, on PostgreSQL, TRUNCATE) for every role. `OperatorAudit` reads it back.
"""

from __future__ import annotations

import dataclasses

from reportexport.core.records import AuditEntry, AuditFilter, AuditPage, AuditRecord
from reportexport.store.driver import Driver, Session


def write_entry(session: Session, entry: AuditEntry, *, created_id: object = None) -> None:
    """Record `entry` in the open transaction; `created_id` names the row the action made
    when the entry could not know it beforehand."""
    if not entry.object_id and created_id is not None:
        entry = dataclasses.replace(entry, object_id=str(created_id))
    session.rows(
        "record_operator_action",
        {
            "person": entry.person,
            "action": entry.action,
            "object_kind": entry.object_kind,
            "object_id": entry.object_id,
            "detail": entry.detail,
        },
    )


class OperatorAudit:
    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.codec = driver.codec

    def record(self, entry: AuditEntry) -> None:
        """An action that changed nothing in the store (a test event sent), recorded alone."""
        with self.driver.write() as session:
            write_entry(session, entry)

    def entries(self, where: AuditFilter) -> AuditPage:
        """The audit newest first, `where.limit` at a time."""
        params = {
            "person": where.person,
            "action": where.action,
            "object_kind": where.object_kind,
            "object_id": where.object_id,
            "before": where.before,
            "limit": where.limit + 1,
        }
        with self.driver.read() as session:
            rows = session.rows("operator_audit_page", params)
        records = tuple(self.codec.record(AuditRecord, row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return AuditPage(records=records, next_cursor=records[-1].id if more and records else None)
