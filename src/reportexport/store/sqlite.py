"""The embedded job store's driver: one SQLite file in WAL mode.

One connection per thread. A write is one `BEGIN IMMEDIATE` transaction, so SQLite's single
writer serialises claims; a read is a deferred transaction, which in WAL mode takes no write
lock and sees one snapshot. The triggers in the file enforce the graph for any client, the
`sqlite3` shell included. Errors are translated here by SQLite's extended result codes.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from frozen_lifecycle.sql import SQLITE_EFFECTS_TRIGGER_PREFIX
from reportexport.core.settings import default
from reportexport.store.definitions import GRAPH_TABLES, Definitions, graph_rows, normalized
from reportexport.store.dialect import load_queries
from reportexport.store.driver import Row, TextCodec
from reportexport.store.errors import (
    StoreError,
    TransientStoreError,
    UniqueViolationError,
    transition_error_in,
)

POLL_SECONDS = 0.05
# The result codes a retry may cure: a writer holding the lock past the busy timeout, and I/O
# that failed (a full or vanished volume).
_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_FULL")
_UNIQUE = ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY")


def _one() -> int:
    return 1


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db` or `sqlite:////absolute.db` to a file path."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix:
        raise ValueError(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    return url[len(prefix) :]


class SqliteSession:
    def __init__(self, conn: sqlite3.Connection, queries: Mapping[str, str]) -> None:
        self.conn = conn
        self.queries = queries

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        return self.conn.execute(self.queries[query], params or {}).fetchall()

    def row(self, query: str, params: Mapping[str, Any] | None = None) -> Row | None:
        rows = self.rows(query, params)
        return rows[0] if rows else None

    def count(self, query: str, params: Mapping[str, Any] | None = None) -> int:
        return self.conn.execute(self.queries[query], params or {}).rowcount

    def each(self, query: str, params: Sequence[Mapping[str, Any]]) -> list[bool]:
        sql = self.queries[query]
        return [self.conn.execute(sql, p).fetchone() is not None for p in params]

    def together(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Row]]:
        """In this session's transaction, one after another."""
        return [self.rows(query, params) for query, params in statements]

    def serialise(self, key: str) -> None:
        """Nothing to take: a write transaction is SQLite's only writer."""


class SqliteSchemaAccess:
    def __init__(self, conn: sqlite3.Connection, queries: Mapping[str, str]) -> None:
        self.conn = conn
        self.queries = queries

    def meta(self) -> dict[str, str]:
        exists = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reportexport_meta'"
        ).fetchone()
        if not exists:
            return {}
        return {r["key"]: r["value"] for r in self.conn.execute("SELECT * FROM reportexport_meta")}

    def run_script(self, script: str) -> None:
        _run_script(self.conn, script)

    def definitions(self) -> Definitions:
        return _definitions(self.conn)

    def set_meta(self, values: Mapping[str, str]) -> None:
        self.conn.executemany(
            self.queries["set_meta"], [{"key": k, "value": v} for k, v in values.items()]
        )

    def before_graph(self) -> None:
        """Drop the side-effect triggers of every state, those of states the fixture no longer
        has too (the graph SQL recreates its own)."""
        rows = self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?",
            (len(SQLITE_EFFECTS_TRIGGER_PREFIX), SQLITE_EFFECTS_TRIGGER_PREFIX),
        ).fetchall()
        for (name,) in rows:
            self.conn.execute(f'DROP TRIGGER "{name}"')


