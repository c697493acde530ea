"""Schema upgrades, the recorded graph fingerprint, and the named queries of both dialects."""

from __future__ import annotations

import re
from contextlib import closing
from pathlib import Path

import pytest

from reportexport.core.job_status import IllegalTransitionError
from reportexport.store import Database, JobId, Outcome, SchemaMismatchError, open_database
from reportexport.store.dialect import load_queries, migration_files
from tests.helpers import GRAPH, REPO_ROOT, RawSql, graph_with_archived, new_job, run_cli


@pytest.fixture
def empty_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "postgres":
        return str(request.getfixturevalue("empty_postgres_url"))
    return f"sqlite:///{tmp_path / 'empty.db'}"


def test_a_database_without_the_schema_is_refused_with_the_fix(empty_url: str) -> None:
    with pytest.raises(SchemaMismatchError, match="no reportexport schema") as raised:
        open_database(empty_url, GRAPH)
    assert "reportexport db upgrade --database" in str(raised.value)


def test_upgrade_is_idempotent_and_records_the_fingerprint(empty_url: str) -> None:
    db = open_database(empty_url, GRAPH, check=False)
    try:
        first = db.schema.upgrade()
        second = db.schema.upgrade()
    finally:
        db.close()
    assert first == second
    assert first.current
    assert first.fingerprint == GRAPH.fingerprint
    assert first.version == len(migration_files("sqlite"))


def test_a_process_refuses_a_database_built_from_another_graph(
    database_url: str, tmp_path: Path
) -> None:
    _, changed = graph_with_archived(tmp_path)
    with pytest.raises(SchemaMismatchError) as raised:
        open_database(database_url, changed)
    message = str(raised.value)
    assert GRAPH.fingerprint[:12] in message
    assert changed.fingerprint[:12] in message
    assert "reportexport db upgrade" in message


def test_upgrade_applies_a_fixture_change_to_a_populated_database(
    database_url: str, tmp_path: Path
) -> None:
    old = open_database(database_url, GRAPH)
    try:
        done_id = old.jobs.create_job(new_job())[0].id
        old.jobs.cancel_job(done_id, person="alice")
        waiting_id = old.jobs.create_job(new_job())[0].id
    finally:
        old.close()

    _, changed = graph_with_archived(tmp_path)
    upgrader = open_database(database_url, changed, check=False)
    try:
        assert upgrader.schema.upgrade().fingerprint == changed.fingerprint
    finally:
        upgrader.close()

    new = open_database(database_url, changed)
    try:
        assert new.jobs.get_job(done_id).job.status == "canceled"
        (claim,) = new.queue.claim_jobs("w1", limit=1, lease_seconds=60)
        assert claim.job.id == waiting_id
        # gate: allow unknown-status -- a state of another fixture, the lifecycle change under test
        assert new.queue.finish_jobs([Outcome(lease=claim.lease, to_status="archived")]) == [True]
        detail = new.jobs.get_job(waiting_id)
        # gate: allow unknown-status -- a state of another fixture, the lifecycle change under test
        assert detail.job.status == "archived"
        assert detail.job.finished_at is not None
        assert [e.effect for e in detail.side_effects] == ["delete_temp_object"]
    finally:
        new.close()
    with pytest.raises(SchemaMismatchError):
        open_database(database_url, GRAPH)  # the old fixture no longer matches


def test_the_current_graph_rejects_an_edge_it_does_not_declare(db: Database) -> None:
    db.jobs.create_job(new_job())
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    with pytest.raises(IllegalTransitionError, match=r"^illegal:running->archived$"):
        # gate: allow unknown-status -- a state of another fixture, the lifecycle change under test
        db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="archived")])


def test_both_dialects_have_the_same_migrations() -> None:
    sqlite_versions = [(n, name) for n, name, _ in migration_files("sqlite")]
    assert sqlite_versions == [(n, name) for n, name, _ in migration_files("postgres")]


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_every_query_renders_without_a_macro_or_a_foreign_placeholder(dialect: str) -> None:
    for name, text in load_queries(dialect).items():
        assert not re.search(r"\{[a-z_]+", text), name
        if dialect == "postgres":
            assert not re.search(r"(?<![:\w]):[a-z_]+", text), name
        else:
            assert "%(" not in text, name


