"""One handler per side-effect name of the fixture, registered by its function name.

A fixture effect without a handler, or a handler for a name the fixture lacks, stops the
runner at start-up (`check_handlers`) and fails the gate. Handlers are idempotent: a row may
be handled again after a crash, and doing it twice must change nothing.
"""

from __future__ import annotations

import gzip
import io
import json
import logging
import math
import random
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import httpx

from frozen_lifecycle.graph import Graph
from reportexport.chat.hosts import chat_host_refusal
from reportexport.chat.message import chat_message
from reportexport.core.lifecycle import Effect, is_effect
from reportexport.core.links import sign_unsubscribe
from reportexport.core.records import NO_ENDPOINT_NOTE, Delivery, ScheduleAddress, SideEffect
from reportexport.core.settings import default, host_names
from reportexport.mail.message import (
    Announcement,
    Attachment,
    build_message,
    domain_refusal,
    is_mailbox,
    one_line,
)
from reportexport.mail.smtp import SmtpServer
from reportexport.mail.smtp import send as send_mail
from reportexport.objects import ObjectStore, ObjectStoreError
from reportexport.pipeline.export import verify_published
from reportexport.runners.effects.backoff import RetryPolicy
from reportexport.store import ChatChannels, Deliveries, Job, Users, WebhookEndpoints
from reportexport.webhooks.resolving import within
from reportexport.webhooks.sender import send
from reportexport.webhooks.signing import signed_headers
from reportexport.webhooks.ssrf import (
    Resolver,
    UnsafeDestinationError,
    check_destination,
    system_resolver,
)

log = logging.getLogger("reportexport.effects")

# A delivery's name gets this long to resolve, so a DNS server that does not answer costs one
# attempt (retried with backoff), not a runner stuck for as long as getaddrinfo waits.
DELIVERY_RESOLVE_SECONDS = 5.0
delivery_resolver = within(system_resolver, DELIVERY_RESOLVE_SECONDS)

# Why an address is given up at its first attempt where e-mail is not set up.
NO_SMTP_SERVER = "no SMTP server is configured (smtp_host)"
# The window of the daily cap on e-mails to one address.
DAY = timedelta(hours=24)


class StoppingError(Exception):
    """The runner is stopping: the row is left to its claim's expiry, not counted an attempt."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """Finished, or to be tried again no sooner than retry_after seconds; the note is kept.

    A handler that keeps a backoff per destination says itself in how many seconds the row is
    due again (`due_in`: when its first waiting destination is) or that it is given up
    (`give_up`); the runner's policy decides otherwise."""

    done: bool
    note: str | None = None
    retry_after: float | None = None
    due_in: float | None = None
    give_up: bool = False


@dataclass(kw_only=True)
class Context:
    store: WebhookEndpoints
    deliveries: Deliveries
    objects: ObjectStore
    client: httpx.Client
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    resolver: Resolver = delivery_resolver
    allow_private: bool = False
    public_url: str = default("public_url")
    # How long the download link in a succeeded export's webhook works.
    link_seconds: int = default("link_seconds")
    # Set when the runner stops: a handler with several deliveries to make stops between them.
    stopping: threading.Event = field(default_factory=threading.Event)
    # Each destination's backoff (the runner puts its own policy and random source here).
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    rng: random.Random = field(default_factory=random.Random)
    # Where announcements by e-mail go out (None: e-mail is not set up; addresses are given up).
    mail: SmtpServer | None = None
    # The only domains e-mail goes to (the setting `email_domains`; empty: any domain).
    email_domains: tuple[str, ...] = host_names(default("email_domains"))
    # The most e-mails one address receives in 24 hours (`email_daily_cap`).
    email_daily_cap: int = default("email_daily_cap")
    # Chat channels, and the only hosts their URLs may name (`chat_hosts`; empty: none).
    channels: ChatChannels | None = None
    chat_hosts: tuple[str, ...] = host_names(default("chat_hosts"))
    # People (who asked for an e-mail whenever an export ends), and the secret that signs the
    # link that stops it (None: e-mails carry no unsubscribe link).
    users: Users | None = None
    link_secret: bytes | None = None
    # Why a person other than the owner (a schedule's recipient) may not be sent a job's
    # announcement at an address now; None when they may. Without it, e-mails go to owners alone.
    recipient_refusal: Callable[[str, Job, str], str | None] | None = None
    # An outside address of a schedule not deleted, as it is now (None: no longer one); without
    # it, e-mails go to people of this service alone.
    schedule_address: Callable[[int, str], ScheduleAddress | None] | None = None
    # Why a job's owner may no longer download its file (None when they may): the file goes to
    # an outside address exactly when its download link would work.
    owner_refusal: Callable[[Job], str | None] | None = None


