"""How workers share sources and owners share turns, held by the database on both backends.

A source's max_concurrent is a set of slots in the database: a claim takes one or leaves the
job queued, whoever claims and however many claim at once. Owners take turns: a job's turn is
how many unfinished jobs its owner had when it was made, and claims take the lowest turn first.
"""

from __future__ import annotations

import threading

import pytest

from reportexport.core.records import JobFilter, Lease
from reportexport.store import Database, Outcome, open_database
from tests.helpers import GRAPH, RawSql, limits, new_job


def finish(db: Database, job_id: int) -> None:
    """End a running job as its worker would, under its current lease."""
    job = db.jobs.get_job(job_id).job
    assert job.lease_expires_at is not None
    assert job.lease_owner is not None
    lease = Lease(
        job_id=job.id, token=job.lease_token, worker=job.lease_owner,
        expires_at=job.lease_expires_at,
    )  # fmt: skip
    assert db.queue.finish_jobs([Outcome(lease=lease, to_status="failed", error_code="x")])[0]


def running_of(db: Database, source: str) -> int:
    return sum(cap.running for cap in db.caps.caps() if cap.source == source)


def test_a_claim_takes_no_more_jobs_of_a_source_than_its_slots(db: Database) -> None:
    db.caps.publish({"demo": 2}, process="w-test")
    ids = [db.jobs.create_job(new_job(), limits=limits(max_active=25))[0].id for _ in range(5)]
    other = db.jobs.create_job(new_job(source="other"))[0].id
    claimed = db.queue.claim_jobs("w1", limit=10, lease_seconds=60)
    assert sorted(c.job.id for c in claimed) == sorted([*ids[:2], other])
    assert db.queue.claim_jobs("w2", limit=10, lease_seconds=60) == []
    (cap,) = db.caps.caps()
    assert (cap.source, cap.max_concurrent, cap.running, cap.set_by) == ("demo", 2, 2, "w-test")
    finish(db, ids[0])  # a slot comes back when its job stops running
    (again,) = db.queue.claim_jobs("w2", limit=10, lease_seconds=60)
    assert again.job.id == ids[2]


def test_the_database_keeps_the_cap_even_against_a_claim_that_ignores_it(
    db: Database, raw: RawSql
) -> None:
    """A hand-written claim moving every queued job: the slot trigger leaves the extra ones."""
    db.caps.publish({"demo": 1}, process="w-test")
    ids = [db.jobs.create_job(new_job(), limits=limits(max_active=25))[0].id for _ in range(3)]
    raw.execute(
        "UPDATE jobs SET status = 'running', change_actor = 'worker', lease_token = 1 "
        "WHERE status = 'queued'"
    )
    statuses = [db.jobs.get_job(i).job.status for i in ids]
    assert statuses == ["running", "queued", "queued"]
    history = [len(db.jobs.get_job(i).history) for i in ids]
    assert history == [1, 0, 0]  # no history for a move that did not happen


def test_an_illegal_move_into_running_is_still_refused_with_its_code(
    db: Database, raw: RawSql
) -> None:
    """The slot trigger only acts on the worker's claim edge; the guard judges the rest."""
    db.caps.publish({"demo": 1}, process="w-test")
    first = db.jobs.create_job(new_job())[0].id
    db.queue.claim_jobs("w1", limit=1, lease_seconds=60)  # the only slot is taken
    second = db.jobs.create_job(new_job())[0].id
    with pytest.raises(raw.errors, match="actor:"):
        raw.execute(
            # gate: allow wrong-actor -- the wrong actor the guard must refuse
            f"UPDATE jobs SET status = 'running', change_actor = 'user' WHERE id = {second}"
        )
    assert db.jobs.get_job(first).job.status == "running"


def test_a_lowered_cap_drops_free_slots_now_and_taken_ones_when_they_free(db: Database) -> None:
    db.caps.publish({"demo": 3}, process="a")
    ids = [db.jobs.create_job(new_job(), limits=limits(max_active=25))[0].id for _ in range(5)]
    assert len(db.queue.claim_jobs("w1", limit=2, lease_seconds=60)) == 2
    changes = db.caps.publish({"demo": 1}, process="b")
    assert [(c.source, c.previous, c.previous_set_by, c.now) for c in changes] == [
        ("demo", 3, "a", 1)
    ]
    assert db.queue.claim_jobs("w1", limit=5, lease_seconds=60) == []  # 2 running, cap 1
    finish(db, ids[0])
    assert db.queue.claim_jobs("w1", limit=5, lease_seconds=60) == []  # still 1 running
    finish(db, ids[1])
    assert [c.job.id for c in db.queue.claim_jobs("w1", limit=5, lease_seconds=60)] == [ids[2]]
    (cap,) = db.caps.caps()
    assert (cap.max_concurrent, cap.running, cap.set_by) == (1, 1, "b")


