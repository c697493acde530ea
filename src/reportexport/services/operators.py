"""What operators look at: side effects given up or not yet completed, the processes'
heartbeats, and the audit of what operators did. Operators only: anyone else is refused.

The actions these pages lead to live where their rules do: a re-drive and a cancel in the
export service, endpoints in the webhook service, people and tokens in the people service; each
records itself in the audit, in its own transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from reportexport.core.records import (
    AuditAction,
    AuditFilter,
    AuditObject,
    AuditPage,
    AuditRecord,
    EffectFilter,
    EffectPage,
    Heartbeat,
    SourceCap,
)
from reportexport.core.text import quoted, unsafe_text
from reportexport.services.errors import ForbiddenError, InvalidInputError
from reportexport.services.exports import MAX_ID, MAX_PAGE, ExportService, Person
from reportexport.store import EffectStore, Heartbeats, OperatorAudit, SourceCaps

# A process beats every few seconds (5 by default); one silent this long has stopped or hangs.
STALE_AFTER_SECONDS = 30.0
AUDIT_ACTIONS: tuple[str, ...] = get_args(AuditAction)
AUDIT_OBJECTS: tuple[str, ...] = get_args(AuditObject)


@dataclass(frozen=True, kw_only=True)
class Process:
    """A process's last heartbeat, and whether it is too old to trust (a process that stopped
    cleanly is not: it said so)."""

    heartbeat: Heartbeat
    stale: bool

    @property
    def stopped(self) -> bool:
        return self.heartbeat.stopped_at is not None


@dataclass(frozen=True, kw_only=True)
class Workers:
    processes: list[Process]
    caps: list[SourceCap]
    stale_after_seconds: float


@dataclass(frozen=True, kw_only=True)
class Overview:
    """The operators' first page: what needs a look, in counts, and the latest actions."""

    given_up: int
    waiting: int
    processes: int
    stale: int
    recent: tuple[AuditRecord, ...]


class OperatorService:
    def __init__(
        self,
        *,
        exports: ExportService,
        effects: EffectStore,
        heartbeats: Heartbeats,
        caps: SourceCaps,
        audit: OperatorAudit,
        stale_after_seconds: float = STALE_AFTER_SECONDS,
    ) -> None:
        self.exports = exports
        self.effects = effects
        self.heartbeats = heartbeats
        self.caps = caps
        self.audit_log = audit
        self.stale_after_seconds = stale_after_seconds

    def overview(self, person: Person) -> Overview:
        _operator(person)
        given_up, waiting = self.effects.side_effect_counts()
        processes = self.workers(person).processes
        return Overview(
            given_up=given_up,
            waiting=waiting,
            processes=len(processes),
            stale=sum(p.stale for p in processes),
            recent=self.audit_log.entries(AuditFilter(limit=5)).records,
        )

    def side_effects(
        self,
        person: Person,
        *,
        given_up: bool,
        search: str | None = None,
        owner: str | None = None,
        cursor: int | None = None,
        oldest_first: bool = False,
        limit: int = 50,
    ) -> EffectPage:
        """Side-effect rows given up, or neither completed nor given up, with their jobs.

        `search` finds them by their job's id (`42`, `#42`) or words of its saved query's
        title; `owner` is the job's owner.
        """
        _operator(person)
        _plain("search", search)
        _plain("owner", owner)
        _cursor_and_limit(cursor, limit)
        job_id, titled = self.exports.search_terms(search)
        return self.effects.side_effects(
            EffectFilter(
                given_up=given_up,
                owner=owner or None,
                job_id=job_id,
                saved_queries=titled,
                cursor=cursor,
                oldest_first=oldest_first,
                limit=limit,
            )
        )

    def workers(self, person: Person) -> Workers:
        """Every process's last heartbeat, most recently seen first, stale ones (silent, not
        stopped) marked; and
        each source's cap with its slots taken."""
        _operator(person)
        limit = self.stale_after_seconds
        processes = [
            Process(
                heartbeat=beat,
                stale=beat.stopped_at is None and (beat.age_seconds or 0.0) > limit,
            )
            for beat in self.heartbeats.heartbeats()
        ]
        return Workers(processes=processes, caps=self.caps.caps(), stale_after_seconds=limit)

    def audit(
        self,
        viewer: Person,
        *,
        person: str | None = None,
        action: str | None = None,
        object_kind: str | None = None,
        object_id: str | None = None,
        before: int | None = None,
        limit: int = 50,
    ) -> AuditPage:
        """What operators did, newest first: by whom (`person`), which action, which object."""
        _operator(viewer)
        for field, value in (("person", person), ("object_id", object_id)):
            _plain(field, value)
        if action and action not in AUDIT_ACTIONS:
            raise InvalidInputError(
                "action", "choices", f"{quoted(action)} is not one of {', '.join(AUDIT_ACTIONS)}"
            )
        if object_kind and object_kind not in AUDIT_OBJECTS:
            raise InvalidInputError(
                "object_kind",
                "choices",
                f"{quoted(object_kind)} is not one of {', '.join(AUDIT_OBJECTS)}",
            )
        _cursor_and_limit(before, limit)
        return self.audit_log.entries(
            AuditFilter(
                person=person or None,
                action=action or None,
                object_kind=object_kind or None,
                object_id=object_id or None,
                before=before,
                limit=limit,
            )
        )


def _operator(person: Person) -> None:
    if not person.is_operator:
        raise ForbiddenError("only operators see this")


def _plain(field: str, value: str | None) -> None:
    if value is not None and (unsafe_text(value) is not None or len(value) > 200):
        raise InvalidInputError(field, "text", f"{field} {unsafe_text(value) or 'is too long'}")


def _cursor_and_limit(cursor: int | None, limit: int) -> None:
    if cursor is not None and not 1 <= cursor <= MAX_ID:
        raise InvalidInputError("cursor", "range", f"the cursor must be 1 to {MAX_ID}")
    if not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError("limit", "range", f"limit must be 1 to {MAX_PAGE}")