class SqliteDriver:
    dialect = "sqlite"
    supports_truncate = False

    def __init__(
        self, url: str, *, lock_timeout_seconds: float = default("db_lock_timeout_seconds")
    ) -> None:
        self.url = url
        self.codec = TextCodec()
        self.queries = load_queries("sqlite")
        self.lock_timeout_seconds = lock_timeout_seconds
        self.path = sqlite_path(url)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            # SQLite's busy timeout is its lock timeout: how long a write waits for the writer.
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=self.lock_timeout_seconds,
            )
            conn.row_factory = sqlite3.Row
            # Marks the store's own connections: only they may write a purge record (0011).
            conn.create_function("reportexport_connection", 0, _one, deterministic=True)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute(begin)
        except sqlite3.Error as exc:
            raise _translated(exc, conn) from exc
        try:
            yield conn
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK")
            raise _translated(exc, conn) from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _translated(exc, conn) from exc

    @contextmanager
    def read(self) -> Iterator[SqliteSession]:
        with self._transaction("BEGIN") as conn:
            yield SqliteSession(conn, self.queries)

    @contextmanager
    def write(self) -> Iterator[SqliteSession]:
        with self._transaction("BEGIN IMMEDIATE") as conn:
            yield SqliteSession(conn, self.queries)

    @contextmanager
    def autocommit(self) -> Iterator[SqliteSession]:
        """A write transaction: the connection is in this process, so no client can stop
        between a statement and its commit while the process goes on."""
        with self.write() as session:
            yield session

    @contextmanager
    def schema_access(self, *, write: bool) -> Iterator[SqliteSchemaAccess]:
        with self._transaction("BEGIN IMMEDIATE" if write else "BEGIN") as conn:
            yield SqliteSchemaAccess(conn, self.queries)

    @contextmanager
    def rolled_back(self) -> Iterator[Callable[[str], list[Any]]]:
        """Plain SQL, one statement at a time, in a write transaction always rolled back."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield lambda sql: conn.execute(sql).fetchall()
        finally:
            conn.execute("ROLLBACK")

    def expected_definitions(self, scripts: Sequence[str]) -> Definitions:
        scratch = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for script in scripts:
                scratch.executescript(script)
            return _definitions(scratch)
        finally:
            scratch.close()

    def grant_service_role(self, role: str) -> bool:
        raise StoreError("SQLite has no roles: the file's permissions decide who may write it")

    def wait_for_change(self, timeout: float) -> bool:
        """Poll SQLite's data_version, which moves when another connection commits."""
        conn = self._conn()
        start = conn.execute("PRAGMA data_version").fetchone()[0]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
            if conn.execute("PRAGMA data_version").fetchone()[0] != start:
                return True
        return False

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Each statement of `script` inside the open transaction (executescript would commit)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            conn.execute(statement)
            statement = ""
    if statement.strip() and not statement.strip().startswith("--"):
        conn.execute(statement)


def _definitions(conn: sqlite3.Connection) -> Definitions:
    items = {
        f"{kind} {name}": normalized(sql)
        for kind, name, sql in conn.execute(
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        )
    }
    if "table job_states" in items:
        items |= graph_rows({t: conn.execute(sql).fetchall() for t, sql in GRAPH_TABLES.items()})
    return Definitions(items)


def _translated(exc: sqlite3.Error, conn: sqlite3.Connection) -> Exception:
    code = getattr(exc, "sqlite_errorname", "") or ""
    if code == "SQLITE_CONSTRAINT_TRIGGER":
        graph_error = transition_error_in(str(exc))
        if graph_error is not None:
            return graph_error
    if code in _UNIQUE:
        constraint, table = _unique_names(str(exc), conn)
        return UniqueViolationError(str(exc), constraint=constraint, table=table)
    if code.startswith(_TRANSIENT):
        return TransientStoreError(f"the job store is busy or unreadable: {exc}")
    return exc


def _unique_names(message: str, conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """SQLite names a unique index (`index 'name'`) or the columns (`users.name, ...`)."""
    index = re.search(r"index '([^']+)'", message)
    if index:
        row = conn.execute(
            "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND name = ?",
            (index.group(1),),
        ).fetchone()
        return index.group(1), row[0] if row else None
    columns = re.findall(r"(\w+)\.(\w+)", message.partition(":")[2])
    if not columns:
        return None, None
    table = columns[0][0]
    return f"{table}({', '.join(column for _, column in columns)})", table
