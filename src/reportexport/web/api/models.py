"""What the API sends and receives. Status, actor and side-effect words are the fixture's
typed names (`reportexport.core.lifecycle`), never retyped: the schema's enums come from them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.config import JsonDict
from pydantic_core import PydanticCustomError

from reportexport.core.lifecycle import Actor, Effect, Status
from reportexport.core.parameter_schema import INSTANT_PATTERN
from reportexport.core.parameters import json_described, json_number
from reportexport.core.records import AuditAction, AuditObject
from reportexport.core.text import STORABLE_PATTERNS

if TYPE_CHECKING:
    from reportexport.core.catalog import SavedQuery
    from reportexport.core.records import (
        AuditRecord,
        Delivery,
        Firing,
        Group,
        Job,
        PersonAccess,
        Recipient,
        ScheduleAddress,
        WebhookEndpoint,
    )
    from reportexport.services.chat import ChannelView
    from reportexport.services.exports import JobView
    from reportexport.services.schedules import Preview as SchedulePreview
    from reportexport.services.schedules import ScheduleChannelView, ScheduleView
    from reportexport.services.webhooks import TestDelivery

JobStatus = Status


class SavedQueryOut(BaseModel):
    name: str
    title: str
    description: str
    source: str
    parameters: list[dict[str, Any]]

    @classmethod
    def of(cls, query: SavedQuery) -> SavedQueryOut:
        return cls(
            name=query.name,
            title=query.title,
            description=query.description,
            source=query.source,
            parameters=[json_described(spec.describe()) for spec in query.parameters.values()],
        )


NOTIFY = (
    "e-mail me when this export ends (succeeded or failed), at the address an operator set "
    "for me; refused with 422 while there is none, or when e-mail may not go to its domain "
    "(email_domains)"
)


class ExportIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    saved_query: str = Field(min_length=1, max_length=100)
    parameters: dict[str, Any] = Field(default_factory=dict)
    notify: bool = Field(default=False, description=NOTIFY)


class JobOut(BaseModel):
    id: int
    owner: str
    saved_query: str
    title: str | None
    status: JobStatus
    parameters: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    rows_written: int
    bytes_written: int
    rows: int | None
    bytes: int | None
    sha256: str | None
    columns: list[str] | None
    column_types: list[str] | None = Field(
        description="the type of each column as written: integer, decimal(p,s), float, boolean, "
        "date, timestamp(n), timestamptz(n) (n fractional digits) or text"
    )
    dialect_version: int | None = Field(description="the version of the CSV dialect")
    file_name: str | None
    object_expires_at: datetime | None
    error_code: str | None
    error_message: str | None
    rerun_of: int | None
    requested_by: str | None = Field(description="who asked for the job, if not its owner")
    schedule_id: int | None = Field(default=None, description="the schedule that made the job")
    notify: bool = Field(
        default=False, description="an e-mail goes to the owner when the export ends"
    )

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            owner=job.owner,
            saved_query=job.saved_query,
            title=job.options.get("title"),
            status=job.status,
            parameters=_json_parameters(job),
            created_at=job.created_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            rows_written=job.rows_written,
            bytes_written=job.bytes_written,
            rows=job.object_rows,
            bytes=job.object_bytes,
            sha256=job.object_sha256,
            columns=list(job.columns) if job.columns is not None else None,
            column_types=list(job.column_types) if job.column_types is not None else None,
            dialect_version=job.dialect_version,
            file_name=job.file_name,
            object_expires_at=job.object_expires_at,
            error_code=job.error_code,
            error_message=job.error_message,
            rerun_of=job.rerun_of,
            requested_by=job.requested_by if job.requested_by != job.owner else None,
            schedule_id=job.schedule_id,
            notify=job.options.get("notify") is True,
        )


def _json_parameters(job: Job) -> dict[str, Any]:
    """A job's parameters as JSON carries them: a number parameter (kept as exact text on the
    job) as a JSON number, every other value as the job keeps it."""
    numbers = {
        spec.get("name")
        for spec in job.options.get("parameter_specs") or ()
        if isinstance(spec, dict) and spec.get("type") == "number"
    }
    return {
        name: json_number(value) if name in numbers and isinstance(value, str) else value
        for name, value in job.parameters.items()
    }


class ColumnOut(BaseModel):
    name: str
    type: str | None = Field(description="as in JobOut.column_types; null for dialect 1 files")


class CsvSchemaOut(BaseModel):
    """How to read a job's CSV back: its dialect, and each column's name and type."""

    file_name: str | None
    dialect_version: int | None
    encoding: str
    bom: bool
    gzip: bool
    delimiter: str
    quote: str
    line_ending: str
    header: bool
    null: str = Field(description="what NULL looks like; empty: an empty unquoted field")
    time_zone: str
    spreadsheet_safe: bool
    rows: int | None
    columns: list[ColumnOut]


class TransitionOut(BaseModel):
    from_status: JobStatus
    to_status: JobStatus
    actor: Actor
    person: str | None
    reason: str | None
    worker: str | None
    at: datetime


class SideEffectOut(BaseModel):
    effect: Effect
    attempts: int
    next_attempt_at: datetime
    last_attempt_at: datetime | None
    last_error: str | None
    completed_at: datetime | None
    given_up_at: datetime | None


class DeliveryOut(BaseModel):
    """One destination of an announcement (a webhook endpoint, an e-mail address or a chat
    channel), fixed when the job ended, with its own attempts."""

    id: int
    job_id: int = Field(description="the job whose end it announces")
    effect: Effect
    endpoint_id: int | None = Field(description="the webhook endpoint; null for the others")
    address: str | None = Field(description="the e-mail address; null for the others")
    channel_id: int | None = Field(description="the chat channel; null for the others")
    attempts: int
    next_attempt_at: datetime | None = Field(
        description="when it is tried next; null once delivered or given up"
    )
    last_attempt_at: datetime | None
    last_status: int | None = Field(description="the last HTTP or SMTP status")
    last_error: str | None
    delivered_at: datetime | None
    given_up_at: datetime | None
    redrives: int

    @classmethod
    def of(cls, delivery: Delivery) -> DeliveryOut:
        return cls(
            id=delivery.id,
            job_id=delivery.job_id,
            effect=delivery.effect,
            endpoint_id=delivery.endpoint_id,
            address=delivery.address,
            channel_id=delivery.channel_id,
            attempts=delivery.attempts,
            next_attempt_at=delivery.next_attempt_at if delivery.waiting else None,
            last_attempt_at=delivery.last_attempt_at,
            last_status=delivery.last_status,
            last_error=delivery.last_error,
            delivered_at=delivery.delivered_at,
            given_up_at=delivery.given_up_at,
            redrives=delivery.redrives,
        )


class DownloadOut(BaseModel):
    person: str
    at: datetime


class FiringOut(BaseModel):
    """One scheduled time of a schedule: the job it made, or why it made none."""

    schedule_id: int
    scheduled_for: datetime
    fired_at: datetime
    manual: bool = Field(description="made by run now, not by the cron")
    missed: int = Field(description="earlier times skipped after downtime (fired once instead)")
    job_id: int | None
    query_hash: str | None = Field(description="the saved query's content hash the job ran")
    refusal_code: str | None = Field(
        description="why no job was made: max_active, max_recent, invalid_parameters, ..."
    )
    refusal: str | None

    @classmethod
    def of(cls, firing: Firing) -> FiringOut:
        return cls(
            schedule_id=firing.schedule_id,
            scheduled_for=firing.scheduled_for,
            fired_at=firing.fired_at,
            manual=firing.manual,
            missed=firing.missed,
            job_id=firing.job_id,
            query_hash=firing.query_hash,
            refusal_code=firing.refusal_code,
            refusal=firing.refusal,
        )


class JobDetailOut(BaseModel):
    job: JobOut
    history: list[TransitionOut]
    side_effects: list[SideEffectOut]
    deliveries: list[DeliveryOut] = Field(
        default_factory=list,
        description="where its announcements go: each destination with its own attempts",
    )
    downloads: list[DownloadOut] = Field(default_factory=list)
    firing: FiringOut | None = Field(
        default=None,
        description="the schedule's firing that created the job (creation is not a status "
        "change, so it is not in the history)",
    )

    @classmethod
    def of(cls, view: JobView) -> JobDetailOut:
        detail = view.detail
        return cls(
            firing=FiringOut.of(view.firing) if view.firing is not None else None,
            downloads=[DownloadOut(person=p, at=at) for p, at in view.downloads],
            deliveries=[DeliveryOut.of(d) for d in view.deliveries],
            job=JobOut.of(detail.job),
            history=[
                TransitionOut(
                    from_status=h.from_status,
                    to_status=h.to_status,
                    actor=h.actor,
                    person=h.person,
                    reason=h.reason,
                    worker=h.worker,
                    at=h.at,
                )
                for h in detail.history
            ],
            side_effects=[
                SideEffectOut(
                    effect=e.effect,
                    attempts=e.attempts,
                    next_attempt_at=e.next_attempt_at,
                    last_attempt_at=e.last_attempt_at,
                    last_error=e.last_error,
                    completed_at=e.completed_at,
                    given_up_at=e.given_up_at,
                )
                for e in detail.side_effects
            ],
        )


INSTANT = {"type": "string", "format": "date-time", "pattern": INSTANT_PATTERN}
RFC3339_EXAMPLE = "2027-01-31T18:00:00+01:00"
NULL = {"type": "null"}


def instant_text(value: Any) -> Any:
    """An instant comes as text (the schedule service reads it, as it reads a timestamp
    parameter); anything else is refused saying what is wanted."""
    if value is None or isinstance(value, str):
        return value
    raise PydanticCustomError(
        "rfc3339_date_time",
        "give an RFC 3339 date-time with its UTC offset ({example} or ...Z), not {shown}",
        {"example": RFC3339_EXAMPLE, "shown": repr(value)[:80]},
    )


# Free text as the service stores it: no NUL, no lone surrogate (refused with 422 naming the field).
STORABLE: JsonDict = {"allOf": [{"pattern": pattern} for pattern in STORABLE_PATTERNS]}


class ScheduleIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    saved_query: str = Field(min_length=1, max_length=100)
    parameters: dict[str, Any] = Field(
        default_factory=dict,
        description="values as for an export; a date or timestamp parameter may take "
        '{"relative": "yesterday"} (also "today", "N days ago", "start of this week", '
        '"start of last week", "end of last week", "start of this month", "start of last '
        'month", "end of last month", "start of this year", "start of last year", "end of last '
        'year"), evaluated in the time zone when the schedule fires',
    )
    cron: str = Field(
        min_length=9, max_length=200,
        description="minute hour day month weekday (or seconds first, six fields)",
        examples=["0 8 * * *"],
    )  # fmt: skip
    time_zone: str = Field(
        min_length=1, max_length=64, description="an IANA time zone", examples=["Europe/Paris"]
    )
    ends_at: Annotated[
        str | None, BeforeValidator(instant_text), WithJsonSchema({"anyOf": [INSTANT, NULL]})
    ] = Field(
        default=None,
        description="no firing after this moment: an RFC 3339 date-time with its UTC offset, "
        "in the future",
    )


class NextTimeOut(BaseModel):
    at: datetime = Field(description="the instant, in UTC")
    local: datetime = Field(description="the same instant in the schedule's time zone")


class ScheduleOut(BaseModel):
    id: int
    owner: str
    saved_query: str
    parameters: dict[str, Any]
    cron: str
    description: str = Field(description="the cron expression in words, with its time zone")
    time_zone: str
    ends_at: datetime | None
    next_fire_at: datetime | None = Field(description="None when paused or ended")
    next_times: list[NextTimeOut]
    paused_at: datetime | None
    pause_reason: str | None
    created_at: datetime
    created_by: str
    firings: list[FiringOut] = Field(description="the most recent firings, newest first")

    @classmethod
    def of(cls, view: ScheduleView) -> ScheduleOut:
        from zoneinfo import ZoneInfo

        schedule = view.schedule
        zone = ZoneInfo(schedule.time_zone)
        return cls(
            id=schedule.id,
            owner=schedule.owner,
            saved_query=schedule.saved_query,
            parameters=dict(schedule.parameters),
            cron=schedule.cron,
            description=view.description,
            time_zone=schedule.time_zone,
            ends_at=schedule.ends_at,
            next_fire_at=schedule.next_fire_at if schedule.paused_at is None else None,
            next_times=[NextTimeOut(at=t, local=t.astimezone(zone)) for t in view.next_times],
            paused_at=schedule.paused_at,
            pause_reason=schedule.pause_reason,
            created_at=schedule.created_at,
            created_by=schedule.created_by,
            firings=[FiringOut.of(f) for f in view.firings],
        )


class RecipientOut(BaseModel):
    """A person who gets a schedule's announcements by e-mail besides its owner, with a link to
    each export, which they may open while they may run its saved query themselves."""

    schedule_id: int
    person: str
    added_by: str
    added_at: datetime

    @classmethod
    def of(cls, recipient: Recipient) -> RecipientOut:
        return cls(
            schedule_id=recipient.schedule_id,
            person=recipient.person,
            added_by=recipient.added_by,
            added_at=recipient.added_at,
        )


class ScheduleAddressOut(BaseModel):
    """An e-mail address outside this service's people that gets a schedule's announcements:
    a download link signed for the link's lifetime, or the file attached."""

    schedule_id: int
    address: Annotated[str, Field(description="in lower case")]
    attach_max_bytes: Annotated[
        int | None,
        Field(description="the file is attached when it is at most this many bytes (after "
              "gzip with attach_gzip); null: a download link alone"),
    ]  # fmt: skip
    attach_gzip: bool
    added_by: Annotated[str, Field(description="the operator who added it")]
    added_at: datetime

    @classmethod
    def of(cls, added: ScheduleAddress) -> ScheduleAddressOut:
        return cls(
            schedule_id=added.schedule_id,
            address=added.address,
            attach_max_bytes=added.attach_max_bytes,
            attach_gzip=added.attach_gzip,
            added_by=added.added_by,
            added_at=added.added_at,
        )


