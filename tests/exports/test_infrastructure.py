"""Workers under infrastructure faults: a database restart, a row lock held by a paused process,
an object store that refuses writes, a source that is gone. Real databases, real files.

The database restarts use a throwaway PostgreSQL cluster of their own (initdb/pg_ctl), so the
shared server is never restarted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest

from frozen_lifecycle.transitions import TerminalStateError
from reportexport.core.catalog import Catalog, parse_catalog
from reportexport.objects import (
    IncompleteReadError,
    ObjectStore,
    ObjectStoreUnavailableError,
    open_object_store,
)
from reportexport.pipeline.export import new_export
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.store import Database, JobFilter, open_database
from tests.helpers import GRAPH, WORKER_QUERIES, catalog_for, lease_end, wait_for
from tests.postgres_server import ThrowawayCluster
from tests.relay import CommitCutter, FreezingRelay, Relay, S3Relay


def submit(db: Database, catalog: Catalog, name: str, owner: str = "alice") -> int:
    return db.jobs.create_job(new_export(catalog.queries[name], {}, owner=owner))[0].id


def status(db: Database, job_id: int) -> tuple[str, str | None]:
    job = db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    return job.status, job.error_code


@pytest.fixture
def catalog(sources_dir: Path) -> Catalog:
    return catalog_for(sources_dir, None, WORKER_QUERIES)


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
        wait_for(
            lambda: status(db, first)[0] == "succeeded", 60, 'status(db, first)[0] == "succeeded"'
        )
        cluster.restart()
        job = submit(db, catalog, "small")
        wait_for(lambda: status(db, job)[0] == "succeeded", 60, 'status(db, job)[0] == "succeeded"')
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
    lease_checked = threading.Event()
    still_ours = worker._still_ours

    def checking(running: Any) -> bool:  # the check made before the object is published
        lease_checked.set()
        return still_ours(running)

    worker._still_ours = checking  # type: ignore[method-assign]
    try:
        job = submit(db, catalog, "seconds")
        wait_for(lambda: status(db, job)[0] == "running", 60, 'status(db, job)[0] == "running"')
        cluster.pause()
        wait_for(lease_checked.is_set, 80, "the export to end and check its lease at a closed door")
        cluster.resume()
        wait_for(lambda: status(db, job)[0] != "running", 90, 'status(db, job)[0] != "running"')
        ended = db.jobs.get_job(job).job  # type: ignore[arg-type]
        assert (ended.status, ended.error_code) == ("succeeded", None)
        assert ended.object_key is not None
        info = local_objects.stat(ended.object_key)
        assert info is not None
        assert info.size == ended.object_bytes
    finally:
        worker.stop(grace_seconds=0)
        db.close()


def test_an_export_that_ends_while_the_store_is_away_past_its_lease_still_succeeds(
    cluster: ThrowawayCluster, restartable_url: str, catalog: Catalog, s3_endpoint: str
) -> None:
    """Issue 28, third reproduction: the job store goes away twice within a lease, the second
    time just as the export sends its last part, and stays away longer than the lease (3 s)
    and a connection's wait (10 s), but less than the lease and the reaper's grace (20 s
    here). The lease is renewed once the store is back (its connection reconnects at once,
    not after a growing backoff) and the export is published and succeeds, rather than
    withheld and later reaped."""
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"lease-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    objects = open_object_store(f"s3://{bucket}?endpoint_url={relay.endpoint}")
    db = open_database(restartable_url, GRAPH)
    leases = open_database(restartable_url, GRAPH, dedicated=True)
    settings = WorkerSettings(
        concurrency=1, lease_seconds=3, poll_seconds=0.2, reap_grace_seconds=20
    )
    worker = Worker(db, catalog, objects, settings, lease_queue=leases.queue)
    worker.start()
    try:
        relay.hold_parts.set()
        job = submit(db, catalog, "small")
        assert relay.part_held.wait(60)
        cluster.pause()
        time.sleep(2)
        cluster.resume()
        time.sleep(2)
        cluster.pause()
        relay.hold_parts.clear()
        relay.release.set()  # the last part goes up; the lease must be renewed to publish
        time.sleep(14)
        cluster.resume()
        wait_for(lambda: worker.active == 0, 90, "worker.active == 0", every=0.05)
        ended = db.jobs.get_job(job).job  # type: ignore[arg-type]
        assert (ended.status, ended.error_code) == ("succeeded", None)
        assert ended.object_key is not None
        assert objects.stat(ended.object_key) is not None
    finally:
        relay.release.set()
        worker.stop(grace_seconds=0)
        leases.close()
        db.close()
        relay.close()


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
        wait_for(lambda: status(db, busy)[0] == "running", 60, 'status(db, busy)[0] == "running"')
        first_lease_end = lease_end(db, busy)

        def three_leases_later() -> bool:
            """The busy job's lease renewed three leases past the first (the paused one expired
            long ago); the locked row is skipped, not waited for, all along."""
            assert status(db, busy) == ("running", None)
            assert status(db, paused_job) == ("running", None)
            return (lease_end(db, busy) - first_lease_end).total_seconds() >= 3 * 3

        wait_for(three_leases_later, 100, "three leases of the busy job", every=0.2)
        lock.rollback()
        wait_for(
            lambda: status(db, paused_job) == ("failed", "lease_expired"),
            30,
            'status(db, paused_job) == ("failed", "lease_expired")',
        )
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
        wait_for(
            lambda: worker.pacing.pause_reason == "storage_unavailable",
            60,
            'worker.pacing.pause_reason == "storage_unavailable"',
        )
        probe_times: set[float] = set()

        def two_probes_failed() -> bool:
            probe_times.update(worker.pacing.paused().values())
            return len(probe_times) >= 3  # each failed probe sets the next one later

        wait_for(two_probes_failed, 15, "two probes of the store to fail", every=0.02)
        failed = [j for j in jobs if status(jobs_db, j) == ("failed", "storage_unavailable")]
        assert 1 <= len(failed) <= 3
        # The rest wait: queued, or held on their leases (running) while the store is away,
        # at most as many as the worker runs at once.
        held = [j for j in jobs if status(jobs_db, j)[0] == "running"]
        assert len(held) <= 2
        assert all(status(jobs_db, j)[0] in ("failed", "queued", "running") for j in jobs)
        message = jobs_db.jobs.get_job(failed[0]).job.error_message or ""  # type: ignore[arg-type]
        assert "object store refused" in message
        beat = worker.heartbeat()
        assert (beat.pause_reason, beat.claims_paused_until is not None) == (
            "storage_unavailable",
            True,
        )
        root.unlink()  # the volume is back
        waiting = [j for j in jobs if j not in failed]
        wait_for(
            lambda: all(status(jobs_db, j)[0] == "succeeded" for j in waiting),
            60,
            'all(status(jobs_db, j)[0] == "succeeded" for j in waiting)',
        )
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
    queries = {name: WORKER_QUERIES[name] for name in ("small", "elsewhere")}
    catalog = parse_catalog(
        {"version": 1, "sources": sources, "queries": queries}, tmp_path / "c.toml"
    )
    hidden = demo.rename(tmp_path / "demo.hidden")
    broken = [submit(jobs_db, catalog, "small") for _ in range(6)]
    fine = [submit(jobs_db, catalog, "elsewhere") for _ in range(3)]
    worker = start_worker(jobs_db, catalog, local_objects, failure_limit=2)
    try:
        wait_for(
            lambda: all(status(jobs_db, j)[0] == "succeeded" for j in fine),
            60,
            'all(status(jobs_db, j)[0] == "succeeded" for j in fine)',
        )
        wait_for(
            lambda: worker.pacing.pause_reason == "source_unavailable",
            60,
            'worker.pacing.pause_reason == "source_unavailable"',
        )
        failed = [j for j in broken if status(jobs_db, j) == ("failed", "source_unavailable")]
        assert 1 <= len(failed) <= 2 + 1  # the limit, and one in flight when it was reached
        assert worker.heartbeat().paused_sources == ("demo",)
        hidden.rename(demo)
        waiting = [j for j in broken if j not in failed]
        wait_for(
            lambda: all(status(jobs_db, j)[0] == "succeeded" for j in waiting),
            60,
            'all(status(jobs_db, j)[0] == "succeeded" for j in waiting)',
        )
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
        wait_for(lambda: len(calls) >= 3, 60, "len(calls) >= 3")
        wait_for(
            lambda: "housekeeping" not in worker.loops.troubled,
            60,
            '"housekeeping" not in worker.loops.troubled',
        )
    finally:
        worker.stop(grace_seconds=0)


def test_a_worker_writes_its_heartbeat(
    jobs_db: Database, catalog: Catalog, local_objects: ObjectStore
) -> None:
    worker = start_worker(jobs_db, catalog, local_objects, heartbeat_seconds=0.2)
    try:
        job = submit(jobs_db, catalog, "endless")
        wait_for(
            lambda: any(job in b.active_jobs for b in jobs_db.heartbeats.heartbeats()),
            60,
            "any(job in b.active_jobs for b in jobs_db.heartbeats.heartbeats())",
        )
        (beat,) = jobs_db.heartbeats.heartbeats()
        assert (beat.kind, beat.pid, beat.pause_reason) == ("worker", os.getpid(), None)
        assert beat.last_claim_at is not None
        assert beat.last_poll_at is not None
        assert beat.last_poll_at >= beat.last_claim_at - timedelta(seconds=1)
        assert beat.age_seconds is not None
        assert beat.age_seconds < 30
        jobs_db.jobs.cancel_job(job, person="alice")  # type: ignore[arg-type]
        # Idle, it goes on asking for work: each beat shows a later ask than the claim.
        claimed = beat.last_claim_at
        wait_for(
            lambda: any(
                (b.last_poll_at or claimed) > claimed + timedelta(seconds=0.5)
                for b in jobs_db.heartbeats.heartbeats()
            ),
            60,
            "a heartbeat with an ask for work half a second after the claim",
            every=0.05,
        )
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
        wait_for(lambda: worker.active == 0, 90, "worker.active == 0")
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


def test_a_worker_frozen_right_after_its_finish_holds_no_lock(
    postgres_url: str, catalog: Catalog, local_objects: ObjectStore
) -> None:
    """Issue 28, second reproduction: the worker's process stops right after it sent the
    statement that ends its job (a suspended VM whose TCP connection stays up). Nothing may be
    left half-done on the server: the job has ended, its row is not locked, so a person's
    cancel is answered at once (refused: the job has ended) and the reaper finds nothing."""
    port = int(urlsplit(postgres_url).port or 5432)
    relay = FreezingRelay(port, marker=b"object_sha256 = ")
    db = open_database(through(relay, postgres_url), GRAPH)
    direct = open_database(postgres_url, GRAPH, lock_timeout_seconds=2)
    worker = start_worker(db, catalog, local_objects)
    try:
        relay.armed.set()
        job = submit(direct, catalog, "small")
        assert relay.frozen.wait(60), "the finish never went out"
        wait_for(
            lambda: status(direct, job)[0] != "running",
            10,
            'status(direct, job)[0] != "running"',
            every=0.05,
        )
        assert status(direct, job) == ("succeeded", None)
        with pytest.raises(TerminalStateError):
            direct.jobs.cancel_job(job, person="alice")  # type: ignore[arg-type]
        assert direct.queue.reap_expired("reaper", grace_seconds=0) == []
    finally:
        relay.thaw()
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
        wait_for(lambda: worker.active == 0, 90, "worker.active == 0")
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
        wait_for(lambda: worker.active == 0, 60, "worker.active == 0")
        assert status(jobs_db, job) == ("canceled", None)
        assert relay.completes() == []
        assert [i.key for i in direct.list_objects() if not i.key.startswith("multipart/")] == []
    finally:
        relay.release.set()
        worker.stop(grace_seconds=0)
        relay.close()


def test_a_publish_whose_answer_was_lost_is_ended_with_not_exported_again(
    jobs_db: Database, catalog: Catalog, s3_endpoint: str
) -> None:
    """S3 completed the upload, but the answer was lost and the store was away a moment: the
    export is held (no failure budget here) and, when it may go again, finds its object
    published and ends with it, instead of exporting again into a refused second object."""
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"lost-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    objects = open_object_store(
        f"s3://{bucket}?endpoint_url={relay.endpoint}&max_attempts=1&connect_timeout=1"
    )
    worker = start_worker(jobs_db, catalog, objects, failure_limit=0)
    try:
        relay.lose_complete_answer.set()
        job = submit(jobs_db, catalog, "small")
        wait_for(
            lambda: status(jobs_db, job)[0] not in ("queued", "running"),
            90,
            'status(jobs_db, job)[0] not in ("queued", "running")',
            every=0.05,
        )
        ended = jobs_db.jobs.get_job(job).job  # type: ignore[arg-type]
        assert (ended.status, ended.error_code) == ("succeeded", None)
        mine = [r for r in relay.completes() if f"/exports/{job}/" in r]
        assert len(mine) == 1  # published once, never a second time
        assert ended.object_key is not None
        info = direct.stat(ended.object_key)
        assert info is not None
        assert info.size == ended.object_bytes
    finally:
        worker.stop(grace_seconds=0)
        relay.close()


def test_an_s3_answer_cut_inside_its_headers_is_an_outage(s3_endpoint: str) -> None:
    """Seen in the fault suite: a connection closed inside the headers of the answer to
    CreateMultipartUpload parses as an answer without an upload id. That is the store's
    outage (the worker paces it), never an internal error of the export."""
    relay = S3Relay(int(urlsplit(s3_endpoint).port or 80))
    bucket = f"cut-{uuid.uuid4().hex[:8]}"
    direct = open_object_store(f"s3://{bucket}?endpoint_url={s3_endpoint}")
    direct.client.create_bucket(Bucket=bucket)  # type: ignore[attr-defined]
    objects = open_object_store(f"s3://{bucket}?endpoint_url={relay.endpoint}&max_attempts=1")
    try:
        relay.truncate_after = 100
        with pytest.raises(ObjectStoreUnavailableError, match="without UploadId"):
            objects.create_temp(1, 1, "exports/1/a.csv")
    finally:
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
        wait_for(
            lambda: worker.pacing.pause_reason == "storage_unavailable",
            60,
            'worker.pacing.pause_reason == "storage_unavailable"',
        )
        relay.hold_all.set()
        relay.refuse_until = 0.0
        wait_for(
            lambda: any(r.startswith(("POST", "PUT")) for r in relay.requests),
            60,
            'any(r.startswith(("POST", "PUT")) for r in relay.requests)',
        )
        for _ in range(10):  # the probe hangs meanwhile
            time.sleep(0.5)
            (beat,) = jobs_db.heartbeats.heartbeats()
            assert beat.age_seconds is not None
            assert beat.age_seconds < 2.0
    finally:
        relay.release.set()
        worker.stop(grace_seconds=0)
        relay.close()


def test_a_worker_claims_again_after_an_outage_that_refused_deletes_too(
    jobs_db: Database, catalog: Catalog, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 28, first reproduction: the objects folder refuses writes and deletes while two
    exports publish. The first is failed (within the budget of one), the second held on its
    lease; neither temp object could be removed. Once the folder is back, the held export
    reruns on the same lease (so the same temp key): it must succeed, and the worker must go
    on claiming (its half-open trial released), with its pause visible while it lasts."""
    root = tmp_path / "objects"
    objects = open_object_store(f"file://{root}", link_secret=b"x")
    worker = start_worker(jobs_db, catalog, objects, failure_limit=1, max_probe_seconds=1.0)
    aside = tmp_path / "objects.aside"
    try:
        jobs = [submit(jobs_db, catalog, "seconds") for _ in range(2)]
        wait_for(
            lambda: all(status(jobs_db, j)[0] == "running" for j in jobs),
            60,
            'all(status(jobs_db, j)[0] == "running" for j in jobs)',
            every=0.05,
        )
        wait_for(
            lambda: len(list((root / "tmp").glob("*.part"))) == 2,
            60,
            "both exports to be writing their part files",
            every=0.05,
        )
        root.rename(aside)
        root.write_text("not a folder")  # writes, links and unlinks all refused
        wait_for(
            lambda: worker.pacing.pause_reason == "storage_unavailable",
            90,
            'worker.pacing.pause_reason == "storage_unavailable"',
            every=0.05,
        )
        wait_for(
            lambda: sum(status(jobs_db, j)[0] == "failed" for j in jobs) == 1,
            90,
            'sum(status(jobs_db, j)[0] == "failed" for j in jobs) == 1',
            every=0.05,
        )
        (held,) = [j for j in jobs if status(jobs_db, j)[0] == "running"]
        wait_for(
            lambda: f"job {held}: the object store" in caplog.text,
            90,
            'f"job {held}: the object store" in caplog.text',
            every=0.05,
        )
        wait_for(
            lambda: "held on its lease until it is back" in caplog.text,
            60,
            '"held on its lease until it is back" in caplog.text',
            every=0.05,
        )
        assert len(list((aside / "tmp").glob("*.part"))) == 2  # neither could be removed
        assert worker.heartbeat().pause_reason == "storage_unavailable"
        root.unlink()
        aside.rename(root)  # the volume is back, with both leftovers in it
        wait_for(
            lambda: status(jobs_db, held)[0] != "running",
            90,
            'status(jobs_db, held)[0] != "running"',
            every=0.05,
        )
        assert status(jobs_db, held) == ("succeeded", None)
        later = submit(jobs_db, catalog, "small")
        wait_for(
            lambda: status(jobs_db, later)[0] != "queued",
            30,
            'status(jobs_db, later)[0] != "queued"',
            every=0.05,
        )
        wait_for(
            lambda: status(jobs_db, later)[0] == "succeeded",
            60,
            'status(jobs_db, later)[0] == "succeeded"',
            every=0.05,
        )
        assert worker.pacing.pause_reason is None
        assert worker.heartbeat().pause_reason is None
    finally:
        worker.stop(grace_seconds=0)
