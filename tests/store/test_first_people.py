"""The first people of a store are made once, however many processes start on it together."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import psycopg

from reportexport.store import Database, open_database
from tests.helpers import GRAPH, wait_for

FIRST = [("operator", "operator"), ("demo", "user")]


def test_the_first_people_are_made_on_an_empty_store_only(db: Database) -> None:
    made = db.users.add_first_users(FIRST)
    assert [(user.name, user.role) for user, _ in made] == FIRST
    assert all(db.users.user_by_token(token) == user for user, token in made)
    assert db.users.add_first_users(FIRST) == []
    assert [user.name for user in db.users.list_users()] == ["operator", "demo"]


def test_a_store_with_someone_gets_no_first_people(db: Database) -> None:
    db.users.add_user("someone", "user")
    assert db.users.add_first_users(FIRST) == []
    assert [user.name for user in db.users.list_users()] == ["someone"]


def test_of_processes_starting_together_one_makes_the_first_people(db: Database) -> None:
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: db.users.add_first_users(FIRST), range(8)))
    assert sorted(len(made) for made in answers) == [0] * 7 + [2]
    assert [user.name for user in db.users.list_users()] == ["operator", "demo"]


def test_a_first_run_that_meets_another_making_the_same_people_makes_nobody(
    postgres_url: str,
) -> None:
    """Both saw an empty store: the later insert waits on the earlier one's, finds the name
    taken when it commits, and its whole transaction goes (no half of the first people)."""
    db = open_database(postgres_url, GRAPH, lock_timeout_seconds=60)
    try:
        with (
            psycopg.connect(postgres_url) as other,
            psycopg.connect(postgres_url, autocommit=True) as watcher,
            ThreadPoolExecutor(1) as pool,
        ):
            other.execute(
                b"INSERT INTO users (name, role, token_hash) VALUES ('operator', 'operator', 'x')"
            )
            answer = pool.submit(db.users.add_first_users, FIRST)

            def waiting_on_the_other() -> bool:
                # Another connection: one transaction keeps seeing its first look at the view.
                found = watcher.execute(
                    b"SELECT count(*) FROM pg_stat_activity"
                    b" WHERE datname = current_database() AND wait_event_type = 'Lock'"
                ).fetchone()
                return found is not None and found[0] > 0

            wait_for(waiting_on_the_other, 60, "the first run's insert waiting on the other's")
            other.commit()
            assert answer.result(timeout=60) == []
        assert [user.name for user in db.users.list_users()] == ["operator"]
    finally:
        db.close()
