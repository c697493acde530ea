"""A source's max_concurrent across ten worker processes on one PostgreSQL.

Ten `reportexport worker` processes, each allowed more exports at once than the source's cap,
drain exports of a query that sleeps; every export's running interval is read back from the job
store (started_at and finished_at are written by the database in the transactions that take and
give back the source's slot) and the most that overlapped is printed against the cap, with the
throughput against what the cap allows (exports x sleep / cap seconds).

    ./scripts/bench caps [--workers 10] [--cap 3] [--exports 60] [--sleep 0.5]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from frozen_lifecycle.graph import load_graph
from reportexport.core.catalog import load_catalog
from reportexport.core.fixture import default_fixture_path
from reportexport.core.records import JobFilter, OwnerLimits
from reportexport.pipeline.export import new_export
from reportexport.store import open_database

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
CATALOG = """
version = 1

[sources.warehouse]
url = "{url}"
max_concurrent = {cap}

[queries.slow]
source = "warehouse"
sql = "SELECT n FROM (SELECT 1 AS n) AS one, pg_sleep({sleep})"
"""


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    running = peak = 0
    for _, step in events:  # an end sorts before a start at the same instant
        running += step
        peak = max(peak, running)
    return peak


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workers", type=int, default=10)
    p.add_argument("--cap", type=int, default=3)
    p.add_argument("--exports", type=int, default=60)
    p.add_argument("--sleep", type=float, default=0.5)
    p.add_argument(
        "--postgres", default=os.environ.get("REPORTEXPORT_BENCH_POSTGRES", DEFAULT_POSTGRES)
    )
    args = p.parse_args()

    name = f"bench_caps_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    url = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    try:
        return run(args, url)
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(args: argparse.Namespace, url: str) -> int:
    home = Path(tempfile.mkdtemp(prefix="bench-caps-"))
    catalog_file = home / "catalog.toml"
    catalog_file.write_text(CATALOG.format(url=url, cap=args.cap, sleep=args.sleep))
    catalog = load_catalog(catalog_file)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env.update(
        REPORTEXPORT_DATABASE_URL=url,
        REPORTEXPORT_CATALOG=str(catalog_file),
        REPORTEXPORT_OBJECTS_URL=f"file://{home / 'objects'}",
        REPORTEXPORT_HOME=str(home / "var"),
        REPORTEXPORT_CONCURRENCY=str(args.cap + 1),
        REPORTEXPORT_DB_POOL_SIZE="2",
        REPORTEXPORT_RUN_SCHEDULES="false",
    )
    with closing(open_database(url, load_graph(default_fixture_path()), check=False)) as db:
        db.schema.upgrade()
        logs = [open(home / f"worker-{i}.log", "wb") for i in range(args.workers)]  # noqa: SIM115
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
            deadline = time.monotonic() + 300
            while len(db.heartbeats.heartbeats()) < args.workers:
                if time.monotonic() > deadline:
                    raise SystemExit("the workers did not all start")
                time.sleep(0.2)
            limits = OwnerLimits(
                max_active=args.exports, max_recent=args.exports, since=datetime.now(UTC)
            )
            started = time.monotonic()
            for index in range(args.exports):
                export = new_export(catalog.queries["slow"], {}, owner=f"person{index % 5}")
                db.jobs.create_job(export, limits=limits)
            finished = JobFilter(limit=args.exports)
            while any(job.finished_at is None for job in db.jobs.list_jobs(finished).jobs):
                if time.monotonic() > deadline:
                    raise SystemExit("the exports did not all finish in time")
                time.sleep(0.1)
            seconds = time.monotonic() - started
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(timeout=60)
            for log in logs:
                log.close()
        jobs = db.jobs.list_jobs(JobFilter(limit=args.exports)).jobs
    statuses = {job.status for job in jobs}
    intervals = [
        (job.started_at.timestamp(), job.finished_at.timestamp())  # type: ignore[union-attr]
        for job in jobs
    ]
    peak = most_at_once(intervals)
    ideal = args.exports * args.sleep / args.cap
    print(f"{args.workers} worker processes, concurrency {args.cap + 1} each, cap {args.cap}")
    print(f"exports: {len(jobs)} ({', '.join(sorted(statuses))})")
    print(f"most running at once, from the job store: {peak} (cap {args.cap})")
    print(f"seconds: {seconds:.1f}, at the cap's pace: {ideal:.1f} (ratio {seconds / ideal:.2f})")
    ok = peak <= args.cap and statuses == {"succeeded"}
    print("cap held" if ok else "CAP BROKEN")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