Handler = Callable[[Context, Job, SideEffect], Outcome]
HANDLERS: dict[Effect, Handler] = {}


def side_effect_handler(function: Handler) -> Handler:
    """Register `function` as the handler of the side effect it is named after."""
    name = function.__name__
    if not is_effect(name):
        raise ValueError(f"handler {name!r} names no side effect of the fixture")
    HANDLERS[name] = function
    return function


def check_handlers(graph: Graph, handlers: Mapping[Effect, Handler] = HANDLERS) -> None:
    missing = sorted(set(graph.effect_names) - set(handlers))
    unknown = sorted(set(handlers) - set(graph.effect_names))
    problems = [f"no handler for the fixture's side effect {name!r}" for name in missing]
    problems += [f"handler {name!r} names no side effect of the fixture" for name in unknown]
    if problems:
        raise RuntimeError("; ".join(problems))


@side_effect_handler
def write_csv_object(ctx: Context, job: Job, effect: SideEffect) -> Outcome:
    """Check the object published before `succeeded`: an alarm if wrong, never a re-run."""
    problems = verify_published(job, ctx.objects)
    if problems:
        log.error("job %s: the published object does not match its job: %s", job.id, problems,
                  extra={"job_id": job.id, "effect": effect.effect})  # fmt: skip
        return Outcome(done=True, note="ALARM: " + "; ".join(problems))
    return Outcome(done=True)


@side_effect_handler
def emit_done_webhook(ctx: Context, job: Job, effect: SideEffect) -> Outcome:
    return _emit(ctx, job, effect, "export.succeeded")


@side_effect_handler
def emit_failed_webhook(ctx: Context, job: Job, effect: SideEffect) -> Outcome:
    return _emit(ctx, job, effect, "export.failed")


@side_effect_handler
def delete_temp_object(ctx: Context, job: Job, effect: SideEffect) -> Outcome:
    """Remove whatever a canceled run had written (the worker tries first, the sweeper last)."""
    if job.temp_key is not None:
        ctx.objects.delete(job.temp_key)
    return Outcome(done=True)


def message_id(job_id: int, effect: Effect) -> str:
    """Stable per (job, effect): every attempt of one event carries the same webhook-id."""
    return f"msg_{job_id}_{effect}"


def event_payload(ctx: Context, job: Job, event_type: str, now: datetime) -> dict[str, object]:
    data: dict[str, object] = {
        "job_id": job.id,
        "saved_query": job.saved_query,
        "status": job.status,
        "created_at": job.created_at.isoformat(),
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }
    if job.schedule_id is not None:
        data["schedule_id"] = job.schedule_id
    if event_type == "export.succeeded" and job.object_key is not None:
        link, expires = download_link(ctx, job, now)
        data.update(
            download_url=link,
            download_expires_at=expires.isoformat(),
            rows=job.object_rows,
            bytes=job.object_bytes,
            sha256=job.object_sha256,
            columns=list(job.columns or ()),
            column_types=list(job.column_types or ()),
            dialect_version=job.dialect_version,
            file_name=job.file_name,
        )
    if event_type == "export.failed":
        data.update(error_code=job.error_code, error_message=job.error_message)
    return {"type": event_type, "timestamp": now.isoformat(), "data": data}


