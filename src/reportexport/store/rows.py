"""Rows to records: SQLite carries timestamps and JSON as text, PostgreSQL as values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import fields
from datetime import datetime
from typing import Any

from reportexport.core.records import (
    AuditRecord,
    ChatChannel,
    ClaimedJob,
    Delivery,
    Firing,
    Group,
    HistoryEntry,
    Job,
    Purge,
    Recipient,
    Schedule,
    ScheduleAddress,
    ScheduleChannel,
    SideEffect,
    User,
    WebhookEndpoint,
)

RECORDS = (
    Job,
    ClaimedJob,
    HistoryEntry,
    SideEffect,
    WebhookEndpoint,
    Delivery,
    ChatChannel,
    User,
    Purge,
    Schedule,
    Recipient,
    ScheduleChannel,
    ScheduleAddress,
    Firing,
    AuditRecord,
    Group,
)
TIMESTAMP_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(f.name for f in fields(cls) if "datetime" in str(f.type)) for cls in RECORDS
}
JSON_FIELDS = frozenset({"parameters", "options", "columns", "column_types"})


FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in RECORDS
}


def from_row(cls: type[Any], row: Mapping[str, Any], *, text_encoded: bool) -> Any:
    """Build a record from a row; SQLite rows carry timestamps and JSON as text."""
    values = {name: row[name] for name in FIELD_NAMES[cls]}
    if text_encoded:
        for name in TIMESTAMP_FIELDS[cls]:
            if values[name] is not None:
                values[name] = datetime.fromisoformat(values[name])
        for name in JSON_FIELDS & values.keys():
            if values[name] is not None:
                values[name] = json.loads(values[name])
    for name in ("columns", "column_types"):
        if values.get(name) is not None:
            values[name] = tuple(values[name])
    for name in ("manual", "notify_always", "schedules_only", "attach_gzip"):  # SQLite: 0 or 1
        if name in values:
            values[name] = bool(values[name])
    return cls(**values)
