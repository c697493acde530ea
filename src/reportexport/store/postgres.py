"""The job store's driver at scale: PostgreSQL through psycopg 3 and a connection pool.

Synchronous psycopg; callers on an event loop use a thread. Reads are READ ONLY, REPEATABLE READ
transactions (one snapshot); writes are READ COMMITTED, and claims skip rows other claims hold.
LISTEN/NOTIFY wakes waiting workers. The trigger functions installed by the migrations enforce
the graph for every role but the tables' owner. Errors are translated here by SQLSTATE and by
the constraint names PostgreSQL reports.
"""

from __future__ import annotations

import functools
import itertools
import re
import select
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from reportexport.core.settings import default
from reportexport.store.definitions import GRAPH_TABLES, Definitions, graph_rows, normalized
from reportexport.store.dialect import load_queries
from reportexport.store.driver import Row
from reportexport.store.errors import (
    StoreError,
    StoreUnavailableError,
    TransientStoreError,
    UniqueViolationError,
    transition_error_in,
)
from reportexport.store.rows import from_row
from reportexport.store.schema import redact

NOTIFY_CHANNEL = "reportexport_jobs"
UPGRADE_LOCK = 0x7265706F7274  # pg_advisory_xact_lock key: one upgrade at a time
UPGRADE_LOCK_TIMEOUT_MS = 300  # how long an upgrade waits for a table lock, per attempt
# Transactions that serialise on a key take a transaction-scoped advisory lock on a hash of it
# (a collision only makes two keys wait for each other).
SERIALISE = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 1))"
# What the service role may do: use the tables without owning them. History and side-effect
# rows are written by the SECURITY DEFINER triggers; nothing is deleted but heartbeats and the
# free slots of a source whose cap was lowered (a schedule is deleted by a timestamp); the
# operators' audit is appended to and read, never changed (its triggers refuse that too). Every
# table of the schema is named here or in OWNER_ONLY (tests/store/test_enforcement.py).
SERVICE_GRANTS = (
    (
        "SELECT, INSERT, UPDATE",
        (
            "jobs",
            "users",
            "webhook_endpoints",
            "webhook_deliveries",
            "deliveries",
            "chat_channels",
            "schedules",
            "schedule_firings",
        ),
    ),
    ("SELECT, UPDATE", ("job_side_effects", "source_caps")),
    ("SELECT, INSERT", ("job_downloads", "operator_audit")),
    (
        "SELECT, INSERT, UPDATE, DELETE",
        (
            "heartbeats",
            "source_slots",
            "dashboard_sessions",
            "groups",
            "group_members",
            "person_attributes",
            "schedule_recipients",
            "schedule_channels",
            "schedule_addresses",
        ),
    ),
    ("INSERT", ("source_caps",)),
    (
        "SELECT",
        (
            "job_history",
            "job_states",
            "job_transitions",
            "job_state_effects",
            "reportexport_meta",
            "job_purges",
        ),
    ),
)
# Tables the service role is given no right on, each with the reason.
OWNER_ONLY: Mapping[str, str] = {}


class NativeCodec:
    """PostgreSQL keeps moments, JSON and arrays as themselves."""

    text_encoded = False

    def moment(self, value: datetime) -> datetime:
        return value

    def moment_from(self, value: Any) -> datetime:
        return value if isinstance(value, datetime) else datetime.fromisoformat(value)

    def seconds(self, value: float) -> float:
        return value

    def json(self, value: Any) -> Jsonb:
        return Jsonb(value)

    def json_from(self, value: Any) -> Any:
        return value

    def names(self, values: Sequence[str]) -> list[str]:
        return list(values)

    def record(self, cls: type[Any], row: Row) -> Any:
        return from_row(cls, row, text_encoded=False)


Connection = psycopg.Connection[dict[str, Any]]


class ConnectionSource(Protocol):
    """Where a driver gets the connection of a transaction: a pool, or one of its own."""

    def connection(self) -> AbstractContextManager[Connection]: ...

    def close(self) -> None: ...


