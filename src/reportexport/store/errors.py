"""Errors named for what happened, translated from driver errors at the store boundary."""

from __future__ import annotations

import re

from reportexport.core.job_status import TransitionError
from reportexport.core.outages import OutageError

_GRAPH_CODE = re.compile(r"\b((?:terminal|illegal|actor):\S*)")


class StoreError(Exception):
    """Base of the job store's own errors."""


class JobNotFoundError(StoreError, LookupError):
    def __init__(self, job_id: int) -> None:
        super().__init__(f"no job {job_id}")
        self.job_id = job_id


class StaleStatusError(StoreError):
    """A guarded write found the job no longer where the writer expected it.

    The job moved on (canceled, reaped, finished) or the writer's lease token is stale.
    """

    def __init__(self, job_id: int, expected: str) -> None:
        super().__init__(f"job {job_id} is no longer {expected}")
        self.job_id = job_id
        self.expected = expected


class LeaseBusyError(StoreError):
    """A renewal or progress write found its job's row held by another transaction and did not
    wait for it: the lease is still this worker's; try again shortly."""

    def __init__(self, job_id: int) -> None:
        super().__init__(f"job {job_id}: its row is held by another transaction")
        self.job_id = job_id


class OwnerLimitError(StoreError):
    """Creating the job would take its owner past `limit` (`max_active` or `max_recent`)."""

    def __init__(self, limit: str, *, count: int, maximum: int) -> None:
        super().__init__(f"{limit}: {count} of at most {maximum}")
        self.limit = limit
        self.count = count
        self.maximum = maximum


class SchemaMismatchError(StoreError):
    """The database was not built from this fixture or this version of the schema."""


class UnsupportedDatabaseError(StoreError, ValueError):
    pass


class StoreUnavailableError(StoreError, OutageError):
    """The database cannot be reached."""


class TransientStoreError(StoreUnavailableError):
    """The database did not answer this time (connection lost, restarting, a lock or statement
    timeout, busy): the same call may well succeed in a moment. Long-running loops retry these
    with backoff instead of failing work."""


class UniqueViolationError(StoreError):
    """A row would repeat what a unique constraint or index allows once; the driver names the
    constraint (PostgreSQL's name, SQLite's index name or `table(columns)`) and its table."""

    def __init__(self, message: str, *, constraint: str | None, table: str | None) -> None:
        super().__init__(message)
        self.constraint = constraint
        self.table = table


def transition_error_in(message: str) -> TransitionError | None:
    """The graph's error hidden in a database error message, if there is one."""
    match = _GRAPH_CODE.search(message)
    return TransitionError.from_code(match.group(1)) if match else None
