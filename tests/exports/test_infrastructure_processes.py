"""The issue's reproductions with `reportexport worker` in processes of its own, on PostgreSQL:
a database restart, a worker frozen (SIGSTOP) holding a row lock beside a healthy one, a full
disk (RLIMIT_FSIZE; Python ignores SIGXFSZ, so a write past the limit fails with EFBIG), and a
worker frozen, continued and then told to stop.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from reportexport.core.catalog import Catalog, load_catalog
from reportexport.pipeline.export import new_export
from reportexport.store import Database, open_database
from tests.helpers import GRAPH, WORKER_QUERIES, lease_end, wait_for
from tests.postgres_server import ThrowawayCluster


@pytest.fixture
def catalog_file(tmp_path: Path, sources_dir: Path) -> Path:
    path = tmp_path / "catalog.toml"
    demo = sources_dir / "demo.duckdb"
    lines = ["version = 1", "[sources.demo]", f'url = "duckdb:///{demo}"', "max_concurrent = 8"]
    for name in ("small", "seconds", "endless"):
        lines += [f"[queries.{name}]", 'source = "demo"', f'sql = "{WORKER_QUERIES[name]["sql"]}"']
    path.write_text("\n".join(lines) + "\n")
    return path


class Workers:
    """`reportexport worker` processes on one database, catalog and object folder."""

    def __init__(self, tmp_path: Path, catalog: Path, database: str) -> None:
        self.tmp_path = tmp_path
        self.catalog = catalog
        self.database = database
        self.objects = f"file://{tmp_path / 'objects'}"
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        number = len(self.started) + 1
        with open(self.tmp_path / f"worker{number}.log", "ab") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "reportexport", "worker", "--database", self.database,
                 "--catalog", str(self.catalog), "--objects", self.objects, *extra],
                env={**os.environ, "REPORTEXPORT_LINK_SECRET": "x", **(env or {})},
                stdout=log,
                stderr=log,
            )  # fmt: skip
        self.started.append(process)
        return process

    def log(self, number: int) -> str:
        return (self.tmp_path / f"worker{number}.log").read_text(errors="replace")

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.kill()
                process.wait()


@pytest.fixture
def workers(tmp_path: Path, catalog_file: Path, postgres_url: str) -> Iterator[Workers]:
    found = Workers(tmp_path, catalog_file, postgres_url)
    yield found
    found.stop_all()


def submit(db: Database, catalog: Catalog, name: str, owner: str = "alice") -> int:
    return db.jobs.create_job(new_export(catalog.queries[name], {}, owner=owner))[0].id


def status(db: Database, job_id: int) -> tuple[str, str | None]:
    job = db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    return job.status, job.error_code


def worker_id(process: subprocess.Popen[bytes]) -> str:
    return f"{os.uname().nodename}-{process.pid}"


def test_a_worker_process_claims_after_a_fast_database_restart(
    cluster: ThrowawayCluster, restartable_url: str, tmp_path: Path, catalog_file: Path
) -> None:
    """Reproduction 1: `pg_ctl restart -m fast`, then a new job: it is claimed and ends."""
    found = Workers(tmp_path, catalog_file, restartable_url)
    db = open_database(restartable_url, GRAPH)
    catalog = load_catalog(catalog_file)
    try:
        found.start()
        first = submit(db, catalog, "small")
        wait_for(
            lambda: status(db, first)[0] == "succeeded", 60, 'status(db, first)[0] == "succeeded"'
        )
        cluster.restart()
        job = submit(db, catalog, "small")
        wait_for(lambda: status(db, job)[0] == "succeeded", 90, 'status(db, job)[0] == "succeeded"')
        assert found.started[0].poll() is None
    finally:
        found.stop_all()
        db.close()


def test_a_worker_frozen_holding_a_row_lock_fails_no_job_of_a_healthy_worker(
    workers: Workers, postgres_url: str, catalog_file: Path
) -> None:
    """Reproduction 3: two workers with --lease-seconds 3; worker A runs a job, a session
    holds that job's row lock in an open transaction, A is frozen; B's long export goes on,
    and once the lock is released B's job still succeeds (A's is reaped)."""
    db = open_database(postgres_url, GRAPH)
    catalog = load_catalog(catalog_file)
    try:
        a = workers.start("--lease-seconds", "3", "--concurrency", "1")
        a_job = submit(db, catalog, "endless", owner="frozen")
        wait_for(lambda: status(db, a_job)[0] == "running", 60, 'status(db, a_job)[0] == "running"')
        b = workers.start("--lease-seconds", "3", "--concurrency", "1")
        b_job = submit(db, catalog, "seconds", owner="healthy")
        wait_for(
            lambda: db.jobs.get_job(b_job).job.lease_owner == worker_id(b),  # type: ignore[arg-type]
            60,
            "db.jobs.get_job(b_job).job.lease_owner == worker_id(b)",
        )
        with psycopg.connect(postgres_url) as lock:
            lock.execute(
                f"UPDATE jobs SET bytes_written = bytes_written WHERE id = {a_job}".encode()
            )
            a.send_signal(signal.SIGSTOP)
            a_lease_end = lease_end(db, a_job)

            def b_outlived_a() -> bool:
                """B's export succeeded, or its lease was renewed five leases past the end of
                A's (which expired long ago, its row locked)."""
                b_status = status(db, b_job)[0]
                assert b_status in ("running", "succeeded"), workers.log(2)[-3000:]
                if b_status == "succeeded":
                    return True
                return (lease_end(db, b_job) - a_lease_end).total_seconds() >= 5 * 3

            wait_for(b_outlived_a, 200, "B's export to outlive A's lease", every=0.2)
            lock.rollback()
        wait_for(lambda: status(db, b_job)[0] != "running", 90, 'status(db, b_job)[0] != "running"')
        assert status(db, b_job) == ("succeeded", None), workers.log(2)[-3000:]
        wait_for(
            lambda: status(db, a_job) == ("failed", "lease_expired"),
            60,
            'status(db, a_job) == ("failed", "lease_expired")',
        )
    finally:
        workers.stop_all()
        db.close()


