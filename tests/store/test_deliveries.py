"""Each destination of an announcement has its own delivery record, fixed when the job ends."""

from __future__ import annotations

from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from reportexport.core.records import ClaimedEffect, Delivery, JobId, Outcome
from reportexport.store import Database, open_database
from reportexport.store.dialect import migration_files
from tests.helpers import GRAPH, RawSql, new_job, published


def ended(db: Database, to_status: str = "succeeded", *, owner: str = "alice",
          notify: bool = False) -> int:  # fmt: skip
    options = {"delimiter": ",", **({"notify": True} if notify else {})}
    job = db.jobs.create_job(new_job(owner=owner, options=options))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(
        lease=claim.lease,
        to_status=to_status,  # type: ignore[arg-type]
        published=published(f"exports/{job.id}.csv") if to_status == "succeeded" else None,
        error_code=None if to_status == "succeeded" else "query_error",
        error_message=None if to_status == "succeeded" else "no such column",
    )
    assert db.queue.finish_jobs([outcome]) == [True]
    return job.id


def destinations(deliveries: list[Delivery]) -> list[tuple[str, str]]:
    return [(d.effect, d.destination) for d in deliveries]


def claimed(db: Database, job_id: int, now: datetime) -> ClaimedEffect:
    claims = db.effects.claim_side_effects(
        "r", limit=10, now=now, claim_until=now + timedelta(seconds=60)
    )
    (mine,) = [c for c in claims if c.effect.job_id == job_id and "webhook" in c.effect.effect]
    return mine


def test_recipients_are_fixed_in_the_transaction_that_ends_the_job(db: Database) -> None:
    """The owner's enabled endpoints, the global one and (asked for) the owner's address."""
    mine = db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example/h", secret="s")
    everyone = db.endpoints.add_webhook_endpoint(owner=None, url="https://g.example/h", secret="s")
    db.endpoints.add_webhook_endpoint(owner="bob", url="https://b.example/h", secret="s")
    gone = db.endpoints.add_webhook_endpoint(owner="alice", url="https://x.example/h", secret="s")
    db.endpoints.disable_webhook_endpoint(gone.id, now=datetime.now(UTC), reason="test")
    alice, _ = db.users.add_user("alice", "user")
    db.users.set_email(alice.id, "alice@example.com")

    job_id = ended(db, notify=True)
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://late.example/h", secret="s")
    db.users.set_email(alice.id, "elsewhere@example.com")

    assert destinations(db.deliveries.job_deliveries(job_id)) == [
        ("emit_done_webhook", f"endpoint {mine.id}"),
        ("emit_done_webhook", f"endpoint {everyone.id}"),
        ("emit_done_webhook", "alice@example.com"),
    ]
    assert all(d.waiting and d.attempts == 0 for d in db.deliveries.job_deliveries(job_id))


def test_an_address_is_a_recipient_only_when_the_job_asked_for_it(db: Database) -> None:
    alice, _ = db.users.add_user("alice", "user")
    db.users.set_email(alice.id, "alice@example.com")
    assert db.deliveries.job_deliveries(ended(db, "failed")) == []
    assert destinations(db.deliveries.job_deliveries(ended(db, "failed", notify=True))) == [
        ("emit_failed_webhook", "alice@example.com")
    ]


def test_a_reaped_job_is_announced_to_its_recipients_too(db: Database) -> None:
    endpoint = db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job = db.jobs.create_job(new_job())[0]
    db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    assert db.queue.reap_expired("reaper", grace_seconds=-120) == [job.id]
    assert destinations(db.deliveries.job_deliveries(job.id)) == [
        ("emit_failed_webhook", f"endpoint {endpoint.id}")
    ]


def test_a_canceled_job_has_no_announcement_and_no_recipients(db: Database) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job = db.jobs.create_job(new_job())[0]
    db.jobs.cancel_job(job.id, person="alice")
    assert db.deliveries.job_deliveries(job.id) == []


