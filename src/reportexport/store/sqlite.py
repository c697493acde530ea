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
from reportexport.graph_sql import SQLITE_EFFECTS_TRIGGER_PREFIX, sqlite_graph_sql
from reportexport.store.definitions import GRAPH_TABLES, Definitions, graph_rows, normalized
from reportexport.store.errors import StoreError, TransientStoreError, transition_error_in
from reportexport.store.operations import SqlOperations
from reportexport.store.probe import Probe, ProbeReport
from reportexport.store.queries import load_queries, migration_files
from reportexport.store.schema import (
    DEFINITIONS_KEY,
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
        conn = self._conn()
        meta = self._meta(conn)
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(migration_files("sqlite")),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
            store_id=meta.get(STORE_ID_KEY),
            definitions_recorded=meta.get(DEFINITIONS_KEY),
            definitions_installed=_definitions(conn).digest if meta else None,
        )

    def upgrade(self) -> SchemaStatus:
        """Apply pending migrations, and the graph whenever the fixture changed or what is
        installed differs from what the migrations and the graph make; one transaction."""
        conn = self._conn()
        meta = self._meta(conn)
        version = int(meta.get(SCHEMA_VERSION_KEY, 0))
        pending = [(n, sql) for n, _, sql in migration_files("sqlite") if n > version]
        expected = self.expected_definitions()
        try:
            conn.execute("BEGIN IMMEDIATE")
            for _, migration in pending:
                _run_script(conn, migration)
            graph_changed = meta.get(FINGERPRINT_KEY) != self.graph.fingerprint
            if graph_changed or _definitions(conn) != expected:
                _drop_graph_triggers(conn)
                _run_script(conn, sqlite_graph_sql(self.graph))
            still = _definitions(conn).differences(expected)
            if still:
                raise StoreError(
                    "the job store holds objects db upgrade cannot make right: " + "; ".join(still)
                )
            updates = {SCHEMA_VERSION_KEY: str(pending[-1][0])} if pending else {}
            updates[FINGERPRINT_KEY] = self.graph.fingerprint
            updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            updates[DEFINITIONS_KEY] = expected.digest
            if STORE_ID_KEY not in meta:
                updates[STORE_ID_KEY] = new_store_id()
            conn.executemany(SQL["set_meta"], updates.items())
            conn.execute("COMMIT")
        except (sqlite3.DatabaseError, StoreError) as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, StoreError):
                raise
            raise _translated(exc) from exc
        return self.schema_status()

    def installed_definitions(self) -> Definitions:
        return _definitions(self._conn())

    def expected_definitions(self) -> Definitions:
        """What every migration and the graph SQL make of an empty database."""
        scratch = sqlite3.connect(":memory:", isolation_level=None)
        try:
            for _, _, migration in migration_files("sqlite"):
                scratch.executescript(migration)
            scratch.executescript(sqlite_graph_sql(self.graph))
            return _definitions(scratch)
        finally:
            scratch.close()

    def probe(self) -> ProbeReport:
        """The behaviour probe, in a write transaction that is always rolled back."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            return Probe(
                self.graph, lambda sql: conn.execute(sql).fetchall(), truncate=False
            ).everything()
        finally:
            conn.execute("ROLLBACK")

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


def _drop_graph_triggers(conn: sqlite3.Connection) -> None:
    """The side-effect triggers of every state, those of states the fixture no longer has too."""
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?",
        (len(SQLITE_EFFECTS_TRIGGER_PREFIX), SQLITE_EFFECTS_TRIGGER_PREFIX),
    ).fetchall()
    for (name,) in rows:
        conn.execute(f'DROP TRIGGER "{name}"')


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
