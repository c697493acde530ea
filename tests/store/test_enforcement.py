"""The database holds the graph by itself: raw SQL, as typed in a shell, cannot break it."""

from __future__ import annotations

import shutil
import subprocess
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from reportexport.core.records import Heartbeat
from reportexport.store import Database, Lease, open_database
from tests.helpers import GRAPH, RawSql, new_job, rejected, service_role_url, succeeded


def queued(db: Database) -> int:
    return db.jobs.create_job(new_job())[0].id


def running(db: Database) -> int:
    return claim(db).job_id


def claim(db: Database) -> Lease:
    db.jobs.create_job(new_job())
    return db.queue.claim_jobs("w1", limit=1, lease_seconds=60)[0].lease


def history_count(raw: RawSql, job_id: int) -> int:
    return int(raw.scalar(f"SELECT count(*) FROM job_history WHERE job_id = {job_id}"))


def test_an_invented_status_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = queued(db)
    # gate: allow forbidden-alias, unknown-status -- the refusal under test
    statement = f"UPDATE jobs SET status = 'retrying', change_actor = 'worker' WHERE id = {job_id}"
    rejected(raw, statement, "illegal:queued->")
    assert raw.scalar(f"SELECT status FROM jobs WHERE id = {job_id}") == "queued"


def test_a_job_cannot_be_inserted_past_the_initial_state(raw: RawSql) -> None:
    rejected(
        raw,
        "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
        # gate: allow not-initial -- the refusal under test
        "VALUES ('mallory', 'q', 'SELECT 1', 'h', 'succeeded')",
        "illegal:->succeeded",
    )


def test_leaving_a_terminal_state_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = succeeded(db)
    before = history_count(raw, job_id)
    statement = f"UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE id = {job_id}"
    rejected(raw, statement, "terminal:succeeded")
    assert history_count(raw, job_id) == before


def test_an_undeclared_edge_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = queued(db)
    rejected(
        raw,
        f"UPDATE jobs SET status = 'succeeded', change_actor = 'worker' WHERE id = {job_id}",
        "illegal:queued->succeeded",
    )


def test_the_wrong_actor_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = running(db)
    # gate: allow wrong-actor -- the refusal under test
    statement = f"UPDATE jobs SET status = 'canceled', change_actor = 'worker' WHERE id = {job_id}"
    rejected(raw, statement, "actor:worker")


def test_a_change_without_an_actor_does_not_inherit_the_last_one(db: Database, raw: RawSql) -> None:
    job_id = queued(db)
    raw.execute(f"UPDATE jobs SET change_actor = 'worker' WHERE id = {job_id}")
    assert raw.scalar(f"SELECT change_actor FROM jobs WHERE id = {job_id}") is None
    rejected(raw, f"UPDATE jobs SET status = 'running' WHERE id = {job_id}", "actor:")
    raw.execute(f"UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE id = {job_id}")
    rejected(raw, f"UPDATE jobs SET status = 'failed' WHERE id = {job_id}", "actor:")


def test_a_legal_hand_made_cancel_writes_one_history_row_naming_its_actor(
    db: Database, raw: RawSql
) -> None:
    job_id = running(db)
    raw.execute(
        "UPDATE jobs SET status = 'canceled', change_actor = 'user', change_person = 'olga', "
        f"change_reason = 'asked by phone' WHERE id = {job_id}"
    )
    rows = raw.execute(
        "SELECT from_status, to_status, actor, person, reason FROM job_history "
        f"WHERE job_id = {job_id} ORDER BY id"
    )
    assert [tuple(r) for r in rows] == [
        ("queued", "running", "worker", None, None),
        ("running", "canceled", "user", "olga", "asked by phone"),
    ]
    effects = raw.execute(f"SELECT effect FROM job_side_effects WHERE job_id = {job_id}")
    assert [r[0] for r in effects] == ["delete_temp_object"]
    intent = raw.execute(
        "SELECT change_actor, change_person, change_reason, change_worker, finished_at IS NULL "
        f"FROM jobs WHERE id = {job_id}"
    )
    assert tuple(intent[0]) in {(None, None, None, None, False), (None, None, None, None, 0)}