def test_a_full_disk_fails_at_most_the_budget_and_the_rest_resume_by_themselves(
    workers: Workers, postgres_url: str, catalog_file: Path, tmp_path: Path
) -> None:
    """Reproduction 4 as a full disk: four exports running at once when writes start to
    fail (RLIMIT_FSIZE 0). At most `pause_after_failures` (2) jobs fail, as
    storage_unavailable; the others are held on their leases or stay queued, the probes
    (real writes) keep failing while the disk is full, and once it has room every other job
    succeeds by itself, none of them ever queued again."""
    db = open_database(postgres_url, GRAPH)
    catalog = load_catalog(catalog_file)
    try:
        process = workers.start(
            "--concurrency", "4", env={"REPORTEXPORT_PAUSE_AFTER_FAILURES": "2"}
        )
        running = [submit(db, catalog, "seconds") for _ in range(4)]
        queued = [submit(db, catalog, "small") for _ in range(4)]
        wait_for(
            lambda: all(status(db, j)[0] == "running" for j in running),
            60,
            'all(status(db, j)[0] == "running" for j in running)',
        )
        limit = resource.prlimit(process.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (0, limit[1]))
        try:

            def paused() -> bool:
                beats = [b for b in db.heartbeats.heartbeats() if b.pid == process.pid]
                return any(b.pause_reason == "storage_unavailable" for b in beats)

            wait_for(paused, 60, "paused")
            probe_times: set[datetime] = set()

            def three_probes_refused() -> bool:
                """Each refused probe (a real write) sets the next one later."""
                beats = [b for b in db.heartbeats.heartbeats() if b.pid == process.pid]
                probe_times.update(b.claims_paused_until for b in beats if b.claims_paused_until)
                return len(probe_times) >= 3

            wait_for(three_probes_refused, 120, "three probes refused", every=0.2)
            states = {j: status(db, j) for j in running + queued}
            failed = [j for j, s in states.items() if s == ("failed", "storage_unavailable")]
            assert 1 <= len(failed) <= 2, states
            assert all(s[0] in ("running", "queued") for j, s in states.items() if j not in failed)
            assert all(states[j][0] == "queued" for j in queued), states
        finally:
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, limit)
        rest = [j for j in running + queued if j not in failed]
        wait_for(
            lambda: all(status(db, j)[0] == "succeeded" for j in rest),
            120,
            'all(status(db, j)[0] == "succeeded" for j in rest)',
        )
        for job_id in rest:
            moves = [(h.from_status, h.to_status) for h in db.jobs.get_job(job_id).history]  # type: ignore[arg-type]
            assert moves == [("queued", "running"), ("running", "succeeded")], moves
    finally:
        workers.stop_all()
        db.close()


def test_a_worker_frozen_then_continued_then_terminated_shuts_down_properly(
    workers: Workers, postgres_url: str, catalog_file: Path
) -> None:
    """SIGSTOP past its lease, SIGCONT, SIGTERM: it stops claiming, ends its runs failed
    with a reason (its lease lost: reaped as lease_expired; a new one: worker_shutdown)
    and exits 0 within its grace."""
    db = open_database(postgres_url, GRAPH)
    catalog = load_catalog(catalog_file)
    try:
        process = workers.start("--lease-seconds", "3", "--grace-seconds", "2")
        first = submit(db, catalog, "endless")
        wait_for(lambda: status(db, first)[0] == "running", 60, 'status(db, first)[0] == "running"')
        process.send_signal(signal.SIGSTOP)
        first_lease_end = lease_end(db, first)
        wait_for(
            lambda: datetime.now(UTC) > first_lease_end + timedelta(seconds=3),
            60,
            "the frozen worker's lease to be a lease past its end",
        )
        process.send_signal(signal.SIGCONT)
        second = submit(db, catalog, "endless")
        wait_for(
            lambda: status(db, second)[0] == "running", 60, 'status(db, second)[0] == "running"'
        )
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert process.wait(timeout=60) == 0, workers.log(1)[-3000:]
        assert time.monotonic() - started < 30
        ends = {status(db, first), status(db, second)}
        assert status(db, second) == ("failed", "worker_shutdown"), ends
        assert status(db, first)[0] == "failed", ends
        late = submit(db, catalog, "small")
        time.sleep(1)
        assert status(db, late) == ("queued", None)
    finally:
        workers.stop_all()
        db.close()
