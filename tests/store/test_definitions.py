"""The database proves its own graph: installed guards compared with what `db upgrade` makes,
and a behaviour probe compared with the fixture, on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from frozen_lifecycle.graph import Graph
from frozen_lifecycle.outside_actors import PLAUSIBLE
from reportexport.store import (
    Database,
    SchemaMismatchError,
    StoreError,
    TransientStoreError,
    open_database,
)
from tests.helpers import GRAPH, RawSql, new_job, run_cli

LAX_POSTGRES = """
CREATE OR REPLACE FUNCTION job_status_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_actor := NULL;
    RETURN NEW;
END $$;
"""
LAX_SQLITE = "DROP TRIGGER jobs_status_guard;"


def admit(raw: RawSql, actor: str) -> None:
    """What a generated guard that admits one more actor does: that actor makes any move (on
    PostgreSQL, but for what the table's own constraints refuse)."""
    if raw.sqlite:
        (definition,) = raw.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_status_guard'"
        )[0]
        lax_guard = definition.replace(
            "SELECT CASE\n", f"SELECT CASE\n    WHEN NEW.change_actor = '{actor}' THEN NULL\n", 1
        )
        assert lax_guard != definition
        raw.execute("DROP TRIGGER jobs_status_guard")
        raw.execute(lax_guard)
        return
    definition = raw.scalar("SELECT pg_get_functiondef('job_status_guard'::regproc)")
    lax_guard = definition.replace(
        "IF OLD.status IN", f"IF NEW.change_actor IS DISTINCT FROM '{actor}' AND OLD.status IN", 1
    ).replace(
        "IF NEW.change_actor IS DISTINCT FROM declared_actor THEN",
        f"IF NEW.change_actor IS DISTINCT FROM declared_actor AND NEW.change_actor <> '{actor}'"
        " THEN",
        1,
    )
    lax_guard = lax_guard.replace(
        "IF declared_actor IS NULL THEN",
        f"IF declared_actor IS NULL AND NEW.change_actor IS DISTINCT FROM '{actor}' THEN",
        1,
    )
    assert lax_guard.count(actor) == 3, lax_guard
    raw.execute(lax_guard)


@pytest.mark.parametrize("actor", ["operator", "night_shift"])
def test_a_guard_that_admits_an_actor_outside_the_fixture_fails_the_behaviour_check(
    database_url: str, raw: RawSql, actor: str
) -> None:
    """`operator` is a plausible name; `night_shift` only the guard's own definition names."""
    admit(raw, actor)
    probed = run_cli("db", "check", "--database", database_url, "--behaviour")
    assert probed.returncode == 1, probed.stdout + probed.stderr
    assert f"behaviour: queued -> canceled by {actor}: accepted, the fixture does not" in (
        probed.stderr
    )


def test_an_actor_the_history_holds_is_tried_too(database_url: str, raw: RawSql) -> None:
    """A guard that admits an account by a lookup names no word; history still does."""
    from reportexport.store.probe import Probe

    admitted = "batch_import"
    with closing(open_database(database_url, GRAPH)) as database:
        job, _ = database.jobs.create_job(new_job())
    raw.execute(
        "INSERT INTO job_history (job_id, from_status, to_status, actor) "
        f"VALUES ({job.id}, 'queued', 'running', '{admitted}')"
    )
    tried: list[str] = []

    def run(statement: str) -> list[tuple[Any, ...]]:
        if statement.startswith("UPDATE jobs SET status") and f"'{admitted}'" in statement:
            tried.append(statement)
        return raw.execute(statement)

    raw.execute("BEGIN")
    try:
        Probe(GRAPH, run, truncate=False).everything()
    finally:
        raw.execute("ROLLBACK")
    assert len(tried) == len(GRAPH.states) * len(GRAPH.states)


def lax(raw: RawSql) -> None:
    """What a careless migration does: the status guard recreated without its checks."""
    raw.execute(LAX_SQLITE if raw.sqlite else LAX_POSTGRES)


def test_a_current_database_behaves_as_the_fixture_says(db: Database) -> None:
    report = db.schema.probe()
    assert report.findings == []
    # The fixture's actors, none, an invented word and the plausible names a lax guard admits
    # (a current guard names no other actor, and history here holds only the fixture's).
    tried = len(GRAPH.actors) + 2 + len(PLAUSIBLE)
    moves = len(GRAPH.states) * len(GRAPH.states) * tried
    assert report.moves == moves
    assert report.refusals > 90
    assert db.schema.installed_definitions() == db.schema.expected_definitions()
    assert db.schema.status().current


