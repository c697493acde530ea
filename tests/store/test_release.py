"""A database built by the released schema upgrades to this one without losing a row.

Migrations are append-only: the released ones are pinned by their SHA-256 here, so an edit of
one fails this test (write a new migration instead). The upgrade test builds a database with the
released migrations only, fills it through plain SQL as the released program would have (jobs in
every state, their history and side-effect rows, people, endpoints, deliveries, downloads,
heartbeats), upgrades it, and compares every table's rows column by column.
"""

from __future__ import annotations

import hashlib
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reportexport.core.records import JobFilter
from reportexport.store import open_database
from reportexport.store.dialect import migration_files
from tests.helpers import GRAPH, RawSql

RELEASE_VERSION = 7  # reportexport 0.1.0
# What every upgrade moves on: the version, the definitions digest and the scripts digest.
MOVING_META_KEYS = ("schema_version", "definitions_digest", "program_digest")
RELEASED = {
    "sqlite": {
        "0001_jobs": "b673d3d1f4da7bdf",
        "0002_webhooks": "a6e5a2e3263affd7",
        "0003_users": "1751b2205c17e4e4",
        "0004_downloads": "9f51eda301306ec5",
        "0005_requested_by": "4e3853cf7052bee8",
        "0006_heartbeats": "4d49eaf0aabc95f4",
        "0007_column_types_and_dialect": "f1910f67d744b271",
    },
    "postgres": {
        "0001_jobs": "130c6dc46f3d6c84",
        "0002_webhooks": "f360867386ea4bfc",
        "0003_users": "e38fca2375fe1492",
        "0004_downloads": "5906c26c4aec367c",
        "0005_requested_by": "62d934eaf6f41752",
        "0006_heartbeats": "623fb9c6e0ebba20",
        "0007_column_types_and_dialect": "4387838c55a9356d",
    },
}
TABLES = (
    "jobs", "job_history", "job_side_effects", "users", "webhook_endpoints",
    "webhook_deliveries", "job_downloads", "heartbeats", "reportexport_meta",
)  # fmt: skip


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "postgres":
        return str(request.getfixturevalue("empty_postgres_url"))
    return f"sqlite:///{tmp_path / 'release.db'}"


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_released_migrations_are_never_edited(dialect: str) -> None:
    found = {
        f"{number:04d}_{name}": hashlib.sha256(text.encode()).hexdigest()[:16]
        for number, name, text in migration_files(dialect)
        if number <= RELEASE_VERSION
    }
    assert found == RELEASED[dialect], "a released migration changed: add a new one instead"


def fill_as_the_release_did(raw: RawSql) -> None:
    """Jobs 1-5: queued, running, succeeded, failed, canceled; and everything around them."""
    now = "2026-11-30T10:00:00.000Z" if raw.sqlite else "2026-11-30 10:00:00+00"
    for owner in ("alice", "alice", "bob", "bob", "carol"):
        raw.execute(
            "INSERT INTO jobs (owner, saved_query, source, query_sql, query_hash, parameters, "
            "options, status) VALUES "
            f"('{owner}', 'orders', 'demo', 'SELECT 1', 'h', '{{\"day\": \"2026-01-31\"}}', "
            "'{}', 'queued')"
        )
    for job in (2, 3, 4):
        raw.execute(
            "UPDATE jobs SET status = 'running', change_actor = 'worker', change_worker = 'w1', "
            f"lease_owner = 'w1', lease_token = 1, lease_expires_at = '{now}', "
            f"started_at = '{now}' WHERE id = {job}"
        )
    raw.execute(
        "UPDATE jobs SET status = 'succeeded', change_actor = 'worker', change_worker = 'w1', "
        "object_key = 'exports/3/orders-3.csv', object_sha256 = 'ab', object_bytes = 10, "
        "object_rows = 1, columns = '[\"x\"]', column_types = '[\"integer\"]', "
        "dialect_version = 2, file_name = 'orders-3.csv' WHERE id = 3"
    )
    raw.execute(
        "UPDATE jobs SET status = 'failed', change_actor = 'worker', error_code = 'source_error', "
        "error_message = 'no such table' WHERE id = 4"
    )
    raw.execute(
        "UPDATE jobs SET status = 'canceled', change_actor = 'user', change_person = 'carol', "
        "change_reason = 'by mistake' WHERE id = 5"
    )
    raw.execute("INSERT INTO users (name, role, token_hash) VALUES ('alice', 'user', 'th1')")
    raw.execute(
        "INSERT INTO webhook_endpoints (owner, url, secret) "
        "VALUES ('bob', 'https://hooks.example/x', 'whsec_1')"
    )
    raw.execute(
        "UPDATE job_side_effects SET attempts = 1, completed_at = "
        f"'{now}' WHERE job_id = 3 AND effect = 'emit_done_webhook'"
    )
    raw.execute(
        "INSERT INTO webhook_deliveries (job_id, effect, endpoint_id, attempts, last_status, "
        f"delivered_at) VALUES (3, 'emit_done_webhook', 1, 1, 200, '{now}')"
    )
    raw.execute("INSERT INTO job_downloads (job_id, person) VALUES (3, 'bob')")
    raw.execute(
        "INSERT INTO heartbeats (process, host, pid, kind, started_at, seen_at) "
        f"VALUES ('h-1-worker', 'h', 1, 'worker', '{now}', '{now}')"
    )