def test_every_named_query_is_run_by_a_role() -> None:
    store = REPO_ROOT / "src" / "reportexport" / "store"
    source = "".join(path.read_text() for path in store.glob("*.py"))
    used = set(re.findall(r'\.(?:rows|row|count|each|_changed)\(\s*"([a-z_]+)"', source))
    used |= set(re.findall(r'queries\["([a-z_]+)"\]', source))
    assert used == set(load_queries("sqlite"))


def test_db_commands_upgrade_and_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    check = run_cli("db", "check", "--database", url)
    assert check.returncode == 1
    assert "reportexport db upgrade --database" in check.stderr
    upgrade = run_cli("db", "upgrade", env={"REPORTEXPORT_DATABASE_URL": url})
    assert upgrade.returncode == 0, upgrade.stderr
    assert f"schema version 0 -> {len(migration_files('sqlite'))}" in upgrade.stdout
    assert run_cli("db", "check", "--database", url).returncode == 0


def test_the_program_refuses_a_fixture_it_was_not_generated_from(tmp_path: Path) -> None:
    """A lifecycle change is a fixture edit plus `reportexport generate`: a program whose typed
    names came from another fixture stops with exit 2 and says so, before touching a store."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    changed, _ = graph_with_archived(tmp_path)
    for command in (("db", "check"), ("db", "upgrade")):
        done = run_cli(*command, "--database", url, env={"REPORTEXPORT_GRAPH": str(changed)})
        assert done.returncode == 2, done.stderr
        assert "not the job status graph this program was generated from" in done.stderr
        assert "reportexport generate" in done.stderr
    assert not (tmp_path / "cli.db").exists()


def test_a_database_built_from_another_graph_is_reported(tmp_path: Path) -> None:
    _, graph = graph_with_archived(tmp_path)
    url = f"sqlite:///{tmp_path / 'other.db'}"
    with closing(open_database(url, graph, check=False)) as database:
        database.schema.upgrade()
    stale = run_cli("db", "check", "--database", url)
    assert stale.returncode == 1
    assert "the database holds the job status graph" in stale.stderr
    assert run_cli("db", "upgrade", "--database", url).returncode == 0
    assert run_cli("db", "check", "--database", url).returncode == 0


def test_db_check_on_an_unreachable_server_says_so() -> None:
    done = run_cli("db", "check", "--database", "postgresql://nobody@127.0.0.1:1/none")
    assert done.returncode == 1
    assert "cannot connect to PostgreSQL at postgresql://nobody@127.0.0.1:1/none" in done.stderr


def test_jobs_finished_before_the_column_types_migration_are_dialect_1(
    backend: str, empty_url: str
) -> None:
    """The column_types_and_dialect migration adds column types and the dialect version; the
    bytes of jobs that finished before it were written by dialect 1."""
    migrations = migration_files(backend)
    ours = next(n for n, name, _ in migrations if name == "column_types_and_dialect")
    old = open_database(empty_url, GRAPH, check=False)
    old.schema.upgrade(to_version=ours - 1)
    old.close()
    raw = RawSql(empty_url)
    try:
        for _ in range(2):
            raw.execute(
                "INSERT INTO jobs (owner, saved_query, query_sql, query_hash, status) "
                "VALUES ('alice', 'q', 'SELECT 1', 'h', 'queued')"
            )
        raw.execute("UPDATE jobs SET status = 'running', change_actor = 'worker' WHERE id = 1")
        raw.execute(
            "UPDATE jobs SET status = 'succeeded', change_actor = 'worker', "
            "object_key = 'exports/1/q-1.csv', columns = '[\"a\"]' WHERE id = 1"
        )
    finally:
        raw.close()
    new = open_database(empty_url, GRAPH, check=False)
    try:
        assert new.schema.upgrade().current
        finished, waiting = new.jobs.get_job(JobId(1)).job, new.jobs.get_job(JobId(2)).job
    finally:
        new.close()
    assert (finished.dialect_version, finished.columns, finished.column_types) == (1, ("a",), None)
    assert (waiting.dialect_version, waiting.column_types) == (None, None)
