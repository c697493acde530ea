"""Job store throughput: our full lifecycle against the same PostgreSQL's peers, same run.

Measures jobs per second through claim -> `succeeded` (history and side-effect rows written
by the database) on SQLite and PostgreSQL with 1, 2 and 4 worker processes, one job per
transaction and batched; the cost of in-database enforcement against the same schema with
the guard triggers dropped; and procrastinate and pgqueuer draining the same number of
no-op jobs on the same server. Every run starts from a fresh database, and every worker
process starts on one shared signal, so start-up is not counted.

    ./scripts/bench store [--jobs 10000] [--postgres URL] [--no-peers]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import queue
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
from ratios import Ratio, interleave, ratio

from frozen_lifecycle.graph import load_graph
from reportexport.core.fixture import default_fixture_path
from reportexport.store import JobFilter, Outcome, open_database

GRAPH = load_graph(default_fixture_path())
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass
class Result:
    system: str
    backend: str
    processes: int
    batch: str
    jobs: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.jobs / self.seconds


# -- databases -----------------------------------------------------------------------------


class Databases:
    """Fresh databases on one PostgreSQL server, dropped at the end."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.created: list[str] = []

    def fresh(self) -> str:
        name = f"reportexport_bench_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        self.created.append(name)
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{name}"

    def drop_all(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            for name in self.created:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


def prepare_store(url: str, jobs: int, *, enforced: bool) -> None:
    """Upgrade, optionally strip the guard triggers, and enqueue `jobs` queued jobs."""
    database = open_database(url, GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    if url.startswith("sqlite:"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        if not enforced:
            guards = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'jobs' "
                "AND (name LIKE 'jobs_%guard' OR name LIKE 'jobs_status_%' "
                "OR name LIKE 'jobs_side_effects_of_%')"
            ).fetchall()
            for (trigger,) in guards:
                conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
            "VALUES ('bench', 'noop', 'SELECT 1', 'h', ?)",
            [(GRAPH.initial,)] * jobs,
        )
        conn.execute("COMMIT")
        conn.close()
        return
    with psycopg.connect(url, autocommit=True) as conn:
        if not enforced:
            conn.execute("DROP TRIGGER jobs_status_guard ON jobs")
            conn.execute("ALTER TABLE jobs DROP CONSTRAINT jobs_finished_exactly_when_terminal")
        conn.execute(
            "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
            "SELECT 'bench', 'noop', 'SELECT 1', 'h', %s FROM generate_series(1, %s)",
            (GRAPH.initial, jobs),
        )
        conn.execute("VACUUM ANALYZE jobs")


def verify_store(url: str, jobs: int) -> None:
    """Every job ran: none is left queued or running."""
    database = open_database(url, GRAPH, check=False)
    try:
        for status in (GRAPH.initial, "running"):
            if database.jobs.list_jobs(JobFilter(status=status, limit=1)).jobs:
                raise SystemExit(f"{url}: jobs left {status} after draining {jobs}")
    finally:
        database.close()


# -- workers -------------------------------------------------------------------------------


def our_worker(
    url: str, batch: int, combined: bool, enforced: bool, start: Any, results: Any
) -> None:
    """Claim `batch` jobs, finish them as succeeded, repeat until the queue is empty.

    `combined`: finish a batch and claim the next in one transaction (finish_and_claim), as a
    busy worker does; otherwise claim and finish in transactions of their own. Without
    `enforced` the guards were dropped on purpose, which the start-up check would refuse.
    """
    database = open_database(url, GRAPH, check=enforced)
    worker = f"bench-{os.getpid()}"
    done = 0
    start.wait()
    began = time.monotonic()
    claims = database.queue.claim_jobs(worker, limit=batch, lease_seconds=300)
    while claims:
        outcomes = [Outcome(lease=c.lease, to_status="succeeded") for c in claims]
        if combined:
            finished, claims = database.queue.finish_and_claim(
                outcomes, worker=worker, limit=batch, lease_seconds=300
            )
        else:
            finished = database.queue.finish_jobs(outcomes)
            claims = database.queue.claim_jobs(worker, limit=batch, lease_seconds=300)
        if not all(finished):
            raise RuntimeError("a fenced finish failed without competition")
        done += len(outcomes)
    results.put((began, time.monotonic(), done))
    database.close()


# The comparison for enforcement: the same schema with the guard triggers dropped, the
# application writing the same history and side-effect rows itself, in the same transactions.
PG_APP_CLAIM = """
WITH picked AS (
    SELECT id FROM jobs WHERE status = %(initial)s ORDER BY id
     LIMIT %(limit)s FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE jobs j SET status = 'running', lease_owner = %(worker)s,
           lease_token = j.lease_token + 1, started_at = clock_timestamp(),
           lease_expires_at = clock_timestamp() + make_interval(secs => 300)
      FROM picked WHERE j.id = picked.id
    RETURNING j.id, j.lease_token
), logged AS (
    INSERT INTO job_history (job_id, from_status, to_status, actor, worker)
    SELECT id, %(initial)s, 'running', 'worker', %(worker)s FROM claimed
)
SELECT id, lease_token FROM claimed
"""
PG_APP_FINISH = """
WITH done AS (
    UPDATE jobs SET status = 'succeeded', finished_at = clock_timestamp(),
           updated_at = clock_timestamp(), lease_expires_at = NULL
     WHERE id = ANY(%(ids)s) AND status = 'running'
    RETURNING id
), logged AS (
    INSERT INTO job_history (job_id, from_status, to_status, actor, worker)
    SELECT id, 'running', 'succeeded', 'worker', %(worker)s FROM done
)
INSERT INTO job_side_effects (job_id, status, effect)
SELECT id, 'succeeded', effect FROM done, unnest(%(effects)s::text[]) AS effect
"""
SQLITE_APP_CLAIM = """
UPDATE jobs SET status = 'running', lease_owner = :worker, lease_token = lease_token + 1,
       started_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       lease_expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+300 seconds')
 WHERE id IN (SELECT id FROM jobs WHERE status = :initial ORDER BY id LIMIT :limit)
RETURNING id
"""
SQLITE_APP_FINISH = """
UPDATE jobs SET status = 'succeeded', finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
       updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), lease_expires_at = NULL
 WHERE id = :id AND status = 'running'
"""
SQLITE_APP_HISTORY = (
    "INSERT INTO job_history (job_id, from_status, to_status, actor, worker) "
    "VALUES (?, ?, ?, 'worker', ?)"
)
SQLITE_APP_EFFECT = "INSERT INTO job_side_effects (job_id, status, effect) VALUES (?, ?, ?)"


def app_writes_worker(url: str, batch: int, start: Any, results: Any) -> None:
    """Finish a batch and claim the next in one transaction, like our_worker(combined=True)."""
    worker = f"app-{os.getpid()}"
    effects = list(GRAPH.side_effects["succeeded"])
    done = 0
    if url.startswith("sqlite:"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")

        def step(ids: list[int]) -> list[int]:
            conn.execute("BEGIN IMMEDIATE")
            for job_id in ids:
                conn.execute(SQLITE_APP_FINISH, {"id": job_id})
                conn.execute(SQLITE_APP_HISTORY, (job_id, "running", "succeeded", worker))
                conn.executemany(SQLITE_APP_EFFECT, [(job_id, "succeeded", e) for e in effects])
            params = {"worker": worker, "initial": GRAPH.initial, "limit": batch}
            claimed = [row[0] for row in conn.execute(SQLITE_APP_CLAIM, params).fetchall()]
            conn.executemany(
                SQLITE_APP_HISTORY, [(i, GRAPH.initial, "running", worker) for i in claimed]
            )
            conn.execute("COMMIT")
            return claimed
    else:
        conn = psycopg.connect(url)

        def step(ids: list[int]) -> list[int]:
            if ids:
                conn.execute(PG_APP_FINISH, {"ids": ids, "worker": worker, "effects": effects})
            params = {"worker": worker, "initial": GRAPH.initial, "limit": batch}
            claimed = [row[0] for row in conn.execute(PG_APP_CLAIM, params).fetchall()]
            conn.commit()
            return claimed

    start.wait()
    began = time.monotonic()
    ids = step([])
    while ids:
        done += len(ids)
        ids = step(ids)
    results.put((began, time.monotonic(), done))
    conn.close()


def procrastinate_worker(url: str, concurrency: int, start: Any, results: Any) -> None:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    app.task(name="noop")(_noop)
    with app.open():
        start.wait()
        began = time.monotonic()
        app.run_worker(wait=False, concurrency=concurrency, install_signal_handlers=False)
        results.put((began, time.monotonic(), 0))


def _noop() -> None:
    return None


def pgqueuer_worker(url: str, driver: str, batch: int, start: Any, results: Any) -> None:
    asyncio.run(_pgqueuer_drain(url, driver, batch, start, results))


async def _pgqueuer_drain(url: str, driver: str, batch: int, start: Any, results: Any) -> None:
    from pgqueuer import AsyncpgDriver, PsycopgDriver, Queries, QueueManager
    from pgqueuer.types import QueueExecutionMode

    if driver == "asyncpg":
        import asyncpg

        connection: Any = await asyncpg.connect(url)
        qm = QueueManager(Queries(AsyncpgDriver(connection)))
    else:
        connection = await psycopg.AsyncConnection.connect(url, autocommit=True)
        qm = QueueManager(Queries(PsycopgDriver(connection)))

    @qm.entrypoint("noop")
    async def noop(job: object) -> None:
        return None

    start.wait()
    began = time.monotonic()
    await qm.run(
        batch_size=batch, mode=QueueExecutionMode.drain, dequeue_timeout=timedelta(seconds=1)
    )
    results.put((began, time.monotonic(), 0))
    await connection.close()


def prepare_procrastinate(url: str, jobs: int) -> None:
    import procrastinate

    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))
    task = app.task(name="noop")(_noop)
    with app.open():
        app.schema_manager.apply_schema()
        for offset in range(0, jobs, 5_000):
            task.batch_defer(*[{} for _ in range(min(5_000, jobs - offset))])


