"""Retry schedule and Standard Webhooks signatures, checked against the reference library."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from reportexport.runners.effects.backoff import RetryPolicy
from reportexport.webhooks.sender import parse_retry_after
from reportexport.webhooks.signing import new_secret, signed_headers


def test_delays_grow_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(base_seconds=5, max_seconds=60)
    rng = random.Random(7)
    for attempts, ceiling in [(1, 5), (2, 10), (3, 20), (4, 40), (5, 60), (9, 60)]:
        delays = [policy.delay(attempts, rng) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1  # jittered


def test_retry_after_is_a_floor() -> None:
    assert RetryPolicy(base_seconds=1).delay(1, random.Random(1), retry_after=120) == 120


def test_giving_up_counts_attempts_since_the_last_redrive() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert not policy.gives_up(2, redrives=0)
    assert policy.gives_up(3, redrives=0)
    assert not policy.gives_up(3, redrives=1)
    assert policy.gives_up(6, redrives=1)


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_retry_after("30") == 30
    assert parse_retry_after("Thu, 01 Jan 2026 00:01:00 GMT", now=now) == 60
    assert parse_retry_after("soon") is None


def test_signatures_verify_with_the_reference_library() -> None:
    secret = new_secret()
    body = json.dumps({"type": "export.succeeded"})
    headers = signed_headers([secret], "msg_1_emit_done_webhook", datetime.now(UTC), body)
    assert Webhook(secret).verify(body, headers) == {"type": "export.succeeded"}


def test_during_rotation_either_secret_verifies() -> None:
    old, new = new_secret(), new_secret()
    body = "{}"
    headers = signed_headers([new, old], "msg_2", datetime.now(UTC), body)
    assert len(headers["webhook-signature"].split(" ")) == 2
    Webhook(old).verify(body, headers)
    Webhook(new).verify(body, headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(new_secret()).verify(body, headers)


def test_an_old_timestamp_is_refused_by_receivers() -> None:
    secret = new_secret()
    headers = signed_headers([secret], "msg_3", datetime.now(UTC) - timedelta(hours=1), "{}")
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify("{}", headers)


def test_the_runner_refuses_to_start_when_handlers_and_fixture_disagree() -> None:
    from frozen_lifecycle.graph import load_graph
    from reportexport.runners.effects.handlers import HANDLERS, check_handlers
    from tests.helpers import FIXTURE_PATH

    graph = load_graph(FIXTURE_PATH)
    check_handlers(graph)  # ours agree
    missing = {k: v for k, v in HANDLERS.items() if k != "delete_temp_object"}
    with pytest.raises(
        RuntimeError, match="no handler for the fixture's side effect 'delete_temp_object'"
    ):
        check_handlers(graph, missing)
    extra = {**HANDLERS, "send_fax": HANDLERS["delete_temp_object"]}
    with pytest.raises(RuntimeError, match="handler 'send_fax' names no side effect"):
        check_handlers(graph, extra)


def test_a_new_secret_is_24_random_bytes_in_the_standard_form() -> None:
    secrets = {new_secret() for _ in range(20)}
    assert len(secrets) == 20
    for secret in secrets:
        assert secret.startswith("whsec_")
        assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 24


def test_the_headers_are_the_standard_ones_spelled_as_sent() -> None:
    """Sent as written: the names in lower case, the timestamp in whole seconds, JSON."""
    secret = new_secret()
    moment = datetime(2026, 1, 1, 0, 0, 30, 900_000, tzinfo=UTC)
    headers = signed_headers([secret], "msg_4", moment, "{}")
    assert headers == {
        "webhook-id": "msg_4",
        "webhook-timestamp": "1767225630",
        "webhook-signature": Webhook(secret).sign("msg_4", moment, "{}"),
        "content-type": "application/json",
    }
