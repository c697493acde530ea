"""Workers under infrastructure faults: a database restart, a row lock held by a paused process,
an object store that refuses writes, a source that is gone. Real databases, real files.

The database restarts use a throwaway PostgreSQL cluster of their own (initdb/pg_ctl), so the
shared server is never restarted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from reportexport.catalog import Catalog, parse_catalog
from reportexport.exports import new_export
from reportexport.objects import IncompleteReadError, ObjectStore, open_object_store
from reportexport.store import Database, JobFilter, open_database
from reportexport.worker import Worker, WorkerSettings
from tests.exports.conftest import catalog_for
from tests.postgres_server import ThrowawayCluster
from tests.relay import CommitCutter, Relay, S3Relay
from tests.store.conftest import GRAPH

QUERIES: dict[str, Any] = {
    "small": {"source": "demo", "sql": "SELECT * FROM products ORDER BY product_id"},
    "seconds": {  # a few seconds of work, then done
        "source": "demo",
        "sql": "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(4000000) AS t(i)",
    },
    "endless": {
        "source": "demo",
        "sql": "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)",
    },
    "elsewhere": {"source": "typed_duckdb", "sql": "SELECT id FROM typed"},
}


def wait_until(predicate: Any, timeout: float = 60.0, every: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(every)


def submit(db: Database, catalog: Catalog, name: str, owner: str = "alice") -> int:
    return db.jobs.create_job(new_export(catalog.queries[name], {}, owner=owner))[0].id


def status(db: Database, job_id: int) -> tuple[str, str | None]:
    job = db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    return job.status, job.error_code


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


@pytest.fixture
def catalog(sources_dir: Path) -> Catalog:
    return catalog_for(sources_dir, None, QUERIES)


def start_worker(db: Database, catalog: Catalog, objects: ObjectStore, **settings: Any) -> Worker:
    chosen = {"concurrency": 2, "lease_seconds": 30, "poll_seconds": 0.2,
              "first_probe_seconds": 0.3, **settings}  # fmt: skip
    worker = Worker(db, catalog, objects, WorkerSettings(**chosen))
    worker.start()
    return worker


def test_a_worker_claims_again_after_the_database_restarts(
    cluster: ThrowawayCluster, restartable_url: str, catalog: Catalog, local_objects: ObjectStore
) -> None:
    """Reproduction 1: the LISTEN connection drops with the restart; claiming must go on."""
    db = open_database(restartable_url, GRAPH)
    worker = start_worker(db, catalog, local_objects)
    try:
        first = submit(db, catalog, "small")
        wait_until(lambda: status(db, first)[0] == "succeeded")
        cluster.restart()
        job = submit(db, catalog, "small")
        wait_until(lambda: status(db, job)[0] == "succeeded", timeout=60)
        assert worker.loops.troubled == [] or "claims" not in worker.loops.troubled
    finally:
        worker.stop(grace_seconds=0)
        db.close()


def test_an_export_finished_while_the_database_was_down_still_succeeds(
    cluster: ThrowawayCluster, restartable_url: str, catalog: Catalog, local_objects: ObjectStore
) -> None:
    """Reproduction 2: the object is published while the store is down; the finish waits."""
    db = open_database(restartable_url, GRAPH)
    worker = start_worker(db, catalog, local_objects)
    try:
        job = submit(db, catalog, "seconds")
        wait_until(lambda: status(db, job)[0] == "running")
        cluster.pause()
        time.sleep(8)  # the export ends meanwhile, and its finish meets a closed door
        cluster.resume()
        wait_until(lambda: status(db, job)[0] != "running", timeout=90)
        ended = db.jobs.get_job(job).job  # type: ignore[arg-type]
        assert (ended.status, ended.error_code) == ("succeeded", None)
        assert ended.object_key is not None
        info = local_objects.stat(ended.object_key)
        assert info is not None
        assert info.size == ended.object_bytes
    finally:
        worker.stop(grace_seconds=0)
        db.close()


def test_a_row_lock_held_by_a_paused_process_fails_nobody_else(
    postgres_url: str, catalog: Catalog, local_objects: ObjectStore
) -> None:
    """Reproduction 3: a process frozen inside a transaction on its own job's row. The reaper
    skips the locked row instead of waiting on it, and another worker's leases keep renewing."""
    db = open_database(postgres_url, GRAPH, lock_timeout_seconds=1)
    paused_job = submit(db, catalog, "small", owner="frozen")
    (frozen,) = db.queue.claim_jobs("frozen-worker", limit=1, lease_seconds=1)
    lock = psycopg.connect(postgres_url)
    lock.execute(f"UPDATE jobs SET bytes_written = bytes_written WHERE id = {paused_job}".encode())
    worker = start_worker(db, catalog, local_objects, lease_seconds=3, reap_grace_seconds=0.5)
    try:
        busy = submit(db, catalog, "endless")
        wait_until(lambda: status(db, busy)[0] == "running")
        time.sleep(10)  # three leases of the busy job; the paused one expired long ago
        assert status(db, busy) == ("running", None)
        assert status(db, paused_job) == ("running", None)  # locked: skipped, not waited for
        lock.rollback()
        wait_until(lambda: status(db, paused_job) == ("failed", "lease_expired"), timeout=30)
        assert status(db, busy) == ("running", None)
        db.jobs.cancel_job(busy, person="alice")  # type: ignore[arg-type]
    finally:
        lock.close()
        worker.stop(grace_seconds=0)
        db.close()
    assert frozen.job.id == paused_job


