"""Announcements in chat through a real HTTP server on loopback (the webhook receiver): the
message is Slack's format with the e-mail's wording; each channel is one delivery with its own
backoff, giving up and re-drive; the host must be one `chat_hosts` names and pass the webhooks'
SSRF guard."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from reportexport.core.records import JobId
from reportexport.objects import ObjectStore
from reportexport.runners.effects.runner import EffectsRunner
from reportexport.store import Database
from reportexport.webhooks.signing import new_secret
from tests.effects.receiver import Receiver
from tests.helpers import Clock, failed_job, make_runner, succeeded_job

ORDERS = {"title": "Orders of one day"}
DAY = {"day": "2026-12-02"}


def chat_runner(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock,
    hosts: Sequence[str] = ("127.0.0.1",), **settings: Any,
) -> EffectsRunner:  # fmt: skip
    runner = make_runner(db, objects, http, clock, **settings)
    runner.context.chat_hosts = tuple(hosts)
    return runner


def message(receiver: Receiver, index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(receiver.received[index].body)
    return found


def effect_row(db: Database, job_id: int, effect: str) -> Any:
    return {e.effect: e for e in db.jobs.get_job(JobId(job_id)).side_effects}[effect]  # type: ignore[union-attr]


def test_a_succeeded_export_is_posted_to_its_owners_channel_and_the_global_one(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    mine = db.channels.add_chat_channel(owner="alice", name="@alice", url=receiver.url + "/a")
    everyone = db.channels.add_chat_channel(owner=None, name="#exports", url=receiver.url + "/g")
    db.channels.add_chat_channel(owner="bob", name="@bob", url=receiver.url + "/b")
    job_id = succeeded_job(db, objects, options=ORDERS, parameters=DAY)
    runner = chat_runner(db, objects, http, clock)
    assert runner.run_once() == 2
    assert sorted(r.path for r in receiver.received) == ["/hooks/a", "/hooks/g"]
    assert {r.headers["content-type"] for r in receiver.received} == {"application/json"}
    posted = message(receiver)
    link = f"http://127.0.0.1:8000/jobs/{job_id}"
    assert posted["text"] == (
        "Export Orders of one day (alice) is ready.\n"
        f"• day: 2026-12-02\n• rows: 1\n• file: orders.csv\nOpen it: {link}"
    )
    first, facts, actions = posted["blocks"]
    assert first == {
        "type": "section",
        "text": {"type": "mrkdwn", "text": "Export Orders of one day (alice) is ready."},
    }
    assert facts["text"]["text"] == "• day: 2026-12-02\n• rows: 1\n• file: orders.csv"
    (button,) = actions["elements"]
    assert (button["type"], button["url"]) == ("button", link)
    deliveries = db.deliveries.job_deliveries(job_id)
    assert [(d.channel_id, d.attempts, d.last_status) for d in deliveries] == [
        (mine.id, 1, 200),
        (everyone.id, 1, 200),
    ]
    assert all(d.delivered_at is not None for d in deliveries)
    assert effect_row(db, job_id, "emit_done_webhook").completed_at is not None
    clock.advance(24 * 3600)
    assert runner.run_once() == 0  # delivered once: never sent again
    assert len(receiver.received) == 2


def test_a_failed_export_says_the_reason_and_the_parameters_and_values_are_inert(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """A value cannot notify a whole channel (`<!channel>`, `@here`) nor make a link."""
    db.channels.add_chat_channel(owner=None, name="#exports", url=receiver.url)
    hostile = {"day": "2026-12-02 <!channel> @here <https://evil.example|click>\nmore"}
    failed_job(db, options={"title": "Orders & <b>more</b>"}, parameters=hostile)
    chat_runner(db, objects, http, clock).run_once()
    posted = message(receiver)
    lines = posted["text"].split("\n")
    assert lines[0] == "Export Orders &amp; &lt;b&gt;more&lt;/b&gt; (alice) did not succeed."
    assert lines[1] == (
        "• day: 2026-12-02 &lt;!channel&gt; @\u2060here &lt;https://evil.example|click&gt; more"
    )
    assert lines[2] == "• reason: column x does not exist"
    assert "<" not in json.dumps(posted["blocks"][:2])


def test_a_channel_that_fails_is_tried_again_with_backoff_and_delivered_once(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    channel = db.channels.add_chat_channel(owner="alice", name="@alice", url=receiver.url)
    receiver.script = [(503, {}, 0.0)]
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = chat_runner(db, objects, http, clock)
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.channel_id, delivery.attempts, delivery.last_status) == (channel.id, 1, 503)
    assert (delivery.waiting, delivery.last_error) == (True, "HTTP 503")
    assert delivery.next_attempt_at > clock()
    assert runner.run_once() == 0  # not due yet
    clock.advance(3600)
    assert runner.run_once() == 1
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.delivered_at is not None) == (2, True)
    assert len(receiver.received) == 2


def test_a_channel_refused_for_good_is_given_up_alone_and_an_operator_redrives_it(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """A 404 (Slack's `no_service`) gives that channel up at once; the webhook endpoint still
    gets its event; a re-drive sends the channel the message again, and nothing else."""
    endpoint = db.endpoints.add_webhook_endpoint(
        owner="alice", url=receiver.url, secret=new_secret()
    )
    channel = db.channels.add_chat_channel(owner="alice", name="@alice", url=receiver.url + "/c")
    receiver.script = [(200, {}, 0.0), (404, {}, 0.0)]  # the endpoint first, then the channel
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = chat_runner(db, objects, http, clock)
    runner.run_once()
    hook, chat = db.deliveries.job_deliveries(job_id)
    assert (hook.endpoint_id, hook.delivered_at is not None) == (endpoint.id, True)
    assert (chat.channel_id, chat.attempts, chat.given_up_at is not None) == (channel.id, 1, True)
    assert chat.last_error == "HTTP 404: the chat service refuses the message"
    assert [d.id for d in db.deliveries.given_up_deliveries()] == [chat.id]
    row = effect_row(db, job_id, "emit_failed_webhook")
    assert row.last_error == (
        f"given up: chat channel {channel.id}: HTTP 404: the chat service refuses the message"
    )
    clock.advance(24 * 3600)
    assert runner.run_once() == 0

    assert db.deliveries.redrive_delivery(chat.id, now=clock())
    assert runner.run_once() == 1
    assert [r.path for r in receiver.received] == ["/hooks", "/hooks/c", "/hooks/c"]
    assert effect_row(db, job_id, "emit_failed_webhook").completed_at is not None


def test_a_host_chat_hosts_does_not_name_is_given_up_at_once_and_sent_nothing(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    db.channels.add_chat_channel(owner="alice", name="@alice", url=receiver.url)
    first = failed_job(db, options=ORDERS, parameters=DAY)
    chat_runner(db, objects, http, clock, hosts=()).run_once()
    (none_allowed,) = db.deliveries.job_deliveries(first)
    assert (none_allowed.attempts, none_allowed.given_up_at is not None) == (1, True)
    assert none_allowed.last_error == (
        "no chat host is allowed here: the setting chat_hosts is empty (an operator names the "
        "chat service's host there, such as hooks.slack.com)"
    )
    second = failed_job(db, options=ORDERS, parameters=DAY)
    chat_runner(db, objects, http, clock, hosts=("hooks.slack.com",)).run_once()
    (elsewhere,) = db.deliveries.job_deliveries(second)
    assert elsewhere.given_up_at is not None
    assert elsewhere.last_error == (
        "127.0.0.1 is not a chat host allowed here (chat_hosts: hooks.slack.com)"
    )
    assert receiver.received == []


def test_a_chat_host_goes_through_the_webhooks_ssrf_guard(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    """A name that resolves to loopback is refused unless `webhooks_allow_private` allows it;
    then the message goes to the address that was checked."""
    port = urlsplit(receiver.url).port
    db.channels.add_chat_channel(
        owner="alice", name="@alice", url=f"http://chat.example:{port}/hooks/x"
    )
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    runner = chat_runner(db, objects, http, clock, hosts=("chat.example",))
    runner.context.resolver = lambda host, port: ["127.0.0.1"]
    runner.context.allow_private = False
    runner.run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.attempts, delivery.waiting) == (1, True)
    assert delivery.last_error == "chat.example resolves to 127.0.0.1 is loopback"
    assert receiver.received == []

    runner.context.allow_private = True
    clock.advance(3600)
    assert runner.run_once() == 1
    (received,) = receiver.received
    assert (received.path, received.headers["host"]) == ("/hooks/x", f"chat.example:{port}")


def test_a_removed_channel_is_given_up_and_holds_its_announcement_open_no_longer(
    db: Database, objects: ObjectStore, http: httpx.Client, clock: Clock, receiver: Receiver
) -> None:
    channel = db.channels.add_chat_channel(owner="alice", name="@alice", url=receiver.url)
    job_id = failed_job(db, options=ORDERS, parameters=DAY)
    assert db.channels.disable_chat_channel(channel.id, now=clock(), reason="removed by olga")
    chat_runner(db, objects, http, clock).run_once()
    (delivery,) = db.deliveries.job_deliveries(job_id)
    assert (delivery.given_up_at is not None, delivery.last_error) == (
        True,
        "the chat channel was removed",
    )
    row = effect_row(db, job_id, "emit_failed_webhook")
    assert (row.completed_at is not None, row.given_up_at) == (True, None)
    assert receiver.received == []
