"""Schedules fired by real processes on the real clock: exactly one job per firing however many
processes run the scheduler loop, and nothing lost between firings.

Three `reportexport worker` and two `reportexport serve` processes on one job store (a
PostgreSQL database, or one SQLite file) all run the scheduler loop over one schedule that fires
every two seconds. Every firing recorded in the job
store made exactly one job, no two firings share a time, and the times between firings are
accounted for: a gap of more than two seconds is counted in the later firing's `missed`.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx

from reportexport.core.catalog import load_catalog
from reportexport.core.records import Firing, Job, JobFilter
from reportexport.objects import open_object_store
from reportexport.services.exports import Acting
from reportexport.store import open_database
from tests.helpers import GRAPH, runtime_for, serving_url, start_serve, tail, wait_for

WORKERS = 3
PROCESSES = WORKERS + 2  # and two `serve` processes
SECONDS = 12
CATALOG = """
version = 1

[sources.warehouse]
url = "{url}"

[queries.tick]
source = "warehouse"
sql = "{sql}"
parameters = {{ day = {{ type = "date" }} }}
"""
SQL = {"postgres": "SELECT CAST(:day AS date) AS day", "sqlite": "SELECT :day AS day"}


def test_every_firing_makes_one_job_across_scheduler_processes(
    database_url: str, backend: str, tmp_path: Path
) -> None:
    objects = f"file://{tmp_path / 'objects'}"
    catalog_file = tmp_path / "catalog.toml"
    # The source: the PostgreSQL database itself, or a SQLite file of its own.
    source = database_url if backend == "postgres" else f"sqlite:///{tmp_path / 'source.db'}"
    if backend == "sqlite":
        sqlite3.connect(tmp_path / "source.db").close()  # sources are opened read-only
    catalog_file.write_text(CATALOG.format(url=source, sql=SQL[backend]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env.update(
        REPORTEXPORT_DATABASE_URL=database_url,
        REPORTEXPORT_CATALOG=str(catalog_file),
        REPORTEXPORT_OBJECTS_URL=objects,
        REPORTEXPORT_HOME=str(tmp_path / "var"),
        REPORTEXPORT_DB_POOL_SIZE="2",
    )
    with closing(open_database(database_url, GRAPH)) as db:
        logs = [open(tmp_path / f"worker-{i}.log", "wb") for i in range(PROCESSES)]  # noqa: SIM115
        commands = [["worker"]] * WORKERS + [["serve", "--port", "0"]] * (PROCESSES - WORKERS)
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "reportexport", *command],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            for command, log in zip(commands, logs, strict=True)
        ]

        def logs_of_all() -> str:
            return "\n".join(tail(tmp_path / f"worker-{i}.log", 2000) for i in range(PROCESSES))

        def all_started() -> bool:
            ended = [w.args for w in workers if w.poll() is not None]
            assert not ended, f"ended before they started: {ended}\n{logs_of_all()}"
            return len(db.heartbeats.heartbeats()) >= PROCESSES

        try:
            wait_for(all_started, 120, "every process's heartbeat", every=0.2, detail=logs_of_all)
            runtime = runtime_for(db, load_catalog(catalog_file), open_object_store(objects),
                                  min_schedule_period_seconds=1)  # fmt: skip
            view = runtime.schedules.create(
                Acting(name="alice", role="user"), "tick", {"day": {"relative": "yesterday"}},
                cron="*/2 * * * * *", time_zone="Europe/Paris",
            )  # fmt: skip
            schedule = view.schedule
            wait_for(
                lambda: len(db.schedules.firings(schedule.id, limit=1000)) >= SECONDS // 2,
                SECONDS * 10,
                f"{SECONDS // 2} firings of a schedule that fires every two seconds",
                every=0.2,
                detail=logs_of_all,
            )
            db.schedules.delete(schedule.id, now=schedule.created_at)  # no firing after this
            made = JobFilter(limit=1000)

            def settled() -> tuple[list[Firing], list[Job]] | None:
                """The firings and their jobs once every firing has its job or its refusal
                and every job is finished: a firing taken just before the delete may still be
                on its way to its job, which the delete does not stop."""
                firings = db.schedules.firings(schedule.id, limit=1000)
                jobs = [j for j in db.jobs.list_jobs(made).jobs if j.schedule_id == schedule.id]
                answered = all(f.job_id is not None or f.refusal_code for f in firings)
                finished = all(job.finished_at is not None for job in jobs)
                made_by_firings = sorted(f.job_id for f in firings if f.job_id is not None)
                agree = made_by_firings == sorted(job.id for job in jobs)
                return (firings, jobs) if answered and finished and agree else None

            firings, jobs = wait_for(
                settled, 120, "every firing's job or refusal, and every job finished", every=0.2,
                detail=logs_of_all,
            )  # fmt: skip
        finally:
            for worker in workers:
                worker.send_signal(signal.SIGTERM)
            for worker in workers:
                worker.wait(timeout=60)
            for log in logs:
                log.close()
    assert len(firings) >= SECONDS // 2 - 2, firings
    assert all(f.refusal_code is None and f.job_id is not None for f in firings), firings
    assert Counter(f.job_id for f in firings).most_common(1)[0][1] == 1
    assert sorted(f.job_id for f in firings) == sorted(job.id for job in jobs)
    assert {job.status for job in jobs} == {"succeeded"}
    times = sorted(firings, key=lambda f: f.scheduled_for)
    for earlier, later in itertools.pairwise(times):
        gap = (later.scheduled_for - earlier.scheduled_for).total_seconds()
        assert gap == 2 * (later.missed + 1), (earlier, later)
    for index in range(PROCESSES):
        assert "Traceback" not in (tmp_path / f"worker-{index}.log").read_text()


def test_serve_fires_a_schedule_made_from_the_command_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env["REPORTEXPORT_HOME"] = str(tmp_path / "var")
    env["REPORTEXPORT_MIN_SCHEDULE_PERIOD_SECONDS"] = "1"  # a firing every two seconds
    log = tmp_path / "serve.log"
    server = start_serve(
        ["--demo-rows", "500", "--grace-seconds", "1"], env=env, log=log, cwd=tmp_path
    )
    try:
        base = serving_url(server, log)
        shown_once = r"created \w+ '(\w+)'; token \(shown once\): (\S+)"
        tokens = dict(re.findall(shown_once, log.read_text()))
        cli_env = {**env, "REPORTEXPORT_SERVER": base, "REPORTEXPORT_TOKEN": tokens["demo"]}

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "reportexport", "schedules", *args],
                env=cli_env, capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip

        created = cli("create", "orders_by_day", "--param", "day=2024-01-05",
                      "--cron", "*/2 * * * * *", "--time-zone", "Asia/Kolkata")  # fmt: skip
        assert created.returncode == 0, created.stdout + created.stderr
        schedule_id = int(re.search(r"schedule (\d+)", created.stdout)[1])  # type: ignore[index]
        headers = {"Authorization": f"Bearer {tokens['demo']}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:

            def two_succeeded() -> list[dict[str, Any]] | None:
                jobs = [
                    job for job in client.get("/api/exports").json()["jobs"]
                    if job["schedule_id"] == schedule_id and job["status"] == "succeeded"
                ]  # fmt: skip
                return jobs if len(jobs) >= 2 else None

            jobs = wait_for(
                two_succeeded, 60, "two exports of a schedule firing every two seconds",
                every=0.5, detail=lambda: tail(log),
            )  # fmt: skip
        shown = cli("show", str(schedule_id))
        assert shown.returncode == 0, shown.stderr
        assert "Asia/Kolkata" in shown.stdout
        assert f"job {jobs[0]['id']}" in shown.stdout
        assert cli("delete", str(schedule_id)).returncode == 0
        assert str(schedule_id) not in cli("list").stdout.split("\n", 1)[-1]
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0, log.read_text()
