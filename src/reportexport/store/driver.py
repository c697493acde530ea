"""What a database backend gives the store: a handful of members, nothing else.

A `Driver` opens read and write transactions (`Session`s that run named queries), waits for
changes, encodes values the way its database keeps them (`Codec`), and translates its driver's
errors into the store's own (by SQLSTATE, result code or constraint name, inside the driver).
The roles (jobs, queue, side effects, ...) hold a driver and never see a connection.

`SchemaAccess` is the backend's part of building and checking the schema: running a migration
script inside the open transaction, reading the inventory of installed definitions, and
building the expected one on a scratch copy. `Schema` (store/schema.py) does the rest once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from reportexport.store.definitions import Definitions
from reportexport.store.rows import from_row

Row = Mapping[str, Any]


class Session(Protocol):
    """One open transaction."""

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run the named query; its rows (none for a statement without RETURNING)."""
        ...

    def row(self, query: str, params: Mapping[str, Any] | None = None) -> Row | None:
        """Run the named query; its first row, or None."""
        ...

    def count(self, query: str, params: Mapping[str, Any] | None = None) -> int:
        """Run the named statement; how many rows it changed."""
        ...

    def each(self, query: str, params: Sequence[Mapping[str, Any]]) -> list[bool]:
        """Run the named statement once per parameter set, in one round trip where the driver
        can; for each, whether it returned a row."""
        ...

    def together(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Row]]:
        """Run the named statements in order as one unit, sent in one message where the
        driver can (in an autocommit session: one commit, and nothing left open by a client
        that stops after sending it); each statement's rows."""
        ...

    def serialise(self, key: str) -> None:
        """Hold back every other transaction that serialises on `key` until this one ends."""
        ...


class Codec(Protocol):
    """Values as the database keeps them, and back."""

    def moment(self, value: datetime) -> Any: ...

    def moment_from(self, value: Any) -> datetime: ...

    def seconds(self, value: float) -> Any:
        """A duration as `{now_plus(:p)}` takes it."""
        ...

    def json(self, value: Any) -> Any: ...

    def json_from(self, value: Any) -> Any: ...

    def names(self, values: Sequence[str]) -> Any:
        """A list of names as `{names(:p)}` takes it."""
        ...

    def record(self, cls: type[Any], row: Row) -> Any:
        """A record (Job, SideEffect, ...) built from a row."""
        ...


class Driver(Protocol):
    """What the job store's roles need of a database: transactions, a wake-up, a codec."""

    url: str
    dialect: str

    @property
    def codec(self) -> Codec: ...

    def read(self) -> AbstractContextManager[Session]:
        """A read-only transaction: one snapshot, no write lock (SQLite) or READ ONLY
        (PostgreSQL)."""
        ...

    def write(self) -> AbstractContextManager[Session]:
        """A write transaction (SQLite: the single writer; PostgreSQL: READ COMMITTED)."""
        ...

    def autocommit(self) -> AbstractContextManager[Session]:
        """Statements that each commit in the round trip that sends them (PostgreSQL:
        autocommit; SQLite, in-process: a write transaction), for a writer that must not leave
        a transaction open if it stops right after sending one (a frozen worker would hold the
        job's row until it wakes, beyond the reach of the reaper and of a person's cancel)."""
        ...

    def wait_for_change(self, timeout: float) -> bool:
        """Block until jobs may have changed (a hint: callers poll as well), or `timeout`."""
        ...

    def close(self) -> None: ...


class SchemaDriver(Driver, Protocol):
    """What building, checking and probing the schema needs besides (`Schema` alone uses it)."""

    supports_truncate: bool

    def schema_access(self, *, write: bool) -> AbstractContextManager[SchemaAccess]:
        """A transaction with what building (`write`) and checking the schema needs."""
        ...

    def expected_definitions(self, scripts: Sequence[str]) -> Definitions:
        """What `scripts` make of an empty database, read back as this database prints it."""
        ...

    def rolled_back(self) -> AbstractContextManager[Callable[[str], list[Any]]]:
        """Plain SQL, one statement at a time, in a write transaction always rolled back."""
        ...

    def grant_service_role(self, role: str) -> bool:
        """Create or update a login role that uses the tables without owning them."""
        ...


class SchemaAccess(Protocol):
    def meta(self) -> dict[str, str]:
        """reportexport_meta as a dict; empty when the table does not exist."""
        ...

    def run_script(self, script: str) -> None:
        """Every statement of `script`, inside this transaction."""
        ...

    def definitions(self) -> Definitions: ...

    def set_meta(self, values: Mapping[str, str]) -> None: ...

    def before_graph(self) -> None:
        """Make way for the graph SQL (drop what it owns and may no longer create)."""
        ...


class TextCodec:
    """SQLite: moments as ISO text in UTC with milliseconds and a Z, JSON as text."""

    text_encoded = True

    def moment(self, value: datetime) -> str:
        utc = value.astimezone(UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"

    def moment_from(self, value: Any) -> datetime:
        return value if isinstance(value, datetime) else datetime.fromisoformat(value)

    def seconds(self, value: float) -> str:
        return f"{value:+.3f} seconds"

    def json(self, value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    def json_from(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    def names(self, values: Sequence[str]) -> str:
        return json.dumps(list(values))

    def record(self, cls: type[Any], row: Row) -> Any:
        return from_row(cls, row, text_encoded=True)
