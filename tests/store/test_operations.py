"""The store's operations, one behaviour per test, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from contextlib import closing

import pytest

from reportexport.core.job_status import ActorError, TerminalStateError
from reportexport.store import (
    Database,
    JobFilter,
    JobNotFoundError,
    Lease,
    Outcome,
    OwnerLimitError,
    StaleStatusError,
)
from tests.helpers import claim_one, limits, new_job, published


def test_create_queues_a_job_with_everything_it_was_given(db: Database) -> None:
    job, created = db.jobs.create_job(new_job())
    assert created is True
    assert job.status == "queued"
    assert job.owner == "alice"
    assert job.parameters == {"day": "2026-01-31"}
    assert job.options == {"delimiter": ","}
    assert job.query_sql == "SELECT * FROM orders WHERE day = $day"
    assert job.lease_token == 0
    assert job.finished_at is None


def test_create_with_a_used_idempotency_key_returns_the_first_job(db: Database) -> None:
    first, created = db.jobs.create_job(new_job(idempotency_key="k1"))
    again, created_again = db.jobs.create_job(new_job(idempotency_key="k1"))
    assert created is True
    assert created_again is False
    assert again.id == first.id
    other_owner, created_other = db.jobs.create_job(new_job(owner="bob", idempotency_key="k1"))
    assert created_other is True
    assert other_owner.id != first.id


def test_get_unknown_job_raises_not_found(db: Database) -> None:
    with pytest.raises(JobNotFoundError):
        db.jobs.get_job(999_999)  # type: ignore[arg-type]


def test_list_shows_an_owners_jobs_newest_first_with_keyset_pages(db: Database) -> None:
    ids = [db.jobs.create_job(new_job())[0].id for _ in range(5)]
    db.jobs.create_job(new_job(owner="bob"))
    first = db.jobs.list_jobs(JobFilter(owner="alice", limit=2))
    assert [j.id for j in first.jobs] == ids[::-1][:2]
    second = db.jobs.list_jobs(JobFilter(owner="alice", limit=2, before=first.next_cursor))
    assert [j.id for j in second.jobs] == ids[::-1][2:4]
    third = db.jobs.list_jobs(JobFilter(owner="alice", limit=2, before=second.next_cursor))
    assert [j.id for j in third.jobs] == ids[:1]
    assert third.next_cursor is None


def test_list_filters_by_status_and_an_operator_sees_everyone(db: Database) -> None:
    a = db.jobs.create_job(new_job())[0]
    db.jobs.create_job(new_job(owner="bob"))
    db.jobs.cancel_job(a.id, person="alice")
    assert [j.id for j in db.jobs.list_jobs(JobFilter(owner="alice", status="canceled")).jobs] == [
        a.id
    ]
    assert db.jobs.list_jobs(JobFilter(owner="alice", status="queued")).jobs == ()
    assert {j.owner for j in db.jobs.list_jobs(JobFilter()).jobs} == {"alice", "bob"}
    assert len(db.jobs.list_jobs(JobFilter(saved_query="nope")).jobs) == 0


def test_claim_moves_the_oldest_queued_jobs_to_running_with_a_lease(db: Database) -> None:
    ids = [db.jobs.create_job(new_job())[0].id for _ in range(3)]
    claims = db.queue.claim_jobs("w1", limit=2, lease_seconds=30)
    assert [c.job.id for c in claims] == ids[:2]
    for claim in claims:
        job = db.jobs.get_job(claim.job.id).job
        assert job.status == "running"
        assert job.lease_owner == "w1"
        assert claim.lease.token == job.lease_token == 1
        assert job.started_at is not None
        assert claim.lease.expires_at == job.lease_expires_at
        assert claim.lease.expires_at > job.started_at
        assert (claim.job.saved_query, claim.job.parameters) == (job.saved_query, job.parameters)
    detail = db.jobs.get_job(ids[0])
    (entry,) = detail.history
    assert (entry.from_status, entry.to_status, entry.actor, entry.worker) == (
        "queued",
        "running",
        "worker",
        "w1",
    )
    assert db.queue.claim_jobs("w2", limit=5, lease_seconds=30)[0].job.id == ids[2]
    assert db.queue.claim_jobs("w2", limit=5, lease_seconds=30) == []


def test_finish_succeeded_records_the_object_history_and_side_effects(db: Database) -> None:
    job = db.jobs.create_job(new_job())[0]
    lease = claim_one(db)
    assert db.queue.finish_jobs(
        [Outcome(lease=lease, to_status="succeeded", published=published())]
    ) == [True]
    detail = db.jobs.get_job(job.id)
    assert detail.job.status == "succeeded"
    assert detail.job.object_key == "exports/1.csv"
    assert detail.job.columns == ("id", "day")
    assert detail.job.object_rows == 4
    assert detail.job.finished_at is not None
    assert detail.job.object_expires_at is not None
    assert detail.job.object_expires_at > detail.job.finished_at
    assert [(h.from_status, h.to_status) for h in detail.history] == [
        ("queued", "running"),
        ("running", "succeeded"),
    ]
    assert [e.effect for e in detail.side_effects] == ["write_csv_object", "emit_done_webhook"]
    assert all(e.attempts == 0 and e.completed_at is None for e in detail.side_effects)


def test_finish_failed_keeps_the_error(db: Database) -> None:
    job = db.jobs.create_job(new_job())[0]
    lease = claim_one(db)
    outcome = Outcome(
        lease=lease, to_status="failed", reason="query_error", error_code="query_error",
        error_message="column x does not exist",
    )  # fmt: skip
    assert db.queue.finish_jobs([outcome]) == [True]
    detail = db.jobs.get_job(job.id)
    assert (detail.job.error_code, detail.job.error_message) == (
        "query_error",
        "column x does not exist",
    )
    assert detail.history[-1].reason == "query_error"
    assert [e.effect for e in detail.side_effects] == ["emit_failed_webhook"]


def test_a_stale_token_can_neither_complete_nor_fail_a_job(db: Database) -> None:
    db.jobs.create_job(new_job())
    lease = claim_one(db)
    stale = Lease(
        job_id=lease.job_id, token=lease.token + 1, worker="w1", expires_at=lease.expires_at
    )
    assert db.queue.finish_jobs(
        [Outcome(lease=stale, to_status="succeeded", published=published())]
    ) == [False]
    assert db.queue.finish_jobs([Outcome(lease=stale, to_status="failed", error_code="x")]) == [
        False
    ]
    with pytest.raises(StaleStatusError):
        db.queue.record_progress(stale, rows=1, bytes_written=1)
    with pytest.raises(StaleStatusError):
        db.queue.extend_lease(stale, lease_seconds=30)
    assert db.jobs.get_job(lease.job_id).job.status == "running"


def test_finish_refuses_a_worker_cancel_before_touching_the_database(db: Database) -> None:
    db.jobs.create_job(new_job())
    lease = claim_one(db)
    with pytest.raises(ActorError, match=r"^actor:worker$"):
        db.queue.finish_jobs([Outcome(lease=lease, to_status="canceled")])
    assert db.jobs.get_job(lease.job_id).job.status == "running"


def test_finish_many_in_one_call_reports_each_outcome(db: Database) -> None:
    for _ in range(3):
        db.jobs.create_job(new_job())
    leases = [c.lease for c in db.queue.claim_jobs("w1", limit=3, lease_seconds=30)]
    db.jobs.cancel_job(leases[1].job_id, person="alice")
    results = db.queue.finish_jobs(
        [Outcome(lease=lease, to_status="failed", error_code="boom") for lease in leases]
    )
    assert results == [True, False, True]
    assert [db.jobs.get_job(lease.job_id).job.status for lease in leases] == [
        "failed",
        "canceled",
        "failed",
    ]


def test_progress_and_lease_extension_need_the_current_lease(db: Database) -> None:
    db.jobs.create_job(new_job())
    lease = claim_one(db, lease_seconds=5)
    db.queue.record_progress(lease, rows=10, bytes_written=2048)
    db.queue.record_progress(lease, rows=None, bytes_written=4096)
    job = db.jobs.get_job(lease.job_id).job
    assert (job.rows_written, job.bytes_written) == (10, 4096)
    assert job.progressed_at is not None
    extended = db.queue.extend_lease(lease, lease_seconds=600)
    assert extended.expires_at > lease.expires_at
    assert extended.token == lease.token


def test_cancel_a_queued_job_records_the_person_and_reason(db: Database) -> None:
    job = db.jobs.create_job(new_job())[0]
    canceled = db.jobs.cancel_job(job.id, person="alice", reason="wrong day")
    assert canceled.status == "canceled"
    (entry,) = db.jobs.get_job(job.id).history
    assert (entry.actor, entry.person, entry.reason) == ("user", "alice", "wrong day")
    assert [e.effect for e in db.jobs.get_job(job.id).side_effects] == ["delete_temp_object"]


def test_cancel_a_running_job_fences_out_its_worker(db: Database) -> None:
    db.jobs.create_job(new_job())
    lease = claim_one(db)
    db.jobs.cancel_job(lease.job_id, person="operator-olga")
    with pytest.raises(StaleStatusError):
        db.queue.record_progress(lease, rows=1, bytes_written=1)
    assert db.queue.finish_jobs(
        [Outcome(lease=lease, to_status="succeeded", published=published())]
    ) == [False]
    assert db.jobs.get_job(lease.job_id).job.status == "canceled"


def test_cancel_a_finished_job_raises_terminal(db: Database) -> None:
    job = db.jobs.create_job(new_job())[0]
    db.jobs.cancel_job(job.id, person="alice")
    with pytest.raises(TerminalStateError, match=r"^terminal:canceled$"):
        db.jobs.cancel_job(job.id, person="alice")


def test_cancel_someone_elses_job_is_not_found(db: Database) -> None:
    job = db.jobs.create_job(new_job(owner="alice"))[0]
    with pytest.raises(JobNotFoundError):
        db.jobs.cancel_job(job.id, person="bob", owner="bob")
    assert db.jobs.get_job(job.id).job.status == "queued"


def test_reap_fails_expired_leases_as_worker_with_reason_lease_expired(db: Database) -> None:
    expired_job = db.jobs.create_job(new_job())[0]
    healthy_job = db.jobs.create_job(new_job())[0]
    expired = db.queue.claim_jobs("w1", limit=1, lease_seconds=0)[0].lease
    db.queue.claim_jobs("w2", limit=1, lease_seconds=600)
    time.sleep(0.01)
    assert db.queue.reap_expired("reaper-1", grace_seconds=0) == [expired_job.id]
    detail = db.jobs.get_job(expired_job.id)
    assert detail.job.status == "failed"
    assert detail.job.error_code == "lease_expired"
    last = detail.history[-1]
    assert (last.actor, last.reason, last.worker) == ("worker", "lease_expired", "reaper-1")
    assert db.jobs.get_job(healthy_job.id).job.status == "running"
    assert db.queue.finish_jobs(
        [Outcome(lease=expired, to_status="succeeded", published=published())]
    ) == [False]


def test_reap_waits_for_the_grace_period(db: Database) -> None:
    db.jobs.create_job(new_job())
    db.queue.claim_jobs("w1", limit=1, lease_seconds=0)
    assert db.queue.reap_expired("reaper", grace_seconds=3600) == []


def test_wait_for_change_wakes_on_a_new_job(db: Database, database_url: str) -> None:
    from reportexport.store import open_database
    from tests.helpers import GRAPH

    other = open_database(database_url, GRAPH)
    try:
        db.queue.wait_for_change(0.01)  # set up the listener before the change
        timer = threading.Timer(0.2, lambda: other.jobs.create_job(new_job()))
        timer.start()
        started = time.monotonic()
        assert db.queue.wait_for_change(30) is True
        assert time.monotonic() - started < 25  # woke on the change, not on the timeout
        timer.join()
    finally:
        other.close()


def test_wait_for_change_times_out_when_nothing_happens(db: Database) -> None:
    db.queue.wait_for_change(0.01)
    assert db.queue.wait_for_change(0.1) is False


def test_finish_and_claim_ends_jobs_and_claims_the_next_in_one_call(db: Database) -> None:
    ids = [db.jobs.create_job(new_job())[0].id for _ in range(4)]
    first = db.queue.claim_jobs("w1", limit=2, lease_seconds=30)
    outcomes = [Outcome(lease=c.lease, to_status="succeeded") for c in first]
    finished, claims = db.queue.finish_and_claim(outcomes, worker="w1", limit=3, lease_seconds=30)
    assert finished == [True, True]
    assert [c.job.id for c in claims] == ids[2:]
    assert [db.jobs.get_job(i).job.status for i in ids] == ["succeeded"] * 2 + ["running"] * 2
    assert db.queue.finish_and_claim([], worker="w1", limit=1, lease_seconds=30) == ([], [])


def test_finish_and_claim_rejects_an_illegal_outcome_before_claiming(db: Database) -> None:
    db.jobs.create_job(new_job())
    db.jobs.create_job(new_job())
    lease = claim_one(db)
    with pytest.raises(ActorError):
        db.queue.finish_and_claim(
            [Outcome(lease=lease, to_status="canceled")], worker="w1", limit=1, lease_seconds=30
        )
    assert db.jobs.list_jobs(JobFilter(status="queued")).jobs != ()


def test_metrics_snapshot_counts_jobs_edges_exports_and_effects(db: Database) -> None:
    db.jobs.create_job(new_job())
    lease = claim_one(db)
    db.queue.finish_jobs([Outcome(lease=lease, to_status="succeeded", published=published())])
    db.jobs.cancel_job(db.jobs.create_job(new_job())[0].id, person="alice")
    snapshot = db.metrics.metrics_snapshot()
    assert snapshot.jobs_by_status == {"succeeded": 1, "canceled": 1}
    assert snapshot.transitions[("queued", "running", "worker")] == 1
    assert snapshot.transitions[("queued", "canceled", "user")] == 1
    assert (snapshot.exports, snapshot.export_rows, snapshot.export_bytes) == (1, 4, 123)
    assert snapshot.export_seconds >= 0
    assert snapshot.effect_attempts == {
        "write_csv_object": 0, "emit_done_webhook": 0, "delete_temp_object": 0
    }  # fmt: skip


def test_create_refuses_an_owner_at_their_cap_of_unfinished_jobs(db: Database) -> None:
    first = db.jobs.create_job(new_job(), limits=limits(max_active=2))[0]
    db.jobs.create_job(new_job(), limits=limits(max_active=2))
    db.jobs.create_job(new_job(owner="bob"), limits=limits(max_active=2))  # bob is not alice
    with pytest.raises(OwnerLimitError) as refused:
        db.jobs.create_job(new_job(), limits=limits(max_active=2))
    assert (refused.value.limit, refused.value.count, refused.value.maximum) == ("max_active", 2, 2)
    db.jobs.cancel_job(first.id, person="alice")  # a finished job no longer counts
    assert db.jobs.create_job(new_job(), limits=limits(max_active=2))[1] is True


def test_create_refuses_an_owner_past_their_recent_creations(db: Database) -> None:
    for _ in range(3):
        job = db.jobs.create_job(new_job(), limits=limits(max_recent=3))[0]
        db.jobs.cancel_job(job.id, person="alice")
    with pytest.raises(OwnerLimitError, match="max_recent"):
        db.jobs.create_job(new_job(), limits=limits(max_recent=3))
    # Jobs created before the window's start do not count.
    assert db.jobs.create_job(new_job(), limits=limits(max_recent=3, since_hours=-1))[1] is True


def test_a_repeated_idempotency_key_returns_its_job_even_at_the_cap(db: Database) -> None:
    first, created = db.jobs.create_job(new_job(idempotency_key="k"), limits=limits(max_active=1))
    again, created_again = db.jobs.create_job(
        new_job(idempotency_key="k"), limits=limits(max_active=1)
    )
    assert (created, created_again, again.id) == (True, False, first.id)


def test_concurrent_creates_of_one_owner_never_pass_the_cap(database_url: str) -> None:
    """Twenty threads, each with its own connection, race to create: exactly the cap wins."""
    from concurrent.futures import ThreadPoolExecutor

    from reportexport.store import open_database
    from tests.helpers import GRAPH

    barrier = threading.Barrier(20)

    def attempt(_: int) -> bool:
        database = open_database(database_url, GRAPH)
        try:
            barrier.wait()
            database.jobs.create_job(new_job(owner="racer"), limits=limits(max_active=10))
            return True
        except OwnerLimitError:
            return False
        finally:
            database.close()

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(attempt, range(20)))
    assert outcomes.count(True) == 10
    with closing(open_database(database_url, GRAPH)) as database:
        page = database.jobs.list_jobs(JobFilter(owner="racer", limit=100))
    assert len(page.jobs) == 10


def test_downloads_are_recorded_with_person_and_time(db: Database) -> None:
    job = db.jobs.create_job(new_job())[0]
    db.jobs.record_download(job.id, "alice")
    db.jobs.record_download(job.id, "olga")
    downloads = db.jobs.job_downloads(job.id)
    assert [person for person, _ in downloads] == ["alice", "olga"]
    assert downloads[0][1] <= downloads[1][1]


def test_metrics_snapshot_says_how_long_the_oldest_queued_job_has_waited(db: Database) -> None:
    assert db.metrics.metrics_snapshot().oldest_queued_seconds == 0.0
    db.jobs.create_job(new_job())
    time.sleep(0.2)
    db.jobs.create_job(new_job())
    waited = db.metrics.metrics_snapshot().oldest_queued_seconds
    assert 0.1 < waited < 60
    claim_one(db)  # the oldest leaves the queue: the younger one is now the oldest
    assert db.metrics.metrics_snapshot().oldest_queued_seconds < waited