def test_an_attempt_is_recorded_only_under_the_announcements_claim(db: Database) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job_id = ended(db, "failed")
    now = datetime.now(UTC)
    claim = claimed(db, job_id, now)
    (delivery,) = db.deliveries.job_deliveries(job_id)
    stale = ClaimedEffect(effect=replace(claim.effect, claim_token=claim.token - 1), runner="r")
    later = now + timedelta(seconds=30)
    kwargs = {"status": 500, "problem": "HTTP 500", "delivered": False,
              "next_attempt_at": later, "give_up": False}  # fmt: skip
    assert not db.deliveries.record_delivery_attempt(stale.token, delivery.id, now=now, **kwargs)  # type: ignore[arg-type]
    assert db.deliveries.record_delivery_attempt(claim.token, delivery.id, now=now, **kwargs)  # type: ignore[arg-type]
    (after,) = db.deliveries.job_deliveries(job_id)
    assert (after.attempts, after.last_status, after.last_error) == (1, 500, "HTTP 500")
    assert abs(after.next_attempt_at - later) < timedelta(milliseconds=1)
    assert after.waiting


def test_one_destination_is_given_up_and_redriven_alone(db: Database) -> None:
    """Re-driving one destination makes it and its announcement due, and nothing else."""
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://b.example", secret="s")
    job_id = ended(db, "failed")
    now = datetime.now(UTC)
    claim = claimed(db, job_id, now)
    refused, reached = db.deliveries.job_deliveries(job_id)
    for delivery, delivered in ((refused, False), (reached, True)):
        assert db.deliveries.record_delivery_attempt(
            claim.token, delivery.id, now=now, status=200 if delivered else 403, problem=None,
            delivered=delivered, next_attempt_at=now, give_up=not delivered,
        )  # fmt: skip
    assert db.effects.retry_side_effect(
        claim, now=now, error="given up", next_attempt_at=now, give_up=True
    )
    assert [d.id for d in db.deliveries.given_up_deliveries()] == [refused.id]
    assert not db.deliveries.redrive_delivery(reached.id, now=now)  # delivered: nothing to do
    assert db.deliveries.redrive_delivery(refused.id, now=now)
    again, still = db.deliveries.job_deliveries(job_id)
    assert (again.waiting, again.redrives, still.delivered_at is not None) == (True, 1, True)
    effects = db.jobs.get_job(JobId(job_id)).side_effects
    (effect,) = [e for e in effects if e.effect == "emit_failed_webhook"]
    assert (effect.given_up_at, effect.completed_at) == (None, None)


def test_redriving_an_announcement_redrives_its_given_up_destinations(db: Database) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job_id = ended(db, "failed")
    now = datetime.now(UTC)
    claim = claimed(db, job_id, now)
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert db.deliveries.record_delivery_attempt(
        claim.token, delivery.id, now=now, status=None, problem="refused", delivered=False,
        next_attempt_at=now, give_up=True,
    )  # fmt: skip
    db.effects.retry_side_effect(
        claim, now=now, error="given up", next_attempt_at=now, give_up=True
    )
    assert db.effects.redrive_side_effect(job_id, "emit_failed_webhook", now=now)
    (after,) = db.deliveries.job_deliveries(job_id)
    assert (after.waiting, after.redrives) == (True, 1)


def test_a_purge_removes_the_delivery_records(db: Database) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
    job_id = ended(db, "failed")
    purge = db.retention.purge(datetime.now(UTC) + timedelta(days=1), person="olga")
    assert purge.deliveries == 1
    assert db.deliveries.job_deliveries(job_id) == []


