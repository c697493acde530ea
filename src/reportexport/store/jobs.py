"""What people do to jobs: create, read, list and cancel them, and fetch their files."""

from __future__ import annotations

from datetime import datetime

from frozen_lifecycle.graph import Graph
from reportexport.core.job_status import CANCELS, check_transition
from reportexport.core.lifecycle import STATES, TERMINAL
from reportexport.core.records import (
    AuditEntry,
    HistoryEntry,
    Job,
    JobDetail,
    JobFilter,
    JobId,
    JobPage,
    NewJob,
    OwnerLimits,
    SideEffect,
)
from reportexport.store.audit import write_entry
from reportexport.store.driver import Driver, Session
from reportexport.store.errors import (
    JobNotFoundError,
    OwnerLimitError,
    StaleStatusError,
    StoreError,
)

CANCEL_ATTEMPTS = 5
CANCELED = CANCELS[0].to_status
NOT_ENDED = tuple(status for status in STATES if status not in TERMINAL)


class JobStore:
    def __init__(self, driver: Driver, graph: Graph) -> None:
        self.driver = driver
        self.codec = driver.codec
        self.graph = graph

    def create_job(self, new: NewJob, *, limits: OwnerLimits | None = None) -> tuple[Job, bool]:
        """The new job in the initial state, and False instead of True when the owner's
        idempotency key already names a job (which is returned, and no limit is checked).

        With `limits`, the owner's unfinished and recent jobs are counted and the job inserted
        in one transaction that holds the owner's lock, so concurrent creates of one owner
        cannot both pass a cap; OwnerLimitError says which limit refused.
        """
        codec = self.codec
        params = {
            "owner": new.owner,
            "saved_query": new.saved_query,
            "source": new.source,
            "query_sql": new.query_sql,
            "query_hash": new.query_hash,
            "parameters": codec.json(dict(new.parameters)),
            "options": codec.json(dict(new.options)),
            "rerun_of": new.rerun_of,
            "idempotency_key": new.idempotency_key,
            "requested_by": new.requested_by,
            "schedule_id": new.schedule_id,
            "status": self.graph.initial,
        }
        with self.driver.write() as session:
            session.serialise(f"owner:{new.owner}")
            if new.idempotency_key is not None:
                earlier = session.row("job_by_idempotency_key", params)
                if earlier is not None:
                    return codec.record(Job, earlier), False
            if limits is not None:
                self._check_limits(session, new.owner, limits)
            row = session.row("create_job", params)
            if row is None:
                raise StoreError("the idempotency key's job vanished")
            return self._job(session, row["id"]), True

    def job_by_key(self, owner: str, idempotency_key: str) -> Job | None:
        """The job of `owner` that a request with this idempotency key created, if any."""
        params = {"owner": owner, "idempotency_key": idempotency_key}
        with self.driver.read() as session:
            row = session.row("job_by_idempotency_key", params)
        return None if row is None else self.codec.record(Job, row)

    def _check_limits(self, session: Session, owner: str, limits: OwnerLimits) -> None:
        params = {"owner": owner, "since": self.codec.moment(limits.since)}
        row = session.row("owner_activity", params)
        active, recent = (int(row["active"] or 0), int(row["recent"] or 0)) if row else (0, 0)
        if active >= limits.max_active:
            raise OwnerLimitError("max_active", count=active, maximum=limits.max_active)
        if recent >= limits.max_recent:
            raise OwnerLimitError("max_recent", count=recent, maximum=limits.max_recent)

    def _job(self, session: Session, job_id: int) -> Job:
        row = session.row("get_job", {"id": job_id})
        if row is None:
            raise JobNotFoundError(job_id)
        job: Job = self.codec.record(Job, row)
        return job

    def get_job(self, job_id: JobId) -> JobDetail:
        with self.driver.read() as session:  # one snapshot for all three reads
            job = self._job(session, job_id)
            history = session.rows("job_history", {"id": job_id})
            effects = session.rows("job_side_effects", {"id": job_id})
        return JobDetail(
            job=job,
            history=tuple(self.codec.record(HistoryEntry, r) for r in history),
            side_effects=tuple(self.codec.record(SideEffect, r) for r in effects),
        )

    def list_jobs(self, where: JobFilter) -> JobPage:
        params = {
            "owner": where.owner,
            "status": where.status,
            "saved_query": where.saved_query,
            "by_queries": 0 if where.saved_queries is None else 1,
            "saved_queries": self.codec.names(list(where.saved_queries or ())),
            "job_id": where.job_id,
            "before": where.before,
            "after": where.after,
            "limit": where.limit + 1,
        }
        with self.driver.read() as session:
            if where.oldest_first:
                rows = session.rows("list_jobs_oldest_first", params)
            else:
                rows = session.rows("list_jobs", params)
        jobs = tuple(self.codec.record(Job, row) for row in rows[: where.limit])
        more = len(rows) > where.limit
        return JobPage(jobs=jobs, next_cursor=jobs[-1].id if more and jobs else None)

    def jobs_by_ids(self, ids: list[int]) -> list[Job]:
        """The jobs of these ids that exist, in one read."""
        params = {"ids": self.codec.names([str(job_id) for job_id in ids])}
        with self.driver.read() as session:
            rows = session.rows("jobs_by_ids", params)
        return [self.codec.record(Job, row) for row in rows]

    def previous_success(self, job: Job) -> Job | None:
        """The owner's last succeeded job before `job` of its saved query and parameters."""
        params = {
            "owner": job.owner,
            "saved_query": job.saved_query,
            "parameters": self.codec.json(dict(job.parameters)),
            "id": job.id,
        }
        with self.driver.read() as session:
            row = session.row("previous_success", params)
        return None if row is None else self.codec.record(Job, row)

    def cancel_job(
        self,
        job_id: JobId,
        *,
        person: str,
        owner: str | None = None,
        reason: str | None = None,
        audit: AuditEntry | None = None,
    ) -> Job:
        """Cancel a queued or running job as actor `user`; `owner` limits it to their jobs;
        `audit` is recorded in the cancel's transaction."""
        for _ in range(CANCEL_ATTEMPTS):
            with self.driver.write() as session:
                job = self._job(session, job_id)
                if owner is not None and job.owner != owner:
                    raise JobNotFoundError(job_id)
                check_transition(job.status, CANCELED, CANCELS[0].actor, graph=self.graph)
                params = {"id": job_id, "expected": job.status, "person": person, "reason": reason}
                if session.row("cancel_job", params) is not None:
                    if audit is not None:
                        write_entry(session, audit)
                    return self._job(session, job_id)
        raise StaleStatusError(job_id, "cancelable")

    def set_notify(self, job_id: JobId, *, owner: str | None = None) -> Job:
        """Ask for an e-mail to the owner when the job ends (`options.notify`), while it has not
        ended: StaleStatusError once it has (the terminal transition fixes the recipients, so
        a later ask would reach no one); `owner` limits it to their jobs."""
        with self.driver.write() as session:
            job = self._job(session, job_id)
            if owner is not None and job.owner != owner:
                raise JobNotFoundError(job_id)
            params = {
                "id": job_id,
                "options": self.codec.json({**job.options, "notify": True}),
                "statuses": self.codec.names(list(NOT_ENDED)),
            }
            if session.row("set_job_options", params) is None:
                raise StaleStatusError(job_id, " or ".join(NOT_ENDED))
            return self._job(session, job_id)

    def record_download(self, job_id: int, person: str) -> None:
        """A person was given a download link of the job."""
        with self.driver.write() as session:
            session.rows("record_download", {"job_id": job_id, "person": person})

    def job_downloads(self, job_id: int) -> list[tuple[str, datetime]]:
        """(person, when) of every download link given out for a job."""
        with self.driver.read() as session:
            rows = session.rows("job_downloads", {"job_id": job_id})
        return [(r["person"], self.codec.moment_from(r["at"])) for r in rows]
