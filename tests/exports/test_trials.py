"""The half-open trial a worker lets through after a good probe, stepped by hand: a worker that
is not started (no loops), a real job store and export, and the moments that matter forced in
order rather than waited for. Whatever way the trial ends, it is given back; while it runs, the
heartbeat shows the pause and its reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reportexport.core.catalog import Catalog
from reportexport.core.pacing import STORAGE, Pacing
from reportexport.objects import ObjectStore
from reportexport.pipeline.export import new_export
from reportexport.runners.worker import Running, Worker, WorkerSettings
from reportexport.sources import CancelToken
from reportexport.store import Database
from tests.helpers import WORKER_QUERIES, catalog_for


@pytest.fixture
def catalog(sources_dir: Path) -> Catalog:
    return catalog_for(sources_dir, None, WORKER_QUERIES)


class Deferred:
    """An export pool that runs what it is given only when told to."""

    def __init__(self) -> None:
        self.calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def submit(self, function: Callable[..., Any], *args: Any) -> None:
        self.calls.append((function, args))

    def run_all(self) -> None:
        while self.calls:
            function, args = self.calls.pop(0)
            function(*args)

    def shutdown(self, wait: bool = True) -> None:
        assert not self.calls


def idle_worker(
    db: Database, catalog: Catalog, objects: ObjectStore, monkeypatch: pytest.MonkeyPatch
) -> tuple[Worker, Deferred]:
    settings = WorkerSettings(concurrency=2, lease_seconds=30, failure_limit=1, beats=False)
    worker = Worker(db, catalog, objects, settings)
    pool = Deferred()
    monkeypatch.setattr(worker, "_pool", pool)
    return worker, pool


def half_open(pacing: Pacing, key: str) -> None:
    """`key` paused by failures, then a good probe: one export may try it."""
    for _ in range(pacing.limit):
        pacing.failed(key)
    pacing.probe_succeeded(key)


def submit(db: Database, catalog: Catalog, name: str) -> int:
    return db.jobs.create_job(new_export(catalog.queries[name], {}, owner="alice"))[0].id


def status(db: Database, job_id: int) -> tuple[str, str | None]:
    job = db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    return job.status, job.error_code


@pytest.mark.parametrize("reason", ["stale", "worker_shutdown"])
def test_a_cancel_that_lands_as_a_held_export_takes_the_trial_gives_the_trial_back(
    jobs_db: Database,
    catalog: Catalog,
    local_objects: ObjectStore,
    monkeypatch: pytest.MonkeyPatch,
    reason: str,
) -> None:
    """A held export is let through (`may_resume` says yes, so it holds the trial), and in
    that instant a cancel lands: a person's (seen as a stale lease) or shutdown. The export
    does not run again; the trial must not stay taken, or the worker never claims (nor
    probes) again. Shutdown still ends the job as such."""
    worker, _ = idle_worker(jobs_db, catalog, local_objects, monkeypatch)
    job = submit(jobs_db, catalog, "small")
    (claim,) = jobs_db.queue.claim_jobs(worker.settings.worker_id, limit=1, lease_seconds=30)
    running = Running(lease=claim.lease, cancel=CancelToken(), source="demo", held=STORAGE)
    half_open(worker.pacing, STORAGE)
    may_resume = worker.pacing.may_resume

    def let_through_then_cancel(key: str, holder: object) -> bool:
        granted = may_resume(key, holder)
        running.cancel.cancel(reason)
        return granted

    monkeypatch.setattr(worker.pacing, "may_resume", let_through_then_cancel)
    assert worker._hold(running) is False
    monkeypatch.undo()
    assert worker.pacing.plan(2, {}).limit == 1  # half-open again: one claim may try it
    assert worker.heartbeat().pause_reason is None
    assert worker.pacing.may_resume(STORAGE, "another held export") is True
    ended = ("failed", "worker_shutdown") if reason == "worker_shutdown" else ("running", None)
    assert status(jobs_db, job) == ended


@pytest.mark.parametrize(
    ("key", "reason", "sources"),
    [(STORAGE, "storage_unavailable", ()), ("demo", "source_unavailable", ("demo",))],
)
def test_a_freshly_claimed_export_that_is_the_trial_shows_as_a_pause_until_it_ends(
    jobs_db: Database,
    catalog: Catalog,
    local_objects: ObjectStore,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
    reason: str,
    sources: tuple[str, ...],
) -> None:
    """After a good probe nothing was held, so the trial goes to a claim. While that export
    runs, claiming what it needs is held: the heartbeat says so, with the reason, and no
    other probe is due (the trial is the probe). Once it succeeds the pause is over."""
    worker, pool = idle_worker(jobs_db, catalog, local_objects, monkeypatch)
    job = submit(jobs_db, catalog, "small")
    half_open(worker.pacing, key)
    assert worker.heartbeat().pause_reason is None
    plan = worker.pacing.plan(2, {})
    claims = jobs_db.queue.claim_jobs(
        worker.settings.worker_id,
        limit=plan.limit,
        lease_seconds=30,
        excluded_sources=plan.excluded_sources,
    )
    assert [c.job.id for c in claims] == [job]
    worker._begin_all(claims)  # the export is handed to the pool, not yet run
    beat = worker.heartbeat()
    assert (beat.active_jobs, beat.pause_reason, beat.paused_sources) == ((job,), reason, sources)
    assert beat.claims_paused_until is not None
    after = worker.pacing.plan(1, {"demo": 1})
    assert (after.limit, after.excluded_sources) == ((1, ("demo",)) if sources else (0, ()))
    assert worker.pacing.due_probes() == []
    pool.run_all()
    assert status(jobs_db, job) == ("succeeded", None)
    beat = worker.heartbeat()
    assert (beat.active_jobs, beat.pause_reason, beat.claims_paused_until) == ((), None, None)
