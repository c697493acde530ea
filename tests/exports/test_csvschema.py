"""The JSON schema next to a job's CSV: what a reader is told about the file."""

from __future__ import annotations

from reportexport.core.csvschema import file_schema, schema_file_name
from reportexport.store import Database, JobId, Outcome, PublishedObject
from tests.helpers import RawSql, new_job


def finished(db: Database, published: PublishedObject | None, **options: object) -> JobId:
    job = db.jobs.create_job(new_job(options={"csv": options}))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(
        lease=claim.lease,
        to_status="succeeded" if published else "failed",
        published=published,
        error_code=None if published else "query_error",
    )
    assert db.queue.finish_jobs([outcome])
    return job.id


def published(**fields: object) -> PublishedObject:
    values: dict[str, object] = {
        "key": "exports/1/q-1.csv.gz",
        "sha256": "0" * 64,
        "bytes": 10,
        "rows": 2,
        "columns": ("id", "at"),
        "file_name": "q-1.csv.gz",
        "expires_in_seconds": None,
        "column_types": ("integer", "timestamptz(3)"),
        "dialect_version": 2,
    }
    return PublishedObject(**{**values, **fields})  # type: ignore[arg-type]


def test_the_schema_names_the_dialect_and_each_columns_type(jobs_db: Database) -> None:
    job_id = finished(jobs_db, published(), delimiter=";", gzip=True, null_marker="\\N")
    schema = file_schema(jobs_db.jobs.get_job(job_id).job)
    assert schema == {
        "file_name": "q-1.csv.gz",
        "dialect_version": 2,
        "encoding": "utf-8",
        "bom": False,
        "gzip": True,
        "delimiter": ";",
        "quote": '"',
        "line_ending": "\n",
        "header": True,
        "null": "\\N",
        "time_zone": "UTC",
        "spreadsheet_safe": True,
        "rows": 2,
        "columns": [{"name": "id", "type": "integer"}, {"name": "at", "type": "timestamptz(3)"}],
    }


def test_a_dialect_1_job_lists_its_columns_without_types(jobs_db: Database) -> None:
    job_id = finished(jobs_db, published(column_types=(), dialect_version=None))
    raw = RawSql(jobs_db.url)  # as migration 0005 leaves a job that finished before it
    try:
        raw.execute("UPDATE jobs SET column_types = NULL, dialect_version = 1")
    finally:
        raw.close()
    schema = file_schema(jobs_db.jobs.get_job(job_id).job)
    assert schema is not None
    assert schema["dialect_version"] == 1
    assert schema["columns"] == [{"name": "id", "type": None}, {"name": "at", "type": None}]


def test_a_job_without_a_file_has_no_schema(jobs_db: Database) -> None:
    assert file_schema(jobs_db.jobs.get_job(finished(jobs_db, None)).job) is None


def test_the_schema_file_is_named_after_the_csv() -> None:
    assert schema_file_name("orders-42.csv") == "orders-42.schema.json"
    assert schema_file_name("orders-42.csv.gz") == "orders-42.schema.json"
