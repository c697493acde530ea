"""The embedded job store: one SQLite file in WAL mode.

One connection per thread; every write is one `BEGIN IMMEDIATE` transaction, so SQLite's
single writer serialises claims. The triggers in the file enforce the graph for any client,
the `sqlite3` shell included.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reportexport.graph import Graph
from reportexport.graph_sql import sqlite_graph_sql
from reportexport.store.errors import TransientStoreError, transition_error_in
from reportexport.store.operations import SqlOperations
from reportexport.store.queries import load_queries, migration_files
from reportexport.store.schema import (
    FINGERPRINT_KEY,
    GRAPH_KEY,
    SCHEMA_VERSION_KEY,
    STORE_ID_KEY,
    SchemaStatus,
    new_store_id,
)

SQL = load_queries("sqlite")
CANCEL_ATTEMPTS = 5
POLL_SECONDS = 0.05


def sqlite_path(url: str) -> str:
    """`sqlite:///relative.db` or `sqlite:////absolute.db` to a file path."""
    prefix = "sqlite:///"
    if not url.startswith(prefix) or url == prefix:
        raise ValueError(f"SQLite URLs look like sqlite:///path/to/file.db, not {url!r}")
    return url[len(prefix) :]


def _seconds(value: float) -> str:
    """An SQLite date modifier such as '+30.000 seconds'."""
    return f"{value:+.3f} seconds"


class SqliteDatabase(SqlOperations):
    text_encoded = True
    queries = SQL

    def __init__(self, url: str, graph: Graph, *, lock_timeout_seconds: float = 30.0) -> None:
        self.url = url
        self.graph = graph
        self.lock_timeout_seconds = lock_timeout_seconds
        self.path = sqlite_path(url)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    # -- connections -----------------------------------------------------------------------

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
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise _translated(exc) from exc
        try:
            yield conn
        except sqlite3.DatabaseError as exc:
            conn.execute("ROLLBACK")
            raise _translated(exc) from exc
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
        self._local = threading.local()

    # -- schema ----------------------------------------------------------------------------

    def _meta(self, conn: sqlite3.Connection) -> dict[str, str]:
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'reportexport_meta'"
        ).fetchone()
        if not exists:
            return {}
        return {row["key"]: row["value"] for row in conn.execute("SELECT * FROM reportexport_meta")}

    def schema_status(self) -> SchemaStatus:
        meta = self._meta(self._conn())
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(migration_files("sqlite")),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
            store_id=meta.get(STORE_ID_KEY),
        )

    def upgrade(self) -> SchemaStatus:
        """Apply pending migrations, then the graph if the fixture changed; one transaction."""
        conn = self._conn()
        meta = self._meta(conn)
        version = int(meta.get(SCHEMA_VERSION_KEY, 0))
        pending = [(n, sql) for n, _, sql in migration_files("sqlite") if n > version]
        graph_changed = meta.get(FINGERPRINT_KEY) != self.graph.fingerprint
        # executescript commits whatever is open first, so the script opens the transaction
        # itself and the metadata is written with bound parameters before the COMMIT.
        script = ["BEGIN IMMEDIATE;", *(sql for _, sql in pending)]
        if graph_changed:
            script.append(sqlite_graph_sql(self.graph))
        try:
            conn.executescript("\n".join(script))
            updates = {SCHEMA_VERSION_KEY: str(pending[-1][0])} if pending else {}
            if graph_changed:
                updates[FINGERPRINT_KEY] = self.graph.fingerprint
                updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            if STORE_ID_KEY not in meta:
                updates[STORE_ID_KEY] = new_store_id()
            conn.executemany(SQL["set_meta"], updates.items())
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _translated(exc) from exc
        return self.schema_status()

    # -- what SqlOperations needs ------------------------------------------------------------

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[sqlite3.Connection]:
        if write:
            with self._write() as conn:
                yield conn
            return
        conn = self._conn()
        with _read(conn):
            yield conn

    def _json(self, value: Any) -> str:
        return json.dumps(value, sort_keys=True)

    def _names(self, values: Any) -> str:
        return json.dumps(list(values))

    def _seconds(self, value: float) -> str:
        return _seconds(value)

    def _finish_rows(self, conn: Any, params: list[dict[str, Any]]) -> list[bool]:
        return [conn.execute(SQL["finish_job"], p).fetchone() is not None for p in params]

    def _lock_owner(self, conn: Any, owner: str) -> None:
        """Nothing to take: a write transaction (BEGIN IMMEDIATE) is SQLite's only writer."""

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

    # -- EffectsQueries hooks ------------------------------------------------------------------

    def _timestamp(self, moment: datetime) -> str:
        """As the schema stores moments: UTC, milliseconds, a Z."""
        utc = moment.astimezone(UTC)
        return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"

    # -- helpers ---------------------------------------------------------------------------


@contextmanager
def _read(conn: sqlite3.Connection) -> Iterator[None]:
    """A consistent snapshot across several SELECTs."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def _translated(exc: sqlite3.DatabaseError) -> Exception:
    graph_error = transition_error_in(str(exc))
    if graph_error is not None:
        return graph_error
    if isinstance(exc, sqlite3.OperationalError) and _TRANSIENT.search(str(exc)):
        return TransientStoreError(f"the job store is busy or unreadable: {exc}")
    return exc


# The only SQLite errors that a retry may cure: a writer holding the lock past the busy
# timeout, and I/O that failed (a full or vanished volume).
_TRANSIENT = re.compile(r"database (table )?is locked|disk I/O error|unable to open")
