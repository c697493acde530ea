"""Workers that die: SIGKILL mid-export and SIGTERM, on a worker in its own process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reportexport.core.catalog import load_catalog
from reportexport.objects import ObjectStore, open_object_store
from reportexport.pipeline.export import new_export
from reportexport.runners.sweeper import sweep
from reportexport.store import Database, Outcome, open_database
from tests.helpers import ENDLESS, GRAPH, wait_for


@pytest.fixture
def setup(tmp_path: Path, sources_dir: Path) -> tuple[Path, str, str]:
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(
        f"""
version = 1
[sources.demo]
url = "duckdb:///{sources_dir / "demo.duckdb"}"
[queries.endless]
source = "demo"
sql = "{ENDLESS}"
[queries.small]
source = "demo"
sql = "SELECT * FROM products"
"""
    )
    database = f"sqlite:///{tmp_path / 'jobs.db'}"
    upgrade = open_database(database, GRAPH, check=False)
    upgrade.schema.upgrade()
    upgrade.close()
    return catalog, database, f"file://{tmp_path / 'objects'}"


def start_worker(setup: tuple[Path, str, str], *extra: str) -> subprocess.Popen[bytes]:
    """`reportexport worker` in its own process; its log goes to worker.log beside the catalog."""
    catalog, database, objects = setup
    with open(catalog.parent / "worker.log", "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "reportexport", "worker", "--database", database,
             "--catalog", str(catalog), "--objects", objects, *extra],
            env={**os.environ, "REPORTEXPORT_LINK_SECRET": "x"},
            stdout=log,
            stderr=log,
        )  # fmt: skip


def open_all(setup: tuple[Path, str, str]) -> tuple[Database, ObjectStore]:
    _, database, objects = setup
    return open_database(database, GRAPH), open_object_store(objects, link_secret=b"x")


def test_a_worker_killed_mid_export_ends_failed_and_leaves_no_object(
    setup: tuple[Path, str, str],
) -> None:
    db, objects = open_all(setup)
    catalog = load_catalog(setup[0])
    job, _ = db.jobs.create_job(new_export(catalog.queries["endless"], {}, owner="alice"))
    worker = start_worker(setup, "--lease-seconds", "2")
    try:
        wait_for(
            lambda: db.jobs.get_job(job.id).job.bytes_written > 0,
            60,
            "db.jobs.get_job(job.id).job.bytes_written > 0",
            every=0.05,
        )
        lease_token = db.jobs.get_job(job.id).job.lease_token
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert db.jobs.get_job(job.id).job.status == "running"  # nobody knows yet
        assert any(info.key.startswith("tmp/") for info in objects.list_objects())

        wait_for(
            lambda: db.queue.reap_expired("reaper", grace_seconds=0.5) == [job.id],
            30,
            'db.queue.reap_expired("reaper", grace_seconds=0.5) == [job.id]',
            every=0.05,
        )
        detail = db.jobs.get_job(job.id)
        assert (detail.job.status, detail.job.error_code) == ("failed", "lease_expired")
        assert detail.history[-1].reason == "lease_expired"

        # The dead worker's lease can publish nothing now.
        from reportexport.store import Lease

        stale = Lease(
            job_id=job.id, token=lease_token, worker="dead", expires_at=detail.job.updated_at
        )
        assert db.queue.finish_jobs([Outcome(lease=stale, to_status="succeeded")]) == [False]

        report = sweep(db.jobs, objects)
        assert all(why == "temp object of a failed job" for why in report.deleted.values())
        assert list(objects.list_objects()) == []
    finally:
        if worker.poll() is None:
            worker.kill()
        db.close()


def test_sigterm_lets_the_worker_end_running_exports_and_exit(
    setup: tuple[Path, str, str],
) -> None:
    db, objects = open_all(setup)
    catalog = load_catalog(setup[0])
    job, _ = db.jobs.create_job(new_export(catalog.queries["endless"], {}, owner="alice"))
    worker = start_worker(setup, "--grace-seconds", "1")
    try:
        wait_for(
            lambda: db.jobs.get_job(job.id).job.bytes_written > 0,
            60,
            "db.jobs.get_job(job.id).job.bytes_written > 0",
            every=0.05,
        )
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
        ended = db.jobs.get_job(job.id).job
        assert (ended.status, ended.error_code) == ("failed", "worker_shutdown")
        log_lines = (setup[0].parent / "worker.log").read_text().splitlines()
        assert log_lines
        assert all(json.loads(line)["logger"].startswith("reportexport") for line in log_lines)
        assert list(objects.list_objects()) == []
    finally:
        if worker.poll() is None:
            worker.kill()
        db.close()


def test_a_worker_started_after_the_crash_runs_new_jobs(setup: tuple[Path, str, str]) -> None:
    db, objects = open_all(setup)
    catalog = load_catalog(setup[0])
    job, _ = db.jobs.create_job(new_export(catalog.queries["small"], {}, owner="alice"))
    worker = start_worker(setup)
    try:
        wait_for(
            lambda: db.jobs.get_job(job.id).job.status == "succeeded",
            60,
            'db.jobs.get_job(job.id).job.status == "succeeded"',
            every=0.05,
        )
        keys = [info.key for info in objects.list_objects()]
        assert keys == [f"exports/{job.id}/small-{job.id}.csv"]
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
        db.close()


def test_the_sweeper_removes_what_no_living_export_owns(
    setup: tuple[Path, str, str],
) -> None:
    db, objects = open_all(setup)
    catalog = load_catalog(setup[0])
    try:
        running, _ = db.jobs.create_job(new_export(catalog.queries["small"], {}, owner="a"))
        failed, _ = db.jobs.create_job(new_export(catalog.queries["small"], {}, owner="a"))
        claims = {c.job.id: c.lease for c in db.queue.claim_jobs("w", limit=2, lease_seconds=600)}
        db.queue.finish_jobs([Outcome(lease=claims[failed.id], to_status="failed", error_code="x")])

        def published(job_id: int, name: str) -> str:
            temp = objects.create_temp(job_id, 9, f"exports/{job_id}/{name}")
            temp.write(b"x")
            temp.publish()
            return f"exports/{job_id}/{name}"

        running_temp = objects.create_temp(running.id, 1, f"exports/{running.id}/r.csv")
        running_temp.write(b"x")
        kept_published = published(running.id, "r.csv")  # between publish and commit
        orphan = published(999_999, "o.csv")
        failed_object = published(failed.id, "f.csv")
        report = sweep(db.jobs, objects)
        assert report.deleted == {
            orphan: "its job does not exist",
            failed_object: "published object of a failed job",
        }
        assert {info.key for info in objects.list_objects()} == {running_temp.key, kept_published}
        running_temp.abort()
    finally:
        db.close()
