"""The worker end to end: real sources, real object stores, a real job store."""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reportexport.core.catalog import Catalog
from reportexport.core.csvformat import DIALECT_VERSION, CsvOptions, render_value
from reportexport.objects import ObjectStore
from reportexport.pipeline.export import new_export
from reportexport.runners.sweeper import sweep
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.services.errors import ConflictError, GoneError
from reportexport.services.exports import Acting, ExportService
from reportexport.store import Database, Job
from tests.helpers import ENDLESS, catalog_for, typed_rows, wait_for

QUERIES: dict[str, Any] = {
    "typed_duckdb": {"source": "typed_duckdb", "sql": "SELECT * FROM typed ORDER BY id"},
    "typed_postgres": {"source": "typed_postgres", "sql": "SELECT * FROM typed ORDER BY id"},
    "typed_sqlite": {"source": "typed_sqlite", "sql": "SELECT id, t FROM typed ORDER BY id"},
    "demo_day": {
        "source": "demo",
        "sql": "SELECT * FROM orders WHERE order_date = :day ORDER BY order_id",
        "parameters": {"day": {"type": "date"}},
    },
    "broken": {"source": "demo", "sql": "SELECT no_such_column FROM orders"},
    "capped_rows": {"source": "demo", "sql": "SELECT * FROM orders", "limits": {"max_rows": 10}},
    "capped_bytes": {
        "source": "demo",
        "sql": "SELECT * FROM orders",
        "limits": {"max_bytes": 1000},
    },
    "capped_time": {"source": "demo", "sql": ENDLESS, "limits": {"max_seconds": 0.5}},
    "endless": {"source": "demo", "sql": ENDLESS},
}


@pytest.fixture
def catalog(sources_dir: Path, request: pytest.FixtureRequest) -> Catalog:
    postgres = None
    if "typed_postgres" in request.node.name:
        postgres = request.getfixturevalue("typed_postgres")
    queries = {k: v for k, v in QUERIES.items() if postgres or k != "typed_postgres"}
    return catalog_for(sources_dir, postgres, queries)


@pytest.fixture
def worker_factory(jobs_db: Database, catalog: Catalog) -> Iterator[Any]:
    started: list[Worker] = []

    def make(objects: ObjectStore, **settings: Any) -> Worker:
        defaults: dict[str, Any] = {"concurrency": 2, "lease_seconds": 10, "poll_seconds": 0.2}
        worker = Worker(jobs_db, catalog, objects, WorkerSettings(**{**defaults, **settings}))
        worker.start()
        started.append(worker)
        return worker

    yield make
    for worker in started:
        worker.stop(grace_seconds=0)


def submit(db: Database, catalog: Catalog, name: str, **params: Any) -> int:
    job, _ = db.jobs.create_job(new_export(catalog.queries[name], params, owner="alice"))
    return job.id


def finished(db: Database, job_id: int, timeout: float = 60.0) -> Job:
    wait_for(
        lambda: db.jobs.get_job(job_id).job.finished_at is not None,  # type: ignore[arg-type]
        timeout,
        "db.jobs.get_job(job_id).job.finished_at is not None",
        every=0.05,
    )
    return db.jobs.get_job(job_id).job  # type: ignore[arg-type]


def object_bytes(objects: ObjectStore, key: str) -> bytes:
    with objects.read(key) as handle:
        return handle.read()


