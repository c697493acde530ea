"""The shop's models: export jobs, and invoices (which have a status of their own)."""

from django.db import models


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    STARTED = "started"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"


class ExportJob(models.Model):
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)


class Invoice(models.Model):
    status = models.CharField(max_length=16, default="draft")
