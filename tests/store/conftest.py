"""One behavioural suite, run against SQLite files and a real PostgreSQL.

Each PostgreSQL test gets a fresh database cloned from an upgraded template database.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from frozen_lifecycle.graph import Graph, load_graph
from reportexport.store import Database, open_database
from tests.conftest import FIXTURE_PATH
from tests.postgres_server import ThrowawayCluster, find_postgres

GRAPH = load_graph(FIXTURE_PATH)
BACKENDS = ["sqlite", "postgres"]


@dataclass
class PostgresServer:
    admin_url: str
    template: str
    cluster: ThrowawayCluster | None

    def url_for(self, database: str) -> str:
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{database}"

    def execute(self, statement: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement.encode())


_counter = itertools.count()
_postgres_search: dict[str, str] = {}


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | None]:
    url, cluster, how = find_postgres()
    _postgres_search["how"] = how
    if url is None:
        yield None
        return
    server = PostgresServer(url, f"reportexport_tpl_{os.getpid()}", cluster)
    server.execute(f"DROP DATABASE IF EXISTS {server.template} WITH (FORCE)")
    server.execute(f"CREATE DATABASE {server.template}")
    database = open_database(server.url_for(server.template), GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    yield server
    server.execute(f"DROP DATABASE IF EXISTS {server.template} WITH (FORCE)")
    if cluster is not None:
        cluster.stop()


def require_postgres(server: PostgresServer | None) -> PostgresServer:
    if server is not None:
        return server
    message = f"PostgreSQL NOT FOUND ({_postgres_search.get('how')}): PostgreSQL tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer | None) -> Iterator[str]:
    """A fresh, upgraded PostgreSQL database for one test."""
    server = require_postgres(postgres_server)
    name = f"reportexport_t_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"
    server.execute(f"CREATE DATABASE {name} TEMPLATE {server.template}")
    yield server.url_for(name)
    server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def empty_postgres_url(postgres_server: PostgresServer | None) -> Iterator[str]:
    """A PostgreSQL database with no schema at all."""
    server = require_postgres(postgres_server)
    name = f"reportexport_e_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"
    server.execute(f"CREATE DATABASE {name}")
    yield server.url_for(name)
    server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An upgraded database of the backend under test."""
    if backend == "postgres":
        return str(request.getfixturevalue("postgres_url"))
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    database = open_database(url, GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    return url


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = open_database(database_url, GRAPH)
    yield database
    database.close()


class RawSql:
    """A plain driver connection, as an operator in psql or the sqlite3 shell would have."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite:")
        if self.sqlite:
            self.conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        else:
            self.conn = psycopg.connect(url, autocommit=True)

    def execute(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self.conn.execute(statement if self.sqlite else statement.encode())
        return list(cursor.fetchall()) if cursor.description else []

    def scalar(self, statement: str) -> Any:
        return self.execute(statement)[0][0]

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.DatabaseError,) if self.sqlite else (psycopg.Error,)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def raw(database_url: str) -> Iterator[RawSql]:
    connection = RawSql(database_url)
    yield connection
    connection.close()


def graph_with_archived(tmp_path: Path) -> tuple[Path, Graph]:
    """A copy of the fixture with one more terminal state, as a lifecycle change would add."""
    import json

    document = json.loads(FIXTURE_PATH.read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    document["side_effects"]["archived"] = ["delete_temp_object"]
    path = tmp_path / "graph-with-archived.json"
    path.write_text(json.dumps(document, indent=2))
    return path, load_graph(path)


OpenDatabase = Callable[[str], Database]