def test_an_unwritable_object_store_fails_a_few_jobs_and_queues_the_rest(
    jobs_db: Database, catalog: Catalog, tmp_path: Path
) -> None:
    """Reproduction 4: the store's folder replaced by a file (root cannot chmod it away). At
    most `failure_limit` jobs fail, as storage_unavailable; the rest wait; work resumes alone."""
    root = tmp_path / "objects"
    objects = open_object_store(f"file://{root}", link_secret=b"x")
    shutil.rmtree(root)
    root.write_text("not a folder")
    jobs = [submit(jobs_db, catalog, "small") for _ in range(8)]
    worker = start_worker(jobs_db, catalog, objects, failure_limit=3)
    try:
        wait_until(lambda: worker.pacing.pause_reason == "storage_unavailable")
        time.sleep(1.5)  # probes fail meanwhile; nothing more is claimed
        failed = [j for j in jobs if status(jobs_db, j) == ("failed", "storage_unavailable")]
        assert 1 <= len(failed) <= 3
        assert all(status(jobs_db, j)[0] in ("failed", "queued") for j in jobs)
        message = jobs_db.jobs.get_job(failed[0]).job.error_message or ""  # type: ignore[arg-type]
        assert "object store refused" in message
        beat = worker.heartbeat()
        assert (beat.pause_reason, beat.claims_paused_until is not None) == (
            "storage_unavailable",
            True,
        )
        root.unlink()  # the volume is back
        waiting = [j for j in jobs if j not in failed]
        wait_until(lambda: all(status(jobs_db, j)[0] == "succeeded" for j in waiting))
        assert worker.pacing.pause_reason is None
    finally:
        worker.stop(grace_seconds=0)


def test_a_missing_source_pauses_its_jobs_only(
    jobs_db: Database, sources_dir: Path, tmp_path: Path, local_objects: ObjectStore
) -> None:
    demo = tmp_path / "demo.duckdb"
    shutil.copy(sources_dir / "demo.duckdb", demo)
    sources = {
        "demo": {"url": f"duckdb:///{demo}"},
        "typed_duckdb": {"url": f"duckdb:///{sources_dir / 'typed.duckdb'}"},
    }
    queries = {name: QUERIES[name] for name in ("small", "elsewhere")}
    catalog = parse_catalog(
        {"version": 1, "sources": sources, "queries": queries}, tmp_path / "c.toml"
    )
    hidden = demo.rename(tmp_path / "demo.hidden")
    broken = [submit(jobs_db, catalog, "small") for _ in range(6)]
    fine = [submit(jobs_db, catalog, "elsewhere") for _ in range(3)]
    worker = start_worker(jobs_db, catalog, local_objects, failure_limit=2)
    try:
        wait_until(lambda: all(status(jobs_db, j)[0] == "succeeded" for j in fine))
        wait_until(lambda: worker.pacing.pause_reason == "source_unavailable")
        failed = [j for j in broken if status(jobs_db, j) == ("failed", "source_unavailable")]
        assert 1 <= len(failed) <= 2 + 1  # the limit, and one in flight when it was reached
        assert worker.heartbeat().paused_sources == ("demo",)
        hidden.rename(demo)
        waiting = [j for j in broken if j not in failed]
        wait_until(lambda: all(status(jobs_db, j)[0] == "succeeded" for j in waiting))
    finally:
        worker.stop(grace_seconds=0)


