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
import threading
from collections.abc import Iterator

import uvicorn

from reportexport.commands import cmd_demo, print_first_people
from reportexport.composition import Runtime, demo_paths
from reportexport.logs import configure_logging

log = logging.getLogger("reportexport.serve")


def serve(runtime: Runtime) -> int:
    configure_logging()
    settings = runtime.settings
    _, catalog_file = demo_paths(settings)
    if settings.uses_embedded_database and not catalog_file.exists():
        cmd_demo(runtime, argparse.Namespace(force=False))
    runtime.catalog  # noqa: B018 - a wrong catalog stops serve before anything is written
    print_first_people(runtime)
    worker = runtime.worker()
    runner = runtime.effects_runner()
    app = runtime.app()
    worker.start()
    effects = threading.Thread(target=runner.run_until_stopped, name="effects", daemon=True)
    effects.start()
    print(f"reportexport is serving on http://{settings.host}:{settings.port}", flush=True)
    server = _Server(
        uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning")
    )
    try:
        server.run()
    finally:
        log.info("stopping: running exports get %s s to finish", settings.grace_seconds)
        worker.stop(grace_seconds=settings.grace_seconds)
        runner.stop()
        effects.join(timeout=30)
    return 0


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM after its own shutdown, which would kill the process before
    the worker could end its exports; here the signal only asks the server to stop."""

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
