"""Fixtures of every tier: job stores (SQLite files, and PostgreSQL databases cloned from a
template database of this xdist worker's own), the export sources, the object stores; and the
markers and time budgets of the tiers (see docs/explanation/testing.md)."""

from __future__ import annotations

import itertools
import os
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from hypothesis import settings

from reportexport.entrypoints.demo import build_demo_database
from reportexport.objects import ObjectStore, open_object_store
from reportexport.store import Database, open_database
from tests import tiers
from tests.exports import reader_table
from tests.helpers import (
    GRAPH,
    REPO_ROOT,
    TYPED_COLUMNS,
    RawSql,
    typed_rows,
    worker_name,
)
from tests.postgres_server import (
    DEFAULT_URL,
    SEARCH,
    Clones,
    PostgresServer,
    find_postgres,
    require_postgres,
)

# In CI every property-based test draws the same examples every run (Hypothesis' own `ci`
# profile, registered here so that it does not depend on Hypothesis detecting CI itself): the
# same commit gets the same answer. Hunting with fresh examples is a developer's run.
if os.environ.get("CI"):
    settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True)
    settings.load_profile("ci")

# Under ./scripts/mutate the property-based tests draw the same examples every run and have no
# deadline: a mutant is caught by what a test asserts, never by chance or by a slow trampoline.
if os.environ.get("REPORTEXPORT_MUTATION"):
    settings.register_profile("mutation", derandomize=True, deadline=None, database=None)
    settings.load_profile("mutation")


def pytest_report_header() -> str:
    explicit = os.environ.get("REPORTEXPORT_TEST_POSTGRES_URL")
    return f"PostgreSQL for tests: {explicit or DEFAULT_URL} (or a throwaway cluster)"


TIER = tiers.Tier("top level", budget_seconds=300, modules={"test_cli.py": ("processes",)})
BUDGETS = tiers.Budgets()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.mark(items)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):  # the controller sees every worker's reports
        BUDGETS.add(report, REPO_ROOT)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if BUDGETS.seconds:
        terminalreporter.write_sep("-", "seconds per tier (sum of test durations) and budget")
        for line in BUDGETS.lines():
            terminalreporter.write_line(line)


def pytest_sessionfinish(session: pytest.Session) -> None:
    over = BUDGETS.over()
    if over and tiers.enforced() and session.exitstatus == pytest.ExitCode.OK:
        print(f"tiers over {tiers.MARGIN}x their time budget (CI=true): " + "; ".join(over))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# -- job stores ------------------------------------------------------------------------------------


BACKENDS = ["sqlite", "postgres"]
_counter = itertools.count()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | None]:
    url, cluster, how = find_postgres()
    SEARCH["how"] = how
    if url is None:
        yield None
        return
    server = PostgresServer(url, f"reportexport_tpl_{worker_name()}_{os.getpid()}", cluster)
    server.execute(f"DROP DATABASE IF EXISTS {server.template} WITH (FORCE)")
    server.execute(f"CREATE DATABASE {server.template}")
    database = open_database(server.url_for(server.template), GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    yield server
    server.execute(f"DROP DATABASE IF EXISTS {server.template} WITH (FORCE)")
    if cluster is not None:
        cluster.stop()


@pytest.fixture(scope="session")
def clones(postgres_server: PostgresServer | None) -> Iterator[Clones | None]:
    """Copies of this worker's template, made ahead of the tests that take them."""
    if postgres_server is None:
        yield None
        return
    made = Clones(postgres_server, f"reportexport_t_{worker_name()}_{os.getpid()}")
    yield made
    made.close()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer | None, clones: Clones | None) -> Iterator[str]:
    """A fresh, upgraded PostgreSQL database for one test."""
    server = require_postgres(postgres_server)
    assert clones is not None
    name = clones.take()
    yield server.url_for(name)
    clones.give_back(name)


@pytest.fixture
def empty_postgres_url(
    postgres_server: PostgresServer | None, clones: Clones | None
) -> Iterator[str]:
    """A PostgreSQL database with no schema at all."""
    server = require_postgres(postgres_server)
    assert clones is not None
    name = f"reportexport_e_{worker_name()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"
    server.execute(f"CREATE DATABASE {name}")
    yield server.url_for(name)
    clones.give_back(name)  # dropped by the clones' thread, while the next tests run


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


@pytest.fixture
def raw(database_url: str) -> Iterator[RawSql]:
    connection = RawSql(database_url)
    yield connection
    connection.close()


# -- sources and object stores --------------------------------------------------------------------


@pytest.fixture(scope="session")
def sources_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small demo DuckDB, the typed table in DuckDB and SQLite files, and the reader
    matrix's table in DuckDB."""
    folder = tmp_path_factory.mktemp("sources")
    build_demo_database(folder / "demo.duckdb", rows=5_000)
    con = duckdb.connect(str(folder / "typed.duckdb"))
    con.execute(f"CREATE TABLE typed ({TYPED_COLUMNS.replace('DOUBLE PRECISION', 'DOUBLE')})")
    con.executemany("INSERT INTO typed VALUES (?, ?, ?, ?, ?, ?, ?, ?)", typed_rows())
    con.execute(f"CREATE TABLE readers ({reader_table.duckdb_ddl()})")
    marks = ", ".join("?" * len(reader_table.NAMES))
    con.executemany(f"INSERT INTO readers VALUES ({marks})", reader_table.reader_rows())
    con.close()
    lite = sqlite3.connect(folder / "typed.db")
    lite.execute("CREATE TABLE typed (id INTEGER, t TEXT)")
    lite.executemany("INSERT INTO typed VALUES (?, ?)", [(r[0], r[1]) for r in typed_rows()])
    lite.commit()
    lite.close()
    return folder


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """moto's S3 API server on loopback (a real HTTP server; no client is patched)."""
    from moto.server import ThreadedMotoServer

    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        os.environ.setdefault(key, value)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def local_objects(tmp_path: Path) -> ObjectStore:
    return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"secret")


@pytest.fixture
def jobs_db(tmp_path: Path) -> Iterator[Database]:
    url = f"sqlite:///{tmp_path / 'jobs.db'}"
    database = open_database(url, GRAPH, check=False)
    database.schema.upgrade()
    yield database
    database.close()