class SchedulePreviewOut(BaseModel):
    """A cron expression in a time zone, read as a schedule would read it."""

    description: str = Field(description="the cron expression in words, with its time zone")
    time_zone: str
    next_times: list[NextTimeOut]
    shortest_gap_seconds: int | None = Field(
        description="the shortest gap between two consecutive firings over the next year "
        "(null when it fires once at most)"
    )
    min_period_seconds: int = Field(description="the shortest gap a schedule may have")
    period: str = Field(description="the two in a sentence")

    @classmethod
    def of(cls, preview: SchedulePreview) -> SchedulePreviewOut:
        from zoneinfo import ZoneInfo

        zone = ZoneInfo(preview.time_zone)
        gap = preview.shortest_gap
        return cls(
            description=preview.description,
            time_zone=preview.time_zone,
            next_times=[NextTimeOut(at=t, local=t.astimezone(zone)) for t in preview.next_times],
            shortest_gap_seconds=int(gap.total_seconds()) if gap is not None else None,
            min_period_seconds=int(preview.min_period.total_seconds()),
            period=preview.period,
        )


class JobPageOut(BaseModel):
    jobs: list[JobOut]
    next_cursor: int | None


class AuditEntryOut(BaseModel):
    id: int
    at: datetime
    person: str = Field(description="the operator who acted (`command line` for the shell)")
    action: AuditAction = Field(description="what they did")
    object_kind: AuditObject = Field(description="what kind of object they did it to")
    object_id: str = Field(description="`42/emit_done_webhook`, `42`, `3`, `alice`")
    detail: str | None

    @classmethod
    def of(cls, record: AuditRecord) -> AuditEntryOut:
        return cls(
            id=record.id,
            at=record.at,
            person=record.person,
            action=record.action,  # type: ignore[arg-type]  # written from AuditAction
            object_kind=record.object_kind,  # type: ignore[arg-type]
            object_id=record.object_id,
            detail=record.detail,
        )


