"""The job store at scale: PostgreSQL, claims with FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY.

Synchronous psycopg on a connection pool; callers on an event loop use a thread. The trigger
function installed by the migrations enforces the graph for every role but the tables' owner.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from reportexport.graph import Graph
from reportexport.graph_sql import postgres_graph_sql
from reportexport.job_status import check_transition
from reportexport.store.effects import EffectsQueries
from reportexport.store.errors import (
    JobNotFoundError,
    StaleStatusError,
    StoreError,
    StoreUnavailableError,
    transition_error_in,
)
from reportexport.store.queries import load_queries, migration_files
from reportexport.store.records import (
    Claim,
    HistoryEntry,
    Job,
    JobDetail,
    JobFilter,
    JobId,
    JobPage,
    Lease,
    NewJob,
    Outcome,
    SideEffect,
    from_row,
)
from reportexport.store.schema import (
    FINGERPRINT_KEY,
    GRAPH_KEY,
    SCHEMA_VERSION_KEY,
    SchemaStatus,
    redact,
)

SQL = load_queries("postgres")
NOTIFY_CHANNEL = "reportexport_jobs"
UPGRADE_LOCK = 0x7265706F7274  # pg_advisory_xact_lock key: one upgrade at a time
CANCEL_ATTEMPTS = 5
SERVICE_GRANTS = (
    ("SELECT, INSERT, UPDATE", ("jobs",)),
    ("SELECT, UPDATE", ("job_side_effects",)),
    (
        "SELECT",
        ("job_history", "job_states", "job_transitions", "job_state_effects", "reportexport_meta"),
    ),
)


class PostgresDatabase(EffectsQueries):
    text_encoded = False

    def __init__(
        self, url: str, graph: Graph, *, pool_size: int = 8, connect_timeout: float = 10.0
    ) -> None:
        self.url = url
        self.graph = graph
        try:  # fail fast with the driver's reason rather than let the pool retry quietly
            psycopg.connect(url, connect_timeout=max(1, round(connect_timeout))).close()
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {redact(url)}: {str(exc).strip()}"
            ) from exc
        self.pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={"row_factory": dict_row},
            connection_class=psycopg.Connection[dict[str, Any]],
            name="reportexport",
            open=True,
        )
        self._listener: psycopg.Connection[Any] | None = None
        self._listener_lock = threading.Lock()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        """One transaction on a pooled connection, driver errors translated."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise transition_error_in(str(exc)) or exc from exc

    def close(self) -> None:
        with self._listener_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        self.pool.close()

    # -- schema ----------------------------------------------------------------------------

    def _meta(self, conn: psycopg.Connection[dict[str, Any]]) -> dict[str, str]:
        row = conn.execute("SELECT to_regclass('reportexport_meta') AS t").fetchone()
        if row is None or row["t"] is None:
            return {}
        return {r["key"]: r["value"] for r in conn.execute("SELECT * FROM reportexport_meta")}

    def schema_status(self) -> SchemaStatus:
        with self._tx() as conn:
            meta = self._meta(conn)
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(migration_files("postgres")),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
        )

    def upgrade(self) -> SchemaStatus:
        """Apply pending migrations, then the graph if the fixture changed; one transaction."""
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (UPGRADE_LOCK,))
            meta = self._meta(conn)
            version = int(meta.get(SCHEMA_VERSION_KEY, 0))
            updates: dict[str, str] = {}
            for number, _, migration in migration_files("postgres"):
                if number > version:
                    conn.execute(migration.encode())
                    updates[SCHEMA_VERSION_KEY] = str(number)
            if meta.get(FINGERPRINT_KEY) != self.graph.fingerprint:
                conn.execute(postgres_graph_sql(self.graph).encode())
                updates[FINGERPRINT_KEY] = self.graph.fingerprint
                updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            with conn.cursor() as cur:
                cur.executemany(SQL["set_meta"], list(updates.items()))
        return self.schema_status()

    def grant_service_role(self, role: str) -> bool:
        """Create (if needed) a login role that uses the tables without owning them.

        Returns True when the role was created. Such a role cannot disable triggers, alter
        the tables, or write history and side-effect rows other than through the triggers.
        """
        name = sql.Identifier(role)
        with self._tx() as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(self._schema(conn)), name
            ))  # fmt: skip
            for privileges, tables in SERVICE_GRANTS:
                conn.execute(
                    sql.SQL("GRANT " + privileges + " ON {} TO {}").format(
                        sql.SQL(", ").join(map(sql.Identifier, tables)), name
                    )
                )
        return not exists

    def _schema(self, conn: psycopg.Connection[dict[str, Any]]) -> str:
        row = conn.execute("SELECT current_schema() AS s").fetchone()
        if row is None:
            raise StoreError("no current schema")
        return str(row["s"])

    # -- JobStore ---------------------------------------------------------------------------

    def create_job(self, new: NewJob) -> tuple[Job, bool]:
        params = {
            "owner": new.owner,
            "saved_query": new.saved_query,
            "source": new.source,
            "query_sql": new.query_sql,
            "query_hash": new.query_hash,
            "parameters": Jsonb(dict(new.parameters)),
            "options": Jsonb(dict(new.options)),
            "rerun_of": new.rerun_of,
            "idempotency_key": new.idempotency_key,
            "status": self.graph.initial,
        }
        with self._tx() as conn:
            row = conn.execute(SQL["create_job"], params).fetchone()
            created = row is not None
            if row is None:
                row = conn.execute(SQL["job_by_idempotency_key"], params).fetchone()
            if row is None:
                raise StoreError("the idempotency key's job vanished")
            job = self._job(conn, row["id"])
        return job, created

    def get_job(self, job_id: JobId) -> JobDetail:
        with self._tx() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            job = self._job(conn, job_id)
            history = conn.execute(SQL["job_history"], {"id": job_id}).fetchall()
            effects = conn.execute(SQL["job_side_effects"], {"id": job_id}).fetchall()
        return JobDetail(
            job=job,
            history=tuple(from_row(HistoryEntry, r, text_encoded=False) for r in history),
            side_effects=tuple(from_row(SideEffect, r, text_encoded=False) for r in effects),
        )

    def list_jobs(self, where: JobFilter) -> JobPage:
        params = {
            "owner": where.owner,
            "status": where.status,
            "saved_query": where.saved_query,
            "before": where.before,
            "limit": where.limit + 1,
        }
        with self._tx() as conn:
            rows = conn.execute(SQL["list_jobs"], params).fetchall()
        jobs = tuple(_job_from(row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more and jobs else None)

    def cancel_job(
        self, job_id: JobId, *, person: str, owner: str | None = None, reason: str | None = None
    ) -> Job:
        for _ in range(CANCEL_ATTEMPTS):
            with self._tx() as conn:
                job = self._job(conn, job_id)
                if owner is not None and job.owner != owner:
                    raise JobNotFoundError(job_id)
                check_transition(job.status, "canceled", "user", graph=self.graph)
                params = {"id": job_id, "expected": job.status, "person": person, "reason": reason}
                if conn.execute(SQL["cancel_job"], params).fetchone() is not None:
                    return self._job(conn, job_id)
        raise StaleStatusError(job_id, "cancelable")

    # -- JobQueue ---------------------------------------------------------------------------

    def claim_jobs(self, worker: str, *, limit: int, lease_seconds: float) -> list[Claim]:
        with self._tx() as conn:
            return _claim(conn, worker, limit, lease_seconds)

    def extend_lease(self, lease: Lease, *, lease_seconds: float) -> Lease:
        params = {"id": lease.job_id, "token": lease.token, "lease": lease_seconds}
        with self._tx() as conn:
            row = conn.execute(SQL["extend_lease"], params).fetchone()
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")
        return Lease(
            job_id=lease.job_id,
            token=lease.token,
            worker=lease.worker,
            expires_at=row["lease_expires_at"],
        )

    def record_progress(
        self, lease: Lease, *, rows: int | None, bytes_written: int, temp_key: str | None = None
    ) -> None:
        params = {
            "id": lease.job_id,
            "token": lease.token,
            "rows": rows,
            "bytes": bytes_written,
            "temp_key": temp_key,
        }
        with self._tx() as conn:
            row = conn.execute(SQL["record_progress"], params).fetchone()
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")

    def finish_jobs(self, outcomes: Sequence[Outcome]) -> list[bool]:
        return self.finish_and_claim(outcomes, worker="", limit=0, lease_seconds=0)[0]

    def finish_and_claim(
        self, outcomes: Sequence[Outcome], *, worker: str, limit: int, lease_seconds: float
    ) -> tuple[list[bool], list[Claim]]:
        for outcome in outcomes:
            check_transition("running", outcome.to_status, "worker", graph=self.graph)
        finished: list[bool] = []
        with self._tx() as conn:
            if outcomes:
                with conn.cursor() as cur:
                    # One round trip for the batch; each row is fenced by its own token.
                    params = map(_outcome_params, outcomes)
                    cur.executemany(SQL["finish_job"], params, returning=True)
                    while True:
                        finished.append(cur.fetchone() is not None)
                        if not cur.nextset():
                            break
            return finished, _claim(conn, worker, limit, lease_seconds)

    def reap_expired(self, worker: str, *, grace_seconds: float) -> list[JobId]:
        with self._tx() as conn:
            rows = conn.execute(SQL["reap_expired"], {"worker": worker, "grace": grace_seconds})
            return sorted(row["id"] for row in rows)

    def wait_for_change(self, timeout: float) -> bool:
        """Wait for a NOTIFY from the job triggers; a hint only, so callers poll as well."""
        with self._listener_lock:
            if self._listener is None or self._listener.closed:
                self._listener = psycopg.connect(self.url, autocommit=True)
                self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                return True
        return False

    # -- EffectsQueries hooks ------------------------------------------------------------------

    def _fetch(self, name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        with self._tx() as conn:
            cursor = conn.execute(SQL[name], dict(params))
            return cursor.fetchall() if cursor.description else []

    def _timestamp(self, moment: datetime) -> datetime:
        return moment

    # -- helpers ---------------------------------------------------------------------------

    def _job(self, conn: psycopg.Connection[dict[str, Any]], job_id: int) -> Job:
        row = conn.execute(SQL["get_job"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(job_id)
        return _job_from(row)


def _claim(
    conn: psycopg.Connection[dict[str, Any]], worker: str, limit: int, lease_seconds: float
) -> list[Claim]:
    if limit < 1:
        return []
    params = {"worker": worker, "limit": limit, "lease": lease_seconds}
    rows = conn.execute(SQL["claim_jobs"], params).fetchall()
    jobs = sorted((_job_from(row) for row in rows), key=lambda job: job.id)
    return [Claim(lease=_lease_of(job, worker), job=job) for job in jobs]


def _job_from(row: dict[str, Any]) -> Job:
    job: Job = from_row(Job, row, text_encoded=False)
    return job


def _lease_of(job: Job, worker: str) -> Lease:
    if job.lease_expires_at is None:
        raise StoreError(f"job {job.id} was claimed without a lease expiry")
    return Lease(
        job_id=job.id, token=job.lease_token, worker=worker, expires_at=job.lease_expires_at
    )


def _outcome_params(outcome: Outcome) -> dict[str, Any]:
    published = outcome.published
    return {
        "id": outcome.lease.job_id,
        "token": outcome.lease.token,
        "worker": outcome.lease.worker,
        "to_status": outcome.to_status,
        "reason": outcome.reason,
        "error_code": outcome.error_code,
        "error_message": outcome.error_message,
        "object_key": published.key if published else None,
        "object_sha256": published.sha256 if published else None,
        "object_bytes": published.bytes if published else None,
        "object_rows": published.rows if published else None,
        "columns": json.dumps(list(published.columns)) if published else None,
        "file_name": published.file_name if published else None,
        "expires": published.expires_in_seconds if published else None,
    }