def parsed(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


TYPED = (
    "integer",
    "text",
    "decimal(10,2)",
    "float",
    "boolean",
    "date",
    "timestamp(6)",
    "timestamptz(6)",
)
TYPES_OF = {"typed_duckdb": TYPED, "typed_postgres": TYPED, "typed_sqlite": ("integer", "text")}


@pytest.mark.parametrize("query", ["typed_duckdb", "typed_postgres", "typed_sqlite"])
def test_an_export_from_each_source_into_each_store(
    jobs_db: Database, catalog: Catalog, object_store: ObjectStore, worker_factory: Any, query: str
) -> None:
    worker_factory(object_store)
    job = finished(jobs_db, submit(jobs_db, catalog, query))
    assert job.status == "succeeded", job.error_message
    assert job.object_key == f"exports/{job.id}/{query}-{job.id}.csv"
    data = object_bytes(object_store, job.object_key)
    assert job.object_sha256 == hashlib.sha256(data).hexdigest()
    assert job.object_bytes == len(data)
    rows = parsed(data)
    assert job.object_rows == len(rows) - 1 == len(typed_rows())
    # The progress figures end as the object's own, however fast the export was.
    assert (job.rows_written, job.bytes_written) == (job.object_rows, job.object_bytes)
    assert list(job.columns or ()) == rows[0]
    assert job.dialect_version == DIALECT_VERSION
    assert job.column_types == TYPES_OF[query]
    width = len(rows[0])
    expected = [[render_value(v, CsvOptions()) or "" for v in row[:width]] for row in typed_rows()]
    assert rows[1:] == expected
    detail = jobs_db.jobs.get_job(job.id)  # type: ignore[arg-type]
    assert [h.to_status for h in detail.history] == ["running", "succeeded"]
    assert [e.effect for e in detail.side_effects] == ["write_csv_object", "emit_done_webhook"]
    assert {info.key for info in object_store.list_objects()} == {job.object_key}


def test_a_demo_export_with_parameters_keeps_its_snapshot(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore, worker_factory: Any
) -> None:
    worker_factory(local_objects)
    job = finished(jobs_db, submit(jobs_db, catalog, "demo_day", day="2024-01-05"))
    assert job.status == "succeeded"
    assert job.parameters == {"day": "2024-01-05"}
    assert job.query_hash == catalog.queries["demo_day"].content_hash
    rows = parsed(object_bytes(local_objects, job.object_key or ""))
    assert len(rows) > 1
    assert all(row[3] == "2024-01-05" for row in rows[1:])


def test_a_query_error_fails_the_job_and_leaves_no_object(
    jobs_db: Database,
    catalog: Catalog,
    object_store: ObjectStore,
    worker_factory: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="reportexport")
    worker_factory(object_store)
    job = finished(jobs_db, submit(jobs_db, catalog, "broken"))
    assert job.status == "failed"
    assert job.error_code == "query_error"
    assert job.error_message == (
        "the saved query names a column its source does not have (no_such_column); operators "
        "can see the source's own message in the logs"
    )
    said = [
        r.getMessage() for r in caplog.records if f"job {job.id}: query_error" in r.getMessage()
    ]
    assert len(said) == 1
    assert "Binder Error" in said[0]  # the driver's own words, for operators
    assert list(object_store.list_objects()) == []
    effects = jobs_db.jobs.get_job(job.id).side_effects  # type: ignore[arg-type]
    assert [e.effect for e in effects] == ["emit_failed_webhook"]


@pytest.mark.parametrize(
    ("query", "code"),
    [("capped_rows", "limit_rows"), ("capped_bytes", "limit_bytes"), ("capped_time", "limit_time")],
)
def test_limits_end_the_job_failed_with_a_clear_reason(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore, worker_factory: Any,
    query: str, code: str,
) -> None:  # fmt: skip
    worker_factory(local_objects)
    job = finished(jobs_db, submit(jobs_db, catalog, query))
    assert (job.status, job.error_code) == ("failed", code)
    assert "limit" in (job.error_message or "")
    assert list(local_objects.list_objects()) == []


def test_cancelling_a_running_export_stops_it_and_leaves_no_object(
    jobs_db: Database, catalog: Catalog, object_store: ObjectStore, worker_factory: Any
) -> None:
    worker = worker_factory(object_store)
    job_id = submit(jobs_db, catalog, "endless")
    wait_for(
        lambda: jobs_db.jobs.get_job(job_id).job.bytes_written > 0,  # type: ignore[arg-type]
        60,
        "jobs_db.jobs.get_job(job_id).job.bytes_written > 0",
        every=0.05,
    )
    wait_for(
        lambda: jobs_db.jobs.get_job(job_id).job.rows_written > 0,  # type: ignore[arg-type]
        60,
        "jobs_db.jobs.get_job(job_id).job.rows_written > 0",
        every=0.05,
    )
    jobs_db.jobs.cancel_job(job_id, person="alice", reason="changed my mind")  # type: ignore[arg-type]
    canceled_at = time.monotonic()
    wait_for(lambda: worker.active == 0, 30, "worker.active == 0", every=0.05)
    stopped_after = time.monotonic() - canceled_at
    assert stopped_after < 20  # generous: the real figure comes from bench/export.py
    detail = jobs_db.jobs.get_job(job_id)  # type: ignore[arg-type]
    assert detail.job.status == "canceled"
    assert [(h.to_status, h.actor, h.person) for h in detail.history][-1] == (
        "canceled",
        "user",
        "alice",
    )
    assert detail.job.temp_key is not None  # recorded while running, for the sweeper
    assert list(object_store.list_objects()) == []


def test_graceful_stop_ends_running_exports_as_worker_shutdown(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    worker = Worker(jobs_db, catalog, local_objects, WorkerSettings(poll_seconds=0.2))
    worker.start()
    job_id = submit(jobs_db, catalog, "endless")
    wait_for(
        lambda: jobs_db.jobs.get_job(job_id).job.bytes_written > 0,  # type: ignore[arg-type]
        60,
        "jobs_db.jobs.get_job(job_id).job.bytes_written > 0",
        every=0.05,
    )
    worker.stop(grace_seconds=0.5)
    job = jobs_db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    assert (job.status, job.error_code) == ("failed", "worker_shutdown")
    assert jobs_db.jobs.get_job(job_id).history[-1].reason == "worker_shutdown"  # type: ignore[arg-type]
    assert list(local_objects.list_objects()) == []


def test_an_expired_object_is_swept_and_its_job_stays_succeeded(
    jobs_db: Database, catalog: Catalog, object_store: ObjectStore, worker_factory: Any
) -> None:
    worker_factory(object_store, retention_seconds=0.0)
    job = finished(jobs_db, submit(jobs_db, catalog, "typed_duckdb"))
    assert job.status == "succeeded"
    assert job.object_expires_at is not None
    report = sweep(jobs_db.jobs, object_store)
    assert report.deleted == {job.object_key: "past its retention"}
    assert jobs_db.jobs.get_job(job.id).job.status == "succeeded"  # type: ignore[arg-type]
    assert list(object_store.list_objects()) == []


def test_a_published_object_verifies_and_a_tampered_one_does_not(
    jobs_db: Database, catalog: Catalog, object_store: ObjectStore, worker_factory: Any
) -> None:
    from reportexport.pipeline.export import verify_published

    worker_factory(object_store)
    job = finished(jobs_db, submit(jobs_db, catalog, "typed_duckdb"))
    assert verify_published(job, object_store) == []
    object_store.delete(job.object_key or "")
    temp = object_store.create_temp(job.id, 99, job.object_key or "")
    temp.write(b"not the export")
    temp.publish()
    problems = verify_published(job, object_store)
    assert any("bytes" in p for p in problems)
    assert any("SHA-256" in p for p in problems)
    object_store.delete(job.object_key or "")
    assert verify_published(job, object_store) == [f"no object at {job.object_key}"]


def export_service(
    jobs_db: Database, catalog: Catalog, objects: ObjectStore, clock: Any = None
) -> ExportService:
    from datetime import UTC, datetime

    return ExportService(
        jobs=jobs_db.jobs,
        effects=jobs_db.effects,
        downloads=jobs_db.jobs,
        catalog=catalog,
        objects=objects,
        link_secret=b"secret",
        link_seconds=60,
        clock=clock or (lambda: datetime.now(UTC)),
    )


def test_a_download_answers_410_once_the_object_expired(
    jobs_db: Database, catalog: Catalog, object_store: ObjectStore, worker_factory: Any
) -> None:
    from datetime import timedelta

    worker_factory(object_store, retention_seconds=3600.0)
    job = finished(jobs_db, submit(jobs_db, catalog, "typed_duckdb"))
    owner = Acting(name=job.owner)
    fresh = export_service(jobs_db, catalog, object_store).download(owner, job.id)
    assert fresh.file_name == f"typed_duckdb-{job.id}.csv"
    assert fresh.url
    assert job.object_expires_at is not None
    later = job.object_expires_at + timedelta(seconds=1)
    expired = export_service(jobs_db, catalog, object_store, clock=lambda: later)
    with pytest.raises(GoneError, match="expired"):
        expired.download(owner, job.id)
    sweep(jobs_db.jobs, object_store, now=later)
    with pytest.raises(GoneError, match="no longer stored"):  # gone from the store as well
        export_service(jobs_db, catalog, object_store).download(owner, job.id)
    assert jobs_db.jobs.get_job(job.id).job.status == "succeeded"  # type: ignore[arg-type]


def test_only_a_succeeded_job_has_a_download(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore, worker_factory: Any
) -> None:
    worker_factory(local_objects)
    job = finished(jobs_db, submit(jobs_db, catalog, "broken"))
    with pytest.raises(ConflictError, match="failed: there is no file"):
        export_service(jobs_db, catalog, local_objects).download(Acting(name=job.owner), job.id)
