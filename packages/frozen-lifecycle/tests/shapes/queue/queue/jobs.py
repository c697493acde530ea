"""A job queue: jobs, and the events it records about them."""

from enum import Enum


class JobStatus(str, Enum):
    QUEUED = "queued"
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"


class EventType(str, Enum):
    QUEUED = "queued"
    STARTED = "started"
    RETRIED = "retried"
    FINISHED = "finished"


EVENT_LABELS = {"queued": "Queued", "started": "Started", "retried": "Retried"}


def finish(job, ok):
    if job.status != JobStatus.STARTED:
        raise ValueError(job.status)
    job.status = JobStatus.FINISHED if ok else JobStatus.FAILED
    return job
