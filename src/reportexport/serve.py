"""`reportexport serve`: the API, a worker and an effects runner in one process.

On the embedded default it needs no set-up: it builds the demo data and catalog when they are
missing, upgrades the SQLite job store, and creates a first operator and a first user, printing
their tokens once.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import httpx
import uvicorn

from reportexport import config
from reportexport.api.app import Fairness, Services, create_app
from reportexport.catalog import load_catalog
from reportexport.commands import cmd_demo, database_from, objects_from
from reportexport.effects.handlers import Context
from reportexport.effects.runner import EffectsRunner
from reportexport.graph import load_graph
from reportexport.logs import configure_logging
from reportexport.worker import Worker, WorkerSettings

log = logging.getLogger("reportexport.serve")


def cmd_serve(args: argparse.Namespace) -> int:
    configure_logging()
    catalog_path = Path(args.catalog or config.default_catalog_path())
    embedded = (args.database or config.default_database_url()) == config.default_database_url()
    if embedded and not catalog_path.exists():
        demo_args = argparse.Namespace(**{**vars(args), "rows": args.demo_rows, "force": False})
        cmd_demo(demo_args)
    graph = load_graph(args.graph)
    with closing(database_from(args, upgrade_embedded=embedded)) as database:
        _first_people(database)
        objects = objects_from(args)
        catalog = load_catalog(catalog_path)
        settings = WorkerSettings(
            concurrency=args.concurrency, retention_seconds=args.retention_days * 86400
        )
        worker = Worker(database, catalog, objects, settings)
        client = httpx.Client(timeout=10.0, follow_redirects=False)
        context = Context(
            store=database,
            objects=objects,
            client=client,
            allow_private=config.webhooks_allow_private(),
            public_url=config.public_url(),
        )
        runner = EffectsRunner(database, context, graph)
        app = create_app(
            Services(
                db=database,
                catalog=catalog,
                objects=objects,
                graph=graph,
                link_secret=config.link_secret(),
                webhooks_allow_private=config.webhooks_allow_private(),
                fairness=Fairness(
                    max_active=config.positive_int("REPORTEXPORT_MAX_ACTIVE_EXPORTS", 10),
                    max_per_window=config.positive_int("REPORTEXPORT_MAX_EXPORTS_PER_MINUTE", 60),
                    window_seconds=60,
                ),
            )
        )
        worker.start()
        effects = threading.Thread(target=runner.run_until_stopped, name="effects", daemon=True)
        effects.start()
        print(f"reportexport is serving on http://{args.host}:{args.port}", flush=True)
        server = _Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning"))
        try:
            server.run()
        finally:
            log.info("stopping: running exports get %s s to finish", args.grace_seconds)
            worker.stop(grace_seconds=args.grace_seconds)
            runner.stop()
            effects.join(timeout=30)
            client.close()
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


def _first_people(database: object) -> None:
    """A first operator and a first user on a new store; their tokens are shown only now."""
    if database.list_users():  # type: ignore[attr-defined]
        return
    for name, role in (("operator", "operator"), ("demo", "user")):
        user, token = database.add_user(name, role)  # type: ignore[attr-defined]
        print(f"created {role} {user.name!r}; token (shown once): {token}", flush=True)