class OwnConnection:
    """One connection, opened by the first use after it broke, with no pool in between.

    A pool reconnects in the background with a backoff that doubles (1, 2, 4, 8 s, ...), so
    after one restart it may miss a database that is back for only a few seconds between two.
    What renews leases cannot wait for that: each use here tries at once, at the pace of its
    caller. Uses are serialised; a transaction is committed on success, rolled back on error.
    """

    def __init__(self, url: str, kwargs: Mapping[str, Any]) -> None:
        self.url = url
        self.kwargs = dict(kwargs)
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        with self._lock:
            conn = self._conn
            if conn is None or conn.closed or conn.broken:
                conn = self._conn = Connection.connect(self.url, **self.kwargs)
            try:
                yield conn
            except BaseException:
                if not conn.closed:
                    with suppress(psycopg.Error):
                        conn.rollback()
                raise
            else:
                conn.commit()
            finally:
                if conn.broken or conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.close()
                if conn.closed:
                    self._conn = None
                else:
                    _transactional(conn)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PostgresSession:
    def __init__(
        self, conn: Connection, queries: Mapping[str, str], *, pipelined: bool = True
    ) -> None:
        self.conn = conn
        self.queries = queries
        self.pipelined = pipelined

    def rows(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        cursor = self.conn.execute(self.queries[query], params or {})
        return list(cursor.fetchall()) if cursor.description else []

    def row(self, query: str, params: Mapping[str, Any] | None = None) -> Row | None:
        cursor = self.conn.execute(self.queries[query], params or {})
        return cursor.fetchone() if cursor.description else None

    def count(self, query: str, params: Mapping[str, Any] | None = None) -> int:
        return self.conn.execute(self.queries[query], params or {}).rowcount

    def each(self, query: str, params: Sequence[Mapping[str, Any]]) -> list[bool]:
        if not params:
            return []
        if not self.pipelined:  # each statement sent whole, with its Sync, and answered
            return [self.row(query, p) is not None for p in params]
        found: list[bool] = []
        with self.conn.cursor() as cur:
            # One round trip for the batch; each statement's RETURNING is a result set.
            cur.executemany(self.queries[query], params, returning=True)
            while True:
                found.append(cur.fetchone() is not None)
                if not cur.nextset():
                    break
        return found

    def together(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Row]]:
        """One simple-protocol message holding every statement: the server runs them as one
        transaction (committed after the last when autocommit), and the client sends no part
        of it before the rest, so a client that stops after sending it leaves no row locked
        behind. Each statement sees the ones before it.

        The statements are prepared once per connection, so they are not planned again on
        every call: the first message that uses one starts with its `PREPARE` (which outlives
        the message's transaction), then every statement is an `EXECUTE` with its parameters
        bound on the client. psycopg deallocates every prepared statement of a connection
        after a rollback; a message that finds one gone ran nothing (its transaction failed
        whole) and is sent again with every statement prepared anew."""
        if not statements:
            return []
        try:
            return self._together(statements)
        except psycopg.errors.InvalidSqlStatementName:
            _PREPARED.pop(self.conn, None)
            return self._together(statements)

    def _together(self, statements: Sequence[tuple[str, Mapping[str, Any]]]) -> list[list[Row]]:
        prepared = _PREPARED.setdefault(self.conn, {})
        new = [q for q in dict.fromkeys(q for q, _ in statements) if q not in prepared]
        for query in new:  # new names: a failed message may have prepared some of them
            prepared[query] = f"{PREPARED_PREFIX}{query}_{next(_NAMES)}"
        parts = [f"PREPARE {prepared[q]} AS {_positional(self.queries[q])[1]}" for q in new]
        try:
            with psycopg.ClientCursor(self.conn) as cur:
                for query, params in statements:
                    names = _positional(self.queries[query])[0]
                    values = [params[name] for name in names]
                    marks = ", ".join(["%s"] * len(names))
                    parts.append(cur.mogrify(f"EXECUTE {prepared[query]}({marks})", values))
                cur.execute(";\n".join(parts).encode())
                found: list[list[Row]] = []
                while True:
                    found.append(list(cur.fetchall()) if cur.description else [])
                    if not cur.nextset():
                        break
        except BaseException:
            for query in new:
                prepared.pop(query, None)
            raise
        return found[len(new) :]

    def serialise(self, key: str) -> None:
        self.conn.execute(SERIALISE, (key,))


# The statements `together` has prepared on each open connection, by query name, each named
# this prefix, the query's name and a number: what a session sends once prepared is
# `EXECUTE reportexport_finish_job_7(...)` (the fault suite recognises a finish by it).
PREPARED_PREFIX = "reportexport_"
_PREPARED: weakref.WeakKeyDictionary[Connection, dict[str, str]] = weakref.WeakKeyDictionary()
_NAMES = itertools.count(1)
_PLACEHOLDER = re.compile(r"%\(([a-z_][a-z0-9_]*)\)s")


