"""What the API sends and receives. Status, actor and side-effect words are the fixture's
typed names (`reportexport.lifecycle`), never retyped: the schema's enums come from them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from reportexport.lifecycle import Actor, Effect, Status

if TYPE_CHECKING:
    from reportexport.catalog import SavedQuery
    from reportexport.records import Job, WebhookEndpoint
    from reportexport.services.exports import JobView
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
            parameters=[spec.describe() for spec in query.parameters.values()],
        )


class ExportIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    saved_query: str = Field(min_length=1, max_length=100)
    parameters: dict[str, Any] = Field(default_factory=dict)


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

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            owner=job.owner,
            saved_query=job.saved_query,
            title=job.options.get("title"),
            status=job.status,
            parameters=dict(job.parameters),
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
        )


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


class DownloadOut(BaseModel):
    person: str
    at: datetime


class JobDetailOut(BaseModel):
    job: JobOut
    history: list[TransitionOut]
    side_effects: list[SideEffectOut]
    downloads: list[DownloadOut] = Field(default_factory=list)

    @classmethod
    def of(cls, view: JobView) -> JobDetailOut:
        detail = view.detail
        return cls(
            downloads=[DownloadOut(person=p, at=at) for p, at in view.downloads],
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


class JobPageOut(BaseModel):
    jobs: list[JobOut]
    next_cursor: int | None


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
