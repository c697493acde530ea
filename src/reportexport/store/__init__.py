"""The job store: where every status lives, enforced by the database itself.

Two roles, each a small Protocol: `JobStore` for what people do to jobs and `JobQueue` for
what workers do. `open_store(url)` picks the backend from the URL (`sqlite:///path`,
`postgresql://...`); drivers are imported only by the backend that needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from reportexport.graph import Graph
from reportexport.records import (
    Claim,
    ClaimedEffect,
    Heartbeat,
    Job,
    JobDetail,
    JobFilter,
    JobId,
    JobPage,
    Lease,
    MetricsSnapshot,
    NewJob,
    Outcome,
    OwnerLimits,
    PublishedObject,
    SideEffect,
    User,
    WebhookDelivery,
    WebhookEndpoint,
)
from reportexport.store.definitions import Definitions
from reportexport.store.effects import GlobalEndpointExistsError
from reportexport.store.errors import (
    JobNotFoundError,
    OwnerLimitError,
    SchemaMismatchError,
    StaleStatusError,
    StoreError,
    StoreUnavailableError,
    TransientStoreError,
    UnsupportedDatabaseError,
)
from reportexport.store.probe import ProbeReport
from reportexport.store.schema import SchemaStatus
from reportexport.store.users import UserExistsError

__all__ = [
    "Claim",
    "ClaimedEffect",
    "Database",
    "EffectStore",
    "GlobalEndpointExistsError",
    "Heartbeat",
    "Heartbeats",
    "Job",
    "JobDetail",
    "JobFilter",
    "JobId",
    "JobNotFoundError",
    "JobPage",
    "JobQueue",
    "JobStore",
    "Lease",
    "NewJob",
    "Outcome",
    "OwnerLimitError",
    "OwnerLimits",
    "PublishedObject",
    "SchemaMismatchError",
    "StaleStatusError",
    "StoreError",
    "StoreUnavailableError",
    "TransientStoreError",
    "UnsupportedDatabaseError",
    "UserExistsError",
    "WebhookEndpoints",
    "open_database",
]


class JobStore(Protocol):
    """What people do to jobs."""

    def create_job(self, new: NewJob, *, limits: OwnerLimits | None = None) -> tuple[Job, bool]:
        """The new queued job, and False instead of True when its idempotency key was used;
        with `limits`, OwnerLimitError when the owner is at a limit (checked atomically)."""
        ...

    def get_job(self, job_id: JobId) -> JobDetail: ...

    def list_jobs(self, where: JobFilter) -> JobPage: ...

    def cancel_job(
        self, job_id: JobId, *, person: str, owner: str | None = None, reason: str | None = None
    ) -> Job:
        """Cancel a queued or running job as actor `user`; `owner` limits it to their jobs."""
        ...


class JobQueue(Protocol):
    """What workers do to jobs; every write is fenced by the lease token."""

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> list[Claim]:
        """Up to `limit` queued jobs, oldest first, now running under new leases; jobs of
        `excluded_sources` stay queued."""
        ...

    def extend_lease(self, lease: Lease, *, lease_seconds: float) -> Lease: ...

    def record_progress(
        self, lease: Lease, *, rows: int | None, bytes_written: int, temp_key: str | None = None
    ) -> None:
        """Progress of a running job under its lease; StaleStatusError once it is not ours."""
        ...

    def finish_jobs(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """End running jobs; one bool per outcome, False where the lease was stale."""
        ...

    def finish_and_claim(
        self,
        outcomes: Sequence[Outcome],
        *,
        worker: str,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> tuple[list[bool], list[Claim]]:
        """`finish_jobs` and then `claim_jobs` in one transaction: one commit per job."""
        ...

    def reap_expired(self, worker: str, *, grace_seconds: float) -> list[JobId]:
        """Fail running jobs whose lease expired more than `grace_seconds` ago."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block until jobs may have been created or changed, or `timeout` passes."""
        ...


class EffectStore(Protocol):
    """What effects runners do to side-effect rows; every write is fenced by the claim token."""

    def claim_side_effects(
        self, runner: str, *, limit: int, now: datetime, claim_until: datetime
    ) -> list[ClaimedEffect]: ...

    def complete_side_effect(
        self, claimed: ClaimedEffect, *, now: datetime, note: str | None
    ) -> bool: ...

    def retry_side_effect(
        self,
        claimed: ClaimedEffect,
        *,
        now: datetime,
        error: str,
        next_attempt_at: datetime,
        give_up: bool,
    ) -> bool: ...

    def redrive_side_effect(self, job_id: int, effect: str, *, now: datetime) -> bool: ...

    def given_up_side_effects(self, limit: int = 100) -> list[SideEffect]: ...


