"""DuckDB, the embedded default: its own CSV writer streams through a FIFO into the sink.

DuckDB's `COPY (query) TO` is its fastest CSV path; writing to a named pipe that this process
reads keeps it streaming, so memory stays bounded, bytes are hashed and counted as they pass,
and a cancel or timeout stops it with `interrupt()`.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb

from reportexport.core.catalog import SourceConfig
from reportexport.core.csvformat import (
    Column,
    CsvOptions,
    as_written,
    duckdb_timestamp_format,
    projection,
)
from reportexport.core.sqlparams import render
from reportexport.sources import (
    CancelToken,
    Exported,
    Interrupter,
    Sink,
    SourceError,
    SourceUnavailableError,
    StatementTimer,
    file_path,
    query_failed,
)

CHUNK = 1 << 20
FIFO_PREFIX = "reportexport-duckdb-"  # then the pid of the process that made the folder
PIPE_SIZE = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux


_TIMESTAMP_DIGITS = {"TIMESTAMP_S": 0, "TIMESTAMP_MS": 3, "TIMESTAMP_NS": 9}


def column_of(name: str, type_name: str) -> Column:
    """A result column from DuckDB's name of its type (`DECIMAL(10,2)`, `TIMESTAMP_MS`)."""
    upper = type_name.upper()
    if upper == "BOOLEAN":
        return Column(name, "boolean")
    if re.fullmatch(r"U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|UHUGEINT", upper):
        return Column(name, "integer")
    decimal = re.fullmatch(r"(?:DECIMAL|NUMERIC)(?:\((\d+),\s*(\d+)\))?", upper)
    if decimal:
        digits, scale = decimal.groups()
        return Column(name, "decimal", int(digits) if digits else None, int(scale or 0))
    if upper in ("FLOAT", "REAL"):
        return Column(name, "float", 24)
    if upper == "DOUBLE":
        return Column(name, "float", 53)
    if upper == "DATE":
        return Column(name, "date")
    if upper in ("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"):
        return Column(name, "timestamptz", 6)
    if upper.startswith("TIMESTAMP"):
        return Column(name, "timestamp", _TIMESTAMP_DIGITS.get(upper, 6))
    if upper == "VARCHAR":
        return Column(name, "text")
    return Column(name, "other")  # TIME, UUID, INTERVAL, lists...: written as their text


class DuckdbSource:
    def __init__(self, config: SourceConfig) -> None:
        self.config = config
        self.path = file_path(config.url, "duckdb")

    def _connect(self, options: CsvOptions | None = None) -> duckdb.DuckDBPyConnection:
        if not os.path.exists(self.path):
            raise SourceUnavailableError(f"the source {self.config.name!r} has no database file")
        settings: dict[str, str | bool | int | float | list[str]] = {
            "memory_limit": self.config.memory_limit
        }
        try:
            con = duckdb.connect(self.path, read_only=True, config=settings)
        except duckdb.Error as exc:
            raise SourceUnavailableError(f"source {self.config.name!r}: {exc}") from exc
        if options is not None:
            con.execute("SET TimeZone = $tz", {"tz": options.time_zone})
        return con

    def describe(self, sql: str, params: Mapping[str, Any]) -> list[Column]:
        con = self._connect()
        try:
            return self._describe(con, sql, params)
        finally:
            con.close()

    def _describe(
        self, con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any]
    ) -> list[Column]:
        try:
            relation = con.execute(f"SELECT * FROM ({render(sql, '${name}')}) AS q LIMIT 0", params)
        except duckdb.Error as exc:
            raise _failure(exc) from exc
        return [column_of(d[0], str(d[1])) for d in relation.description or ()]

    def export(
        self,
        sql: str,
        params: Mapping[str, Any],
        options: CsvOptions,
        sink: Sink,
        cancel: CancelToken,
    ) -> Exported:
        con = self._connect(options)
        interrupter = Interrupter(con.interrupt, every=0.02)
        timer = StatementTimer(self.config.statement_timeout_seconds, interrupter.start)
        unregister = cancel.on_cancel(interrupter.start)
        folder = tempfile.mkdtemp(prefix=f"{FIFO_PREFIX}{os.getpid()}-")
        fifo = os.path.join(folder, "out.csv")
        os.mkfifo(fifo, 0o600)
        reader = _FifoReader(fifo, sink, on_failure=interrupter.start)
        try:
            try:
                columns = self._describe(con, sql, params)
            except Exception:
                cancel.raise_if_cancelled()  # interrupted as it was described: a cancel
                raise
            copy = copy_statement(render(sql, "${name}"), columns, options, fifo)
            reader.start()
            timer.start()
            try:
                rows = con.execute(copy, params).fetchone()
            except duckdb.Error as exc:
                reader.abandon()
                reader.join()
                if reader.failure is not None:
                    raise reader.failure from exc
                cancel.raise_if_cancelled()
                if timer.fired.is_set():
                    raise timer.error() from exc
                raise _failure(exc) from exc
            reader.join()
            if reader.failure is not None:
                raise reader.failure
            cancel.raise_if_cancelled()
            return Exported(
                rows=int(rows[0]) if rows else None, columns=tuple(as_written(columns, options))
            )
        finally:
            timer.cancel()
            unregister()
            interrupter.stop()
            reader.abandon()
            reader.join()
            con.close()
            shutil.rmtree(folder, ignore_errors=True)  # gone already if /tmp was cleaned

    def copy_to_file(
        self, sql: str, params: Mapping[str, Any], options: CsvOptions, path: str
    ) -> int:
        """The export's own `COPY` (the same connection settings, projection and options) into
        a file, with no process reading it: what an export costs without the FIFO, the hash and
        the object store (bench/export.py's reference). The number of rows."""
        con = self._connect(options)
        try:
            columns = self._describe(con, sql, params)
            copy = copy_statement(render(sql, "${name}"), columns, options, path)
            rows = con.execute(copy, params).fetchone()
        except duckdb.Error as exc:
            raise _failure(exc) from exc
        finally:
            con.close()
        return int(rows[0]) if rows else 0


