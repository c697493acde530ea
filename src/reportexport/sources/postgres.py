"""PostgreSQL, streamed with `COPY (query) TO STDOUT` on synchronous psycopg.

COPY takes no bind parameters, so validated values go through psycopg's typed literal
adaptation (`sql.Literal`), never string formatting. The query runs in a read-only
transaction with a statement timeout; a cancel uses the protocol's cancel request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from reportexport.core.catalog import SourceConfig
from reportexport.core.csvformat import Column, CsvOptions, as_written, projection
from reportexport.core.sqlparams import Param, split_sql
from reportexport.sources import (
    CancelToken,
    Exported,
    Interrupter,
    QueryTimeoutError,
    Sink,
    SourceError,
    SourceUnavailableError,
    query_failed,
)

# Type OIDs from pg_type; anything else is written as its text form.
_KINDS = {
    16: "boolean",
    20: "integer",
    21: "integer",
    23: "integer",
    26: "integer",
    1700: "decimal",
    700: "float",
    701: "float",
    1082: "date",
    1114: "timestamp",
    1184: "timestamptz",
    25: "text",
    1043: "text",
    1042: "text",
    19: "text",
}
_FLOAT_BITS = {700: 24, 701: 53}


def column_of(description: psycopg.Column) -> Column:
    """A result column from psycopg's description: numeric(p,s) and timestamp(p) typmods."""
    kind = _KINDS.get(description.type_code, "other")
    if kind == "decimal":
        return Column(description.name, kind, description.precision, description.scale)
    if kind in ("timestamp", "timestamptz"):
        return Column(description.name, kind, description.precision)
    if kind == "float":
        return Column(description.name, kind, _FLOAT_BITS[description.type_code])
    return Column(description.name, kind)


_MARK = "\x00query\x00"
BLOCK = 1 << 20


def composed(query: str, params: Mapping[str, Any]) -> sql.Composed:
    """The query with each :name replaced by a typed literal of its validated value."""
    parts: list[sql.Composable] = []
    for segment in split_sql(query):
        if isinstance(segment, Param):
            parts.append(sql.Literal(params[segment.name]))
        else:
            parts.append(sql.SQL(segment))  # braces mean nothing outside .format()
    return sql.Composed(parts)


class PostgresSource:
    def __init__(self, config: SourceConfig) -> None:
        self.config = config

    def _connect(self, options: CsvOptions | None) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.config.url, connect_timeout=10)
        except psycopg.OperationalError as exc:
            raise SourceUnavailableError(f"source {self.config.name!r} is unreachable") from exc
        timeout_ms = int(self.config.statement_timeout_seconds * 1000)
        conn.execute("SET TRANSACTION READ ONLY")
        conn.execute(sql.SQL("SET LOCAL statement_timeout = {}").format(sql.Literal(timeout_ms)))
        conn.execute("SET LOCAL DateStyle = 'ISO, YMD'")
        conn.execute("SET LOCAL IntervalStyle = 'iso_8601'")
        conn.execute("SET LOCAL extra_float_digits = 1")
        if options is not None:
            conn.execute(sql.SQL("SET LOCAL TIME ZONE {}").format(sql.Literal(options.time_zone)))
        return conn

    def describe(self, query: str, params: Mapping[str, Any]) -> list[Column]:
        with self._connect(None) as conn:
            return self._describe(conn, query, params)

    def _describe(
        self, conn: psycopg.Connection[Any], query: str, params: Mapping[str, Any]
    ) -> list[Column]:
        probe = sql.SQL("SELECT * FROM ({}) AS q LIMIT 0").format(composed(query, params))
        try:
            cursor = conn.execute(probe)
        except psycopg.Error as exc:
            raise _translated(exc) from exc
        return [column_of(d) for d in cursor.description or ()]

    def export(
        self,
        query: str,
        params: Mapping[str, Any],
        options: CsvOptions,
        sink: Sink,
        cancel: CancelToken,
    ) -> Exported:
        conn = self._connect(options)
        # A cancel request opens a connection of its own: a few a second are plenty.
        interrupter = Interrupter(conn.cancel_safe, every=0.25)
        unregister = cancel.on_cancel(interrupter.start)
        try:
            try:
                columns = self._describe(conn, query, params)
            except Exception:
                cancel.raise_if_cancelled()  # interrupted as it was described: a cancel
                raise
            statement = _copy_statement(query, params, columns, options)
            target: Sink = _CrlfWriter(sink) if options.line_ending == "crlf" else sink
            # COPY sends a message per row: gather them so the sink (hash, limits, store)
            # sees large blocks.
            block = bytearray()
            with conn.cursor() as cursor, cursor.copy(statement) as copy:
                for chunk in copy:
                    block += chunk
                    if len(block) >= BLOCK:
                        target.write(bytes(block))
                        block.clear()
                if block:
                    target.write(bytes(block))
                rows = cursor.rowcount
            cancel.raise_if_cancelled()
            return Exported(
                rows=rows if rows >= 0 else None, columns=tuple(as_written(columns, options))
            )
        except psycopg.Error as exc:
            cancel.raise_if_cancelled()
            raise _translated(exc) from exc
        finally:
            unregister()
            interrupter.stop()
            conn.close()

    def copy_to_file(
        self, query: str, params: Mapping[str, Any], options: CsvOptions, path: str
    ) -> int:
        """The export's own `COPY ... TO STDOUT` (its projection and options) straight into a
        file, PostgreSQL's LF line ends as they come: what an export costs without the hash and
        the object store (bench/export.py's reference). The number of rows."""
        with self._connect(options) as conn, open(path, "wb") as out:
            try:
                columns = self._describe(conn, query, params)
                statement = _copy_statement(query, params, columns, options)
                with conn.cursor() as cursor, cursor.copy(statement) as copy:
                    for chunk in copy:
                        out.write(chunk)
                    return max(cursor.rowcount, 0)
            except psycopg.Error as exc:
                raise _translated(exc) from exc


