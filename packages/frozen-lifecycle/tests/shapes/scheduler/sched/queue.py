"""The queue a scheduler feeds, and the registries of jobs that ended."""

from enum import Enum


class JobStatus(str, Enum):
    QUEUED = "queued"
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"


class Queue:
    def enqueue_job(self, job):
        job.set_status(JobStatus.QUEUED)
        self.jobs.append(job)
        return job


class Registry:
    def remove(self, job):
        self.store.delete(job.id)


class FinishedJobs(Registry):
    def expire(self, job):
        self.remove(job)


class FailedJobs(Registry):
    def expire(self, job):
        self.remove(job)