def download_link(ctx: Context, job: Job, now: datetime) -> tuple[str, datetime]:
    """A signed link to a succeeded job's file, working for `link_seconds` or until the file
    expires, whichever comes first, and when it stops working."""
    assert job.object_key is not None
    expires = now + timedelta(seconds=ctx.link_seconds)
    if job.object_expires_at is not None:
        expires = min(expires, job.object_expires_at)
    seconds = max(1, int((expires - now).total_seconds()))
    link = ctx.objects.download_url(job.object_key, job.file_name or "export.csv", seconds)
    return (link if link.startswith("http") else ctx.public_url.rstrip("/") + link), expires


def _emit(ctx: Context, job: Job, effect: SideEffect, event_type: str) -> Outcome:
    """Try each destination of the announcement that is due, each with its own backoff; the
    row is due again when the first waiting destination is, and given up when none waits and
    one that still exists was given up."""
    now = ctx.clock()
    deliveries = ctx.deliveries.effect_deliveries(job.id, effect.effect)
    if not deliveries:
        return Outcome(done=True, note=NO_ENDPOINT_NOTE)
    body: str | None = None
    for delivery in deliveries:
        # A destination never tried is due however the database's clock and this one differ.
        if not delivery.waiting or (delivery.attempts and delivery.next_attempt_at > now):
            continue
        if ctx.stopping.is_set():
            raise StoppingError(f"stopped before delivering to {delivery.destination}")
        if delivery.endpoint_id is not None:
            if body is None:
                body = json.dumps(event_payload(ctx, job, event_type, now), separators=(",", ":"))
            attempt = _to_endpoint(ctx, job, effect, delivery.endpoint_id, body, now)
        elif delivery.channel_id is not None:
            succeeded = event_type == "export.succeeded"
            attempt = _to_channel(ctx, job, effect, delivery.channel_id, succeeded=succeeded)
        elif delivery.person is None:
            attempt = _to_outside_address(ctx, job, effect, delivery, event_type, now)
        else:
            attempt = _to_person(ctx, job, effect, delivery, event_type, now)
        attempts = delivery.attempts + 1
        give_up = not attempt.delivered and (
            attempt.refused or ctx.policy.gives_up(attempts, delivery.redrives)
        )
        delay = ctx.policy.delay(attempts, ctx.rng, attempt.retry_after)
        ctx.deliveries.record_delivery_attempt(
            effect.claim_token, delivery.id, now=now, status=attempt.status,
            problem=attempt.problem, delivered=attempt.delivered,
            next_attempt_at=now + timedelta(seconds=delay), give_up=give_up,
        )  # fmt: skip
        if give_up:
            log.error("job %s: %s to %s given up after %s attempts: %s", job.id, effect.effect,
                      delivery.destination, attempts, attempt.problem,
                      extra={"job_id": job.id, "effect": effect.effect})  # fmt: skip
    return _summary(ctx, job, ctx.deliveries.effect_deliveries(job.id, effect.effect), now)


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One try at one destination: delivered, or a problem, refused for good or not."""

    delivered: bool = False
    status: int | None = None
    problem: str | None = None
    refused: bool = False  # a permanent refusal: given up at once, alone
    retry_after: float | None = None


def _to_endpoint(
    ctx: Context, job: Job, effect: SideEffect, endpoint_id: int, body: str, now: datetime
) -> Attempt:
    endpoint = ctx.store.get_webhook_endpoint(endpoint_id)
    if endpoint.disabled_at is not None:
        return Attempt(problem="the endpoint was removed", refused=True)
    try:
        destination = check_destination(
            endpoint.url, resolver=ctx.resolver, allow_private=ctx.allow_private
        )
    except UnsafeDestinationError as exc:
        return Attempt(problem=str(exc))
    headers = signed_headers(endpoint.secrets(now), message_id(job.id, effect.effect), now, body)
    response = send(ctx.client, destination, headers, body)
    if response.gone:
        ctx.store.disable_webhook_endpoint(
            endpoint.id, now=now, reason="the receiver answered 410 Gone"
        )
        return Attempt(status=response.status, problem="HTTP 410: the endpoint is gone",
                       refused=True)  # fmt: skip
    return Attempt(
        delivered=response.ok,
        status=response.status,
        problem=response.error,
        retry_after=response.retry_after,
    )


def _to_person(
    ctx: Context, job: Job, effect: SideEffect, delivery: Delivery, event_type: str, now: datetime
) -> Attempt:
    """An e-mail to its owner, or to a recipient of the schedule that made the job while they
    may still see its file (access is checked again as it goes: a recipient who lost it since
    the job ended is given up alone, with the reason)."""
    address = delivery.address or ""
    recipient = delivery.person
    if recipient is not None and recipient != job.owner:
        if ctx.recipient_refusal is None:
            return Attempt(problem="this runner sends e-mails to owners only", refused=True)
        refusal = ctx.recipient_refusal(recipient, job, address)
        if refusal is not None:
            return Attempt(problem=refusal, refused=True)
    refused = _address_refusal(ctx, address, now)
    if refused is not None:
        return refused
    said = announcement(ctx, job, effect, succeeded=event_type == "export.succeeded")
    if recipient is not None and recipient != job.owner and job.schedule_id is not None:
        stop = link_to_stop(ctx, recipient, address, job.schedule_id)
        said = replace(said, scheduled_by=job.owner, unsubscribe_url=stop)
    else:
        stop = unsubscribe_url(ctx, job.owner, address)
        if stop is None and _owner_receives_schedule(ctx, job, address):
            assert job.schedule_id is not None
            stop = link_to_stop(ctx, job.owner, address, job.schedule_id)
            said = replace(said, each_firing=True)
        said = replace(said, unsubscribe_url=stop)
    return _send(ctx, said, address, now)


def _to_outside_address(
    ctx: Context, job: Job, effect: SideEffect, delivery: Delivery, event_type: str, now: datetime
) -> Attempt:
    """An e-mail to an outside address of the schedule that made the job, while it is still
    one: no link to the dashboard (its reader has no account) but the file, attached when it
    is at most the size the address was added with, or a signed download link, while the
    job's owner may still download it; a failure is said without its reason (an error of the
    source is the owner's to read)."""
    address = delivery.address or ""
    if job.schedule_id is None or ctx.schedule_address is None:
        return Attempt(problem="this runner sends e-mails to people of this service only",
                       refused=True)  # fmt: skip
    added = ctx.schedule_address(job.schedule_id, address.lower())
    if added is None:
        return Attempt(problem=_not_an_address(address, job.schedule_id), refused=True)
    refused = _address_refusal(ctx, address, now)
    if refused is not None:
        return refused
    succeeded = event_type == "export.succeeded"
    said = replace(
        announcement(ctx, job, effect, succeeded=succeeded),
        job_url=None,
        reason=None,
        scheduled_by=job.owner,
        address_added_by=added.added_by,
        unsubscribe_url=link_to_stop(ctx, None, address, job.schedule_id),
    )
    if succeeded and job.object_key is not None:
        withheld = _file_withheld(ctx, job, now)
        if withheld is not None:
            return Attempt(problem=withheld, refused=True)
        try:
            attached = _attachment(ctx, job, added)
        except (ObjectStoreError, OSError) as exc:  # tried again with backoff
            return Attempt(problem=f"the file could not be read: {one_line(str(exc), 200)}")
        if attached is not None:
            said = replace(said, attachment=attached)
        else:
            link, expires = download_link(ctx, job, now)
            said = replace(said, download_url=link, download_expires_at=expires)
    return _send(ctx, said, address, now)