def copy_statement(query: str, columns: Sequence[Column], options: CsvOptions, target: str) -> str:
    """`COPY (<the query's projection>) TO '<target>'` in our dialect."""
    newline = "\\r\\n" if options.line_ending == "crlf" else "\\n"
    stamps = duckdb_timestamp_format(columns, options)
    # The zoned timestamps the projection leaves typed (the same bytes as strftime).
    timestamp_format = f", TIMESTAMPFORMAT '{stamps}'" if stamps else ""
    # COMMENT '': DuckDB would otherwise quote every value that holds a '#'. NULLSTR: CsvOptions
    # admits no quote in a marker. DuckDB, like PostgreSQL, quotes text equal to the marker and
    # leaves the empty string unquoted when there is one.
    return (
        f"COPY ({projection(query, columns, options, 'duckdb')}) TO '{target}' (FORMAT csv, "
        f"HEADER, DELIMITER '{options.delimiter_char}', QUOTE '\"', ESCAPE '\"', "
        f"NULLSTR '{options.null_marker}', COMMENT '', NEW_LINE '{newline}'{timestamp_format})"
    )


class _FifoReader(threading.Thread):
    """Reads the FIFO DuckDB writes into, and hands each chunk to the sink."""

    def __init__(self, path: str, sink: Sink, *, on_failure: Any) -> None:
        super().__init__(name="duckdb-fifo-reader", daemon=True)
        self.path = path
        self.sink = sink
        self.on_failure = on_failure
        self.failure: BaseException | None = None
        self._opened = threading.Event()
        self._began = False

    def start(self) -> None:
        self._began = True
        super().start()

    def run(self) -> None:
        with open(self.path, "rb", buffering=0) as fifo:
            self._opened.set()
            # A bigger pipe (default 64 KiB) lets DuckDB write in large strides.
            with contextlib.suppress(OSError):
                fcntl.fcntl(fifo.fileno(), F_SETPIPE_SZ, PIPE_SIZE)
            while chunk := fifo.read(CHUNK):
                if self.failure is not None:
                    continue  # keep draining so DuckDB is never stuck writing
                try:
                    self.sink.write(chunk)
                except BaseException as exc:  # a limit, a cancel, the object store
                    self.failure = exc
                    self.on_failure()

    def abandon(self) -> None:
        """Unblock a reader still waiting for DuckDB to open the FIFO (it never will).

        Opening the write end without blocking fails until the reader has opened its end,
        so keep trying while the reader lives and has not opened it.
        """
        while self._began and self.is_alive() and not self._opened.is_set():
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                time.sleep(0.001)
                continue
            os.close(fd)
            return

    def join(self, timeout: float | None = None) -> None:
        if self._began:
            super().join(timeout)


def remove_leftover_fifos(folder: str | None = None) -> list[str]:
    """Remove the FIFO folders of processes that are gone (a worker killed mid-export)."""
    removed = []
    base = folder or tempfile.gettempdir()
    for entry in os.scandir(base):
        if not (entry.is_dir(follow_symlinks=False) and entry.name.startswith(FIFO_PREFIX)):
            continue
        pid = entry.name[len(FIFO_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and _alive(int(pid)):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _failure(exc: duckdb.Error) -> SourceError:
    """A DuckDB error as a worded failure of the query, its own message kept for operators."""
    text = _message(exc)
    kind = next((kind for kinds, kind in _KINDS if isinstance(exc, kinds)), None)
    if isinstance(exc, duckdb.BinderException) and "column" not in text.lower():
        kind = "unknown_name"
    named = _NAMED.search(text) if kind in ("unknown_column", "unknown_name") else None
    return query_failed(kind, text, next(g for g in named.groups() if g) if named else None)


_KINDS: tuple[tuple[type[duckdb.Error], str], ...] = (
    (duckdb.BinderException, "unknown_column"),
    (duckdb.CatalogException, "unknown_name"),
    (duckdb.ParserException, "syntax"),
    (duckdb.ConversionException, "conversion"),
    (duckdb.OutOfMemoryException, "resources"),
    (duckdb.PermissionException, "permission"),
)
# `Referenced column "x" not found`; `Table with name x does not exist!`
_NAMED = re.compile(r'"([^"]+)"|with name (\S+) does not exist')


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
