"""What a download request for a job gets: a link, or the HTTP status that explains why not.

The service (and the CLI) call this; it holds the rules in one place: only a `succeeded` job's
object can be downloaded, only by who may see the job, and only until the object expires,
after which the answer is 410 Gone while the job itself stays `succeeded`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from reportexport.objects import ObjectStore
from reportexport.store import Job


@dataclass(frozen=True, kw_only=True)
class Download:
    status: int  # 200 with a link; 409 not (yet) downloadable; 410 expired
    url: str | None = None
    expires_at: datetime | None = None
    file_name: str | None = None
    detail: str = ""


def download_for(
    job: Job,
    objects: ObjectStore,
    *,
    link_seconds: int = 3600,
    now: datetime | None = None,
) -> Download:
    moment = now or datetime.now(UTC)
    if job.status != "succeeded" or job.object_key is None:
        return Download(status=409, detail=f"job {job.id} is {job.status}: there is no file")
    if job.object_expires_at is not None and job.object_expires_at <= moment:
        return Download(
            status=410,
            detail=f"the file of job {job.id} expired at {job.object_expires_at.isoformat()}",
        )
    if objects.stat(job.object_key) is None:
        return Download(status=410, detail=f"the file of job {job.id} is no longer stored")
    expires = moment + timedelta(seconds=link_seconds)
    if job.object_expires_at is not None:
        expires = min(expires, job.object_expires_at)
    seconds = max(1, int((expires - moment).total_seconds()))
    name = job.file_name or f"export-{job.id}.csv"
    return Download(
        status=200,
        url=objects.download_url(job.object_key, name, seconds),
        expires_at=expires,
        file_name=name,
    )