def test_chat_channels_of_the_owner_and_global_ones_are_recipients_fixed_at_the_end(
    db: Database,
) -> None:
    """Each enabled chat channel of the owner, and each global one, gets its own record; a
    removed channel, another person's, or one added after the end does not."""
    everyone = db.channels.add_chat_channel(owner=None, name="#exports", url="https://c.example/a")
    mine = db.channels.add_chat_channel(owner="alice", name="@alice", url="https://c.example/b")
    db.channels.add_chat_channel(owner="bob", name="@bob", url="https://c.example/c")
    gone = db.channels.add_chat_channel(owner="alice", name="#old", url="https://c.example/d")
    assert db.channels.disable_chat_channel(gone.id, now=datetime.now(UTC), reason="test")
    endpoint = db.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")

    job_id = ended(db, "failed")
    db.channels.add_chat_channel(owner="alice", name="#late", url="https://c.example/e")

    assert destinations(db.deliveries.job_deliveries(job_id)) == [
        ("emit_failed_webhook", f"endpoint {endpoint.id}"),
        ("emit_failed_webhook", f"chat channel {everyone.id}"),
        ("emit_failed_webhook", f"chat channel {mine.id}"),
    ]
    assert [d.channel_id for d in db.deliveries.job_deliveries(job_id)] == [
        None,
        everyone.id,
        mine.id,
    ]


def test_a_delivery_names_exactly_one_destination(db: Database, raw: RawSql) -> None:
    """The database refuses a record with no destination or with two (0021's check)."""
    channel = db.channels.add_chat_channel(owner=None, name="#x", url="https://c.example/a")
    job_id = ended(db, "failed")
    (delivery,) = db.deliveries.job_deliveries(job_id)
    for columns in ("address = 'a@example.com'", "channel_id = NULL"):
        with pytest.raises(raw.errors, match=r"(?i)check"):
            raw.execute(f"UPDATE deliveries SET {columns} WHERE id = {delivery.id}")
    assert delivery.channel_id == channel.id


def test_the_chat_channels_migration_keeps_every_delivery_record(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Records written before 0021 (SQLite builds the table again) keep their ids, attempts and
    moments, and the trigger made again still fixes the webhook and e-mail recipients."""
    url = (
        str(request.getfixturevalue("empty_postgres_url"))
        if backend == "postgres"
        else f"sqlite:///{tmp_path / 'before.db'}"
    )
    chat = next(n for n, name, _ in migration_files(backend) if name == "chat_channels")
    with closing(open_database(url, GRAPH, check=False)) as old:
        old.schema.upgrade(to_version=chat - 1)
        old.endpoints.add_webhook_endpoint(owner="alice", url="https://a.example", secret="s")
        alice, _ = old.users.add_user("alice", "user")
        old.users.set_email(alice.id, "alice@example.com")
        job_id = ended(old, "failed", notify=True)
        now = datetime.now(UTC)
        claim = claimed(old, job_id, now)
        assert old.deliveries.record_delivery_attempt(
            claim.token, 1, now=now, status=503, problem="HTTP 503", delivered=False,
            next_attempt_at=now, give_up=True,
        )  # fmt: skip
    with closing(RawSql(url)) as raw:
        columns = "id, effect, endpoint_id, address, attempts, last_status, given_up_at"
        before = raw.execute(f"SELECT {columns} FROM deliveries ORDER BY id")
    with closing(open_database(url, GRAPH, check=False)) as new:
        assert new.schema.upgrade().current
        with closing(RawSql(url)) as raw:
            assert raw.execute(f"SELECT {columns} FROM deliveries ORDER BY id") == before
        assert [d.destination for d in new.deliveries.job_deliveries(job_id)] == [
            f"endpoint {before[0][2]}",
            "alice@example.com",
        ]
        channel = new.channels.add_chat_channel(owner=None, name="#x", url="https://c.example/a")
        later = ended(new, "failed", notify=True)
        assert [d.destination for d in new.deliveries.job_deliveries(later)] == [
            f"endpoint {before[0][2]}",
            "alice@example.com",
            f"chat channel {channel.id}",
        ]
