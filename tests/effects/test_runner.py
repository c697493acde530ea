"""The effects runner against real stores and a real HTTP receiver on loopback."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook

from reportexport.objects import ObjectStore
from reportexport.store import Database
from reportexport.webhooks.signing import new_secret
from tests.effects.receiver import Receiver
from tests.helpers import Clock, failed_job, make_runner, succeeded_job


def effects_of(db: Database, job_id: int) -> dict[str, Any]:
    return {e.effect: e for e in db.jobs.get_job(job_id).side_effects}  # type: ignore[arg-type]


def test_a_succeeded_export_sends_one_signed_event_to_the_owner_and_the_global_endpoint(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    mine = db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    everyone = db.endpoints.add_webhook_endpoint(
        owner=None, url=receiver.url + "/all", secret=new_secret()
    )
    db.endpoints.add_webhook_endpoint(owner="bob", url=receiver.url + "/bob", secret=new_secret())
    job_id = succeeded_job(db, objects)
    runner = make_runner(db, objects, http, clock)
    assert runner.run_once() == 2
    assert len(receiver.received) == 2
    for delivery, endpoint in zip(receiver.received, (mine, everyone), strict=True):
        event = Webhook(endpoint.secret).verify(delivery.body, delivery.headers)
        assert delivery.headers["webhook-id"] == f"msg_{job_id}_emit_done_webhook"
        assert event["type"] == "export.succeeded"
        data = event["data"]
        assert (data["job_id"], data["status"], data["rows"], data["bytes"]) == (
            job_id, "succeeded", 1, 8
        )  # fmt: skip
        assert data["columns"] == ["a", "b"]
        assert (data["column_types"], data["dialect_version"]) == (["integer", "text"], 2)
        assert data["file_name"] == "orders.csv"
        assert data["download_url"].startswith("http://127.0.0.1:8000/api/downloads/")
        assert data["download_expires_at"]
    effects = effects_of(db, job_id)
    assert all(e.completed_at is not None and e.attempts == 1 for e in effects.values())
    assert effects["write_csv_object"].last_error is None
    assert runner.run_once() == 0  # nothing is sent twice


def test_the_webhook_download_link_lives_the_link_setting(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """The link in a succeeded export's webhook expires `link_seconds` after it is sent (it
    lived 24 hours whatever the setting said)."""
    endpoint = db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url, secret=new_secret()
    )
    succeeded_job(db, objects)
    sent_from = clock()
    assert make_runner(db, objects, http, clock, link_seconds=600).run_once() == 2
    (delivery,) = receiver.received
    data = Webhook(endpoint.secret).verify(delivery.body, delivery.headers)["data"]
    expires = datetime.fromisoformat(data["download_expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=600) <= expires - sent_from <= timedelta(seconds=600 + 60)


def test_a_failed_export_sends_its_error(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    secret = new_secret()
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=secret)
    failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    (delivery,) = receiver.received
    event = Webhook(secret).verify(delivery.body, delivery.headers)
    assert event["type"] == "export.failed"
    assert (event["data"]["error_code"], event["data"]["error_message"]) == (
        "query_error", "column x does not exist"
    )  # fmt: skip
    assert "download_url" not in event["data"]


def test_a_receiver_that_fails_k_times_gets_the_event_on_attempt_k_plus_1(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    receiver.script = [(500, {}, 0.0)] * 3
    job_id = failed_job(db)
    runner = make_runner(db, objects, http, clock)
    gaps = []
    for attempt in range(1, 5):
        assert runner.run_once() == 1
        row = effects_of(db, job_id)["emit_failed_webhook"]
        assert row.attempts == attempt
        if row.completed_at is None:
            gaps.append((row.next_attempt_at - row.last_attempt_at).total_seconds())
            assert runner.run_once() == 0  # not due yet
            clock.advance(gaps[-1])
    assert effects_of(db, job_id)["emit_failed_webhook"].completed_at is not None
    assert len(set(receiver.ids())) == 1
    assert len(receiver.received) == 4
    base = runner.settings.policy.base_seconds
    for n, gap in enumerate(gaps, start=1):  # exponential with jitter: [half, all] of base*2^(n-1)
        assert base * 2 ** (n - 1) / 2 <= gap <= base * 2 ** (n - 1)


def test_retry_after_is_honoured(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    receiver.script = [(503, {"Retry-After": "600"}, 0.0)]
    job_id = failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert (row.next_attempt_at - row.last_attempt_at).total_seconds() >= 600
    assert row.last_error is not None
    assert "HTTP 503" in row.last_error


def test_a_redirect_is_not_followed(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    receiver.script = [(302, {"Location": "http://127.0.0.1:1/elsewhere"}, 0.0)]
    job_id = failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert row.completed_at is None
    assert "HTTP 302" in (row.last_error or "")


def test_410_disables_the_endpoint(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    endpoint = db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url, secret=new_secret()
    )
    receiver.script = [(410, {}, 0.0)]
    job_id = failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    assert db.endpoints.get_webhook_endpoint(endpoint.id).disabled_at is not None
    assert effects_of(db, job_id)["emit_failed_webhook"].completed_at is not None
    failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    assert len(receiver.received) == 1  # the disabled endpoint gets nothing more


def test_after_the_cap_a_row_stays_given_up_until_redriven(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    from reportexport.runners.effects.backoff import RetryPolicy

    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    receiver.script = [(500, {}, 0.0)] * 2
    job_id = failed_job(db)
    runner = make_runner(db, objects, http, clock, policy=RetryPolicy(max_attempts=2))
    runner.run_once()
    clock.advance(3600)
    runner.run_once()
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert (row.attempts, row.given_up_at is not None) == (2, True)
    clock.advance(10 * 3600)
    assert runner.run_once() == 0  # given up: visible, not retried
    assert db.effects.given_up_side_effects()[0].job_id == job_id
    assert db.effects.redrive_side_effect(job_id, "emit_failed_webhook", now=clock())
    assert runner.run_once() == 1
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert (row.attempts, row.redrives, row.completed_at is not None) == (3, 1, True)


def test_a_rotated_secret_signs_with_both_during_the_overlap(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    from datetime import timedelta

    old = new_secret()
    endpoint = db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=old)
    new = new_secret()
    db.endpoints.rotate_webhook_secret(endpoint.id, secret=new, until=clock() + timedelta(hours=1))
    failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    (delivery,) = receiver.received
    assert len(delivery.headers["webhook-signature"].split()) == 2  # both secrets sign
    Webhook(old).verify(delivery.body, delivery.headers)
    Webhook(new).verify(delivery.body, delivery.headers)


def test_a_private_destination_is_refused_without_the_development_setting(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    from reportexport.runners.effects.handlers import Context
    from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings
    from tests.helpers import GRAPH

    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    job_id = failed_job(db)
    context = Context(
        store=db.endpoints,
        deliveries=db.deliveries,
        objects=objects,
        client=http,
        clock=clock,
        allow_private=False,
    )
    EffectsRunner(db, context, GRAPH, RunnerSettings(), clock=clock).run_once()
    assert receiver.received == []
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert "127.0.0.1 is an address: webhook URLs name their host" in (row.last_error or "")


@pytest.mark.parametrize("store", ["local", "s3"])
def test_delete_temp_object_removes_a_canceled_jobs_temp_object(
    db: Database, http: httpx.Client, clock: Clock, store: str, tmp_path: Any,
    request: pytest.FixtureRequest,
) -> None:  # fmt: skip
    from reportexport.objects import open_object_store
    from tests.helpers import new_bucket, new_job

    if store == "local":
        objects = open_object_store(f"file://{tmp_path / 'objects'}", link_secret=b"links")
    else:
        objects = open_object_store(new_bucket(request.getfixturevalue("s3_endpoint")))

    job = db.jobs.create_job(new_job())[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    temp = objects.create_temp(job.id, claim.lease.token, f"exports/{job.id}/x.csv")
    temp.write(b"half")
    db.queue.record_progress(claim.lease, rows=None, bytes_written=4, temp_key=temp.key)
    db.jobs.cancel_job(job.id, person="alice")
    make_runner(db, objects, http, clock).run_once()
    assert list(objects.list_objects()) == []
    assert effects_of(db, job.id)["delete_temp_object"].completed_at is not None
    temp.abort()


def test_a_tampered_object_is_an_alarm_not_a_rerun(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock
) -> None:
    job_id = succeeded_job(db, objects)
    key = db.jobs.get_job(job_id).job.object_key  # type: ignore[arg-type]
    objects.delete(key or "")
    make_runner(db, objects, http, clock).run_once()
    row = effects_of(db, job_id)["write_csv_object"]
    assert row.completed_at is not None
    assert (row.last_error or "").startswith("ALARM: no object at")
    assert db.jobs.get_job(job_id).job.status == "succeeded"  # type: ignore[arg-type]


def test_no_endpoint_means_nothing_to_send(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock
) -> None:
    job_id = failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert (row.completed_at is not None, row.last_error) == (True, "no webhook endpoint")


def test_payloads_are_json_with_the_fixture_status(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.endpoints.add_webhook_endpoint(owner="alice", url=receiver.url, secret=new_secret())
    failed_job(db)
    make_runner(db, objects, http, clock).run_once()
    assert json.loads(receiver.received[0].body)["data"]["status"] == "failed"


def test_a_name_without_an_answer_costs_one_attempt_within_the_delivery_limit(
    db: Database,
    objects: ObjectStore,
    http: httpx.Client,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """getaddrinfo has no timeout: where DNS does not answer, the runner's own limit ends the
    attempt, which is retried with backoff like any failed delivery."""
    import socket
    import time

    from reportexport.runners.effects.handlers import DELIVERY_RESOLVE_SECONDS, Context
    from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings
    from tests.helpers import GRAPH

    def no_answer(*args: object, **kwargs: object) -> object:
        time.sleep(DELIVERY_RESOLVE_SECONDS + 5)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", no_answer)
    db.endpoints.add_webhook_endpoint(
        owner="alice", url="https://hooks.example.com/in", secret=new_secret()
    )
    job_id = failed_job(db)
    context = Context(
        store=db.endpoints, deliveries=db.deliveries, objects=objects, client=http, clock=clock
    )
    runner = EffectsRunner(db, context, GRAPH, RunnerSettings(), clock=clock)
    started = time.monotonic()
    assert runner.run_once() == 1
    assert time.monotonic() - started < DELIVERY_RESOLVE_SECONDS + 4
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert (row.attempts, row.completed_at) == (1, None)
    assert row.last_error == (
        f"endpoint 1: hooks.example.com does not resolve: no answer within "
        f"{DELIVERY_RESOLVE_SECONDS:g} s"
    )


def test_a_stopping_runner_leaves_what_it_has_not_sent_to_the_next_claim_unattempted(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """A runner told to stop does not work through its batch (each delivery can take seconds):
    it stops between deliveries, counts no attempt, and whoever claims the row next sends only
    to the endpoints not yet reached, with the same webhook-id."""
    from reportexport.runners.effects.handlers import Context
    from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings
    from tests.helpers import GRAPH

    port = receiver.url.split(":")[2].split("/")[0]
    for path in ("first", "second"):
        db.endpoints.add_webhook_endpoint(
            owner="alice", url=f"http://receiver.test:{port}/hooks/{path}", secret=new_secret()
        )
    job_ids = [failed_job(db) for _ in range(3)]
    stopping = threading.Event()

    def resolve_then_stop(host: str, port: int) -> list[str]:
        stopping.set()  # the runner is told to stop while it delivers to the first endpoint
        return ["127.0.0.1"]

    context = Context(
        store=db.endpoints, deliveries=db.deliveries, objects=objects, client=http, clock=clock,
        allow_private=True, resolver=resolve_then_stop, stopping=stopping,
    )  # fmt: skip
    runner = EffectsRunner(db, context, GRAPH, RunnerSettings(claim_seconds=60), clock=clock)
    assert runner.run_once() == 0
    assert [d.path for d in receiver.received] == ["/hooks/first"]
    rows = [effects_of(db, job_id)["emit_failed_webhook"] for job_id in job_ids]
    assert [(row.attempts, row.completed_at, row.last_error) for row in rows] == [
        (0, None, None)
    ] * 3

    clock.advance(61)  # the stopped runner's claims expire
    again = Context(store=db.endpoints, deliveries=db.deliveries, objects=objects, client=http,
                    clock=clock, allow_private=True,
                    resolver=lambda host, port: ["127.0.0.1"])  # fmt: skip
    assert EffectsRunner(db, again, GRAPH, RunnerSettings(), clock=clock).run_once() == 3
    paths = [d.path for d in receiver.received]
    assert (paths.count("/hooks/first"), paths.count("/hooks/second")) == (3, 3)
    first = f"msg_{job_ids[0]}_emit_failed_webhook"
    assert [d.path for d in receiver.received if d.headers["webhook-id"] == first] == [
        "/hooks/first", "/hooks/second"
    ]  # fmt: skip


def test_each_endpoint_has_its_own_backoff_and_is_given_up_alone(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """An endpoint that keeps failing is given up after its own attempts while the other one,
    delivered at once, is never sent the event again; re-driving it alone sends it once more."""
    from reportexport.runners.effects.backoff import RetryPolicy

    failing = db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url + "/failing", secret=new_secret()
    )
    db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url + "/fine", secret=new_secret()
    )
    receiver.script = [(500, {}, 0.0), (200, {}, 0.0), (500, {}, 0.0)]
    job_id = failed_job(db)
    runner = make_runner(db, objects, http, clock, policy=RetryPolicy(max_attempts=2))
    assert runner.run_once() == 1
    bad, good = db.deliveries.job_deliveries(job_id)
    assert (bad.endpoint_id, bad.attempts, bad.waiting) == (failing.id, 1, True)
    assert (good.attempts, good.delivered_at is not None) == (1, True)
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert row.next_attempt_at >= bad.next_attempt_at  # due with its first waiting destination
    assert runner.run_once() == 0
    clock.advance(3600)
    assert runner.run_once() == 1
    bad, good = db.deliveries.job_deliveries(job_id)
    assert (bad.attempts, bad.given_up_at is not None, good.attempts) == (2, True, 1)
    row = effects_of(db, job_id)["emit_failed_webhook"]
    assert row.given_up_at is not None
    assert row.last_error == f"given up: endpoint {failing.id}: HTTP 500"
    assert [d.path for d in receiver.received] == [
        "/hooks/failing",
        "/hooks/fine",
        "/hooks/failing",
    ]

    assert db.deliveries.redrive_delivery(bad.id, now=clock())
    assert runner.run_once() == 1
    assert [d.path for d in receiver.received][3:] == ["/hooks/failing"]
    bad, good = db.deliveries.job_deliveries(job_id)
    assert (bad.attempts, bad.redrives, bad.delivered_at is not None) == (3, 1, True)
    assert effects_of(db, job_id)["emit_failed_webhook"].completed_at is not None
    assert len(set(receiver.ids())) == 1  # one event id however many attempts