def test_an_update_that_keeps_the_status_writes_no_history(db: Database, raw: RawSql) -> None:
    job_id = running(db)
    raw.execute(f"UPDATE jobs SET status = 'running', rows_written = 5 WHERE id = {job_id}")
    assert history_count(raw, job_id) == 1


def test_history_rejects_update_and_delete(db: Database, raw: RawSql) -> None:
    job_id = running(db)
    rejected(raw, "UPDATE job_history SET actor = 'user'", "job_history is append-only")
    rejected(raw, "DELETE FROM job_history", "job_history is append-only")
    assert history_count(raw, job_id) == 1


def test_jobs_and_side_effect_rows_are_never_deleted(db: Database, raw: RawSql) -> None:
    job_id = succeeded(db)
    rejected(raw, f"DELETE FROM jobs WHERE id = {job_id}", "jobs are never deleted")
    rejected(raw, "DELETE FROM job_side_effects", "side-effect rows are never deleted")


def test_a_second_side_effect_row_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = succeeded(db)
    with pytest.raises(raw.errors):
        raw.execute(
            "INSERT INTO job_side_effects (job_id, status, effect) "
            f"VALUES ({job_id}, 'succeeded', 'emit_done_webhook')"
        )
    count = raw.scalar(f"SELECT count(*) FROM job_side_effects WHERE job_id = {job_id}")
    assert count == 2


def test_a_side_effect_the_state_does_not_declare_is_rejected(db: Database, raw: RawSql) -> None:
    job_id = queued(db)
    rejected(
        raw,
        "INSERT INTO job_side_effects (job_id, status, effect) "
        f"VALUES ({job_id}, 'running', 'emit_done_webhook')",
        "is not an effect of",
    )


def test_a_side_effect_row_keeps_its_identity(db: Database, raw: RawSql) -> None:
    succeeded(db)
    rejected(raw, "UPDATE job_side_effects SET effect = 'delete_temp_object'", "keeps its job")
    raw.execute("UPDATE job_side_effects SET attempts = attempts + 1")  # bookkeeping is fine


# -- PostgreSQL only: roles, replica mode, TRUNCATE ------------------------------------------


def test_triggers_fire_under_session_replication_role_replica(postgres_url: str) -> None:
    db = open_database(postgres_url, GRAPH)
    try:
        job_id = succeeded(db)
    finally:
        db.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        with pytest.raises(psycopg.Error, match="terminal:succeeded"):
            conn.execute(
                "UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE id = %s",
                (job_id,),
            )
        with pytest.raises(psycopg.Error, match="append-only"):
            conn.execute("DELETE FROM job_history")


@pytest.mark.parametrize("table", ["jobs", "job_history", "job_side_effects"])
def test_truncate_is_refused(postgres_url: str, table: str) -> None:
    with (
        psycopg.connect(postgres_url, autocommit=True) as conn,
        pytest.raises(psycopg.Error, match=r"never deleted|append-only"),
    ):
        conn.execute(f"TRUNCATE {table} CASCADE".encode())


def heartbeat() -> Heartbeat:
    return Heartbeat(process="h-1-worker", host="h", pid=1, kind="worker",
                     started_at=datetime.now(UTC))  # fmt: skip


def test_every_table_is_granted_to_the_service_role_or_kept_by_the_owner_for_a_reason(
    postgres_url: str,
) -> None:
    """A table a migration adds without a grant would stop the service the day it is used."""
    from reportexport.store.postgres import OWNER_ONLY, SERVICE_GRANTS

    granted = {table for _, tables in SERVICE_GRANTS for table in tables}
    with psycopg.connect(postgres_url) as conn:
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm')"
            )
        }
    assert tables - granted - OWNER_ONLY.keys() == set(), (
        "give the service role its rights on these tables in SERVICE_GRANTS "
        "(store/postgres.py), or list them in OWNER_ONLY with the reason"
    )
    assert (granted | OWNER_ONLY.keys()) - tables == set(), "grants name tables that do not exist"
    assert all(reason.strip() for reason in OWNER_ONLY.values())


