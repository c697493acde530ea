"""`reportexport serve`: the API, a worker and an effects runner in one process.

On the embedded default it needs no set-up: it builds the demo data and catalog when they are
missing, upgrades the SQLite job store, and creates a first operator and a first user, printing
their tokens once. The catalog is read before anything is written, so a wrong one stops the
process with nothing changed.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

from reportexport.commands import cmd_demo, print_first_people
from reportexport.composition import Runtime, demo_paths
from reportexport.logs import configure_logging

if TYPE_CHECKING:
    from reportexport.effects.runner import EffectsRunner
    from reportexport.worker import Worker

log = logging.getLogger("reportexport.serve")


def serve(runtime: Runtime) -> int:
    configure_logging()
    settings = runtime.settings
    _, catalog_file = demo_paths(settings)
    default_catalog = catalog_file == settings.home / "catalog.toml"
    if settings.uses_embedded_database and default_catalog and not catalog_file.exists():
        cmd_demo(runtime, argparse.Namespace(force=False))
    runtime.catalog  # noqa: B018 - a wrong catalog stops serve before anything is written
    print_first_people(runtime)
    # No supervisor restarts this process: its loops restart themselves, and /readyz says so.
    worker = runtime.worker(kind="serve", restart_loops=True)
    runner = runtime.effects_runner(restart_loops=True)
    app = runtime.app(troubles=lambda: troubles(worker, runner))
    worker.start()
    runner.start()
    print(f"reportexport is serving on http://{settings.host}:{settings.port}", flush=True)
    server = _Server(
        uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning")
    )
    try:
        server.run()
    finally:
        log.info("stopping: running exports get %s s to finish", settings.grace_seconds)
        stopping = time.monotonic()
        worker.stop(grace_seconds=settings.grace_seconds)
        runner.stop()
        log.info("stopped in %.1f s", time.monotonic() - stopping)
    return 0


def troubles(worker: Worker, runner: EffectsRunner) -> list[str]:
    """What of this process is failing now: loops being retried, claims paused."""
    found = [f"worker.{name}" for name in worker.loops.troubled]
    found += [f"effects.{name}" for name in runner.loops.troubled]
    if worker.pacing.pause_reason is not None:
        found.append(f"claims paused: {worker.pacing.pause_reason}")
    return found


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM after its own shutdown, which would kill the process before
    the worker could end its exports; here the signal only asks the server to stop. Live pages'
    event streams never end by themselves, so they are ended first: uvicorn waits for every
    open answer before it stops."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        feed = getattr(getattr(self.config.app, "state", None), "feed", None)
        if feed is not None:
            feed.close()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {
            signum: signal.signal(signum, lambda *_: setattr(self, "should_exit", True))
            for signum in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