class WebhookEndpoints(Protocol):
    """Where events go: an owner's endpoints and the optional global one."""

    def add_webhook_endpoint(
        self, *, owner: str | None, url: str, secret: str
    ) -> WebhookEndpoint: ...

    def list_webhook_endpoints(self, owner: str | None = None) -> list[WebhookEndpoint]: ...

    def get_webhook_endpoint(self, endpoint_id: int) -> WebhookEndpoint: ...

    def rotate_webhook_secret(
        self, endpoint_id: int, *, secret: str, until: datetime
    ) -> WebhookEndpoint: ...

    def disable_webhook_endpoint(self, endpoint_id: int, *, now: datetime, reason: str) -> bool: ...

    def webhook_endpoints_for(self, owner: str) -> list[WebhookEndpoint]: ...

    def record_delivery(
        self,
        job_id: int,
        effect: str,
        endpoint_id: int,
        *,
        now: datetime,
        status: int | None,
        error: str | None,
        delivered: bool,
    ) -> None: ...

    def webhook_deliveries(self, job_id: int) -> list[WebhookDelivery]: ...


class Users(Protocol):
    """People and their bearer tokens (stored hashed)."""

    def add_user(self, name: str, role: str) -> tuple[User, str]: ...

    def user_by_token(self, token: str) -> User | None: ...

    def user_by_name(self, name: str) -> User | None: ...

    def list_users(self) -> list[User]: ...

    def revoke_user(self, name: str, *, now: datetime) -> bool: ...

    def metrics_snapshot(self) -> MetricsSnapshot: ...

    def record_download(self, job_id: int, person: str) -> None: ...

    def job_downloads(self, job_id: int) -> list[tuple[str, datetime]]: ...


class Heartbeats(Protocol):
    """Each process's latest heartbeat."""

    def beat(self, heartbeat: Heartbeat) -> None: ...

    def heartbeats(self) -> list[Heartbeat]: ...

    def forget_heartbeats(self, *, before: datetime) -> None: ...


class Database(JobStore, JobQueue, EffectStore, WebhookEndpoints, Users, Heartbeats, Protocol):
    """A backend plays both roles and can build and check its own schema."""

    url: str

    def upgrade(self) -> SchemaStatus: ...

    def schema_status(self) -> SchemaStatus: ...

    def installed_definitions(self) -> Definitions:
        """The guards, triggers, constraints, indexes, columns and graph rows installed."""
        ...

    def expected_definitions(self) -> Definitions:
        """The same, as the migrations and the graph SQL make them on an empty database."""
        ...

    def probe(self) -> ProbeReport:
        """Every move and refusal tried on the live database (rolled back), against the graph."""
        ...

    def close(self) -> None: ...


def open_database(
    url: str,
    graph: Graph,
    *,
    check: bool = True,
    lock_timeout_seconds: float = 5.0,
    statement_timeout_seconds: float = 60.0,
    pool_size: int = 8,
) -> Database:
    """Open the database at `url`; with `check`, refuse one not built from `graph`.

    No session waits longer than `lock_timeout_seconds` for a lock (SQLite: for the writer) or
    `statement_timeout_seconds` for a statement (PostgreSQL).
    """
    database: Database
    if url.startswith("sqlite:"):
        from reportexport.store.sqlite import SqliteDatabase

        database = SqliteDatabase(url, graph, lock_timeout_seconds=lock_timeout_seconds)
    elif url.startswith(("postgresql:", "postgres:")):
        from reportexport.store.postgres import PostgresDatabase

        database = PostgresDatabase(
            url,
            graph,
            pool_size=pool_size,
            lock_timeout_seconds=lock_timeout_seconds,
            statement_timeout_seconds=statement_timeout_seconds,
        )
    else:
        raise UnsupportedDatabaseError(
            f"unsupported database URL {url!r}: use sqlite:///path or postgresql://..."
        )
    if check:
        try:
            database.schema_status().require_current(url)
        except BaseException:
            database.close()
            raise
    return database
