from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from reportexport.effects.handlers import Context
from reportexport.effects.runner import EffectsRunner, RunnerSettings
from reportexport.objects import ObjectStore, final_key, open_object_store
from reportexport.store import Database, Outcome, PublishedObject
from tests.effects.receiver import Receiver, running_receiver
from tests.exports.conftest import s3_endpoint as s3_endpoint
from tests.store.conftest import (  # noqa: F401 - fixtures shared with the store suite
    GRAPH,
    backend,
    database_url,
    postgres_server,
    postgres_url,
)
from tests.store.conftest import db as db
from tests.store.test_operations import new_job


class Clock:
    """An injected clock: real time plus whatever the test skipped ahead, so the retry
    schedule is checked without sleeping (rows are written at the database's own now)."""

    def __init__(self) -> None:
        self.skipped = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.skipped

    def advance(self, seconds: float) -> None:
        self.skipped += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver(Receiver()) as running:
        yield running


@pytest.fixture
def objects(tmp_path: Path) -> ObjectStore:
    return open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"links")


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5, follow_redirects=False) as client:
        yield client


def make_runner(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Any, **settings: Any
) -> EffectsRunner:
    context = Context(
        store=db.endpoints, objects=objects, client=http, clock=clock, allow_private=True
    )
    return EffectsRunner(db, context, GRAPH, RunnerSettings(**settings), clock=clock)


def succeeded_job(db: Database, objects: ObjectStore, owner: str = "alice") -> int:
    job = db.jobs.create_job(new_job(owner=owner))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    key = final_key(job.id, "orders.csv")
    temp = objects.create_temp(job.id, claim.lease.token, key)
    temp.write(b"a,b\n1,2\n")
    temp.publish()
    import hashlib

    published = PublishedObject(
        key=key, sha256=hashlib.sha256(b"a,b\n1,2\n").hexdigest(), bytes=8, rows=1,
        columns=("a", "b"), file_name="orders.csv", expires_in_seconds=3600,
        column_types=("integer", "text"), dialect_version=2,
    )  # fmt: skip
    assert db.queue.finish_jobs(
        [Outcome(lease=claim.lease, to_status="succeeded", published=published)]
    )
    return job.id


def failed_job(db: Database, owner: str = "alice") -> int:
    job = db.jobs.create_job(new_job(owner=owner))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(lease=claim.lease, to_status="failed", error_code="query_error",
                      error_message="column x does not exist")  # fmt: skip
    assert db.queue.finish_jobs([outcome])
    return job.id