def _copy_statement(
    query: str, params: Mapping[str, Any], columns: list[Column], options: CsvOptions
) -> sql.Composed:
    before, after = projection(_MARK, columns, options, "postgres").split(_MARK)
    return sql.Composed([
        sql.SQL("COPY (" + before),
        composed(query, params),
        sql.SQL(after + ") TO STDOUT (FORMAT csv, HEADER, NULL "),
        sql.Literal(options.null_marker),
        sql.SQL(", DELIMITER "),
        sql.Literal(options.delimiter_char),
        sql.SQL(")"),
    ])  # fmt: skip


class _CrlfWriter:
    """PostgreSQL's COPY writes LF only: turn record ends, not LFs inside quotes, into CRLF."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.quoted = False

    def write(self, data: bytes) -> None:
        if not self.quoted and b'"' not in data:
            self.sink.write(data.replace(b"\n", b"\r\n"))
            return
        out = bytearray()
        start = 0
        for index, byte in enumerate(data):
            if byte == 0x22:
                self.quoted = not self.quoted
            elif byte == 0x0A and not self.quoted:
                out += data[start:index] + b"\r\n"
                start = index + 1
        out += data[start:]
        self.sink.write(bytes(out))


def _translated(exc: psycopg.Error) -> SourceError:
    if isinstance(exc, psycopg.errors.QueryCanceled) and "statement timeout" in str(exc):
        return QueryTimeoutError("the query ran longer than the source's statement timeout")
    if isinstance(exc, psycopg.OperationalError):
        return SourceUnavailableError("the source connection failed during the export")
    text = (exc.diag.message_primary if exc.diag else None) or str(exc).strip().splitlines()[0]
    state = exc.sqlstate or ""
    kind = _STATES.get(state) or _STATES.get(state[:2])
    named = _NAMED.search(text) if kind in ("unknown_column", "unknown_name") else None
    return query_failed(kind, text, next(g for g in named.groups() if g) if named else None)


# SQLSTATEs (and classes of them) by the kind of failure they are.
_STATES = {
    "42703": "unknown_column",
    "42P01": "unknown_name",
    "42883": "unknown_name",
    "42601": "syntax",
    "22": "conversion",
    "53": "resources",
    "42501": "permission",
    "25006": "read_only",
}
# `column "x" does not exist`, `relation "x" does not exist`, `function x(integer) does not exist`
_NAMED = re.compile(r'"([^"]+)"|function (\S+?)\(')