def test_the_probe_rolls_back_everything_it_tried(db: Database, raw: RawSql) -> None:
    before = [raw.scalar(f"SELECT count(*) FROM {t}") for t in ("jobs", "job_history")]
    db.schema.probe()
    assert [raw.scalar(f"SELECT count(*) FROM {t}") for t in ("jobs", "job_history")] == before


@pytest.mark.slow
def test_a_laxer_guard_is_named_refused_at_start_and_undone_by_upgrade(
    database_url: str, raw: RawSql
) -> None:
    lax(raw)
    with pytest.raises(SchemaMismatchError, match="guards and triggers installed differ"):
        open_database(database_url, GRAPH)
    check = run_cli("db", "check", "--database", database_url)
    assert check.returncode == 1
    assert "jobs_status_guard" in check.stderr or "job_status_guard" in check.stderr
    probed = run_cli("db", "check", "--database", database_url, "--behaviour")
    assert "behaviour: queued -> running by user: accepted, the fixture does not" in probed.stderr
    assert run_cli("db", "upgrade", "--database", database_url).returncode == 0
    with closing(open_database(database_url, GRAPH)) as database:
        assert database.schema.probe().findings == []
    assert run_cli("db", "check", "--database", database_url, "--behaviour").returncode == 0


def test_a_patched_generator_is_caught_by_the_probe_on_a_fresh_database(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The generator and the database agree with each other here; only the fixture does not."""
    from frozen_lifecycle.graph import Edge

    # gate: allow undeclared-edge -- the weaker edge the probe must catch
    weaker = (*GRAPH.transitions, Edge(from_status="failed", to_status="queued", actor="worker"))
    patched_graph = dataclasses.replace(
        GRAPH, terminal=("succeeded", "canceled"), transitions=weaker
    )
    from reportexport.store import migrator

    weakened = {
        dialect: lambda graph, render=render: render(patched_graph)
        for dialect, render in migrator.GRAPH_SQL.items()
    }
    monkeypatch.setattr(migrator, "GRAPH_SQL", weakened)
    if backend == "postgres":
        url = str(request.getfixturevalue("empty_postgres_url"))
    else:
        url = f"sqlite:///{tmp_path / 'fresh.db'}"
    with closing(open_database(url, GRAPH, check=False)) as database:
        database.schema.upgrade()
        assert database.schema.installed_definitions() == database.schema.expected_definitions()
        findings = database.schema.probe().findings
    assert any(f.startswith("failed -> queued by worker: accepted") for f in findings), findings


def test_an_object_added_by_hand_is_named_and_upgrade_will_not_bless_it(
    database_url: str, raw: RawSql
) -> None:
    if raw.sqlite:
        raw.execute("CREATE TRIGGER sneaky BEFORE UPDATE ON jobs BEGIN SELECT 1; END;")
    else:
        raw.execute(
            "CREATE FUNCTION sneaky() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; "
            "END $$; CREATE TRIGGER sneaky BEFORE UPDATE ON jobs FOR EACH ROW "
            "EXECUTE FUNCTION sneaky();"
        )
    with closing(open_database(database_url, GRAPH, check=False)) as database:
        differences = database.schema.installed_definitions().differences(
            database.schema.expected_definitions()
        )
        assert any("sneaky" in line and "not part of the schema" in line for line in differences)
        with pytest.raises(StoreError, match=r"cannot make right.*sneaky"):
            database.schema.upgrade()


class Peer(threading.Thread):
    """A live worker's session: progress updates on its own job, each timed, until stopped."""

    def __init__(self, url: str, job_id: int) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.job_id = job_id
        self.waits: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            statement = (
                f"UPDATE jobs SET bytes_written = bytes_written + 1 WHERE id = {self.job_id}"
            )
            while not self.stop.is_set():
                began = time.monotonic()
                conn.execute(statement.encode())
                self.waits.append(time.monotonic() - began)
                time.sleep(0.05)

    def __enter__(self) -> Peer:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.join(timeout=30)


def locked_job(url: str) -> tuple[psycopg.Connection[Any], int]:
    """A lax guard for the upgrade to replace, a transaction holding a job row (as a worker's
    does while it finishes the job), and another job for a peer to update meanwhile."""
    with closing(open_database(url, GRAPH)) as database:
        held, other = (database.jobs.create_job(new_job())[0] for _ in range(2))
    with closing(RawSql(url)) as raw:
        lax(raw)
    holder = psycopg.connect(url)
    holder.execute(f"UPDATE jobs SET bytes_written = 1 WHERE id = {held.id}".encode())
    return holder, other.id


def test_upgrade_neither_stalls_live_sessions_nor_fails_while_a_row_is_locked(
    postgres_url: str,
) -> None:
    """Re-applying the graph needs the job table; while the upgrade waits for it, every session
    that wants the table waits behind it, so it waits briefly and tries again."""
    holder, other = locked_job(postgres_url)
    released: list[float] = []

    def release_the_row() -> None:
        holder.rollback()
        released.append(time.monotonic())

    release = threading.Timer(3.0, release_the_row)
    try:
        # The sessions' own lock timeout is 5 s: an upgrade that waited that long would stall
        # the peer as long.
        with (
            closing(open_database(postgres_url, GRAPH, check=False)) as db,
            Peer(postgres_url, other) as peer,
        ):
            release.start()
            db.schema.upgrade()
            upgraded = time.monotonic()
            assert db.schema.status().current
    finally:
        release.cancel()
        holder.close()
    assert released
    assert upgraded > released[0]  # it waited for the lock, and got through
    assert max(peer.waits) < 2.0, peer.waits
    assert len(peer.waits) > 5


def test_upgrade_gives_up_clearly_when_a_lock_is_never_released(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reportexport.store import migrator

    monkeypatch.setattr(migrator, "UPGRADE_ATTEMPTS", 3)
    holder, _ = locked_job(postgres_url)
    try:
        with closing(open_database(postgres_url, GRAPH, check=False)) as db:
            with pytest.raises(TransientStoreError, match=r"gave up after 3 attempts.*unchanged"):
                db.schema.upgrade()
            assert not db.schema.status().current
    finally:
        holder.close()
    assert run_cli("db", "upgrade", "--database", postgres_url).returncode == 0


def test_db_check_builds_what_is_expected_and_trusts_no_recorded_digest(
    database_url: str, raw: RawSql
) -> None:
    """A lax guard with its digest recorded by hand, as if `db upgrade` had installed it."""
    lax(raw)
    with closing(open_database(database_url, GRAPH, check=False)) as database:
        installed = database.schema.installed_definitions().digest
    raw.execute(
        f"UPDATE reportexport_meta SET value = '{installed}' WHERE key = 'definitions_digest'"
    )
    check = run_cli("db", "check", "--database", database_url)
    assert check.returncode == 1, check.stdout
    assert "current" not in check.stdout
    assert "jobs_status_guard" in check.stderr or "job_status_guard" in check.stderr
    assert "db upgrade" in check.stderr


@pytest.mark.slow
def test_a_database_upgraded_by_a_program_with_other_graph_sql_is_refused_at_start(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """The other program's guard is what it recorded; this program expects its own."""
    from reportexport.store import migrator

    def other_program(dialect: str) -> Callable[[Graph], str]:
        render = migrator.GRAPH_SQL[dialect]
        return lambda graph: render(graph) + "\n-- another program's graph SQL\n"

    if backend == "postgres":
        url = str(request.getfixturevalue("empty_postgres_url"))
    else:
        url = f"sqlite:///{tmp_path / 'fresh.db'}"
    with monkeypatch.context() as patched:
        patched.setattr(migrator, "GRAPH_SQL", {d: other_program(d) for d in migrator.GRAPH_SQL})
        with closing(open_database(url, GRAPH, check=False)) as database:
            database.schema.upgrade()
        with closing(open_database(url, GRAPH)):
            pass  # current for the program that upgraded it
    with pytest.raises(SchemaMismatchError, match=r"migrations or graph SQL differ.*db upgrade"):
        open_database(url, GRAPH)
    started = run_cli("users", "list", "--database", url)
    assert started.returncode == 2, started.stderr
    assert "db upgrade" in started.stderr
    assert run_cli("db", "upgrade", "--database", url).returncode == 0
    with closing(open_database(url, GRAPH)) as database:
        assert database.schema.status().current
