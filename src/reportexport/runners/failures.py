"""How an export that raised ends: one row per kind of failure.

A row says which error code and message the job fails with, and what pacing learns: a dependency
that did not answer (`paced`: the job is held while pacing still lets it wait, and fails only
when pacing gives up on it), or a source that answered, so the query itself was at fault
(`answered`). A cancel the worker did not cause itself (a person's) ends elsewhere: no row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from reportexport.core.access import AccessWithdrawnError
from reportexport.core.pacing import STORAGE
from reportexport.objects import ObjectExistsError, ObjectStoreUnavailableError
from reportexport.pipeline.export import LimitExceededError
from reportexport.sources import ExportCanceledError, SourceError, SourceUnavailableError

STOP_MESSAGES = {
    "worker_shutdown": "the worker shut down before the export finished",
    "limit_time": "the export ran past its time limit",
}
STORAGE_MESSAGE = (
    "the object store refused the export's file; the export can run again once it takes writes"
)
SOURCE_MESSAGE = "the source could not be reached; the export can run again once it answers"
UNEXPECTED_MESSAGE = "the export failed; operators can see why"


@dataclass(frozen=True, kw_only=True)
class Failure:
    code: str
    message: str
    paced: str | None = None
    answered: str | None = None
    log_level: int | None = None
    log_line: str = ""


Rule = Callable[[BaseException, str], Failure | None]


def _canceled(exc: BaseException, source: str) -> Failure | None:
    assert isinstance(exc, ExportCanceledError)
    if exc.reason not in STOP_MESSAGES:
        return None
    return Failure(code=exc.reason, message=STOP_MESSAGES[exc.reason])


def _limit(exc: BaseException, source: str) -> Failure:
    assert isinstance(exc, LimitExceededError)
    return Failure(code=exc.code, message=str(exc))


def _storage_away(exc: BaseException, source: str) -> Failure:
    return Failure(
        code="storage_unavailable",
        message=STORAGE_MESSAGE,
        paced=STORAGE,
        log_level=logging.ERROR,
        log_line=str(exc),
    )


def _source_away(exc: BaseException, source: str) -> Failure:
    assert isinstance(exc, SourceUnavailableError)
    return Failure(
        code=exc.code,
        message=SOURCE_MESSAGE,
        paced=source,
        log_level=logging.ERROR,
        log_line=str(exc),
    )


def _query_refused(exc: BaseException, source: str) -> Failure:
    assert isinstance(exc, SourceError)
    return Failure(
        code=exc.code,
        message=str(exc),
        answered=source,
        log_level=logging.WARNING,
        log_line=f"{exc.code}: {exc.detail}",
    )


def _access_withdrawn(exc: BaseException, source: str) -> Failure:
    return Failure(
        code="access_withdrawn", message=str(exc), log_level=logging.WARNING, log_line=str(exc)
    )


def _conflict(exc: BaseException, source: str) -> Failure:
    return Failure(code="publish_conflict", message=str(exc))


# The first row whose class the exception is an instance of decides: subclasses before their
# bases (a source that did not answer before a source that refused the query).
FAILURES: tuple[tuple[type[BaseException], Rule], ...] = (
    (ExportCanceledError, _canceled),
    (AccessWithdrawnError, _access_withdrawn),
    (LimitExceededError, _limit),
    (ObjectStoreUnavailableError, _storage_away),
    (SourceUnavailableError, _source_away),
    (SourceError, _query_refused),
    (ObjectExistsError, _conflict),
)

UNEXPECTED = Failure(code="internal_error", message=UNEXPECTED_MESSAGE)


def failure_of(exc: Exception, source: str) -> Failure | None:
    """How an export of `source` that raised `exc` ends (None: it ended elsewhere); anything
    no row names is unexpected, an internal error."""
    for kind, rule in FAILURES:
        if isinstance(exc, kind):
            return rule(exc, source)
    return UNEXPECTED
