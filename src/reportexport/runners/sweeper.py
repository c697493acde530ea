"""The sweeper: deletes objects that no longer belong to a visible, living export.

It removes temp objects whose job is no longer running, published objects whose job is not
`succeeded` (a worker died between publishing and the transition), objects no job references,
and objects past their retention. A job that is still running keeps its objects: its worker may
be between publishing and its transaction, and the reaper decides first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from reportexport.objects import ObjectStore, is_temp, job_of
from reportexport.store import JobNotFoundError, JobStore

log = logging.getLogger("reportexport.sweeper")


@dataclass
class SweepReport:
    deleted: dict[str, str] = field(default_factory=dict)  # key -> why
    kept: int = 0


def sweep(
    jobs: JobStore,
    objects: ObjectStore,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
) -> SweepReport:
    moment = now or datetime.now(UTC)
    report = SweepReport()
    for info in list(objects.list_objects()):
        why = _verdict(jobs, info.key, moment)
        if why is None:
            report.kept += 1
            continue
        report.deleted[info.key] = why
        if not dry_run:
            objects.delete(info.key)
            log.info("swept %s: %s", info.key, why)
    return report


def _verdict(jobs: JobStore, key: str, now: datetime) -> str | None:
    job_id = job_of(key)
    if job_id is None:
        return "no job references it"
    try:
        job = jobs.get_job(job_id).job  # type: ignore[arg-type]
    except JobNotFoundError:
        return "its job does not exist"
    if job.status == "running":
        return None
    if is_temp(key):
        return f"temp object of a {job.status} job"
    if job.status != "succeeded":
        return f"published object of a {job.status} job"
    if job.object_key != key:
        return "not the object its job records"
    if job.object_expires_at is not None and job.object_expires_at <= now:
        return "past its retention"
    return None
