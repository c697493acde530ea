"""An e-mail when an export ends: asked by the job (options.notify), by the owner's preference
(users.notify_always), or both; one delivery per job and effect either way."""

from __future__ import annotations

import pytest

from reportexport.core.records import Outcome
from reportexport.store import Database, StaleStatusError
from reportexport.store.errors import JobNotFoundError
from tests.helpers import new_job, published
from tests.store.test_deliveries import destinations, ended


@pytest.mark.parametrize(("asked", "preference"), [(True, False), (False, True), (True, True)])
def test_one_email_delivery_whichever_asked(db: Database, asked: bool, preference: bool) -> None:
    alice, _ = db.users.add_user("alice", "user")
    db.users.set_email(alice.id, "alice@example.com")
    assert db.users.set_notify_always("alice", preference)
    assert destinations(db.deliveries.job_deliveries(ended(db, "failed", notify=asked))) == [
        ("emit_failed_webhook", "alice@example.com")
    ]
    assert destinations(db.deliveries.job_deliveries(ended(db, notify=asked))) == [
        ("emit_done_webhook", "alice@example.com")
    ]


def test_the_preference_is_kept_and_needs_an_address(db: Database) -> None:
    alice, _ = db.users.add_user("alice", "user")
    assert not alice.notify_always
    assert db.users.set_notify_always("alice", True)
    assert db.users.user_by_name("alice").notify_always is True  # type: ignore[union-attr]
    assert db.deliveries.job_deliveries(ended(db)) == []  # no address: no one to mail
    assert db.users.set_notify_always("alice", False)
    assert db.users.user_by_name("alice").notify_always is False  # type: ignore[union-attr]
    db.users.set_email(alice.id, "alice@example.com")
    assert db.deliveries.job_deliveries(ended(db)) == []
    assert not db.users.set_notify_always("nobody", True)


def test_a_job_asks_for_an_email_until_it_ends(db: Database) -> None:
    alice, _ = db.users.add_user("alice", "user")
    db.users.set_email(alice.id, "alice@example.com")
    job = db.jobs.create_job(new_job(owner="alice"))[0]
    with pytest.raises(JobNotFoundError):
        db.jobs.set_notify(job.id, owner="bob")
    asked = db.jobs.set_notify(job.id, owner="alice")
    assert asked.options["notify"] is True
    assert asked.options["delimiter"] == ","
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    assert db.jobs.set_notify(job.id).options["notify"] is True  # running: not ended yet
    outcome = Outcome(lease=claim.lease, to_status="succeeded", published=published("x.csv"),
                      error_code=None, error_message=None)  # fmt: skip
    assert db.queue.finish_jobs([outcome]) == [True]
    assert destinations(db.deliveries.job_deliveries(job.id)) == [
        ("emit_done_webhook", "alice@example.com")
    ]
    with pytest.raises(StaleStatusError):
        db.jobs.set_notify(job.id)
