"""Real sources (DuckDB, PostgreSQL, SQLite), real object stores (a directory, an S3 API server
on loopback in moto's server mode) and a real job store for the export tests."""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from reportexport.catalog import Catalog, parse_catalog
from reportexport.demo import build_demo_database
from reportexport.objects import ObjectStore, open_object_store
from reportexport.objects.s3 import S3ObjectStore
from reportexport.store import Database, open_database
from tests.exports import reader_table
from tests.store.conftest import (  # noqa: F401 - fixtures shared with the store suite
    GRAPH,
    backend,
    database_url,
    db,
    empty_postgres_url,
    postgres_server,
    postgres_url,
)

TEXTS = [
    "plain", "a,b", 'q"uote', "line\nbreak", "cr\rhere", "crlf\r\nhere", "", None,
    "=1+1", "+x", "-x", "@x", "\tx", "\rx", "\nx", "  =x", " plain", "Ünïcödé ✓ 日本",
    "a;b", "a\tb", "#hash", "'quoted'",
]  # fmt: skip

TYPED_COLUMNS = (
    "id INTEGER, t TEXT, d DECIMAL(10,2), f DOUBLE PRECISION, b BOOLEAN, day DATE, "
    "ts TIMESTAMP, tstz TIMESTAMPTZ"
)


def typed_rows() -> list[tuple[Any, ...]]:
    rows = []
    for i, text in enumerate(TEXTS, start=1):
        rows.append(
            (
                i,
                text,
                None if i % 7 == 0 else Decimal(f"{i}.{i % 10}0"),
                None if i % 5 == 0 else [0.1, 1.5, -2.25, 1e20, 123456.789][i % 5],
                None if i % 6 == 0 else i % 2 == 0,
                date(2024, 1, i),
                datetime(2024, 2, i, 13, 14, 15, 0 if i % 2 else 250_000),
                datetime(2024, 3, i, 23, 30, 0, 0 if i % 3 else 500_000, tzinfo=UTC),
            )
        )
    return rows


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
def typed_postgres(postgres_server: Any) -> Iterator[str]:  # noqa: F811
    from tests.store.conftest import require_postgres

    server = require_postgres(postgres_server)
    name = f"reportexport_src_{os.getpid()}_{uuid.uuid4().hex[:6]}"
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


def catalog_for(sources_dir: Path, postgres: str | None, queries: dict[str, Any]) -> Catalog:
    sources: dict[str, Any] = {
        "demo": {"url": f"duckdb:///{sources_dir / 'demo.duckdb'}"},
        "typed_duckdb": {"url": f"duckdb:///{sources_dir / 'typed.duckdb'}"},
        "typed_sqlite": {"url": f"sqlite:///{sources_dir / 'typed.db'}"},
    }
    if postgres is not None:
        sources["typed_postgres"] = {"url": postgres}
    return parse_catalog(
        {"version": 1, "sources": sources, "queries": queries}, sources_dir / "c.toml"
    )


# -- object stores --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


def new_bucket(endpoint: str) -> str:
    bucket = f"exports-{uuid.uuid4().hex[:10]}"
    store = S3ObjectStore(f"s3://{bucket}?endpoint_url={endpoint}")
    store.client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/reportexport?endpoint_url={endpoint}"


@pytest.fixture(params=["local", "s3"])
def object_store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"secret")
    return open_object_store(new_bucket(request.getfixturevalue("s3_endpoint")))


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