def rows_of(raw: RawSql, table: str) -> list[dict[str, Any]]:
    cursor_rows = raw.execute(f"SELECT * FROM {table}")
    columns = columns_of(raw, table)
    return sorted(
        (dict(zip(columns, row, strict=True)) for row in cursor_rows), key=lambda r: repr(r)
    )


def columns_of(raw: RawSql, table: str) -> list[str]:
    if raw.sqlite:
        return [row[1] for row in raw.execute(f"PRAGMA table_info({table})")]
    return [
        row[0]
        for row in raw.execute(
            "SELECT column_name FROM information_schema.columns "
            f"WHERE table_schema = current_schema() AND table_name = '{table}' "
            "ORDER BY ordinal_position"
        )
    ]


def test_a_database_of_the_release_upgrades_without_losing_a_row(empty_url: str) -> None:
    with closing(open_database(empty_url, GRAPH, check=False)) as old:
        assert old.schema.upgrade(to_version=RELEASE_VERSION).version == RELEASE_VERSION
    with closing(RawSql(empty_url)) as raw:
        fill_as_the_release_did(raw)
        before = {table: rows_of(raw, table) for table in TABLES}
    assert [len(before[t]) for t in ("jobs", "job_history", "job_side_effects")] == [5, 6, 4]

    with closing(open_database(empty_url, GRAPH, check=False)) as new:
        status = new.schema.upgrade()
        assert status.current
        assert status.version == len(migration_files(new.driver.dialect)) > RELEASE_VERSION
    with closing(RawSql(empty_url)) as raw:
        after = {table: rows_of(raw, table) for table in TABLES}
    for table in TABLES:
        kept = (
            [{k: row[k] for k in before[table][0]} for row in after[table]] if after[table] else []
        )
        if table == "reportexport_meta":
            kept = [r for r in kept if r["key"] not in MOVING_META_KEYS]
            before[table] = [r for r in before[table] if r["key"] not in MOVING_META_KEYS]
        assert kept == before[table], table

    # ...and the old rows work with the new code: the queued job is claimed, the running one
    # is reaped, the history reads back.
    with closing(open_database(empty_url, GRAPH)) as db:
        assert [j.status for j in db.jobs.list_jobs(JobFilter()).jobs] == [
            "canceled", "failed", "succeeded", "running", "queued",
        ]  # fmt: skip
        (claim,) = db.queue.claim_jobs("w2", limit=5, lease_seconds=60)
        assert claim.job.id == 1
        assert claim.job.parameters == {"day": "2026-01-31"}
        assert db.queue.reap_expired("w2", grace_seconds=0) == [2]
        assert [h.to_status for h in db.jobs.get_job(3).history] == ["running", "succeeded"]
        assert db.jobs.job_downloads(3)[0][0] == "bob"
        assert db.retention.purge(datetime(2000, 1, 1, tzinfo=UTC), person="ops").jobs == 0
