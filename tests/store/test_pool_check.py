"""A pooled PostgreSQL connection is checked with a round trip only when in doubt.

What libpq sends is read from its own protocol trace: the pool's check is an empty query.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import pq

from reportexport.store import postgres
from reportexport.store.postgres import PostgresDriver
from tests.helpers import wait_for

EMPTY_QUERY = 'Query\t ""'


@pytest.fixture
def driver(postgres_url: str) -> Iterator[PostgresDriver]:
    driver = PostgresDriver(postgres_url, pool_size=1)
    yield driver
    driver.pool.close()


@contextmanager
def traced(driver: PostgresDriver, path: Path) -> Iterator[list[str]]:
    """The messages the pool's one connection sends meanwhile (libpq's trace), as lines."""
    sent: list[str] = []
    with path.open("w") as trace:
        with driver.write() as session:
            connection = session.conn
            connection.pgconn.trace(trace.fileno())
            connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            yield sent
        finally:
            connection.pgconn.untrace()
    sent += [line for line in path.read_text().splitlines() if line.startswith("F\t")]


def backend_of(driver: PostgresDriver) -> int:
    with driver.write() as session:
        row = session.conn.execute("SELECT pg_backend_pid() AS pid").fetchone()
    assert row is not None
    return int(row["pid"])


def test_a_busy_connection_leaves_the_pool_without_a_round_trip(
    driver: PostgresDriver, tmp_path: Path
) -> None:
    with traced(driver, tmp_path / "trace") as sent:
        for _ in range(5):
            with driver.write() as session:
                session.conn.execute("SELECT 1")
    assert sum("SELECT 1" in line for line in sent) == 5
    assert not [line for line in sent if EMPTY_QUERY in line]


def test_a_connection_idle_for_long_is_checked_with_a_round_trip(
    driver: PostgresDriver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "IDLE_BEFORE_ROUND_TRIP_SECONDS", 0.05)
    with traced(driver, tmp_path / "trace") as sent:
        for _ in range(3):
            time.sleep(0.1)
            with driver.write() as session:
                session.conn.execute("SELECT 1")
    assert len([line for line in sent if EMPTY_QUERY in line]) == 3


def test_a_connection_whose_server_ended_it_is_replaced_before_a_transaction_gets_it(
    driver: PostgresDriver, postgres_url: str
) -> None:
    """As after a restart: the server closed the idle connection (here by terminating its
    backend); the next transaction gets a new one instead of failing."""
    ended = backend_of(driver)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (ended,))
        wait_for(
            lambda: (
                not admin.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s", (ended,)
                ).fetchone()
            ),
            30,
            "the terminated backend to exit",
        )
    assert backend_of(driver) != ended
