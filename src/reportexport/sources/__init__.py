"""Sources: where saved queries run. Each streams CSV bytes of our dialect into a sink.

A source is picked by its URL (`duckdb:///`, `postgresql://`, `sqlite:///`); drivers are
imported only by the source that needs them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from reportexport.core.catalog import SourceConfig
from reportexport.core.csvformat import Column, CsvOptions


class SourceError(Exception):
    """A failure of the query: str() is worded for the person who asked (`code` names the
    kind); `detail` is the source's own message, for operators (the logs, `queries check`)."""

    code = "query_error"

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


# What a source's own error means, in words for the person who asked for the export; each
# source sorts its driver's errors into these kinds (the driver's text goes to the logs).
QUERY_FAILURES: Mapping[str, str] = {
    "unknown_column": "the saved query names a column its source does not have",
    "unknown_name": "the saved query names a table, view or function its source does not have",
    "syntax": "the saved query's SQL cannot be read by its source",
    "conversion": "a value could not be converted to the type the saved query needs",
    "resources": "the query needed more memory or disk than its source allows",
    "permission": "the source does not let exports read what the saved query reads",
    "read_only": "the saved query tries to change data, and exports only read",
}
QUERY_FAILED = "the saved query failed in its source"


def query_failed(kind: str | None, detail: str, name: str | None = None) -> SourceError:
    """The failure of a query, worded by its kind (and the name it concerns, when the source's
    message gives one); the source's own message is its `detail`."""
    words = QUERY_FAILURES.get(kind or "", QUERY_FAILED)
    named = f" ({name[:80]})" if name else ""
    return SourceError(
        f"{words}{named}; operators can see the source's own message in the logs", detail=detail
    )


class QueryTimeoutError(SourceError):
    code = "timeout"


class SourceUnavailableError(SourceError):
    code = "source_unavailable"


class ExportCanceledError(Exception):
    """The export was stopped on purpose (cancel, shutdown or a limit); `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class CancelToken:
    """Stops a running export: sets a flag and runs the hooks a source registered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []
        self._event = threading.Event()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def cancel(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            hooks = list(self._hooks)
        self._event.set()
        for hook in hooks:
            hook()

    def on_cancel(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run `hook` on cancel (at once if already cancelled); returns an unregister function."""
        with self._lock:
            already = self.reason is not None
            if not already:
                self._hooks.append(hook)
        if already:
            hook()

        def unregister() -> None:
            with self._lock:
                if hook in self._hooks:
                    self._hooks.remove(hook)

        return unregister

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for a cancel; True once cancelled."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self) -> None:
        if self.reason is not None:
            raise ExportCanceledError(self.reason)


class StatementTimer:
    """Interrupts a query that runs past its source's statement timeout (for drivers that
    have no timeout of their own); `fired` tells the caller why the query stopped."""

    def __init__(self, seconds: float, interrupt: Callable[[], None]) -> None:
        self.seconds = seconds
        self.fired = threading.Event()
        self._interrupt = interrupt
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        self.fired.set()
        self._interrupt()

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def error(self) -> QueryTimeoutError:
        return QueryTimeoutError(f"the query ran longer than {self.seconds:g} s")


class Interrupter:
    """Interrupts a connection's statement, again and again until the export is over.

    A driver's interrupt reaches only a statement already running (DuckDB's `interrupt()`,
    SQLite's `sqlite3_interrupt`, PostgreSQL's cancel request): one sent while the export is
    between statements (a cancel that lands as it describes the query, or as its COPY starts)
    would be lost, and the query would run to its end. Once started, it is sent every `every`
    seconds until `stop`, which comes before the connection is closed."""

    def __init__(self, interrupt: Callable[[], None], *, every: float) -> None:
        self._interrupt = interrupt
        self._every = every
        self._lock = threading.Lock()
        self._over = threading.Event()
        self._started = False

    def start(self) -> None:
        with self._lock:
            if self._started or self._over.is_set():
                return
            self._started = True
        threading.Thread(target=self._run, name="source-interrupt", daemon=True).start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if self._over.is_set():
                    return
                self._interrupt()
            self._over.wait(self._every)

    def stop(self) -> None:
        with self._lock:
            self._over.set()


class Sink(Protocol):
    def write(self, data: bytes) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Exported:
    rows: int | None
    columns: tuple[Column, ...]  # as written: names, and types with their digits


class Source(Protocol):
    def describe(self, sql: str, params: Mapping[str, Any]) -> list[Column]: ...

    def export(
        self,
        sql: str,
        params: Mapping[str, Any],
        options: CsvOptions,
        sink: Sink,
        cancel: CancelToken,
    ) -> Exported:
        """Run the query read-only and write header and rows, in our dialect, to `sink`."""
        ...


def open_source(config: SourceConfig) -> Source:
    if config.url.startswith("duckdb:"):
        from reportexport.sources.duckdb import DuckdbSource

        return DuckdbSource(config)
    if config.url.startswith(("postgresql:", "postgres:")):
        from reportexport.sources.postgres import PostgresSource

        return PostgresSource(config)
    if config.url.startswith("sqlite:"):
        from reportexport.sources.sqlite import SqliteSource

        return SqliteSource(config)
    raise ValueError(f"unsupported source URL {config.url!r}")


def remove_leftovers() -> None:
    """What sources leave behind when a process dies mid-export (DuckDB's FIFO folders)."""
    import logging

    from reportexport.sources.duckdb import remove_leftover_fifos

    for folder in remove_leftover_fifos():
        logging.getLogger("reportexport.sources").info("removed leftover %s", folder)


def file_path(url: str, scheme: str) -> str:
    prefix = f"{scheme}:///"
    if not url.startswith(prefix):
        raise ValueError(f"{scheme} URLs look like {prefix}path, not {url!r}")
    return url[len(prefix) :]