def _not_an_address(address: str, schedule_id: int) -> str:
    return (
        f"{address} is no longer one of schedule {schedule_id}'s addresses (it was removed, "
        "or the schedule deleted)"
    )


def _file_withheld(ctx: Context, job: Job, now: datetime) -> str | None:
    """Why a succeeded job's file may not go outside now, for good, or None."""
    if job.object_expires_at is not None and job.object_expires_at <= now:
        return "the file expired before it could be sent"
    if ctx.owner_refusal is None:
        return "this runner cannot tell whether the owner may still download the file"
    refusal = ctx.owner_refusal(job)
    if refusal is not None:
        return f"its owner may no longer download the file: {refusal}"
    return None


def _attachment(ctx: Context, job: Job, added: ScheduleAddress) -> Attachment | None:
    """The job's file as the address gets it attached (gzip-compressed when it asked, unless
    the export is compressed already), or None when it (compressed) is over the address's size
    or the address takes links alone."""
    limit = added.attach_max_bytes
    if limit is None or job.object_key is None or job.object_bytes is None:
        return None
    name = job.file_name or "export.csv"
    packed_already = name.endswith(".gz")  # a saved query's csv.gzip
    if packed_already or not added.attach_gzip:
        if job.object_bytes > limit:
            return None
        with ctx.objects.read(job.object_key) as source:
            return Attachment(file_name=name, content=source.read(), gzip=packed_already)
    packed = io.BytesIO()
    with (
        ctx.objects.read(job.object_key) as source,  # mtime 0: the same bytes on every try
        gzip.GzipFile(filename=name, mode="wb", fileobj=packed, mtime=0) as squeezed,
    ):
        while chunk := source.read(1 << 16):
            squeezed.write(chunk)
            if packed.tell() > limit:
                return None
    content = packed.getvalue()
    if len(content) > limit:
        return None
    return Attachment(file_name=name + ".gz", content=content, gzip=True)