def test_publishing_the_same_caps_again_changes_nothing(db: Database) -> None:
    assert db.caps.publish({"demo": 2, "other": 1}, process="a") == []
    assert db.caps.publish({"demo": 2, "other": 1}, process="b") == []
    assert [(c.source, c.max_concurrent) for c in db.caps.caps()] == [("demo", 2), ("other", 1)]


@pytest.mark.slow
def test_concurrent_claimers_never_hold_more_slots_than_the_cap(database_url: str) -> None:
    """Eight threads, each with its own connection, claiming and finishing as fast as they can."""
    setup = open_database(database_url, GRAPH)
    setup.caps.publish({"demo": 3}, process="setup")
    for _ in range(60):
        setup.jobs.create_job(new_job(), limits=limits(max_active=100))
    peak = 0
    lock = threading.Lock()
    errors: list[BaseException] = []

    def claimer(name: str) -> None:
        nonlocal peak
        db = open_database(database_url, GRAPH, pool_size=1)
        try:
            while True:
                claims = db.queue.claim_jobs(name, limit=2, lease_seconds=60)
                if not claims:
                    if not db.jobs.list_jobs(JobFilter(status="queued", limit=1)).jobs:
                        return
                    continue
                with lock:
                    peak = max(peak, running_of(setup, "demo"))
                outcomes = [
                    Outcome(lease=c.lease, to_status="failed", error_code="x") for c in claims
                ]
                assert all(db.queue.finish_jobs(outcomes))
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            db.close()

    threads = [threading.Thread(target=claimer, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    setup.close()
    assert errors == []
    assert 1 <= peak <= 3


def test_owners_take_turns_so_a_backlog_cannot_starve_a_first_export(db: Database) -> None:
    """User A (cap raised to 25) queues 20 exports; one runs. Then B queues one: when the slot
    frees, B's is the next claimed for that source, not A's second."""
    db.caps.publish({"demo": 1}, process="w-test")
    a_jobs = [
        db.jobs.create_job(new_job(owner="a"), limits=limits(max_active=25))[0].id
        for _ in range(20)
    ]
    (first,) = db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
    assert first.job.id == a_jobs[0]
    b_job = db.jobs.create_job(new_job(owner="b"), limits=limits(max_active=25))[0].id
    finish(db, a_jobs[0])
    (after,) = db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
    assert after.job.id == b_job
    finish(db, b_job)
    (then,) = db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
    assert then.job.id == a_jobs[1]


def test_a_first_export_queued_behind_a_backlog_is_claimed_next(db: Database) -> None:
    """User A (cap raised to 25) queues 20 exports, none claimed yet; then B queues one: B's
    is the next claimed for that source (same turn, fewer waiting), then A's in order."""
    db.caps.publish({"demo": 1}, process="w-test")
    a_jobs = [
        db.jobs.create_job(new_job(owner="a"), limits=limits(max_active=25))[0].id
        for _ in range(20)
    ]
    b_job = db.jobs.create_job(new_job(owner="b"))[0].id
    claimed = []
    for _ in range(3):
        (next_one,) = db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
        claimed.append(next_one.job.id)
        finish(db, next_one.job.id)
    assert claimed == [b_job, a_jobs[0], a_jobs[1]]


def test_a_batch_claim_alternates_between_owners(db: Database) -> None:
    a_jobs = [db.jobs.create_job(new_job(owner="a"), limits=limits(max_active=25))[0].id
              for _ in range(4)]  # fmt: skip
    b_jobs = [db.jobs.create_job(new_job(owner="b"))[0].id for _ in range(2)]
    c_job = db.jobs.create_job(new_job(owner="c"))[0].id
    claimed = db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
    # turn 0: c1, b1, a1; turn 1: b2, a2 (fewer waiting first within a turn, then oldest)
    assert {c.job.id for c in claimed} == {a_jobs[0], b_jobs[0], c_job, a_jobs[1], b_jobs[1]}


def test_metrics_show_caps_slots_and_waiting_owners(db: Database) -> None:
    db.caps.publish({"demo": 2}, process="w-test")
    for owner, count in (("a", 4), ("b", 1)):
        for _ in range(count):
            db.jobs.create_job(new_job(owner=owner), limits=limits(max_active=25))
    db.queue.claim_jobs("w1", limit=5, lease_seconds=60)
    snapshot = db.metrics.metrics_snapshot()
    (cap,) = snapshot.source_caps
    assert (cap.source, cap.max_concurrent, cap.running) == ("demo", 2, 2)
    # a1 and b1 run (turn 0); a2, a3, a4 wait
    assert (snapshot.owners_waiting, snapshot.longest_owner_queue) == (1, 3)
