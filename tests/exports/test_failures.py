"""The failures table: how an export that raised ends, row by row."""

from __future__ import annotations

import logging

import pytest

from reportexport.core.pacing import STORAGE
from reportexport.objects import ObjectExistsError, ObjectStoreUnavailableError
from reportexport.pipeline.export import LimitExceededError
from reportexport.runners.failures import (
    SOURCE_MESSAGE,
    STORAGE_MESSAGE,
    UNEXPECTED,
    Failure,
    failure_of,
)
from reportexport.sources import ExportCanceledError, SourceError, SourceUnavailableError


@pytest.mark.parametrize(
    ("raised", "failure"),
    [
        (
            ExportCanceledError("worker_shutdown"),
            Failure(
                code="worker_shutdown",
                message="the worker shut down before the export finished",
            ),
        ),
        (
            ExportCanceledError("limit_time"),
            Failure(code="limit_time", message="the export ran past its time limit"),
        ),
        (
            LimitExceededError("limit_rows", "the export passed 10 rows"),
            Failure(code="limit_rows", message="the export passed 10 rows"),
        ),
        (
            ObjectStoreUnavailableError("refused"),
            Failure(
                code="storage_unavailable",
                message=STORAGE_MESSAGE,
                paced=STORAGE,
                log_level=logging.ERROR,
                log_line="refused",
            ),
        ),
        (
            SourceUnavailableError("the source is away", detail="connection refused"),
            Failure(
                code="source_unavailable",
                message=SOURCE_MESSAGE,
                paced="demo",
                log_level=logging.ERROR,
                log_line="the source is away",
            ),
        ),
        (
            SourceError("the query failed", detail="syntax error at or near FROM"),
            Failure(
                code=SourceError.code,
                message="the query failed",
                answered="demo",
                log_level=logging.WARNING,
                log_line=f"{SourceError.code}: syntax error at or near FROM",
            ),
        ),
        (
            ObjectExistsError("exports/1/orders.csv exists"),
            Failure(code="publish_conflict", message="exports/1/orders.csv exists"),
        ),
        (KeyError("UploadId"), UNEXPECTED),
    ],
    ids=lambda value: type(value).__name__,
)
def test_each_failure_ends_as_its_row_says(raised: Exception, failure: Failure) -> None:
    assert failure_of(raised, "demo") == failure


def test_a_persons_cancel_ends_elsewhere() -> None:
    assert failure_of(ExportCanceledError("user"), "demo") is None
