"""The job store at scale: PostgreSQL, claims with FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY.

Synchronous psycopg on a connection pool; callers on an event loop use a thread. The trigger
function installed by the migrations enforces the graph for every role but the tables' owner.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from reportexport.graph import Graph
from reportexport.graph_sql import postgres_graph_sql
from reportexport.store.definitions import GRAPH_TABLES, Definitions, graph_rows, normalized
from reportexport.store.errors import (
    StoreError,
    StoreUnavailableError,
    TransientStoreError,
    transition_error_in,
)
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
    redact,
)

SQL = load_queries("postgres")
NOTIFY_CHANNEL = "reportexport_jobs"
UPGRADE_LOCK = 0x7265706F7274  # pg_advisory_xact_lock key: one upgrade at a time
UPGRADE_ATTEMPTS = 5
# Creates of one owner take a transaction-scoped advisory lock on a hash of the owner's name
# (a collision only makes two owners wait for each other).
OWNER_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))"
CANCEL_ATTEMPTS = 5
SERVICE_GRANTS = (
    ("SELECT, INSERT, UPDATE", ("jobs", "users", "webhook_endpoints", "webhook_deliveries")),
    ("SELECT, UPDATE", ("job_side_effects",)),
    ("SELECT, INSERT", ("job_downloads",)),
    ("SELECT, INSERT, UPDATE, DELETE", ("heartbeats",)),
    (
        "SELECT",
        ("job_history", "job_states", "job_transitions", "job_state_effects", "reportexport_meta"),
    ),
)


class PostgresDatabase(SqlOperations):
    text_encoded = False
    queries = SQL

    def __init__(
        self,
        url: str,
        graph: Graph,
        *,
        pool_size: int = 8,
        connect_timeout: float = 10.0,
        lock_timeout_seconds: float = 5.0,
        statement_timeout_seconds: float = 60.0,
    ) -> None:
        self.url = url
        self.graph = graph
        self.connect_timeout = max(1, round(connect_timeout))
        # Every session waits at most this long for a row lock or a statement, so a process
        # paused inside a transaction cannot stall the others behind it.
        self.session_options = (
            f"-c lock_timeout={int(lock_timeout_seconds * 1000)} "
            f"-c statement_timeout={int(statement_timeout_seconds * 1000)}"
        )
        try:  # fail fast with the driver's reason rather than let the pool retry quietly
            psycopg.connect(url, connect_timeout=self.connect_timeout).close()
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(
                f"cannot connect to PostgreSQL at {redact(url)}: {str(exc).strip()}"
            ) from exc
        self.pool: ConnectionPool[psycopg.Connection[dict[str, Any]]] = ConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            kwargs={
                "row_factory": dict_row,
                "options": self.session_options,
                "connect_timeout": self.connect_timeout,
            },
            connection_class=psycopg.Connection[dict[str, Any]],
            name="reportexport",
            # A connection is checked as it leaves the pool: after a restart, the dead ones
            # are replaced instead of failing the first transaction that gets them.
            check=ConnectionPool.check_connection,
            timeout=self.connect_timeout,
            reconnect_timeout=24 * 3600,
            open=True,
        )
        self._listener: psycopg.Connection[Any] | None = None
        self._listener_lock = threading.Lock()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        """One transaction on a pooled connection, driver errors translated."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _translated(exc) from exc
        except PoolTimeout as exc:
            raise TransientStoreError(f"no connection to the job store: {exc}") from exc

    def close(self) -> None:
        with self._listener_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        self.pool.close()

    # -- schema ----------------------------------------------------------------------------

    def _meta(self, conn: psycopg.Connection[dict[str, Any]]) -> dict[str, str]:
        row = conn.execute("SELECT to_regclass('reportexport_meta') AS t").fetchone()
        if row is None or row["t"] is None:
            return {}
        return {r["key"]: r["value"] for r in conn.execute("SELECT * FROM reportexport_meta")}

    def schema_status(self) -> SchemaStatus:
        with self._tx() as conn:
            meta = self._meta(conn)
            installed = _definitions(conn).digest if meta else None
        return SchemaStatus(
            version=int(meta.get(SCHEMA_VERSION_KEY, 0)),
            latest_version=len(migration_files("postgres")),
            fingerprint=meta.get(FINGERPRINT_KEY),
            fixture_fingerprint=self.graph.fingerprint,
            store_id=meta.get(STORE_ID_KEY),
            definitions_recorded=meta.get(DEFINITIONS_KEY),
            definitions_installed=installed,
        )

    def upgrade(self) -> SchemaStatus:
        """Apply pending migrations, and the graph whenever the fixture changed or what is
        installed differs from what the migrations and the graph make; one transaction.

        It waits at most `lock_timeout` for each lock (live workers hold row locks for
        moments), and tries again a few times rather than stall them behind its own locks.
        """
        expected = self.expected_definitions()
        for attempt in range(UPGRADE_ATTEMPTS):
            try:
                self._upgrade(expected)
                break
            except TransientStoreError:
                if attempt == UPGRADE_ATTEMPTS - 1:
                    raise
                time.sleep(0.5 * 2**attempt)
        return self.schema_status()

    def _upgrade(self, expected: Definitions) -> None:
        with self._tx() as conn:
            conn.execute("SET LOCAL statement_timeout = 0")  # a migration may take its time
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (UPGRADE_LOCK,))
            meta = self._meta(conn)
            version = int(meta.get(SCHEMA_VERSION_KEY, 0))
            updates: dict[str, str] = {}
            for number, _, migration in migration_files("postgres"):
                if number > version:
                    conn.execute(migration.encode())
                    updates[SCHEMA_VERSION_KEY] = str(number)
            graph_changed = meta.get(FINGERPRINT_KEY) != self.graph.fingerprint
            if graph_changed or _definitions(conn) != expected:
                conn.execute(postgres_graph_sql(self.graph).encode())
            still = _definitions(conn).differences(expected)
            if still:
                raise StoreError(
                    "the job store holds objects db upgrade cannot make right: " + "; ".join(still)
                )
            updates[FINGERPRINT_KEY] = self.graph.fingerprint
            updates[GRAPH_KEY] = json.dumps(self.graph.document, sort_keys=True)
            updates[DEFINITIONS_KEY] = expected.digest
            if STORE_ID_KEY not in meta:
                updates[STORE_ID_KEY] = new_store_id()
            with conn.cursor() as cur:
                cur.executemany(SQL["set_meta"], list(updates.items()))

    def installed_definitions(self) -> Definitions:
        with self._tx() as conn:
            return _definitions(conn)

    def expected_definitions(self) -> Definitions:
        """What every migration and the graph SQL make of an empty schema: built in a scratch
        schema inside a transaction that is rolled back, and read back as PostgreSQL prints it."""
        scratch = f"reportexport_scratch_{uuid.uuid4().hex[:12]}"
        with self.pool.connection() as conn:
            try:
                conn.execute("SET LOCAL statement_timeout = 0")
                conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(scratch)))
                # The same search path with the scratch schema in the real one's place, so the
                # functions' `SET search_path FROM CURRENT` reads alike on both sides.
                conn.execute(
                    "SELECT set_config('search_path', %s, true)",
                    (_search_path_with(conn, scratch),),
                )
                for _, _, migration in migration_files("postgres"):
                    conn.execute(migration.encode())
                conn.execute(postgres_graph_sql(self.graph).encode())
                return _definitions(conn)
            except psycopg.Error as exc:
                raise _translated(exc) from exc
            finally:
                conn.rollback()

    def probe(self) -> ProbeReport:
        """The behaviour probe, in a transaction that is always rolled back."""
        with self.pool.connection() as conn:

            def run(statement: str) -> list[Any]:
                cursor = conn.execute(statement.encode())
                if cursor.description is None:
                    return []
                return [tuple(row.values()) for row in cursor.fetchall()]

            try:
                return Probe(self.graph, run, truncate=True).everything()
            finally:
                conn.rollback()

    def grant_service_role(self, role: str) -> bool:
        """Create (if needed) a login role that uses the tables without owning them.

        Returns True when the role was created. Such a role cannot disable triggers, alter
        the tables, or write history and side-effect rows other than through the triggers.
        """
        name = sql.Identifier(role)
        with self._tx() as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(self._schema(conn)), name
            ))  # fmt: skip
            for privileges, tables in SERVICE_GRANTS:
                conn.execute(
                    sql.SQL("GRANT " + privileges + " ON {} TO {}").format(
                        sql.SQL(", ").join(map(sql.Identifier, tables)), name
                    )
                )
        return not exists

    def _schema(self, conn: psycopg.Connection[dict[str, Any]]) -> str:
        row = conn.execute("SELECT current_schema() AS s").fetchone()
        if row is None:
            raise StoreError("no current schema")
        return str(row["s"])

    # -- what SqlOperations needs ------------------------------------------------------------

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[psycopg.Connection[dict[str, Any]]]:
        with self._tx() as conn:
            if not write:  # one snapshot for every read in the block
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield conn

    def _json(self, value: Any) -> Jsonb:
        return Jsonb(value)

    def _names(self, values: Any) -> list[str]:
        return list(values)

    def _seconds(self, value: float) -> float:
        return value

    def _finish_rows(self, conn: Any, params: list[dict[str, Any]]) -> list[bool]:
        finished: list[bool] = []
        with conn.cursor() as cur:
            # One round trip for the batch; each row is fenced by its own token.
            cur.executemany(SQL["finish_job"], params, returning=True)
            while True:
                finished.append(cur.fetchone() is not None)
                if not cur.nextset():
                    break
        return finished

    def _lock_owner(self, conn: Any, owner: str) -> None:
        conn.execute(OWNER_LOCK, (owner,))

    def wait_for_change(self, timeout: float) -> bool:
        """Wait for a NOTIFY from the job triggers; a hint only, so callers poll as well.

        The listening connection is its own; when it drops (a restart, a failover) it is
        opened again, with its LISTEN, on the next call, and this call just waits out its time.
        """
        started = time.monotonic()
        with self._listener_lock:
            try:
                if self._listener is None or self._listener.closed:
                    self._listener = psycopg.connect(
                        self.url, autocommit=True, connect_timeout=self.connect_timeout
                    )
                    self._listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
                for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                    return True
                return False
            except psycopg.Error:
                if self._listener is not None:
                    self._listener.close()
                self._listener = None
        time.sleep(max(0.0, timeout - (time.monotonic() - started)))
        return False

    # -- EffectsQueries hooks ------------------------------------------------------------------

    def _timestamp(self, moment: datetime) -> datetime:
        return moment

    # -- helpers ---------------------------------------------------------------------------


