"""Live pages over a real server: event streams hold no thread, are capped, and end terminal."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio.to_thread
import httpx
import pytest
import uvicorn

from reportexport.entrypoints.serve import listening_url
from tests.dashboard_session import Signed, sign_in
from tests.helpers import auth, create, runtime_for, wait_for


def default_thread_pool_size() -> int:
    async def tokens() -> int:
        return int(anyio.to_thread.current_default_thread_limiter().total_tokens)

    return anyio.run(tokens)


@pytest.fixture
def serving(api: dict[str, Any]) -> Iterator[Callable[..., str]]:
    """A uvicorn server on a free port over the test's store; settings given per test."""
    started: list[tuple[uvicorn.Server, threading.Thread, Any]] = []

    def start(**settings: Any) -> str:
        app = runtime_for(api["db"], api["catalog"], api["objects"], **settings).app()
        listener = socket.create_server(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        started.append((server, thread, app))

        def up() -> bool:
            assert thread.is_alive(), "the server's thread ended before it started"
            return server.started

        wait_for(up, 30, "uvicorn to start", every=0.05)
        return listening_url(listener)

    yield start
    for server, thread, app in started:
        app.state.feed.close()
        server.should_exit = True
        thread.join(timeout=30)


def signed(base: str, token: str) -> Signed:
    with httpx.Client(base_url=base) as client:
        return sign_in(client, token)


async def first_event(stream: httpx.Response) -> dict[str, Any]:
    async for line in stream.aiter_lines():
        if line.startswith("data: "):
            state: dict[str, Any] = json.loads(line[6:])
            return state
    raise AssertionError("the stream ended without an event")


def test_the_api_answers_with_more_streams_open_than_the_pool_has_threads(
    api: dict[str, Any], serving: Callable[..., str]
) -> None:
    threads = default_thread_pool_size()
    streams = threads + 10
    base = serving(max_event_streams=streams + 5)
    alice = signed(base, api["tokens"]["alice"])
    job_id = create(api).json()["id"]

    async def scenario() -> None:
        limits = httpx.Limits(max_connections=streams + 10)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as client:
            opened = [
                await client.send(
                    client.build_request(
                        "GET", f"/jobs/events?ids={job_id}", headers=alice.headers
                    ),
                    stream=True,
                )
                for _ in range(streams)
            ]
            try:
                assert {s.status_code for s in opened} == {200}
                states = await asyncio.gather(*(first_event(s) for s in opened))
                assert {(s["id"], s["status"]) for s in states} == {(job_id, "queued")}
                began = time.monotonic()
                answer = await client.get("/api/exports", headers=auth(api, "alice"))
                assert answer.status_code == 200
                assert time.monotonic() - began < 20  # answered, not starved behind the streams
                page = await client.get("/jobs", headers=alice.headers)
                assert page.status_code == 200
            finally:
                for stream in opened:
                    await stream.aclose()

    asyncio.run(scenario())


def test_streams_past_the_cap_are_refused_and_the_page_polls(
    api: dict[str, Any], serving: Callable[..., str]
) -> None:
    base = serving(max_event_streams=2)
    alice = signed(base, api["tokens"]["alice"])
    job_id = create(api).json()["id"]

    async def scenario() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            request = client.build_request(
                "GET", f"/jobs/events?ids={job_id}", headers=alice.headers
            )
            opened = [await client.send(request, stream=True) for _ in range(2)]
            try:
                refused = await client.get(f"/jobs/events?ids={job_id}", headers=alice.headers)
                assert refused.status_code == 503
                assert refused.headers["content-type"] == "application/problem+json"
                assert int(refused.headers["retry-after"]) > 0
                polled = await client.get(f"/jobs/state?ids={job_id}", headers=alice.headers)
                assert polled.json()["jobs"][0]["status"] == "queued"
            finally:
                for stream in opened:
                    await stream.aclose()
            # The server notices the closed streams in its own time: a stream opens again then.
            deadline = time.monotonic() + 30
            while True:
                again = client.build_request(
                    "GET", f"/jobs/events?ids={job_id}", headers=alice.headers
                )
                reopened = await client.send(again, stream=True)
                await reopened.aclose()
                if reopened.status_code == 200:
                    break
                assert reopened.status_code == 503, reopened.status_code
                assert time.monotonic() < deadline, "no stream opened 30 s after two were closed"
                await asyncio.sleep(0.1)

    asyncio.run(scenario())


def test_a_stream_follows_its_job_and_ends_when_it_is_terminal(
    api: dict[str, Any], serving: Callable[..., str]
) -> None:
    base = serving()
    alice = signed(base, api["tokens"]["alice"])
    bob = signed(base, api["tokens"]["bob"])
    job_id = create(api).json()["id"]

    async def scenario() -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            foreign = await client.get(f"/jobs/state?ids={job_id}", headers=bob.headers)
            assert foreign.json() == {"jobs": []}  # someone else's job is not there for bob
            seen: list[dict[str, Any]] = []
            async with client.stream(
                "GET", f"/jobs/events?ids={job_id}", headers=alice.headers
            ) as stream:
                names = []
                async for line in stream.aiter_lines():
                    if line.startswith("event: "):
                        names.append(line[7:])
                    if line.startswith("data: "):
                        seen.append(json.loads(line[6:]))
                        if len(seen) == 1:
                            await client.post(
                                f"/api/exports/{job_id}/cancel", headers=auth(api, "alice")
                            )
                assert set(names) == {"status"}
            return seen

    seen = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert [s["status"] for s in seen] == ["queued", "canceled"]
    assert seen[-1]["terminal"] is True
