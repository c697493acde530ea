"""What the dashboard asks of the store, on SQLite and PostgreSQL: sessions, the live pages'
reads by id, searches and both orders of the list, and the last success to estimate from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from reportexport.core.records import JobFilter
from reportexport.store import Database, Outcome
from tests.helpers import claim_one, new_job, published


def test_a_session_names_its_person_until_it_ends_expires_or_they_are_revoked(
    db: Database,
) -> None:
    alice, _ = db.users.add_user("alice", "user")
    bob, _ = db.users.add_user("bob", "user")
    now = datetime.now(UTC)
    later = now + timedelta(hours=1)
    for sid, who in (("s-alice", alice), ("s-bob", bob), ("s-short", alice)):
        expires = now + timedelta(minutes=1) if sid == "s-short" else later
        db.sessions.start_session(sid, user_id=who.id, client="127.0.0.1", expires_at=expires)
    found = db.sessions.session_user("s-alice", now=now)
    assert found is not None
    assert found.name == "alice"
    assert db.sessions.session_user("nope", now=now) is None
    assert db.sessions.session_user("s-short", now=now + timedelta(minutes=2)) is None
    assert db.sessions.end_session("s-alice", now=now) is True
    assert db.sessions.end_session("s-alice", now=now) is False
    assert db.sessions.session_user("s-alice", now=now) is None
    db.users.revoke_user("bob", now=now)
    assert db.sessions.session_user("s-bob", now=now) is None
    db.sessions.forget_sessions(before=now + timedelta(days=2))


def test_a_new_token_replaces_the_old_one_for_an_active_person(db: Database) -> None:
    _, old = db.users.add_user("carol", "user")
    made = db.users.replace_token("carol")
    assert made is not None
    user, new = made
    assert (db.users.user_by_token(old), db.users.user_by_token(new)) == (None, user)
    db.users.revoke_user("carol", now=datetime.now(UTC))
    assert db.users.replace_token("carol") is None


def test_jobs_are_read_by_their_ids(db: Database) -> None:
    ids = [db.jobs.create_job(new_job())[0].id for _ in range(3)]
    assert sorted(j.id for j in db.jobs.jobs_by_ids([ids[0], ids[2], 999_999])) == [
        ids[0],
        ids[2],
    ]
    assert db.jobs.jobs_by_ids([]) == []


def test_the_list_searches_by_id_and_names_and_pages_both_ways(db: Database) -> None:
    made = [
        db.jobs.create_job(new_job(saved_query=name))[0].id
        for name in ("orders_by_day", "products", "orders_by_day", "customers")
    ]

    def ids(**where: object) -> list[int]:
        return [j.id for j in db.jobs.list_jobs(JobFilter(**where)).jobs]  # type: ignore[arg-type]

    assert ids() == made[::-1]
    assert ids(oldest_first=True) == made
    assert ids(saved_queries=("products", "customers")) == [made[3], made[1]]
    assert ids(saved_queries=()) == []  # a search by title that matched no saved query
    assert ids(job_id=made[2]) == [made[2]]
    first = db.jobs.list_jobs(JobFilter(oldest_first=True, limit=2))
    assert [j.id for j in first.jobs] == made[:2]
    assert first.next_cursor == made[1]
    assert ids(oldest_first=True, after=first.next_cursor) == made[2:]


def test_the_last_success_of_the_same_parameters_is_found(db: Database) -> None:
    first = db.jobs.create_job(new_job())[0]
    lease = claim_one(db)
    db.queue.finish_jobs([Outcome(lease=lease, to_status="succeeded", published=published())])
    same = db.jobs.create_job(new_job())[0]
    other = db.jobs.create_job(new_job(parameters={"day": "2026-02-01"}))[0]
    theirs = db.jobs.create_job(new_job(owner="bob"))[0]
    previous = db.jobs.previous_success(same)
    assert previous is not None
    assert (previous.id, previous.object_bytes) == (first.id, 123)
    assert db.jobs.previous_success(other) is None
    assert db.jobs.previous_success(theirs) is None
    assert db.jobs.previous_success(db.jobs.get_job(first.id).job) is None
