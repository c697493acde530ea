"""Many workers, one store: every job is claimed once, and races end in one terminal status."""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from reportexport.core.job_status import TransitionError
from reportexport.store import Database, Outcome, StaleStatusError, open_database
from tests.helpers import GRAPH, RawSql, new_job

JOBS = 2_000
WORKERS = 8


def drain(url: str, worker: str) -> list[int]:
    """Claim and complete jobs in small batches until none is left; the ids claimed."""
    database = open_database(url, GRAPH)
    claimed: list[int] = []
    try:
        while claims := database.queue.claim_jobs(worker, limit=10, lease_seconds=120):
            claimed += [c.job.id for c in claims]
            outcomes = [Outcome(lease=c.lease, to_status="succeeded") for c in claims]
            assert all(database.queue.finish_jobs(outcomes))
    finally:
        database.close()
    return claimed


def drain_into(url: str, worker: str, results: multiprocessing.Queue[list[int]]) -> None:
    results.put(drain(url, worker))


def enqueue(db: Database, count: int) -> set[int]:
    with ThreadPoolExecutor(4) as pool:
        return set(pool.map(lambda _: db.jobs.create_job(new_job())[0].id, range(count)))


def assert_each_job_ran_exactly_once(raw: RawSql, expected: set[int], claims: list[int]) -> None:
    counts = Counter(claims)
    assert set(counts) == expected
    assert max(counts.values()) == 1
    statuses = raw.execute("SELECT status, count(*) FROM jobs GROUP BY status")
    assert {row[0]: row[1] for row in statuses} == {"succeeded": len(expected)}
    assert raw.scalar("SELECT count(*) FROM job_history") == 2 * len(expected)
    assert raw.scalar("SELECT count(*) FROM job_side_effects") == 2 * len(expected)
    per_job = raw.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM job_side_effects "
                          "GROUP BY job_id, effect) AS t")  # fmt: skip
    assert per_job[0][0] == 1


def test_eight_worker_threads_claim_each_job_exactly_once(
    db: Database, database_url: str, raw: RawSql
) -> None:
    expected = enqueue(db, JOBS)
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda n: drain(database_url, f"thread-{n}"), range(WORKERS)))
    assert_each_job_ran_exactly_once(raw, expected, [i for ids in results for i in ids])


@pytest.mark.processes
def test_eight_worker_processes_claim_each_job_exactly_once(
    db: Database, database_url: str, raw: RawSql
) -> None:
    expected = enqueue(db, JOBS)
    context = multiprocessing.get_context("spawn")
    results: multiprocessing.Queue[list[int]] = context.Queue()
    processes = [
        context.Process(target=drain_into, args=(database_url, f"process-{n}", results))
        for n in range(WORKERS)
    ]
    for process in processes:
        process.start()
    claims = [i for _ in processes for i in results.get(timeout=300)]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert_each_job_ran_exactly_once(raw, expected, claims)


@pytest.mark.parametrize("rounds", [500])
def test_cancel_racing_completion_ends_in_exactly_one_terminal_status(
    db: Database, raw: RawSql, rounds: int
) -> None:
    for _ in range(rounds):
        db.jobs.create_job(new_job())
    claims = db.queue.claim_jobs("w1", limit=rounds, lease_seconds=600)
    assert len(claims) == rounds
    start = threading.Barrier(2)
    won: dict[str, Counter[str]] = {"cancel": Counter(), "finish": Counter()}

    def cancel_all() -> None:
        for claim in claims:
            start.wait()
            try:
                db.jobs.cancel_job(claim.job.id, person="alice")
                won["cancel"]["canceled"] += 1
            except (TransitionError, StaleStatusError):
                won["cancel"]["lost"] += 1

    def finish_all() -> None:
        for claim in claims:
            start.wait()
            ok = db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="succeeded")])
            won["finish"]["succeeded" if ok == [True] else "lost"] += 1

    threads = [threading.Thread(target=cancel_all), threading.Thread(target=finish_all)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)

    assert won["cancel"]["canceled"] + won["finish"]["succeeded"] == rounds
    assert won["cancel"]["lost"] == won["finish"]["succeeded"]
    rows = raw.execute(
        "SELECT j.status, (SELECT count(*) FROM job_history h WHERE h.job_id = j.id "
        "AND h.to_status IN ('succeeded', 'canceled')), "
        "(SELECT count(*) FROM job_side_effects e WHERE e.job_id = j.id), "
        "(SELECT min(e.status) FROM job_side_effects e WHERE e.job_id = j.id) FROM jobs j"
    )
    expected_effects = {status: len(GRAPH.side_effects[status]) for status in GRAPH.terminal}
    for status, terminal_rows, effect_rows, effect_status in rows:
        assert status in {"succeeded", "canceled"}
        assert terminal_rows == 1
        assert effect_rows == expected_effects[status]
        assert effect_status == status
    assert Counter(row[0] for row in rows) == Counter(
        {"succeeded": won["finish"]["succeeded"], "canceled": won["cancel"]["canceled"]}
    )


def test_a_row_held_by_another_transaction_is_skipped_by_renewals_and_progress(
    postgres_url: str,
) -> None:
    """A renewal or a progress write never waits on a row lock (a process frozen inside a
    transaction on the row): it answers at once that the lease is still ours but busy."""
    import time

    import psycopg

    from reportexport.store import LeaseBusyError

    db = open_database(postgres_url, GRAPH, lock_timeout_seconds=30)
    try:
        db.jobs.create_job(new_job())
        (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
        with psycopg.connect(postgres_url) as lock:
            lock.execute(b"UPDATE jobs SET bytes_written = bytes_written")
            started = time.monotonic()
            with pytest.raises(LeaseBusyError):
                db.queue.extend_lease(claim.lease, lease_seconds=60)
            with pytest.raises(LeaseBusyError):
                db.queue.record_progress(claim.lease, rows=1, bytes_written=1)
            assert db.queue.lease_held(claim.lease)
            assert time.monotonic() - started < 10  # far below the 30 s lock_timeout
            lock.rollback()
        db.queue.extend_lease(claim.lease, lease_seconds=60)
        db.jobs.cancel_job(claim.job.id, person="p")
        with pytest.raises(StaleStatusError):
            db.queue.extend_lease(claim.lease, lease_seconds=60)
        assert not db.queue.lease_held(claim.lease)
    finally:
        db.close()
