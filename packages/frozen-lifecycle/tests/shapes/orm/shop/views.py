"""Queries the dashboard runs."""

from shop.models import ExportJob, Invoice, JobStatus


def waiting_exports():
    return ExportJob.objects.filter(status=JobStatus.QUEUED)


def unpaid_invoices():
    return Invoice.objects.filter(status="open")


def void(invoice):
    invoice.status = "void"
    invoice.save()
