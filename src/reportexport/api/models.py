"""What the API sends and receives. The status enum comes from the fixture, never retyped."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reportexport.job_status import GRAPH
from reportexport.store import Job, JobDetail
from reportexport.store.records import WebhookEndpoint

JobStatus = Enum("JobStatus", {state: state for state in GRAPH.states}, type=str)  # type: ignore[misc]


class SavedQueryOut(BaseModel):
    name: str
    title: str
    description: str
    source: str
    parameters: list[dict[str, Any]]


class ExportIn(BaseModel):
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

    @classmethod
    def of(cls, job: Job) -> JobOut:
        return cls(
            id=job.id,
            owner=job.owner,
            saved_query=job.saved_query,
            title=job.options.get("title"),
            status=JobStatus(job.status),
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
    actor: str
    person: str | None
    reason: str | None
    worker: str | None
    at: datetime


class SideEffectOut(BaseModel):
    effect: str
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
    def of(
        cls, detail: JobDetail, downloads: list[tuple[str, datetime]] | None = None
    ) -> JobDetailOut:
        return cls(
            downloads=[DownloadOut(person=p, at=at) for p, at in downloads or ()],
            job=JobOut.of(detail.job),
            history=[
                TransitionOut(
                    from_status=JobStatus(h.from_status),
                    to_status=JobStatus(h.to_status),
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


class WebhookIn(BaseModel):
    url: str = Field(min_length=8, max_length=2000)
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


class ProblemOut(BaseModel):
    """RFC 9457 problem details; some problems add fields (code, parameter, rule, limit)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {
        "model": ProblemOut,
        "description": description,
        "content": {"application/problem+json": {"schema": ProblemOut.model_json_schema()}},
    }
    for status, description in {
        401: "No valid bearer token",
        403: "Not allowed for this person",
        404: "No such thing, or not yours",
        409: "Not possible in the job's status (the graph's code)",
        410: "Gone: the file expired",
        422: "Invalid request or parameter",
        429: "Over a fairness limit",
    }.items()
}
