"""The embedded job store: one SQLite file in WAL mode.

One connection per thread; every write is one `BEGIN IMMEDIATE` transaction, so SQLite's
single writer serialises claims. The triggers in the file enforce the graph for any client,
the `sqlite3` shell included.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reportexport.graph import Graph
from reportexport.graph_sql import sqlite_graph_sql
from reportexport.job_status import check_transition
from reportexport.store.effects import EffectsQueries
from reportexport.store.errors import (
    JobNotFoundError,
    StaleStatusError,
    StoreError,
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
)

SQL = load_queries("sqlite")
CANCEL_ATTEMPTS = 5
POLL_SECONDS = 0.05


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db` or `sqlite:////absolute.db` to a file path."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix:
        raise ValueError(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    return url[len(prefix) :]


def _seconds(value: float) -> str:
    """An SQLite date modifier such as '+30.000 seconds'."""
    return f"{value:+.3f} seconds"


class SqliteDatabase(EffectsQueries):
    text_encoded = True

    def __init__(self, url: str, graph: Graph) -> None:
        self.url = url
        self.graph = graph
        self.path = sqlite_path(url)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    # -- connections -----------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            conn.execute("ROLLBACK")
            raise _translated(exc) from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # -- schema ----------------------------------------------------------------------------

    def _meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reportexport_meta'"
        ).fetchone()
        if not exists:
            return {}
        return {row["key"]: row["value"] for row in conn.execute("SELECT * FROM reportexport_meta")}

    def schema_status(self) -> SchemaStatus:
        meta = self._meta(self._conn())
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(migration_files("sqlite")),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
        )

    def upgrade(self) -> SchemaStatus:
        """Apply pending migrations, then the graph if the fixture changed; one transaction."""
        conn = self._conn()
        meta = self._meta(conn)
        version = int(meta.get(SCHEMA_VERSION_KEY, 0))
        pending = [(n, sql) for n, _, sql in migration_files("sqlite") if n > version]
        graph_changed = meta.get(FINGERPRINT_KEY) != self.graph.fingerprint
        # executescript commits whatever is open first, so the script opens the transaction
        # itself and the metadata is written with bound parameters before the COMMIT.
        script = ["BEGIN IMMEDIATE;", *(sql for _, sql in pending)]
        if graph_changed:
            script.append(sqlite_graph_sql(self.graph))
        try:
            conn.executescript("\n".join(script))
            updates = {SCHEMA_VERSION_KEY: str(pending[-1][0])} if pending else {}
            if graph_changed:
                updates[FINGERPRINT_KEY] = self.graph.fingerprint
                updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            conn.executemany(SQL["set_meta"], updates.items())
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _translated(exc) from exc
        return self.schema_status()

    # -- JobStore ---------------------------------------------------------------------------

    def create_job(self, new: NewJob) -> tuple[Job, bool]:
        params = {
            "owner": new.owner,
            "saved_query": new.saved_query,
            "source": new.source,
            "query_sql": new.query_sql,
            "query_hash": new.query_hash,
            "parameters": json.dumps(dict(new.parameters), sort_keys=True),
            "options": json.dumps(dict(new.options), sort_keys=True),
            "rerun_of": new.rerun_of,
            "idempotency_key": new.idempotency_key,
            "status": self.graph.initial,
        }
        with self._write() as conn:
            row = conn.execute(SQL["create_job"], params).fetchone()
            created = row is not None
            if row is None:
                row = conn.execute(SQL["job_by_idempotency_key"], params).fetchone()
            job = self._job(conn, row["id"])
        return job, created

    def get_job(self, job_id: JobId) -> JobDetail:
        conn = self._conn()
        with _read(conn):
            job = self._job(conn, job_id)
            history = conn.execute(SQL["job_history"], {"id": job_id}).fetchall()
            effects = conn.execute(SQL["job_side_effects"], {"id": job_id}).fetchall()
        return JobDetail(
            job=job,
            history=tuple(from_row(HistoryEntry, r, text_encoded=True) for r in history),
            side_effects=tuple(from_row(SideEffect, r, text_encoded=True) for r in effects),
        )

    def list_jobs(self, where: JobFilter) -> JobPage:
        params = {
            "owner": where.owner,
            "status": where.status,
            "saved_query": where.saved_query,
            "before": where.before,
            "limit": where.limit + 1,
        }
        rows = self._conn().execute(SQL["list_jobs"], params).fetchall()
        jobs = tuple(_job_from(row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more and jobs else None)

    def cancel_job(
        self, job_id: JobId, *, person: str, owner: str | None = None, reason: str | None = None
    ) -> Job:
        for _ in range(CANCEL_ATTEMPTS):
            with self._write() as conn:
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
        with self._write() as conn:
            return self._claim(conn, worker, limit, lease_seconds)

    def _claim(
        self, conn: sqlite3.Connection, worker: str, limit: int, lease_seconds: float
    ) -> list[Claim]:
        if limit < 1:
            return []
        params = {"worker": worker, "limit": limit, "lease": _seconds(lease_seconds)}
        rows = conn.execute(SQL["claim_jobs"], params).fetchall()
        jobs = sorted((_job_from(row) for row in rows), key=lambda job: job.id)
        return [Claim(lease=_lease_of(job, worker), job=job) for job in jobs]

    def extend_lease(self, lease: Lease, *, lease_seconds: float) -> Lease:
        params = {"id": lease.job_id, "token": lease.token, "lease": _seconds(lease_seconds)}
        with self._write() as conn:
            row = conn.execute(SQL["extend_lease"], params).fetchone()
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")
        return Lease(
            job_id=lease.job_id,
            token=lease.token,
            worker=lease.worker,
            expires_at=_timestamp(row["lease_expires_at"]),
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
        with self._write() as conn:
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
        with self._write() as conn:
            finished = [
                conn.execute(SQL["finish_job"], _outcome_params(o)).fetchone() is not None
                for o in outcomes
            ]
            return finished, self._claim(conn, worker, limit, lease_seconds)

    def reap_expired(self, worker: str, *, grace_seconds: float) -> list[JobId]:
        params = {"worker": worker, "grace": _seconds(-grace_seconds)}
        with self._write() as conn:
            return sorted(row["id"] for row in conn.execute(SQL["reap_expired"], params))

    def wait_for_change(self, timeout: float) -> bool:
        """Poll SQLite's data_version, which moves when another connection commits."""
        conn = self._conn()
        start = conn.execute("PRAGMA data_version").fetchone()[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            if conn.execute("PRAGMA data_version").fetchone()[0] != start:
                return True
        return False

    # -- EffectsQueries hooks ------------------------------------------------------------------

    def _fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        with self._write() as conn:
            rows: list[sqlite3.Row] = conn.execute(SQL[name], dict(params)).fetchall()
        return [dict(zip(row.keys(), row, strict=True)) for row in rows]

    def _timestamp(self, moment: datetime) -> str:
        """As the schema stores moments: UTC, milliseconds, a Z."""
        utc = moment.astimezone(UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"

    # -- helpers ---------------------------------------------------------------------------

    def _job(self, conn: sqlite3.Connection, job_id: int) -> Job:
        row = conn.execute(SQL["get_job"], {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(job_id)
        return _job_from(row)


@contextmanager
def _read(conn: sqlite3.Connection) -> Iterator[None]:
    """A consistent snapshot across several SELECTs."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _job_from(row: Mapping[str, Any]) -> Job:
    job: Job = from_row(Job, row, text_encoded=True)
    return job


def _lease_of(job: Job, worker: str) -> Lease:
    if job.lease_expires_at is None:
        raise StoreError(f"job {job.id} was claimed without a lease expiry")
    return Lease(
        job_id=job.id, token=job.lease_token, worker=worker, expires_at=job.lease_expires_at
    )


def _timestamp(value: str) -> datetime:
    return datetime.fromisoformat(value)


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
        "expires": _seconds(published.expires_in_seconds)
        if published and published.expires_in_seconds is not None
        else None,
    }


def _translated(exc: sqlite3.DatabaseError) -> Exception:
    return transition_error_in(str(exc)) or exc
