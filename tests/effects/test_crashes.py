"""Runners that die or compete: an event is never lost and never delivered twice at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from reportexport.objects import ObjectStore
from reportexport.store import Database
from reportexport.webhooks.signing import new_secret
from tests.effects.receiver import Receiver
from tests.helpers import Clock, failed_job, make_runner, wait_for


def test_a_runner_killed_mid_delivery_leaves_the_event_to_the_next_with_the_same_id(
    db: Database,
    database_url: str,
    objects: ObjectStore,
    http: httpx.Client,
    clock: Clock,
    receiver: Receiver,
    tmp_path: Path,
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    job_id = failed_job(db)
    receiver.script = [(200, {}, 30.0)]  # the first delivery hangs until the runner dies
    with open(tmp_path / "effects.log", "wb") as log:
        runner = subprocess.Popen(
            [sys.executable, "-m", "reportexport", "effects", "--database", database_url,
             "--objects", f"file://{tmp_path / 'objects'}", "--claim-seconds", "2"],
            env={**os.environ, "REPORTEXPORT_WEBHOOKS_ALLOW_PRIVATE": "1",
                 "REPORTEXPORT_LINK_SECRET": "links"},
            stdout=log, stderr=log,
        )  # fmt: skip
    try:
        wait_for(lambda: len(receiver.received) == 1, 60, "len(receiver.received) == 1", every=0.05)
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    row = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}["emit_failed_webhook"]
    assert row.completed_at is None  # the kill lost nothing: the row is still owed

    successor = make_runner(db, objects, http, clock, runner_id="successor")
    assert successor.run_once() == 0  # the dead runner's claim has not expired yet
    clock.advance(3)
    assert successor.run_once() == 1
    assert receiver.ids() == [f"msg_{job_id}_emit_failed_webhook"] * 2
    row = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}["emit_failed_webhook"]
    assert row.completed_at is not None


def test_two_runners_never_deliver_one_row_at_once(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    jobs = [failed_job(db) for _ in range(20)]
    receiver.script = [(200, {}, 0.05)] * 20
    runners = [make_runner(db, objects, http, clock, runner_id=f"r{n}", batch=2) for n in (1, 2)]

    def drain(runner: object) -> None:
        while runner.run_once():  # type: ignore[attr-defined]
            pass

    threads = [threading.Thread(target=drain, args=(r,)) for r in runners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert receiver.most_in_flight == 1
    assert sorted(receiver.ids()) == sorted(f"msg_{j}_emit_failed_webhook" for j in jobs)
    for job_id in jobs:
        row = {e.effect: e for e in db.jobs.get_job(job_id).side_effects}["emit_failed_webhook"]
        assert (row.completed_at is not None, row.attempts) == (True, 1)
