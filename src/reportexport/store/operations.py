"""The job store's operations, written once for both backends.

A backend supplies its named queries, one transaction (`_transaction`), how it passes JSON and
durations, and how it runs a batch of fenced finishes; everything else is here, so the two
backends cannot drift apart in behaviour.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from reportexport.graph import Graph
from reportexport.job_status import check_transition
from reportexport.records import (
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
    OwnerLimits,
    SideEffect,
)
from reportexport.store.errors import (
    JobNotFoundError,
    OwnerLimitError,
    StaleStatusError,
    StoreError,
)
from reportexport.store.heartbeats import HeartbeatQueries
from reportexport.store.metrics import MetricsQueries
from reportexport.store.rows import from_row

CANCEL_ATTEMPTS = 5


class Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    @property
    def description(self) -> Any: ...


class Connection(Protocol):
    def execute(self, query: Any, params: Any = ...) -> Any: ...


class SqlOperations(MetricsQueries, HeartbeatQueries):
    graph: Graph
    queries: Mapping[str, str]

    # -- what a backend supplies --------------------------------------------------------------

    def _transaction(self, *, write: bool) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _json(self, value: Any) -> Any:
        raise NotImplementedError

    def _seconds(self, value: float) -> Any:
        raise NotImplementedError

    def _names(self, values: Sequence[str]) -> Any:
        """A list of names as the dialect's queries take one (a JSON array, a text[])."""
        raise NotImplementedError

    def _finish_rows(self, conn: Connection, params: list[dict[str, Any]]) -> list[bool]:
        """Run finish_job for each outcome in one transaction; True where a row moved."""
        raise NotImplementedError

    def _lock_owner(self, conn: Connection, owner: str) -> None:
        """Serialise one owner's creates until the transaction ends (see `create_job`)."""
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------------

    def _run(self, conn: Connection, name: str, params: Mapping[str, Any]) -> Cursor:
        cursor: Cursor = conn.execute(self.queries[name], dict(params))
        return cursor

    def _fetch(self, name: str, params: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
        with self._transaction(write=True) as conn:
            cursor = self._run(conn, name, params)
            rows = cursor.fetchall() if cursor.description else []
        return [dict(row) for row in rows]

    def _job(self, conn: Connection, job_id: int) -> Job:
        row = self._run(conn, "get_job", {"id": job_id}).fetchone()
        if row is None:
            raise JobNotFoundError(job_id)
        return self._job_from(row)

    def _job_from(self, row: Mapping[str, Any]) -> Job:
        job: Job = from_row(Job, row, text_encoded=self.text_encoded)
        return job

    # -- JobStore -----------------------------------------------------------------------------

    def create_job(self, new: NewJob, *, limits: OwnerLimits | None = None) -> tuple[Job, bool]:
        """The new job in the initial state, and False instead of True when the owner's
        idempotency key already names a job (which is returned, and no limit is checked).

        With `limits`, the owner's unfinished and recent jobs are counted and the job inserted
        in one transaction that holds the owner's lock, so concurrent creates of one owner
        cannot both pass a cap; OwnerLimitError says which limit refused.
        """
        params = {
            "owner": new.owner,
            "saved_query": new.saved_query,
            "source": new.source,
            "query_sql": new.query_sql,
            "query_hash": new.query_hash,
            "parameters": self._json(dict(new.parameters)),
            "options": self._json(dict(new.options)),
            "rerun_of": new.rerun_of,
            "idempotency_key": new.idempotency_key,
            "requested_by": new.requested_by,
            "status": self.graph.initial,
        }
        with self._transaction(write=True) as conn:
            self._lock_owner(conn, new.owner)
            if new.idempotency_key is not None:
                earlier = self._run(conn, "job_by_idempotency_key", params).fetchone()
                if earlier is not None:
                    return self._job_from(earlier), False
            if limits is not None:
                self._check_limits(conn, new.owner, limits)
            row = self._run(conn, "create_job", params).fetchone()
            if row is None:
                raise StoreError("the idempotency key's job vanished")
            return self._job(conn, row["id"]), True

    def _check_limits(self, conn: Connection, owner: str, limits: OwnerLimits) -> None:
        params = {"owner": owner, "since": self._timestamp(limits.since)}
        row = self._run(conn, "owner_activity", params).fetchone()
        active, recent = int(row["active"] or 0), int(row["recent"] or 0)
        if active >= limits.max_active:
            raise OwnerLimitError("max_active", count=active, maximum=limits.max_active)
        if recent >= limits.max_recent:
            raise OwnerLimitError("max_recent", count=recent, maximum=limits.max_recent)

    def get_job(self, job_id: JobId) -> JobDetail:
        with self._transaction(write=False) as conn:  # one snapshot for all three reads
            job = self._job(conn, job_id)
            history = self._run(conn, "job_history", {"id": job_id}).fetchall()
            effects = self._run(conn, "job_side_effects", {"id": job_id}).fetchall()
        return JobDetail(
            job=job,
            history=tuple(
                from_row(HistoryEntry, r, text_encoded=self.text_encoded) for r in history
            ),
            side_effects=tuple(
                from_row(SideEffect, r, text_encoded=self.text_encoded) for r in effects
            ),
        )

    def list_jobs(self, where: JobFilter) -> JobPage:
        params = {
            "owner": where.owner,
            "status": where.status,
            "saved_query": where.saved_query,
            "before": where.before,
            "limit": where.limit + 1,
        }
        with self._transaction(write=False) as conn:
            rows = self._run(conn, "list_jobs", params).fetchall()
        jobs = tuple(self._job_from(row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more and jobs else None)

    def cancel_job(
        self, job_id: JobId, *, person: str, owner: str | None = None, reason: str | None = None
    ) -> Job:
        for _ in range(CANCEL_ATTEMPTS):
            with self._transaction(write=True) as conn:
                job = self._job(conn, job_id)
                if owner is not None and job.owner != owner:
                    raise JobNotFoundError(job_id)
                check_transition(job.status, "canceled", "user", graph=self.graph)
                params = {"id": job_id, "expected": job.status, "person": person, "reason": reason}
                if self._run(conn, "cancel_job", params).fetchone() is not None:
                    return self._job(conn, job_id)
        raise StaleStatusError(job_id, "cancelable")

    # -- JobQueue -----------------------------------------------------------------------------

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> list[Claim]:
        with self._transaction(write=True) as conn:
            return self._claim(conn, worker, limit, lease_seconds, excluded_sources)

    def _claim(
        self,
        conn: Connection,
        worker: str,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> list[Claim]:
        if limit < 1:
            return []
        params = {
            "worker": worker,
            "limit": limit,
            "lease": self._seconds(lease_seconds),
            "excluded_sources": self._names(excluded_sources),
        }
        rows = self._run(conn, "claim_jobs", params).fetchall()
        jobs = sorted((self._job_from(row) for row in rows), key=lambda job: job.id)
        return [Claim(lease=_lease_of(job, worker), job=job) for job in jobs]

    def extend_lease(self, lease: Lease, *, lease_seconds: float) -> Lease:
        params = {"id": lease.job_id, "token": lease.token, "lease": self._seconds(lease_seconds)}
        with self._transaction(write=True) as conn:
            row = self._run(conn, "extend_lease", params).fetchone()
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")
        expires = row["lease_expires_at"]
        return Lease(
            job_id=lease.job_id,
            token=lease.token,
            worker=lease.worker,
            expires_at=datetime.fromisoformat(expires) if isinstance(expires, str) else expires,
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
        with self._transaction(write=True) as conn:
            row = self._run(conn, "record_progress", params).fetchone()
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")

    def finish_jobs(self, outcomes: Sequence[Outcome]) -> list[bool]:
        return self.finish_and_claim(outcomes, worker="", limit=0, lease_seconds=0)[0]

    def finish_and_claim(
        self,
        outcomes: Sequence[Outcome],
        *,
        worker: str,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> tuple[list[bool], list[Claim]]:
        for outcome in outcomes:
            check_transition("running", outcome.to_status, "worker", graph=self.graph)
        with self._transaction(write=True) as conn:
            finished = (
                self._finish_rows(conn, [self._outcome_params(o) for o in outcomes])
                if outcomes
                else []
            )
            return finished, self._claim(conn, worker, limit, lease_seconds, excluded_sources)

    def reap_expired(self, worker: str, *, grace_seconds: float) -> list[JobId]:
        params = {"worker": worker, "grace": self._seconds(-grace_seconds)}
        with self._transaction(write=True) as conn:
            return sorted(row["id"] for row in self._run(conn, "reap_expired", params).fetchall())

    def _outcome_params(self, outcome: Outcome) -> dict[str, Any]:
        published = outcome.published
        expires = published.expires_in_seconds if published else None
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
            "column_types": json.dumps(list(published.column_types)) if published else None,
            "dialect_version": published.dialect_version if published else None,
            "file_name": published.file_name if published else None,
            "expires": None if expires is None else self._seconds(expires),
        }


def _lease_of(job: Job, worker: str) -> Lease:
    if job.lease_expires_at is None:
        raise StoreError(f"job {job.id} was claimed without a lease expiry")
    return Lease(
        job_id=job.id, token=job.lease_token, worker=worker, expires_at=job.lease_expires_at
    )
