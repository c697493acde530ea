"""`frozen-lifecycle sql` for a team that keeps its own migrations: its tables and guards, on a
PostgreSQL database of their own, keep the graph as the job store's do."""

from __future__ import annotations

import psycopg
import pytest

from frozen_lifecycle.graph import load_graph
from frozen_lifecycle.sql import guards_sql, tables_sql
from tests.helpers import FIXTURE_PATH

GRAPH = load_graph(FIXTURE_PATH)


def test_the_printed_tables_and_guards_keep_a_postgres_database_to_the_graph(
    empty_postgres_url: str,
) -> None:
    script = tables_sql("postgresql") + guards_sql(GRAPH, "postgresql", notify_channel="jobs")
    with psycopg.connect(empty_postgres_url, autocommit=True) as conn:
        conn.execute(script.encode())
        (job,) = conn.execute("INSERT INTO jobs (status) VALUES ('queued') RETURNING id").fetchone()
        refusals = [
            # gate: allow wrong-actor -- the refusal under test
            ("UPDATE jobs SET status = 'canceled', change_actor = 'worker'", "actor:worker"),
            (
                "UPDATE jobs SET status = 'succeeded', change_actor = 'worker'",
                "illegal:queued->succeeded",
            ),
            # gate: allow not-initial -- the refusal under test
            ("INSERT INTO jobs (status) VALUES ('running')", "illegal:->running"),
        ]
        for statement, code in refusals:
            with pytest.raises(psycopg.errors.CheckViolation) as raised:
                conn.execute(statement.encode())
            assert str(raised.value).splitlines()[0] == code
        conn.execute("LISTEN jobs")
        conn.execute("UPDATE jobs SET status = 'running', change_actor = 'worker'")
        conn.execute(
            "UPDATE jobs SET status = 'canceled', change_actor = 'user', change_person = 'ann'"
        )
        with pytest.raises(psycopg.errors.CheckViolation, match=r"^terminal:canceled"):
            conn.execute("UPDATE jobs SET status = 'running', change_actor = 'worker'")
        history = conn.execute("SELECT from_status, to_status, actor, person FROM job_history")
        assert history.fetchall() == [
            ("queued", "running", "worker", None),
            ("running", "canceled", "user", "ann"),
        ]
        effects = conn.execute("SELECT job_id, status, effect FROM job_side_effects").fetchall()
        assert effects == [(job, "canceled", "delete_temp_object")]
        notices = [n.payload for n in conn.notifies(timeout=5, stop_after=2)]
        assert notices == [f"{job} running", f"{job} canceled"]  # no worker named either change
