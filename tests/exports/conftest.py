"""Real sources (DuckDB, PostgreSQL, SQLite), real object stores (a directory, an S3 API server
on loopback in moto's server mode) and a real job store for the export tests."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from reportexport.objects import ObjectStore, open_object_store
from reportexport.store import open_database
from tests.exports import reader_table
from tests.helpers import GRAPH, TYPED_COLUMNS, new_bucket, typed_rows, worker_name
from tests.postgres_server import PostgresServer, ThrowawayCluster, require_postgres
from tests.tiers import Tier

TIER = Tier(
    "exports",
    budget_seconds=900,
    modules={
        "test_caps_across_processes.py": ("processes",),
        "test_crashes.py": ("processes",),
        "test_infrastructure.py": ("processes",),
        "test_infrastructure_processes.py": ("processes", "slow"),
        "test_schedules_across_processes.py": ("processes", "slow"),
        "test_readers.py": ("processes",),
    },
)


@pytest.fixture(scope="session")
def typed_postgres(postgres_server: PostgresServer | None) -> Iterator[str]:
    server = require_postgres(postgres_server)
    name = f"reportexport_src_{worker_name()}_{uuid.uuid4().hex[:8]}"
    server.execute(f"CREATE DATABASE {name}")
    url = server.url_for(name)
    with psycopg.connect(url) as conn:
        conn.execute(f"CREATE TABLE typed ({TYPED_COLUMNS})".encode())
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO typed VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", typed_rows()
            )
        conn.execute(f"CREATE TABLE readers ({reader_table.postgres_ddl()})".encode())
        marks = ", ".join(["%s"] * len(reader_table.NAMES))
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO readers VALUES ({marks})".encode(), reader_table.reader_rows()
            )
    yield url
    server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["local", "s3"])
def object_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"secret")
    return open_object_store(new_bucket(request.getfixturevalue("s3_endpoint")))


@pytest.fixture(scope="module")
def cluster() -> Iterator[ThrowawayCluster]:
    found = ThrowawayCluster()
    if not found.start():
        found.stop()
        message = "initdb/pg_ctl NOT FOUND: database-restart tests cannot run"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (a failure under CI=true)")
        pytest.skip(message)
    yield found
    found.stop()


@pytest.fixture
def restartable_url(cluster: ThrowawayCluster) -> str:
    name = f"restart_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = cluster.url.rsplit("/", 1)[0] + f"/{name}"
    database = open_database(url, GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    return url
