"""`reportexport serve`: the API, a worker and an effects runner in one process.

On the embedded default it needs no set-up: it builds the demo data and catalog when they are
missing, upgrades the SQLite job store, and creates a first operator and a first user, printing
their tokens once. The catalog is read before anything is written, so a wrong one stops the
process with nothing changed.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
import socket
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

from reportexport.composition import Runtime, SetupError, demo_paths
from reportexport.core.logs import configure_logging
from reportexport.entrypoints.first_run import make_demo, print_first_people

if TYPE_CHECKING:
    from reportexport.runners.effects.runner import EffectsRunner
    from reportexport.runners.worker import Worker

log = logging.getLogger("reportexport.serve")


def serve(runtime: Runtime) -> int:
    configure_logging()
    settings = runtime.settings
    _, catalog_file = demo_paths(settings)
    default_catalog = catalog_file == settings.home / "catalog.toml"
    builds_demo = settings.uses_embedded_database and default_catalog and not catalog_file.exists()
    if not builds_demo:
        runtime.catalog  # noqa: B018 - a wrong catalog stops serve before anything is written
    # The port is taken before anything is built or anyone is created: a busy one stops serve
    # with nothing changed (and no token printed for a process that never served).
    listening = listen(settings.host, settings.port)
    if builds_demo:
        make_demo(runtime, force=False)
    runtime.catalog  # noqa: B018
    print_first_people(runtime)
    # No supervisor restarts this process: its loops restart themselves, and /readyz says so.
    worker = runtime.worker(kind="serve", restart_loops=True)
    runner = runtime.effects_runner(restart_loops=True)
    app = runtime.app(troubles=lambda: troubles(worker, runner))
    worker.start()
    runner.start()
    # Port 0 asks for any free port: this line is how whoever started the process learns it.
    print(f"reportexport is serving on {listening_url(listening)}", flush=True)
    server = _Server(
        uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning")
    )
    try:
        server.run(sockets=[listening])
    finally:
        listening.close()
        log.info("stopping: running exports get %s s to finish", settings.grace_seconds)
        stopping = time.monotonic()
        worker.stop(grace_seconds=settings.grace_seconds)
        runner.stop()
        log.info("stopped in %.1f s", time.monotonic() - stopping)
    return 0


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on `host:port`, taken before anything starts, or a SetupError that
    says why not and what to do; port 0 takes any free port (`listening_url` names it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen()
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise SetupError(
                f"port {port} on {host} is in use (another reportexport serve?): stop what "
                f"listens there, or pick another port with `./scripts/run --port N` "
                "(`reportexport serve --port N`, or $REPORTEXPORT_PORT)",
                exit_code=1,
            ) from None
        raise SetupError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose the address with "
            "--host and the port with --port",
            exit_code=1,
        ) from None
    return sock


def listening_url(listener: socket.socket) -> str:
    """The URL of `listener`: the port it took, when it was asked for port 0."""
    host, port = listener.getsockname()[:2]
    return (
        f"http://[{host}]:{port}" if listener.family == socket.AF_INET6 else f"http://{host}:{port}"
    )


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