def _translated(exc: psycopg.Error) -> Exception:
    graph_error = transition_error_in(str(exc))
    if graph_error is not None:
        return graph_error
    # Connection lost or refused, a server shutting down, a lock or statement timeout, a
    # serialisation failure: all OperationalError or its SQLSTATE classes 08, 57, 55P03, 40.
    state = exc.sqlstate or ""
    if isinstance(exc, psycopg.OperationalError) or state.startswith(("08", "57", "40", "55P03")):
        return TransientStoreError(f"the job store did not answer: {str(exc).strip()}")
    return exc


def _search_path_with(conn: psycopg.Connection[dict[str, Any]], scratch: str) -> str:
    row = conn.execute(
        "SELECT current_schema() AS s, current_setting('search_path') AS p"
    ).fetchone()
    schema, path = (str(row["s"]), str(row["p"])) if row else ("public", "public")
    parts = [part.strip() for part in path.split(",")]
    replaced = [scratch if part.strip('"') == schema else part for part in parts]
    return ", ".join(replaced if scratch in replaced else [scratch, *parts])


def _definitions(conn: psycopg.Connection[dict[str, Any]]) -> Definitions:
    """What the current schema holds, as PostgreSQL prints it."""
    row = conn.execute("SELECT current_schema() AS s").fetchone()
    schema = str(row["s"]) if row else "public"
    items: dict[str, str] = {}
    for kind, name, text in (
        (r["kind"], r["name"], r["text"]) for r in conn.execute(_INVENTORY, {"schema": schema})
    ):
        items[f"{kind} {name}"] = normalized(str(text), schema)
    if "table job_states" in items:
        items |= graph_rows(
            {t: [tuple(r.values()) for r in conn.execute(q)] for t, q in GRAPH_TABLES.items()}
        )
    return Definitions(items)


# Every function, trigger (with whether it fires), constraint, index and column of the schema.
_INVENTORY = """
SELECT 'function' AS kind, p.proname AS name, pg_get_functiondef(p.oid) AS text
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = %(schema)s
UNION ALL
SELECT 'trigger', c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid) || ' ' || t.tgenabled::text
  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s AND NOT t.tgisinternal
UNION ALL
SELECT 'constraint', c.relname || '.' || k.conname, pg_get_constraintdef(k.oid)
  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s
UNION ALL
SELECT 'index', indexname, indexdef FROM pg_indexes WHERE schemaname = %(schema)s
UNION ALL
SELECT 'table', table_name, table_name FROM information_schema.tables
 WHERE table_schema = %(schema)s
UNION ALL
SELECT 'column', table_name || '.' || column_name,
       data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
  FROM information_schema.columns WHERE table_schema = %(schema)s
"""