def _address_refusal(ctx: Context, address: str, now: datetime) -> Attempt | None:
    """Why no e-mail goes to `address` now, for good (given up at once), or None."""
    if ctx.mail is None:  # a setting changes with a restart, then an operator re-drives
        return Attempt(problem=NO_SMTP_SERVER, refused=True)
    if not is_mailbox(address):  # an identity provider's claim is not checked on the way in
        return Attempt(problem=f"not one plain mailbox: {one_line(address, 100)!r}", refused=True)
    refused = domain_refusal(address, ctx.email_domains)  # set before the setting, or by a
    if refused is not None:  # company sign-in
        return Attempt(problem=refused, refused=True)
    received = ctx.deliveries.emails_delivered_since(address, now - DAY)
    if received >= ctx.email_daily_cap:  # a runaway schedule does not flood an inbox
        return Attempt(
            problem=f"{address} received {received} e-mails in the last 24 hours, the most "
            f"it may (email_daily_cap = {ctx.email_daily_cap})",
            refused=True,
        )
    return None


def _send(ctx: Context, said: Announcement, address: str, now: datetime) -> Attempt:
    assert ctx.mail is not None  # `_address_refusal` said so
    message = build_message(said, sender=ctx.mail.sender, recipient=address, sent_at=now)
    sent = send_mail(ctx.mail, message, address)
    return Attempt(delivered=sent.delivered, status=sent.code, problem=sent.problem,
                   refused=sent.refused)  # fmt: skip


def unsubscribe_url(ctx: Context, owner: str, address: str) -> str | None:
    """The one-click link that stops `owner`'s e-mails whenever an export ends, when this one
    goes to their address because they asked for that; None otherwise."""
    if ctx.users is None or ctx.link_secret is None:
        return None
    person = ctx.users.user_by_name(owner)
    if person is None or not person.notify_always or person.email is None:
        return None
    if person.email.lower() != address.lower():
        return None
    return link_to_stop(ctx, person.name, address)


def _owner_receives_schedule(ctx: Context, job: Job, address: str) -> bool:
    """Is the owner one of the recipients of the schedule that made `job` (an e-mail at each
    of its firings, asked for that schedule alone)?"""
    if job.schedule_id is None or ctx.recipient_refusal is None:
        return False
    return ctx.recipient_refusal(job.owner, job, address) is None


def link_to_stop(
    ctx: Context, person: str | None, address: str, schedule_id: int | None = None
) -> str | None:
    """The one-click link that stops `person`'s e-mails at `address`: those of every export
    of theirs, or with `schedule_id` those of that schedule (with no person: those of that
    schedule to one of its outside addresses); None without a link secret."""
    if ctx.link_secret is None:
        return None
    token = sign_unsubscribe(ctx.link_secret, person, address, schedule_id=schedule_id)
    return f"{ctx.public_url.rstrip('/')}/unsubscribe/{token}"


