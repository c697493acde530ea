"""One handler per side-effect name of the fixture, registered by its function name.

A fixture effect without a handler, or a handler for a name the fixture lacks, stops the
runner at start-up (`check_handlers`) and fails the gate. Handlers are idempotent: a row may
be handled again after a crash, and doing it twice must change nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import httpx

from frozen_lifecycle.graph import Graph
from reportexport.core.lifecycle import Effect, is_effect
from reportexport.core.records import NO_ENDPOINT_NOTE, SideEffect
from reportexport.core.settings import default
from reportexport.objects import ObjectStore
from reportexport.pipeline.export import verify_published
from reportexport.store import Job, WebhookEndpoints
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


class StoppingError(Exception):
    """The runner is stopping: the row is left to its claim's expiry, not counted an attempt."""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """Finished, or to be tried again no sooner than retry_after seconds; the note is kept."""

    done: bool
    note: str | None = None
    retry_after: float | None = None


@dataclass(kw_only=True)
class Context:
    store: WebhookEndpoints
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
        expires = now + timedelta(seconds=ctx.link_seconds)
        if job.object_expires_at is not None:
            expires = min(expires, job.object_expires_at)
        seconds = max(1, int((expires - now).total_seconds()))
        link = ctx.objects.download_url(job.object_key, job.file_name or "export.csv", seconds)
        data.update(
            download_url=link if link.startswith("http") else ctx.public_url.rstrip("/") + link,
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


def _emit(ctx: Context, job: Job, effect: SideEffect, event_type: str) -> Outcome:
    now = ctx.clock()
    endpoints = ctx.store.webhook_endpoints_for(job.owner)
    done = {
        d.endpoint_id
        for d in ctx.store.webhook_deliveries(job.id)
        if d.effect == effect.effect and d.delivered_at is not None
    }
    pending = [e for e in endpoints if e.id not in done]
    if not pending:
        return Outcome(done=True, note=None if endpoints or done else NO_ENDPOINT_NOTE)
    body = json.dumps(event_payload(ctx, job, event_type, now), separators=(",", ":"))
    failures: list[str] = []
    retry_after: float | None = None
    for endpoint in pending:
        if ctx.stopping.is_set():
            raise StoppingError(f"stopped before delivering to endpoint {endpoint.id}")
        try:
            destination = check_destination(
                endpoint.url, resolver=ctx.resolver, allow_private=ctx.allow_private
            )
        except UnsafeDestinationError as exc:
            ctx.store.record_delivery(job.id, effect.effect, endpoint.id, now=now, status=None,
                                      error=str(exc), delivered=False)  # fmt: skip
            failures.append(f"endpoint {endpoint.id}: {exc}")
            continue
        headers = signed_headers(
            endpoint.secrets(now), message_id(job.id, effect.effect), now, body
        )
        response = send(ctx.client, destination, headers, body)
        ctx.store.record_delivery(job.id, effect.effect, endpoint.id, now=now,
                                  status=response.status, error=response.error,
                                  delivered=response.ok)  # fmt: skip
        if response.gone:
            ctx.store.disable_webhook_endpoint(
                endpoint.id, now=now, reason="the receiver answered 410 Gone"
            )
        elif not response.ok:
            failures.append(f"endpoint {endpoint.id}: {response.error}")
            if response.retry_after is not None:
                retry_after = max(retry_after or 0.0, response.retry_after)
    if failures:
        return Outcome(done=False, note="; ".join(failures)[:1000], retry_after=retry_after)
    return Outcome(done=True)