def test_a_standalone_worker_whose_loop_breaks_stops_and_exits_1(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    worker = Worker(jobs_db, catalog, local_objects, WorkerSettings(poll_seconds=0.1),
                    restart_loops=False)  # fmt: skip

    def broken() -> float:
        raise RuntimeError("a bug")

    worker._housekeeping = broken  # type: ignore[method-assign]
    assert worker.run_until_signal(grace_seconds=0) == 1


def test_serve_restarts_a_broken_loop_and_names_it(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    worker = Worker(jobs_db, catalog, local_objects, WorkerSettings(poll_seconds=0.1))
    calls = []

    def flaky() -> float:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("a bug")
        return 0.1

    worker._housekeeping = flaky  # type: ignore[method-assign]
    worker.loops.first_delay = 0.05
    worker.start()
    try:
        wait_until(lambda: len(calls) >= 3)
        wait_until(lambda: "housekeeping" not in worker.loops.troubled)
    finally:
        worker.stop(grace_seconds=0)


def test_a_worker_writes_its_heartbeat(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    worker = start_worker(jobs_db, catalog, local_objects, heartbeat_seconds=0.2)
    try:
        job = submit(jobs_db, catalog, "endless")
        wait_until(lambda: any(job in b.active_jobs for b in jobs_db.heartbeats.heartbeats()))
        (beat,) = jobs_db.heartbeats.heartbeats()
        assert (beat.kind, beat.pid, beat.pause_reason) == ("worker", os.getpid(), None)
        assert beat.last_claim_at is not None
        assert beat.age_seconds is not None
        assert beat.age_seconds < 30
        jobs_db.jobs.cancel_job(job, person="alice")  # type: ignore[arg-type]
    finally:
        worker.stop(grace_seconds=0)
    assert jobs_db.jobs.list_jobs(JobFilter()).jobs[0].status == "canceled"


def test_leftover_fifo_folders_of_dead_processes_are_removed_at_start(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    base = Path(tempfile.gettempdir())
    dead = base / "reportexport-duckdb-999999999-abc"
    mine = base / f"reportexport-duckdb-{os.getpid()}-abc"
    for folder in (dead, mine):
        folder.mkdir(exist_ok=True)
        os.mkfifo(folder / "out.csv")
    worker = start_worker(jobs_db, catalog, local_objects)
    worker.stop(grace_seconds=0)
    try:
        assert not dead.exists()
        assert mine.exists()  # a living process's folder is its own business
    finally:
        shutil.rmtree(mine, ignore_errors=True)
        shutil.rmtree(dead, ignore_errors=True)


def through(relay: Relay, url: str) -> str:
    """`url` with its host and port replaced by the relay's."""
    parsed = urlsplit(url)
    return parsed._replace(
        netloc=f"{parsed.username or 'postgres'}@127.0.0.1:{relay.port}"
    ).geturl()


def test_a_finish_committed_but_unacknowledged_is_recognised_and_keeps_its_object(
    postgres_url: str, catalog: Catalog, local_objects: ObjectStore
) -> None:
    """The finish to succeeded commits, the connection drops before the answer, and the
    database stays out of reach longer than a connection's wait: the retry that gets through
    finds the job no longer running, and must see it succeeded under its own token (not
    delete the published object)."""
    port = int(urlsplit(postgres_url).port or 5432)
    relay = CommitCutter(port, marker=b"object_sha256 = ", refuse_seconds=12)
    db = open_database(through(relay, postgres_url), GRAPH)
    worker = start_worker(db, catalog, local_objects)
    direct = open_database(postgres_url, GRAPH)
    try:
        relay.armed.set()
        job = submit(direct, catalog, "small")
        assert relay.cut.wait(60), "the finish never committed through the relay"
        wait_until(lambda: worker.active == 0, timeout=90)
        ended = direct.jobs.get_job(job).job  # type: ignore[arg-type]
        assert (ended.status, ended.error_code) == ("succeeded", None)
        assert ended.object_key is not None
        info = local_objects.stat(ended.object_key)
        assert info is not None, "the published object of a succeeded job was deleted"
        assert info.size == ended.object_bytes
    finally:
        worker.stop(grace_seconds=0)
        db.close()
        direct.close()
        relay.close()


def test_a_failure_committed_but_unacknowledged_is_not_mistaken_for_a_reap(
    postgres_url: str, catalog: Catalog, tmp_path: Path
) -> None:
    """The same for a failure: the retry reads back its own code under its own token."""
    port = int(urlsplit(postgres_url).port or 5432)
    relay = CommitCutter(port, marker=b"error_message = ", refuse_seconds=12)
    root = tmp_path / "objects"
    objects = open_object_store(f"file://{root}", link_secret=b"x")
    shutil.rmtree(root)
    root.write_text("not a folder")
    db = open_database(through(relay, postgres_url), GRAPH)
    direct = open_database(postgres_url, GRAPH)
    worker = start_worker(db, catalog, objects, failure_limit=1)
    try:
        relay.armed.set()
        job = submit(direct, catalog, "small")
        assert relay.cut.wait(60)
        wait_until(lambda: worker.active == 0, timeout=90)
        assert status(direct, job) == ("failed", "storage_unavailable")
    finally:
        worker.stop(grace_seconds=0)
        db.close()
        direct.close()
        relay.close()


def test_a_worker_that_lost_its_lease_during_the_last_part_does_not_complete_the_upload(
    jobs_db: Database, catalog: Catalog, s3_endpoint: str
) -> None:
    """The lease is checked right before CompleteMultipartUpload, not before the last part
    goes up: canceled while that part is on its way, the object never becomes visible."""
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"lease-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    objects = open_object_store(f"s3://{bucket}?endpoint_url={relay.endpoint}")
    worker = start_worker(jobs_db, catalog, objects)
    try:
        relay.hold_parts.set()
        job = submit(jobs_db, catalog, "small")
        assert relay.part_held.wait(60)
        jobs_db.jobs.cancel_job(job, person="alice")  # type: ignore[arg-type]
        relay.hold_parts.clear()
        relay.release.set()
        wait_until(lambda: worker.active == 0)
        assert status(jobs_db, job) == ("canceled", None)
        assert relay.completes() == []
        assert [i.key for i in direct.list_objects() if not i.key.startswith("multipart/")] == []
    finally:
        relay.release.set()
        worker.stop(grace_seconds=0)
        relay.close()


def read_in_chunks(objects: ObjectStore, key: str) -> int:
    seen = 0
    with objects.read(key) as handle:
        while chunk := handle.read(1 << 16):
            seen += len(chunk)
    return seen


def test_an_s3_read_cut_short_is_an_error_never_a_shorter_object(s3_endpoint: str) -> None:
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"read-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    temp = direct.create_temp(1, 1, "exports/1/a.csv")
    temp.write(b"x" * 200_000)
    temp.publish()
    objects = open_object_store(
        f"s3://{bucket}?endpoint_url={relay.endpoint}&max_attempts=1&read_timeout=2"
    )
    try:
        with objects.read("exports/1/a.csv") as handle:
            assert len(handle.read()) == 200_000
        relay.truncate_after = 5_000  # headers and a little of the body, then cut
        with pytest.raises(IncompleteReadError):
            read_in_chunks(objects, "exports/1/a.csv")
        with pytest.raises(IncompleteReadError):
            objects.read("exports/1/a.csv").read()
    finally:
        relay.close()


def test_a_probe_that_hangs_holds_back_no_heartbeat(
    jobs_db: Database, catalog: Catalog, s3_endpoint: str
) -> None:
    """Claims paused on the object store, its probe meets a server that takes the request and
    never answers: heartbeats go on beside it."""
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"hang-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    objects = open_object_store(
        f"s3://{bucket}?endpoint_url={relay.endpoint}&max_attempts=1&read_timeout=60"
    )
    relay.refuse_for(3600)
    worker = start_worker(jobs_db, catalog, objects, failure_limit=1, heartbeat_seconds=0.2)
    try:
        submit(jobs_db, catalog, "small")
        wait_until(lambda: worker.pacing.pause_reason == "storage_unavailable")
        relay.hold_all.set()
        relay.refuse_until = 0.0
        wait_until(lambda: any(r.startswith(("POST", "PUT")) for r in relay.requests))
        for _ in range(10):  # the probe hangs meanwhile
            time.sleep(0.5)
            (beat,) = jobs_db.heartbeats.heartbeats()
            assert beat.age_seconds is not None
            assert beat.age_seconds < 2.0
    finally:
        relay.release.set()
        worker.stop(grace_seconds=0)
        relay.close()