class AuditPageOut(BaseModel):
    entries: list[AuditEntryOut] = Field(description="newest first")
    next_cursor: int | None = Field(description="`before` for the next page; None at the end")


class GroupIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(
        min_length=1, max_length=63, pattern=r"^[a-z0-9][a-z0-9._-]{0,62}$",
        description="lower-case letters, digits and . _ -; not `everyone`",
    )  # fmt: skip
    description: str = Field(default="", max_length=500, json_schema_extra=STORABLE)


class GroupOut(BaseModel):
    name: str
    description: str
    member_count: int
    created_at: datetime
    created_by: str

    @classmethod
    def of(cls, group: Group) -> GroupOut:
        return cls(
            name=group.name,
            description=group.description,
            member_count=group.member_count,
            created_at=group.created_at,
            created_by=group.created_by,
        )


Origin = Annotated[str, Field(description="`operator`, or `provider` (the identity provider)")]


class MembershipOut(BaseModel):
    group: str
    origin: Origin


class AttributeOut(BaseModel):
    name: str
    value: str
    origin: Origin


class PersonAccessOut(BaseModel):
    name: str
    groups: list[MembershipOut]
    attributes: list[AttributeOut]

    @classmethod
    def of(cls, access: PersonAccess) -> PersonAccessOut:
        return cls(
            name=access.name,
            groups=[MembershipOut(group=g, origin=o) for g, o in access.groups],
            attributes=[AttributeOut(name=n, value=v, origin=o) for n, v, o in access.attributes],
        )


class ValueIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    value: str = Field(min_length=1, max_length=200, json_schema_extra=STORABLE)


class NotifyAlwaysIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    notify_always: bool = Field(
        description="e-mail me when any of my exports ends (succeeded or failed); turning it on "
        "is refused with 422 while I have no e-mail address, or one e-mail may not go to"
    )


class NotifyAlwaysOut(BaseModel):
    name: str
    email: str | None = Field(description="where the e-mail goes (set by an operator)")
    notify_always: bool = Field(description="an e-mail when any of their exports ends")


class WithdrawnOut(BaseModel):
    canceled_exports: list[int] = Field(description="the exports the loss of access canceled")
    paused_schedules: list[int] = Field(description="the schedules the loss of access paused")


class Health(BaseModel):
    healthy: bool


class Readiness(Health):
    degraded: list[str] = Field(
        default_factory=list,
        description="what of this process is failing now and being retried (a loop of its "
        "worker or effects runner, claims paused for an unavailable store or source)",
    )


class WebhookIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    url: str = Field(description="where events are sent: an http or https URL")
    everyone: bool = Field(default=False, description="the global endpoint (operators only)")


class WebhookOut(BaseModel):
    id: int
    owner: str | None
    url: str
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None

    @classmethod
    def of(cls, endpoint: WebhookEndpoint) -> WebhookOut:
        return cls(
            id=endpoint.id,
            owner=endpoint.owner,
            url=endpoint.url,
            created_at=endpoint.created_at,
            disabled_at=endpoint.disabled_at,
            disabled_reason=endpoint.disabled_reason,
        )


class ChatChannelIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    url: str = Field(
        max_length=2000,
        description="the channel's incoming-webhook URL (Slack's format; Mattermost and "
        "Rocket.Chat take it too), on a host the setting chat_hosts names",
    )
    name: str = Field(
        min_length=1, max_length=80, json_schema_extra=STORABLE,
        description="how operators call it (#exports)",
    )  # fmt: skip
    owner: Annotated[str | None, Field(
        max_length=100, json_schema_extra=STORABLE,
        description="the person whose announcements it gets; null: everyone's",
    )]  # fmt: skip
    schedules_only: bool = Field(
        default=False,
        description="true: it gets no announcement of the owner's (everyone's) exports, only "
        "those of the schedules it is added to; the owner (an operator, for any channel) adds it",
    )


class ChatChannelOut(BaseModel):
    """A chat channel; its URL, which carries the channel's credential, is never shown."""

    id: int
    owner: Annotated[
        str | None, Field(description="the person whose announcements it gets; null: all")
    ]
    name: str
    host: Annotated[str, Field(description="the host of its URL")]
    created_at: datetime
    disabled_at: datetime | None
    disabled_reason: str | None
    schedules_only: Annotated[
        bool, Field(description="it gets the announcements of the schedules it is added to alone")
    ]

    @classmethod
    def of(cls, channel: ChannelView) -> ChatChannelOut:
        return cls(
            id=channel.id,
            owner=channel.owner,
            name=channel.name,
            host=channel.host,
            created_at=channel.created_at,
            disabled_at=channel.disabled_at,
            disabled_reason=channel.disabled_reason,
            schedules_only=channel.schedules_only,
        )