def _to_channel(
    ctx: Context, job: Job, effect: SideEffect, channel_id: int, *, succeeded: bool
) -> Attempt:
    """One message to a chat channel's incoming webhook, through the SSRF guard of webhooks and
    only to a host `chat_hosts` names; a refusal for good (a 4xx but 408 and 429, a host not
    allowed, a removed channel) is given up at once."""
    if ctx.channels is None:
        return Attempt(problem="chat channels are not set up in this runner")
    channel = ctx.channels.get_chat_channel(channel_id)
    if channel.disabled_at is not None:
        return Attempt(problem="the chat channel was removed", refused=True)
    try:
        host_refusal = chat_host_refusal(channel.url, ctx.chat_hosts, ctx.allow_private)
        if host_refusal is not None:
            return Attempt(problem=host_refusal, refused=True)
        destination = check_destination(
            channel.url, resolver=ctx.resolver, allow_private=ctx.allow_private
        )
    except UnsafeDestinationError as exc:
        return Attempt(problem=str(exc))
    message = chat_message(announcement(ctx, job, effect, succeeded=succeeded), owner=job.owner)
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    response = send(ctx.client, destination, {"content-type": "application/json"}, body)
    status = response.status
    if status is not None and 400 <= status < 500 and status not in (408, 429):
        return Attempt(status=status, refused=True,
                       problem=f"HTTP {status}: the chat service refuses the message")  # fmt: skip
    return Attempt(
        delivered=response.ok, status=status, problem=response.error,
        retry_after=response.retry_after,
    )  # fmt: skip


def announcement(ctx: Context, job: Job, effect: SideEffect, *, succeeded: bool) -> Announcement:
    """What an e-mail says about `job`, with a link to its page on the dashboard."""
    title = job.options.get("title")
    return Announcement(
        job_id=job.id,
        effect=effect.effect,
        succeeded=succeeded,
        title=str(title or job.saved_query),
        parameters=dict(job.parameters),
        job_url=f"{ctx.public_url.rstrip('/')}/jobs/{job.id}",
        finished_at=job.finished_at,
        rows=job.object_rows,
        file_name=job.file_name,
        reason=job.error_message or job.error_code,
    )


def _summary(ctx: Context, job: Job, deliveries: list[Delivery], now: datetime) -> Outcome:
    waiting = [d for d in deliveries if d.waiting]
    if waiting:
        problems = "; ".join(f"{d.destination}: {d.last_error}" for d in waiting if d.last_error)
        return Outcome(
            done=False,
            note=problems[:1000] or None,
            due_in=_whole_milliseconds(min(d.next_attempt_at for d in waiting) - now),
        )
    given_up = [d for d in deliveries if d.given_up_at is not None and not _gone(ctx, d, job)]
    if given_up:
        problems = "; ".join(f"{d.destination}: {d.last_error}" for d in given_up)
        return Outcome(done=False, note=f"given up: {problems}"[:1000], give_up=True)
    return Outcome(done=True)


def _whole_milliseconds(gap: timedelta) -> float:
    """A gap rounded up to what a SQLite job store keeps (milliseconds), never below zero: the
    row is due no sooner than its first destination, read back truncated."""
    return max(0.0, math.ceil(gap.total_seconds() * 1000) / 1000)


def _gone(ctx: Context, delivery: Delivery, job: Job) -> bool:
    """A destination that no longer exists (a removed endpoint, chat channel or outside
    address) holds nothing open."""
    if delivery.person is None and delivery.address is not None:
        if job.schedule_id is None or ctx.schedule_address is None:
            return False
        return ctx.schedule_address(job.schedule_id, delivery.address.lower()) is None
    if delivery.channel_id is not None and ctx.channels is not None:
        return ctx.channels.get_chat_channel(delivery.channel_id).disabled_at is not None
    if delivery.endpoint_id is None:
        return False
    return ctx.store.get_webhook_endpoint(delivery.endpoint_id).disabled_at is not None