def test_the_owner_and_the_service_role_read_the_same_inventory(postgres_url: str) -> None:
    """The start-up check compares what a role can see with what the owner recorded."""
    service_url = service_role_url(postgres_url)
    with closing(open_database(postgres_url, GRAPH)) as owner_db:
        as_owner = owner_db.schema.installed_definitions()
    with closing(open_database(service_url, GRAPH, check=False)) as service_db:
        as_service = service_db.schema.installed_definitions()
        assert service_db.schema.status().current
    assert as_service.differences(as_owner) == []
    assert as_service.digest == as_owner.digest


def test_a_service_role_that_does_not_own_the_tables_cannot_bypass_them(
    postgres_url: str,
) -> None:
    service_url = service_role_url(postgres_url)
    service = open_database(service_url, GRAPH)
    try:
        # A global endpoint before the job ends: the job's announcement is fixed for it.
        service.endpoints.add_webhook_endpoint(owner=None, url="https://g.example/x",
                                               secret="whsec_g")  # fmt: skip
        job_id = succeeded(service)  # the service works through the triggers...
        # ...and everything else it does: people, endpoints, deliveries, downloads, heartbeats
        user, _ = service.users.add_user("svc-person", "user")
        endpoint = service.endpoints.add_webhook_endpoint(owner=user.name, url="https://h.example/x",
                                                secret="whsec_x")  # fmt: skip
        service.endpoints.rotate_webhook_secret(
            endpoint.id, secret="whsec_y", until=datetime.now(UTC)
        )
        service.jobs.record_download(job_id, user.name)
        claimed = service.effects.claim_side_effects("r", limit=10, now=datetime.now(UTC),
                                             claim_until=datetime.now(UTC))  # fmt: skip
        (effect,) = [c for c in claimed if c.effect.effect == "emit_done_webhook"]
        (delivery,) = service.deliveries.effect_deliveries(job_id, "emit_done_webhook")
        assert service.deliveries.record_delivery_attempt(
            effect.token, delivery.id, now=datetime.now(UTC), status=200, problem=None,
            delivered=True, next_attempt_at=datetime.now(UTC), give_up=False,
        )  # fmt: skip
        service.heartbeats.beat(heartbeat())
        assert [b.process for b in service.heartbeats.heartbeats()] == [heartbeat().process]
        service.caps.publish({"warehouse": 3}, process="svc")
        service.caps.publish({"warehouse": 1}, process="svc")
        assert [(c.source, c.max_concurrent) for c in service.caps.caps()] == [("warehouse", 1)]
        now = datetime.now(UTC)
        created = service.schedules.create(
            owner=user.name, saved_query="q", parameters={}, cron="0 6 * * *", time_zone="UTC",
            ends_at=None, next_fire_at=now, created_by=user.name, max_per_owner=5,
            idempotency_key="k",
        )  # fmt: skip
        assert created is not None
        schedule, _ = created
        service.heartbeats.stopped(heartbeat().process)
        firing = service.schedules.take(schedule, scheduled_for=now, next_fire_at=None, missed=0,
                                        fired_by="svc", fired_at=now)  # fmt: skip
        assert firing is not None
        assert service.schedules.settle_job(firing, job_id=job_id, query_hash="h")
        assert service.schedules.add_recipient(schedule.id, user.name, added_by=user.name)[1]
        assert [r.person for r in service.schedules.recipients(schedule.id)] == [user.name]
        assert service.schedules.remove_recipient(schedule.id, user.name)
        team = service.channels.add_chat_channel(owner=None, name="#t", url="https://h/x",
                                                 schedules_only=True)  # fmt: skip
        assert service.schedules.add_channel(schedule.id, team.id, added_by=user.name)[1]
        assert [c.channel_id for c in service.schedules.channels(schedule.id)] == [team.id]
        assert service.schedules.remove_channel(schedule.id, team.id)
        assert service.schedules.add_address(schedule.id, "p@example.org", attach_max_bytes=9,
                                             attach_gzip=True, added_by=user.name)[1]  # fmt: skip
        assert service.schedules.remove_address(schedule.id, "p@example.org")
        assert service.schedules.delete(schedule.id, now=now)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # purging is the owner's
            service.retention.purge(datetime.now(UTC), person="svc-person")
    finally:
        service.close()
    with psycopg.connect(service_url, autocommit=True) as conn:  # ...and cannot get around them
        for statement in (
            "ALTER TABLE jobs DISABLE TRIGGER jobs_status_guard",
            "SET session_replication_role = replica",
            "INSERT INTO job_history (job_id, from_status, to_status, actor) "
            f"VALUES ({job_id}, 'queued', 'succeeded', 'worker')",
            "TRUNCATE job_history",
            "DROP TABLE job_history",
            "DELETE FROM job_state_effects",
        ):
            with pytest.raises(psycopg.Error):
                conn.execute(statement.encode())
        with pytest.raises(psycopg.Error, match="terminal:succeeded"):
            conn.execute(
                f"UPDATE jobs SET status = 'failed', change_actor = 'worker' WHERE id = {job_id}"
            )


