"""A source's max_concurrent holds across worker processes, judged through the database.

Three `reportexport worker` processes, each allowed four exports at once (twice the cap, so no
single one is held back by its own concurrency) and two job-store connections, drain twelve
exports of a source capped at two. Which of them claims what is theirs to race for (a worker
whose export ends claims again at once, the others when they next poll). Every export's
running interval
is read back from the job store (started_at at the claim, finished_at at the end, both written
by the database in the transactions that take and give back the slot), and at no instant do
more than two overlap.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from reportexport.core.records import JobFilter
from reportexport.store import open_database
from tests.helpers import GRAPH, limits

CAP = 2
WORKERS = 3
EXPORTS = 12
CATALOG = """
version = 1

[sources.warehouse]
url = "{url}"
max_concurrent = {cap}

[queries.slow]
source = "warehouse"
sql = "SELECT n FROM (SELECT 1 AS n) AS one, pg_sleep(0.4)"
"""


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:  # an end sorts before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


def test_three_worker_processes_never_run_more_than_the_cap(
    postgres_url: str, tmp_path: Path
) -> None:
    from reportexport.core.catalog import load_catalog
    from reportexport.pipeline.export import new_export

    catalog_file = tmp_path / "catalog.toml"
    catalog_file.write_text(CATALOG.format(url=postgres_url, cap=CAP))
    catalog = load_catalog(catalog_file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env.update(
        REPORTEXPORT_DATABASE_URL=postgres_url,
        REPORTEXPORT_CATALOG=str(catalog_file),
        REPORTEXPORT_OBJECTS_URL=f"file://{tmp_path / 'objects'}",
        REPORTEXPORT_HOME=str(tmp_path / "var"),
        REPORTEXPORT_CONCURRENCY="4",
        REPORTEXPORT_DB_POOL_SIZE="2",
    )
    with closing(open_database(postgres_url, GRAPH)) as db:
        logs = [open(tmp_path / f"worker-{i}.log", "wb") for i in range(WORKERS)]  # noqa: SIM115
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "reportexport", "worker"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for log in logs
        ]
        try:
            deadline = time.monotonic() + 120
            while len(db.heartbeats.heartbeats()) < WORKERS:  # every worker is up and claiming
                assert time.monotonic() < deadline, "the workers did not all start"
                time.sleep(0.2)
            for index in range(EXPORTS):  # two owners, so turns interleave as well
                owner = "alice" if index % 2 else "bob"
                export = new_export(catalog.queries["slow"], {}, owner=owner)
                db.jobs.create_job(export, limits=limits(max_active=EXPORTS))
            done = JobFilter(status="succeeded", limit=EXPORTS)
            while len(db.jobs.list_jobs(done).jobs) < EXPORTS:
                assert time.monotonic() < deadline, "the exports did not all succeed in time"
                assert all(w.poll() is None for w in workers), "a worker stopped"
                time.sleep(0.2)
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(timeout=60)
            for log in logs:
                log.close()
        jobs = db.jobs.list_jobs(JobFilter(limit=EXPORTS)).jobs
        (cap,) = db.caps.caps()
    assert {job.status for job in jobs} == {"succeeded"}
    intervals = [
        (job.started_at.timestamp(), job.finished_at.timestamp())  # type: ignore[union-attr]
        for job in jobs
    ]
    assert most_at_once(intervals) == CAP
    assert (cap.source, cap.max_concurrent, cap.running) == ("warehouse", CAP, 0)
    for index in range(WORKERS):
        assert "Traceback" not in (tmp_path / f"worker-{index}.log").read_text()