class ScheduleChannelOut(BaseModel):
    """A chat channel that gets a schedule's announcements (its URL is never shown)."""

    schedule_id: int
    channel_id: int
    name: str
    host: Annotated[str, Field(description="the host of its URL")]
    owner: Annotated[str | None, Field(description="the person it is registered for; null: no one")]
    added_by: str
    added_at: datetime
    removed_at: Annotated[
        datetime | None,
        Field(description="when an operator removed the channel: it gets nothing since"),
    ]

    @classmethod
    def of(cls, added: ScheduleChannelView) -> ScheduleChannelOut:
        channel = added.channel
        return cls(
            schedule_id=added.schedule_id,
            channel_id=channel.id,
            name=channel.name,
            host=channel.host,
            owner=channel.owner,
            added_by=added.added_by,
            added_at=added.added_at,
            removed_at=channel.disabled_at,
        )


class WebhookCreated(WebhookOut):
    secret: str = Field(description="shown once; sign-check deliveries with it")


class WebhookTestOut(BaseModel):
    delivered: bool
    response_status: int | None
    problem: str | None

    @classmethod
    def of(cls, test: TestDelivery) -> WebhookTestOut:
        return cls(
            delivered=test.delivered, response_status=test.response_status, problem=test.problem
        )


class ProblemOut(BaseModel):
    """RFC 9457 problem details; some problems add fields (code, parameter, rule, limit)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str


PROBLEM_DESCRIPTIONS = {
    400: "Malformed JSON",
    401: "No valid bearer token",
    403: "Not allowed for this person",
    404: "No such thing, or not yours",
    405: "Method not allowed here (the Allow header lists what is)",
    409: "Not possible in the job's present state (the graph's code)",
    410: "Gone: the file expired",
    415: "The body is not application/json",
    422: "Invalid request or parameter",
    429: "Over a fairness limit (Retry-After says when to try again)",
    503: "A service it needs (the job store, the object store) did not answer; try again "
    "after Retry-After seconds",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI responses for the problems an operation can answer."""
    return {
        status: {
            "model": ProblemOut,
            "description": PROBLEM_DESCRIPTIONS[status],
            "content": {"application/problem+json": {"schema": ProblemOut.model_json_schema()}},
        }
        for status in statuses
    }
