"""What workers do to jobs: claim, renew, report progress, finish, reap. Every write after
the claim is fenced by the lease token.

This is the hot path: a claim returns only what the worker needs (`ClaimedJob`), a finish
returns only whether each job moved. Every write a worker makes is one statement that commits
as the server runs it (`Driver.autocommit`): a worker that stops right after sending one (a
frozen process, a suspended machine) leaves no row locked behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from frozen_lifecycle.graph import Graph
from reportexport.core.job_status import CLAIM, check_transition
from reportexport.core.records import Claim, ClaimedJob, JobId, Lease, Outcome
from reportexport.store.driver import Driver, Row, Session
from reportexport.store.errors import LeaseBusyError, StaleStatusError

# A claim looks at the first jobs in turn order only (see claim_jobs in sql/queries.sql): a few
# times what it claims, and some more for the rows other workers' claims hold meanwhile.
CLAIM_WINDOW_FACTOR = 4
CLAIM_WINDOW_SLACK = 16


class JobQueue:
    def __init__(self, driver: Driver, graph: Graph) -> None:
        self.driver = driver
        self.codec = driver.codec
        self.graph = graph
        # The states a worker may end a claimed job in, by this graph's edges.
        self._finishable = {
            edge.to_status
            for edge in graph.transitions
            if (edge.from_status, edge.actor) == (CLAIM.to_status, CLAIM.actor)
        }

    def claim_jobs(
        self,
        worker: str,
        *,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> list[Claim]:
        """Up to `limit` queued jobs, owners taking turns, now running under new leases; jobs
        of `excluded_sources`, and of sources with no free slot, stay queued."""
        with self.driver.autocommit() as session:
            return self._claim(session, worker, limit, lease_seconds, excluded_sources)

    def _claim(
        self,
        session: Session,
        worker: str,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str],
    ) -> list[Claim]:
        if limit < 1:
            return []
        params = self._claim_params(worker, limit, lease_seconds, excluded_sources)
        return self._claims_of(session.rows("claim_jobs", params), worker)

    def _claim_params(
        self, worker: str, limit: int, lease_seconds: float, excluded_sources: Sequence[str]
    ) -> dict[str, Any]:
        return {
            "worker": worker,
            "limit": limit,
            "window": limit * CLAIM_WINDOW_FACTOR + CLAIM_WINDOW_SLACK,
            "lease": self.codec.seconds(lease_seconds),
            "excluded_sources": self.codec.names(excluded_sources),
        }

    def _claims_of(self, rows: Sequence[Row], worker: str) -> list[Claim]:
        return sorted((self._claim_of(row, worker) for row in rows), key=lambda c: c.job.id)

    def _claim_of(self, row: Row, worker: str) -> Claim:
        codec = self.codec
        job = ClaimedJob(
            id=row["id"],
            owner=row["owner"],
            saved_query=row["saved_query"],
            source=row["source"],
            query_sql=row["query_sql"],
            parameters=codec.json_from(row["parameters"]),
            options=codec.json_from(row["options"]),
        )
        lease = Lease(
            job_id=job.id,
            token=row["lease_token"],
            worker=worker,
            expires_at=codec.moment_from(row["lease_expires_at"]),
        )
        return Claim(lease=lease, job=job)

    def extend_lease(self, lease: Lease, *, lease_seconds: float) -> Lease:
        """The lease pushed out; StaleStatusError once it is not ours, LeaseBusyError when
        another transaction holds the job's row (not waited for: try again)."""
        params = {
            "id": lease.job_id,
            "token": lease.token,
            "lease": self.codec.seconds(lease_seconds),
        }
        with self.driver.autocommit() as session:
            row = session.row("extend_lease", params)
            if row is None:
                self._locked_out(session, lease)
        assert row is not None
        return Lease(
            job_id=lease.job_id,
            token=lease.token,
            worker=lease.worker,
            expires_at=self.codec.moment_from(row["lease_expires_at"]),
        )

    def record_progress(
        self, lease: Lease, *, rows: int | None, bytes_written: int, temp_key: str | None = None
    ) -> None:
        """Progress of a running job under its lease; StaleStatusError once it is not ours."""
        params = {
            "id": lease.job_id,
            "token": lease.token,
            "rows": rows,
            "bytes": bytes_written,
            "temp_key": temp_key,
        }
        with self.driver.autocommit() as session:
            if session.row("record_progress", params) is None:
                self._locked_out(session, lease)

    def lease_held(self, lease: Lease) -> bool:
        """Is the job still running under this lease, unexpired? A read that waits on no row
        lock: what a worker asks just before publishing when a renewal was locked out."""
        with self.driver.read() as session:
            row = session.row("lease_held", {"id": lease.job_id, "token": lease.token})
        return row is not None and bool(row["valid"])

    def _locked_out(self, session: Session, lease: Lease) -> None:
        """A fenced write found no row it could take: stale, or only locked by another
        transaction (the row still runs under this lease)?"""
        row = session.row("lease_held", {"id": lease.job_id, "token": lease.token})
        if row is None:
            raise StaleStatusError(lease.job_id, "running under this lease")
        raise LeaseBusyError(lease.job_id)

    def finish_jobs(self, outcomes: Sequence[Outcome]) -> list[bool]:
        """End running jobs, each in a statement of its own that commits as it runs; one
        bool per outcome, False where the lease was stale."""
        self._check_outcomes(outcomes)
        with self.driver.autocommit() as session:
            return session.each("finish_job", [self._outcome_params(o) for o in outcomes])

    def finish_and_claim(
        self,
        outcomes: Sequence[Outcome],
        *,
        worker: str,
        limit: int,
        lease_seconds: float,
        excluded_sources: Sequence[str] = (),
    ) -> tuple[list[bool], list[Claim]]:
        """`finish_jobs` and then `claim_jobs` as one unit that commits as the server runs it
        (one message, one commit: what a worker does as an export ends and makes room); the
        claim sees the slots the finishes gave back."""
        self._check_outcomes(outcomes)
        statements: list[tuple[str, Mapping[str, Any]]] = [
            ("finish_job", self._outcome_params(o)) for o in outcomes
        ]
        if limit >= 1:
            params = self._claim_params(worker, limit, lease_seconds, excluded_sources)
            statements.append(("claim_jobs", params))
        with self.driver.autocommit() as session:
            results = session.together(statements)
        finished = [bool(rows) for rows in results[: len(outcomes)]]
        claimed = results[len(outcomes) :]
        return finished, self._claims_of(claimed[0], worker) if claimed else []

    def _check_outcomes(self, outcomes: Sequence[Outcome]) -> None:
        for outcome in outcomes:
            if outcome.to_status not in self._finishable:
                check_transition(CLAIM.to_status, outcome.to_status, CLAIM.actor, graph=self.graph)

    def reap_expired(self, worker: str, *, grace_seconds: float) -> list[JobId]:
        """Fail running jobs whose lease expired more than `grace_seconds` ago."""
        params = {"worker": worker, "grace": self.codec.seconds(-grace_seconds)}
        with self.driver.autocommit() as session:
            return sorted(row["id"] for row in session.rows("reap_expired", params))

    def wait_for_change(self, timeout: float) -> bool:
        """Block until jobs may have been created or changed, or `timeout` passes."""
        return self.driver.wait_for_change(timeout)

    def _outcome_params(self, outcome: Outcome) -> dict[str, Any]:
        published = outcome.published
        expires = published.expires_in_seconds if published else None
        codec = self.codec
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
            "columns": codec.json(list(published.columns)) if published else None,
            "column_types": codec.json(list(published.column_types)) if published else None,
            "dialect_version": published.dialect_version if published else None,
            "file_name": published.file_name if published else None,
            "expires": None if expires is None else codec.seconds(expires),
        }