# -- The shells themselves -------------------------------------------------------------------


def test_psql_shell_cannot_break_the_graph(postgres_url: str) -> None:
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql is not installed")
    script = (
        "INSERT INTO jobs (owner, saved_query, query_sql, query_hash) VALUES ('a','q','s','h');\n"
        # gate: allow forbidden-alias, unknown-status -- the refusal under test
        "UPDATE jobs SET status = 'retrying';\n"
        "UPDATE jobs SET status = 'running', change_actor = 'worker';\n"
        "UPDATE jobs SET status = 'succeeded', change_actor = 'worker';\n"
        "UPDATE jobs SET status = 'running', change_actor = 'worker';\n"
        "DELETE FROM job_history;\n"
        "SELECT 'history=' || count(*) FROM job_history;\n"
    )
    done = subprocess.run(
        [psql, postgres_url, "-X", "-q", "-t", "-A"], input=script, capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert "illegal:queued->retrying" in done.stderr
    assert "terminal:succeeded" in done.stderr
    assert "append-only" in done.stderr
    assert "history=2" in done.stdout


def test_sqlite3_shell_cannot_break_the_graph(tmp_path: Path) -> None:
    sqlite3_cli = shutil.which("sqlite3")
    if sqlite3_cli is None:
        pytest.skip("the sqlite3 shell is not installed")
    path = tmp_path / "shell.db"
    database = open_database(f"sqlite:///{path}", GRAPH, check=False)
    database.schema.upgrade()
    database.close()
    script = (
        "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
        "VALUES ('a','q','s','h','queued');\n"
        # gate: allow forbidden-alias, unknown-status -- the refusal under test
        "UPDATE jobs SET status = 'retrying';\n"
        "UPDATE jobs SET status = 'running', change_actor = 'worker';\n"
        "UPDATE jobs SET status = 'succeeded', change_actor = 'worker';\n"
        "UPDATE jobs SET status = 'running', change_actor = 'worker';\n"
        "DELETE FROM job_history;\n"
        "SELECT 'history=' || count(*) FROM job_history;\n"
    )
    done = subprocess.run(
        [sqlite3_cli, str(path)], input=script, capture_output=True, text=True, check=False
    )
    assert "illegal:queued->(not a state)" in done.stderr
    assert "terminal:succeeded" in done.stderr
    assert "append-only" in done.stderr
    assert "history=2" in done.stdout
