"""SQLite as a source: no bulk CSV path, so rows are rendered in Python, a batch at a time.

SQLite has no column types in a result, only a storage class per value, so a column's type is
read from the values it held: all integers, all floats (or floats and integers), else text.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from reportexport.core.catalog import SourceConfig
from reportexport.core.csvformat import Column, CsvOptions, check_columns, format_header, format_row
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

BATCH = 5_000


class SqliteSource:
    def __init__(self, config: SourceConfig) -> None:
        self.config = config
        self.path = file_path(config.url, "sqlite")

    def _connect(self) -> sqlite3.Connection:
        try:  # mode=ro: the file must exist and is never written
            return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise SourceUnavailableError(f"source {self.config.name!r}: {exc}") from exc

    def describe(self, sql: str, params: Mapping[str, Any]) -> list[Column]:
        conn = self._connect()
        try:
            cursor = conn.execute(f"SELECT * FROM ({sql}) AS q LIMIT 0", dict(params))
        except sqlite3.Error as exc:
            raise _failure(exc) from exc
        finally:
            conn.close()
        return [Column(d[0], "text") for d in cursor.description or ()]

    def export(
        self,
        sql: str,
        params: Mapping[str, Any],
        options: CsvOptions,
        sink: Sink,
        cancel: CancelToken,
    ) -> Exported:
        conn = self._connect()
        interrupter = Interrupter(conn.interrupt, every=0.02)
        timer = StatementTimer(self.config.statement_timeout_seconds, interrupter.start)
        unregister = cancel.on_cancel(interrupter.start)
        rows = 0
        try:
            timer.start()
            cursor = conn.execute(sql, dict(params))
            names = tuple(d[0] for d in cursor.description or ())
            check_columns([Column(n, "text") for n in names])
            sink.write(format_header(names, options).encode("utf-8"))
            seen: list[set[type]] = [set() for _ in names]
            while batch := cursor.fetchmany(BATCH):
                sink.write("".join(format_row(row, options) for row in batch).encode("utf-8"))
                for classes, values in zip(seen, zip(*batch, strict=True), strict=True):
                    classes.update(map(type, values))
                rows += len(batch)
            cancel.raise_if_cancelled()
            return Exported(rows=rows, columns=tuple(_typed(names, seen)))
        except sqlite3.Error as exc:
            cancel.raise_if_cancelled()
            if timer.fired.is_set():
                raise timer.error() from exc
            raise _failure(exc) from exc
        finally:
            timer.cancel()
            unregister()
            interrupter.stop()
            conn.close()


def _typed(names: Sequence[str], seen: Sequence[set[type]]) -> list[Column]:
    columns = []
    for name, classes in zip(names, seen, strict=True):
        classes = classes - {type(None)}
        if classes and classes <= {int}:
            columns.append(Column(name, "integer"))
        elif classes and classes <= {int, float}:
            columns.append(Column(name, "float", 53))
        else:
            columns.append(Column(name, "text"))
    return columns


# `no such column: x`, `no such table: x`, `no such function: x`, `near "x": syntax error`
_SQLITE_KINDS = (
    (re.compile(r"no such column: (.+)"), "unknown_column"),
    (re.compile(r"no such (?:table|function): (.+)"), "unknown_name"),
    (re.compile(r"()syntax error"), "syntax"),
    (re.compile(r"()readonly database"), "read_only"),
)


def _failure(exc: sqlite3.Error) -> SourceError:
    """An SQLite error as a worded failure of the query, its own message kept for operators."""
    text = str(exc)
    for pattern, kind in _SQLITE_KINDS:
        found = pattern.search(text)
        if found:
            return query_failed(kind, text, found.group(1) or None)
    return query_failed(None, text)