@functools.cache
def _positional(query: str) -> tuple[tuple[str, ...], str]:
    """A rendered query's parameter names in order, and its text with `$n` in their places."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        if match.group(1) not in names:
            names.append(match.group(1))
        return f"${names.index(match.group(1)) + 1}"

    text = _PLACEHOLDER.sub(number, query).replace("%%", "%").rstrip().rstrip(";")
    return tuple(names), text


class PostgresSchemaAccess:
    def __init__(self, conn: Connection, queries: Mapping[str, str]) -> None:
        self.conn = conn
        self.queries = queries

    def meta(self) -> dict[str, str]:
        row = self.conn.execute("SELECT to_regclass('reportexport_meta') AS t").fetchone()
        if row is None or row["t"] is None:
            return {}
        return {r["key"]: r["value"] for r in self.conn.execute("SELECT * FROM reportexport_meta")}

    def run_script(self, script: str) -> None:
        self.conn.execute(script.encode())  # bytes: no placeholders in a migration

    def definitions(self) -> Definitions:
        return _definitions(self.conn)

    def set_meta(self, values: Mapping[str, str]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(
                self.queries["set_meta"], [{"key": k, "value": v} for k, v in values.items()]
            )

    def before_graph(self) -> None:
        """Nothing: the graph SQL replaces what it owns by name."""


class PostgresDriver:
    dialect = "postgres"
    supports_truncate = True

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = default("db_pool_size"),
        dedicated: bool = False,
        connect_timeout: float = 10.0,
        lock_timeout_seconds: float = default("db_lock_timeout_seconds"),
        statement_timeout_seconds: float = default("db_statement_timeout_seconds"),
    ) -> None:
        """`dedicated`: one connection of its own instead of a pool (`OwnConnection`)."""
        self.url = url
        self.codec = NativeCodec()
        self.queries = load_queries("postgres")
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
        kwargs: dict[str, Any] = {
            "row_factory": dict_row,
            "options": self.session_options,
            "connect_timeout": self.connect_timeout,
        }
        self.pool: ConnectionSource = (
            OwnConnection(url, kwargs) if dedicated else self._pool(url, pool_size, kwargs)
        )
        self._listener: psycopg.Connection[Any] | None = None
        self._listener_lock = threading.Lock()

    def _pool(self, url: str, size: int, kwargs: dict[str, Any]) -> ConnectionPool[Connection]:
        return ConnectionPool(
            url,
            min_size=1,
            max_size=size,
            kwargs=kwargs,
            connection_class=Connection,
            name="reportexport",
            # A connection is checked as it leaves the pool: after a restart, the dead ones
            # are replaced instead of failing the first transaction that gets them.
            check=_check_when_in_doubt,
            reset=_transactional,
            timeout=self.connect_timeout,
            reconnect_timeout=24 * 3600,
            open=True,
        )

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        """One transaction on a pooled connection, driver errors translated."""
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise _translated(exc) from exc
        except PoolTimeout as exc:
            raise TransientStoreError(f"no connection to the job store: {exc}") from exc

    @contextmanager
    def read(self) -> Iterator[PostgresSession]:
        with self._transaction() as conn:
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PostgresSession(conn, self.queries)

    @contextmanager
    def write(self) -> Iterator[PostgresSession]:
        with self._transaction() as conn:
            yield PostgresSession(conn, self.queries)

    @contextmanager
    def autocommit(self) -> Iterator[PostgresSession]:
        """Each statement is sent with its Sync in one message and commits as the server runs
        it: a client frozen after sending it holds no row lock (PostgreSQL 15 has no
        transaction timeout that would end one). Not pipelined, for the same reason."""
        with self._transaction() as conn:
            conn.autocommit = True
            yield PostgresSession(conn, self.queries, pipelined=False)

    @contextmanager
    def schema_access(self, *, write: bool) -> Iterator[PostgresSchemaAccess]:
        """Writing: one upgrade at a time; a migration may take its time, but waits for a table
        lock only UPGRADE_LOCK_TIMEOUT_MS, since every session that wants the table meanwhile
        queues behind the waiting upgrade (the caller tries again)."""
        with self._transaction() as conn:
            if write:
                conn.execute("SET LOCAL statement_timeout = 0")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (UPGRADE_LOCK,))
                conn.execute(f"SET LOCAL lock_timeout = {UPGRADE_LOCK_TIMEOUT_MS}")
            else:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield PostgresSchemaAccess(conn, self.queries)

    @contextmanager
    def rolled_back(self) -> Iterator[Callable[[str], list[Any]]]:
        """Plain SQL, one statement at a time, in a transaction always rolled back."""
        with self.pool.connection() as conn:

            def run(statement: str) -> list[Any]:
                cursor = conn.execute(statement.encode())
                if cursor.description is None:
                    return []
                return [tuple(row.values()) for row in cursor.fetchall()]

            try:
                yield run
            finally:
                conn.rollback()

    def expected_definitions(self, scripts: Sequence[str]) -> Definitions:
        """What `scripts` make of an empty schema: built in a scratch schema inside a
        transaction that is rolled back, and read back as PostgreSQL prints it."""
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
                for script in scripts:
                    conn.execute(script.encode())
                return _definitions(conn)
            except psycopg.Error as exc:
                raise _translated(exc) from exc
            finally:
                conn.rollback()

    def grant_service_role(self, role: str) -> bool:
        """Create (if needed) a login role that uses the tables without owning them.

        Returns True when the role was created. Such a role cannot disable triggers, alter
        the tables, or write history and side-effect rows other than through the triggers.
        """
        name = sql.Identifier(role)
        with self._transaction() as conn:
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            if not exists:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(name))
            conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(_schema(conn)), name
            ))  # fmt: skip
            for privileges, tables in SERVICE_GRANTS:
                conn.execute(
                    sql.SQL("GRANT " + privileges + " ON {} TO {}").format(
                        sql.SQL(", ").join(map(sql.Identifier, tables)), name
                    )
                )
        return not exists

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

    def close(self) -> None:
        with self._listener_lock:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
        self.pool.close()


def _transactional(conn: Connection) -> None:
    """A connection goes back to the pool as it came out: one transaction per `write`."""
    conn.autocommit = False
    _returned_at[conn] = time.monotonic()


# When each pooled connection went back to its pool (one that never did was just opened).
_returned_at: weakref.WeakKeyDictionary[Connection, float] = weakref.WeakKeyDictionary()
# How long a connection may sit idle before it is checked with a round trip however quiet its
# socket: long enough that a busy pool never pays it, short enough to catch a connection a
# firewall dropped without a word.
IDLE_BEFORE_ROUND_TRIP_SECONDS = 5.0


def _check_when_in_doubt(conn: Connection) -> None:
    """The pool's check, with a round trip (an empty query) only when in doubt.

    An idle connection's socket has nothing to read unless the server said goodbye or closed
    it (a restart, a terminated backend, an idle timeout): a poll of the socket, which costs no
    round trip, finds those. A connection idle for long is checked anyway. A round trip per
    transaction was a sixth of a job's time on the worker's path (bench/README.md).
    """
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the pooled connection is closed")
    returned = _returned_at.get(conn)
    idle = 0.0 if returned is None else time.monotonic() - returned
    if idle > IDLE_BEFORE_ROUND_TRIP_SECONDS or _readable(conn.fileno()):
        ConnectionPool.check_connection(conn)


def _readable(fd: int) -> bool:
    if not hasattr(select, "poll"):  # Windows
        return bool(select.select([fd], [], [], 0)[0])
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


def _translated(exc: psycopg.Error) -> Exception:
    sqlstate = exc.sqlstate or ""
    if sqlstate == "23514":  # check_violation: the status guard raises the graph's codes so
        graph_error = transition_error_in(str(exc))
        if graph_error is not None:
            return graph_error
    if sqlstate == "23505":
        diag = exc.diag
        return UniqueViolationError(
            str(exc).strip(), constraint=diag.constraint_name, table=diag.table_name
        )
    # Connection lost or refused, a server shutting down, a lock or statement timeout, a
    # serialisation failure or deadlock: OperationalError or SQLSTATE classes 08, 57, 40, 55P03.
    transient = sqlstate.startswith(("08", "57", "40", "55P03"))
    if isinstance(exc, psycopg.OperationalError) or transient:
        return TransientStoreError(f"the job store did not answer: {str(exc).strip()}")
    return exc


def _schema(conn: Connection) -> str:
    row = conn.execute("SELECT current_schema() AS s").fetchone()
    if row is None:
        raise StoreError("no current schema")
    return str(row["s"])


def _search_path_with(conn: Connection, scratch: str) -> str:
    row = conn.execute(
        "SELECT current_schema() AS s, current_setting('search_path') AS p"
    ).fetchone()
    schema, path = (str(row["s"]), str(row["p"])) if row else ("public", "public")
    parts = [part.strip() for part in path.split(",")]
    replaced = [scratch if part.strip('"') == schema else part for part in parts]
    return ", ".join(replaced if scratch in replaced else [scratch, *parts])


def _definitions(conn: Connection) -> Definitions:
    """What the current schema holds, as PostgreSQL prints it."""
    schema = _schema(conn)
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


# Every function, trigger (with whether it fires), constraint, index, table and column of the
# schema, read from the catalogs themselves: information_schema shows a role only what it has
# rights on, and the owner and the service role must read the same inventory.
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
SELECT 'table', c.relname, c.relkind::text
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
UNION ALL
SELECT 'column', c.relname || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
       || CASE a.attidentity WHEN 'a' THEN ' ALWAYS AS IDENTITY'
                             WHEN 'd' THEN ' BY DEFAULT AS IDENTITY' ELSE '' END
       || CASE WHEN a.attgenerated = 's' THEN ' GENERATED' ELSE '' END
       || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
  FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE n.nspname = %(schema)s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
   AND a.attnum > 0 AND NOT a.attisdropped
"""
