"""Live pages: one change feed per process, fanned out to Server-Sent Event streams.

A page subscribes to the unfinished jobs it shows. One background task per process reads those
jobs (one primary-key read of all the ids every open page watches, in one worker thread) while
any page is subscribed, and hands each change to the streams that watch the job. Streams are
plain coroutines on the event loop, so open tabs hold no thread of the pool the synchronous
routes run in; their number is capped (`max_event_streams`), and a page over the cap polls.
Each event is named `status` and carries the job's fixture state and its progress.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
from starlette.types import Receive, Scope, Send

from reportexport.core.job_status import TERMINAL
from reportexport.core.records import Job
from reportexport.core.retry import Backoff

log = logging.getLogger("reportexport.dashboard")

POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
MAX_WATCHED = 200  # jobs one page may follow: the list's page size and then some
EVENT = "status"


def live_state(job: Job, now: datetime | None = None) -> dict[str, Any]:
    """What a live page shows of a job: its state, its progress so far, how long it ran."""
    terminal = job.status in TERMINAL
    elapsed = None
    if job.started_at is not None:
        end = job.finished_at or now or datetime.now(UTC)
        elapsed = max(0.0, (end - job.started_at).total_seconds())
    finished = job.status == "succeeded" and job.object_bytes is not None
    return {
        "id": job.id,
        "status": job.status,
        "terminal": terminal,
        "rows": job.object_rows if finished else job.rows_written,
        "bytes": job.object_bytes if finished else job.bytes_written,
        "elapsed_seconds": elapsed,
        "title": str(job.options.get("title", job.saved_query)),
    }


class StreamsFullError(Exception):
    """Every stream this process allows is open."""


def _mark(job: Job) -> tuple[Any, ...]:
    return (job.status, job.rows_written, job.bytes_written, job.updated_at)


@dataclass(eq=False)
class Subscription:
    ids: set[int]
    changed: dict[int, Job] = field(default_factory=dict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    shown: dict[int, tuple[Any, ...]] = field(default_factory=dict)  # what the page has

    def push(self, job: Job) -> None:
        """Hand the page a job's state, unless it has that state already."""
        if self.shown.get(job.id) == _mark(job):
            return
        self.shown[job.id] = _mark(job)
        self.changed[job.id] = job  # only the latest state of a job matters
        self.wake.set()


class ChangeFeed:
    """The process's one reader of job changes, and the streams it feeds."""

    def __init__(
        self,
        read: Callable[[Sequence[int]], list[Job]],
        *,
        max_streams: int,
        interval: float = POLL_SECONDS,
    ) -> None:
        self.read = read
        self.max_streams = max_streams
        self.interval = interval
        self.subscriptions: set[Subscription] = set()
        self.closed = False
        self._task: asyncio.Task[None] | None = None

    @property
    def open_streams(self) -> int:
        return len(self.subscriptions)

    def subscribe(self, first: list[Job]) -> Subscription:
        """A stream of the changes of the jobs a page shows as `first`; StreamsFullError at
        the cap."""
        if self.closed or len(self.subscriptions) >= self.max_streams:
            raise StreamsFullError
        subscription = Subscription(ids={job.id for job in first if job.status not in TERMINAL})
        subscription.shown = {job.id: _mark(job) for job in first}
        self.subscriptions.add(subscription)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self.subscriptions.discard(subscription)

    def close(self) -> None:
        """End every stream (the server is stopping) and refuse new ones."""
        self.closed = True
        for subscription in self.subscriptions:
            subscription.wake.set()

    async def _run(self) -> None:
        backoff = Backoff(first=self.interval, ceiling=20 * self.interval)
        failures = 0
        while self.subscriptions and not self.closed:
            ids = sorted(set().union(*(s.ids for s in self.subscriptions)))
            try:
                jobs = await anyio.to_thread.run_sync(self.read, ids) if ids else []
                failures = 0
            except Exception as exc:  # an outage of the job store: streams wait, then retry
                failures += 1
                if failures == 1:
                    log.warning("live pages cannot read job changes: %s", exc)
                jobs = []
            self._fan_out(jobs)
            await asyncio.sleep(backoff.wait(failures + 1))

    def _fan_out(self, jobs: list[Job]) -> None:
        for job in jobs:
            for subscription in self.subscriptions:
                if job.id in subscription.ids:
                    subscription.push(job)


class EventStream:
    """An ASGI response streaming a subscription as Server-Sent Events until every job it
    watches is terminal, the client leaves, or the feed closes; the subscription is released
    however it ends."""

    def __init__(self, feed: ChangeFeed, subscription: Subscription, first: list[Job]) -> None:
        self.feed = feed
        self.subscription = subscription
        self.first = first

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        subscription = self.subscription
        left = asyncio.Event()

        async def watch_disconnect() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()
            subscription.wake.set()

        watcher = asyncio.get_running_loop().create_task(watch_disconnect())
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                    ],
                }
            )
            await self._body(send, b"retry: 3000\n\n")
            for job in self.first:
                await self._event(send, job)
            while subscription.ids and not left.is_set() and not self.feed.closed:
                try:
                    await asyncio.wait_for(subscription.wake.wait(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    await self._body(send, b": keepalive\n\n")
                    continue
                subscription.wake.clear()
                changed, subscription.changed = subscription.changed, {}
                for job in changed.values():
                    await self._event(send, job)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            watcher.cancel()
            self.feed.unsubscribe(subscription)

    async def _event(self, send: Send, job: Job) -> None:
        state = live_state(job)
        data = json.dumps(state, separators=(",", ":"))
        await self._body(send, f"event: {EVENT}\ndata: {data}\n\n".encode())
        if state["terminal"]:
            self.subscription.ids.discard(job.id)

    @staticmethod
    async def _body(send: Send, chunk: bytes) -> None:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


def watched_ids(text: str) -> list[int]:
    """The ids of `1,2,3` (at most MAX_WATCHED; anything else is ignored)."""
    found = []
    for part in text.split(",")[:MAX_WATCHED]:
        part = part.strip()
        if part.isascii() and part.isdigit() and len(part) <= 19:
            found.append(int(part))
    return found