def prepare_pgqueuer(url: str, jobs: int) -> None:
    async def go() -> None:
        from pgqueuer import PsycopgDriver, Queries

        connection = await psycopg.AsyncConnection.connect(url, autocommit=True)
        queries = Queries(PsycopgDriver(connection))
        await queries.install()
        for offset in range(0, jobs, 5_000):
            n = min(5_000, jobs - offset)
            await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        await connection.close()

    asyncio.run(go())


def run_processes(target: Callable[..., None], args: tuple[Any, ...], processes: int) -> float:
    """Start `processes` workers, release them together, return the wall time of the drain."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    workers = [
        context.Process(target=target, args=(*args, start, results)) for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    time.sleep(1.0 + 0.5 * processes)  # let every process import and connect
    start.set()
    spans = []
    deadline = time.monotonic() + 900
    while len(spans) < len(workers):
        try:
            spans.append(results.get(timeout=1))
        except queue.Empty:
            failed = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            if failed or time.monotonic() > deadline:
                for worker in workers:
                    worker.kill()
                raise SystemExit(f"a {target.__name__} process failed ({failed})") from None
    for worker in workers:
        worker.join(timeout=60)
        if worker.exitcode != 0:
            raise SystemExit(f"a {target.__name__} process exited with {worker.exitcode}")
    return max(end for _, end, _ in spans) - min(began for began, _, _ in spans)


# -- the run -------------------------------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument(
        "--postgres", default=os.environ.get("REPORTEXPORT_BENCH_POSTGRES", DEFAULT_POSTGRES)
    )
    p.add_argument("--no-peers", action="store_true", help="skip procrastinate and pgqueuer")
    p.add_argument("--processes", default="1,2,4")
    p.add_argument("--repetitions", type=int, default=3, help="of each interleaved comparison")
    args = p.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    databases = Databases(args.postgres)
    results: list[Result] = []
    scratch = Path(tempfile.mkdtemp(prefix="reportexport-bench-"))

    def ours(
        backend: str,
        processes: int,
        batch: int,
        *,
        enforced: bool = True,
        combined: bool = True,
        app_writes: bool = False,
    ) -> Result:
        url = (
            databases.fresh()
            if backend == "postgresql"
            else f"sqlite:///{scratch / (uuid.uuid4().hex + '.db')}"
        )
        prepare_store(url, args.jobs, enforced=enforced)
        if app_writes:
            seconds = run_processes(app_writes_worker, (url, batch), processes)
            system = "lean raw-SQL client, no guards, writes history"
        else:
            seconds = run_processes(our_worker, (url, batch, combined, enforced), processes)
            system = "reportexport" if enforced else "reportexport, guard triggers dropped"
        verify_store(url, args.jobs)
        label = f"{batch}" if combined else f"{batch}, claim and finish apart"
        result = Result(system, backend, processes, label, args.jobs, seconds)
        print(f"  {result.system:34} {backend:10} {processes} proc  batch {batch:>3}: "
              f"{result.rate:9,.0f} jobs/s", flush=True)  # fmt: skip
        return result

    try:
        print(f"{args.jobs:,} jobs per run, claim -> succeeded with history and side effects")
        for backend in ("sqlite", "postgresql"):
            for processes in counts:
                for batch in (1, 50):
                    results.append(ours(backend, processes, batch))
            results.append(ours(backend, 2, 1, combined=False))
        print(
            "enforcement cost (the same store code, guard triggers dropped) and the lean "
            f"raw-SQL client, interleaved, {args.repetitions} repetitions"
        )
        cost: dict[tuple[str, int], Ratio] = {}
        lean: dict[tuple[str, int], Ratio] = {}
        for backend in ("sqlite", "postgresql"):
            for batch in (1, 50):

                def rate(**how: bool) -> Callable[[], float]:
                    def run() -> float:
                        result = ours(backend, 2, batch, **how)  # noqa: B023 - run at once
                        results.append(result)
                        return result.rate

                    return run

                figures = interleave(
                    {
                        "enforced": rate(),
                        "dropped": rate(enforced=False),
                        "lean": rate(enforced=False, app_writes=True),
                    },
                    args.repetitions,
                )
                cost[(backend, batch)] = ratio(figures["dropped"], figures["enforced"])
                lean[(backend, batch)] = ratio(figures["lean"], figures["enforced"])
        if not args.no_peers:
            print("peers on the same PostgreSQL (no-op jobs)")
            results += peers(args.jobs, databases, counts)
    finally:
        databases.drop_all()
    report(results, cost, lean)


def peers(jobs: int, databases: Databases, counts: list[int]) -> list[Result]:
    found: list[Result] = []
    for processes in counts[:2]:
        for concurrency in (1, 4):
            url = databases.fresh()
            prepare_procrastinate(url, jobs)
            seconds = run_processes(procrastinate_worker, (url, concurrency), processes)
            found.append(Result("procrastinate", "postgresql", processes,
                                f"conc {concurrency}", jobs, seconds))  # fmt: skip
            print(f"  procrastinate conc {concurrency}, {processes} proc: {found[-1].rate:,.0f}")
        for driver, batch in (("psycopg", 10), ("psycopg", 100), ("asyncpg", 10)):
            url = databases.fresh()
            prepare_pgqueuer(url, jobs)
            seconds = run_processes(pgqueuer_worker, (url, driver, batch), processes)
            found.append(Result(f"pgqueuer ({driver})", "postgresql", processes, str(batch),
                                jobs, seconds))  # fmt: skip
            print(f"  pgqueuer {driver} batch {batch}, {processes} proc: {found[-1].rate:,.0f}")
    return found


def report(
    results: list[Result],
    cost: dict[tuple[str, int], Ratio],
    lean: dict[tuple[str, int], Ratio],
) -> None:
    print()
    print("| system | backend | processes | batch | jobs/s |")
    print("| --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r.system} | {r.backend} | {r.processes} | {r.batch} | {r.rate:,.0f} |")
    print()

    def best(system: str, processes: int | None = None, backend: str = "postgresql") -> float:
        rates = [
            r.rate for r in results
            if r.system == system and r.backend == backend
            and (processes is None or r.processes == processes)
        ]  # fmt: skip
        return max(rates) if rates else float("nan")

    def rate(backend: str, processes: int, batch: str) -> float:
        return statistics.fmean(
            r.rate for r in results
            if (r.system, r.backend, r.processes, r.batch)
            == ("reportexport", backend, processes, batch)
        )  # fmt: skip

    batched_pg = rate("postgresql", 2, "50")
    single_pg = rate("postgresql", 2, "1")
    apart_pg = rate("postgresql", 2, "1, claim and finish apart")
    lines = [
        ("batched, PostgreSQL, 2 processes (target >= 5,000 jobs/s)", batched_pg,
         batched_pg >= 5000),
        ("one job per transaction, PostgreSQL, 2 processes (target >= 1,000)", single_pg,
         single_pg >= 1000),
        ("one job per transaction, claim and finish apart (2 commits per job)", apart_pg, None),
    ]  # fmt: skip
    for name in ("procrastinate", "pgqueuer (psycopg)", "pgqueuer (asyncpg)"):
        peer = best(name, 2)
        if peer == peer:  # not NaN: the peer ran
            ratio = batched_pg / peer
            target = name != "pgqueuer (asyncpg)"
            lines.append((f"ratio to {name}, best of its settings, 2 processes", ratio,
                          ratio > 1 if target else None))  # fmt: skip
    for text, value, met in lines:
        verdict = "" if met is None else ("  met" if met else "  MISSED")
        print(f"{text:72} {value:10,.2f}{verdict}")
    print("interleaved ratios: median (lowest-highest, repetitions), judged on the median")
    for (backend, batch), found in sorted(cost.items()):
        limit = 1.3 if backend == "postgresql" else 1.7
        text = f"enforcement cost, {backend}, batch {batch} (target <= {limit}x)"
        print(f"{text:72} {found!s:>24}{'  met' if found.median <= limit else '  MISSED'}")
    for (backend, batch), found in sorted(lean.items()):
        limit = 1.5
        text = f"lean raw-SQL client / reportexport, {backend}, batch {batch}"
        judged = "" if batch != 50 else ("  met" if found.median <= limit else "  MISSED")
        print(f"{text:72} {found!s:>24}{judged}")


if __name__ == "__main__":
    sys.exit(main())
