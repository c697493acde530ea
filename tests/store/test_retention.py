"""The one sanctioned DELETE: a recorded purge of terminal jobs finished before a date."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from reportexport.core.records import JobFilter
from reportexport.store import Database
from tests.helpers import RawSql, claim_one, new_job, run_cli


def canceled(db: Database, **overrides: object) -> int:
    job = db.jobs.create_job(new_job(**overrides))[0]
    db.jobs.cancel_job(job.id, person="alice")
    return job.id


def test_a_purge_removes_only_terminal_jobs_finished_before_its_date(
    db: Database, raw: RawSql
) -> None:
    old = canceled(db)
    old_downloaded = canceled(db)
    db.jobs.record_download(old_downloaded, "bob")
    time.sleep(0.05)
    cutoff = datetime.now(UTC)
    time.sleep(0.05)
    recent = canceled(db, rerun_of=old)
    queued = db.jobs.create_job(new_job())[0].id
    running = db.jobs.create_job(new_job())[0].id
    claim_one(db)  # the oldest queued: `queued`
    assert db.retention.purgeable(cutoff) == 2

    purge = db.retention.purge(cutoff, person="olga")

    assert (purge.jobs, purge.history_rows, purge.side_effect_rows) == (2, 2, 2)
    assert (purge.downloads, purge.deliveries, purge.reruns_unlinked) == (1, 0, 1)
    assert purge.requested_by == "olga"
    assert purge.completed_at is not None
    assert abs((purge.before - cutoff).total_seconds()) < 0.01
    remaining = sorted(row[0] for row in raw.execute("SELECT id FROM jobs"))
    assert remaining == sorted([recent, queued, running])
    gone = f"job_id IN ({old}, {old_downloaded})"
    for table in ("job_history", "job_side_effects", "job_downloads"):
        assert raw.scalar(f"SELECT count(*) FROM {table} WHERE {gone}") == 0, table
    assert db.jobs.get_job(recent).job.rerun_of is None
    assert len(db.jobs.get_job(recent).history) == 1
    assert [p.id for p in db.retention.purges()] == [purge.id]


@pytest.mark.slow
def test_every_other_delete_is_still_refused(db: Database, raw: RawSql) -> None:
    job = canceled(db)
    db.retention.purge(datetime(2000, 1, 1, tzinfo=UTC), person="olga")  # removes nothing
    for statement in (
        f"DELETE FROM jobs WHERE id = {job}",
        f"DELETE FROM job_history WHERE job_id = {job}",
        f"DELETE FROM job_side_effects WHERE job_id = {job}",
        "DELETE FROM job_purges",
        "UPDATE job_purges SET jobs = 99",
    ):
        with pytest.raises(raw.errors):
            raw.execute(statement)
    if not raw.sqlite:
        with pytest.raises(raw.errors):
            raw.execute("TRUNCATE job_purges")
    assert db.schema.probe().findings == []


def test_a_purge_record_cannot_be_left_open_by_hand(db: Database, raw: RawSql) -> None:
    """An open purge record opens the delete guards; a shell cannot commit one."""
    job = canceled(db)
    opening = "INSERT INTO job_purges (before, requested_by) VALUES ('2999-01-01', 'mallory')"
    with pytest.raises(raw.errors, match=r"reportexport_connection|reportexport db purge"):
        raw.execute(opening)
    assert raw.scalar("SELECT count(*) FROM job_purges") == 0
    with pytest.raises(raw.errors, match="never deleted"):
        raw.execute(f"DELETE FROM jobs WHERE id = {job}")
    assert db.jobs.get_job(job).job.id == job


def test_a_purge_refuses_a_date_without_a_zone_or_a_nameless_request(db: Database) -> None:
    with pytest.raises(ValueError, match="time zone"):
        db.retention.purge(datetime(2026, 1, 1), person="olga")
    with pytest.raises(ValueError, match="names the person"):
        db.retention.purge(datetime(2026, 1, 1, tzinfo=UTC), person=" ")


@pytest.mark.slow
def test_the_command_says_what_would_go_then_purges_with_yes(
    db: Database, database_url: str
) -> None:
    canceled(db)
    time.sleep(0.05)
    when = datetime.now(UTC).isoformat()
    asked = run_cli("db", "purge", "--database", database_url, "--before", when,
                    "--person", "olga")  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert "1 terminal jobs finished before" in asked.stdout
    assert "--yes" in asked.stdout
    assert len(db.jobs.list_jobs(JobFilter()).jobs) == 1
    done = run_cli("db", "purge", "--database", database_url, "--before", when,
                   "--person", "olga", "--yes")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "removed 1 jobs, 1 history rows, 1 side-effect rows" in done.stdout
    listed = run_cli("db", "purges", "--database", database_url)
    assert "by olga" in listed.stdout
    future = run_cli("db", "purge", "--database", database_url, "--before", "2999-01-01",
                     "--person", "olga", "--yes")  # fmt: skip
    assert future.returncode == 2
    assert "in the past" in future.stderr
    naive = run_cli("db", "purge", "--database", database_url, "--before", "2026-01-01T10:00",
                    "--person", "olga")  # fmt: skip
    assert naive.returncode == 2
    assert "UTC offset" in naive.stderr
