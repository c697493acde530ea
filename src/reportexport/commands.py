"""The commands that touch data: demo, queries, worker, export, sweep."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from reportexport import config
from reportexport.catalog import Catalog, CatalogError, load_catalog
from reportexport.demo import DEFAULT_ROWS, build_demo_database, write_demo_catalog
from reportexport.effects.handlers import Context
from reportexport.exports import new_export
from reportexport.graph import load_graph
from reportexport.logs import configure_logging
from reportexport.objects import ObjectStore, open_object_store
from reportexport.parameters import ParameterError
from reportexport.store import Database, StoreError, open_database
from reportexport.worker import Worker, WorkerSettings


def catalog_from(args: argparse.Namespace) -> Catalog:
    return load_catalog(args.catalog or config.default_catalog_path())


def database_from(args: argparse.Namespace, *, upgrade_embedded: bool = False) -> Database:
    url = args.database or config.default_database_url()
    graph = load_graph(args.graph)
    if upgrade_embedded and url == config.default_database_url() and url.startswith("sqlite:"):
        # The embedded default builds itself; a shared database is upgraded on purpose.
        database = open_database(url, graph, check=False)
        database.upgrade()
        return database
    return open_database(url, graph)


def objects_from(args: argparse.Namespace) -> ObjectStore:
    return open_object_store(
        args.objects or config.default_objects_url(), link_secret=config.link_secret()
    )


def cmd_demo(args: argparse.Namespace) -> int:
    base = config.home()
    database_file = base / "demo.duckdb"
    catalog_file = args.catalog or config.default_catalog_path()
    if args.force or not database_file.exists():
        rows = args.rows or DEFAULT_ROWS
        print(f"building {database_file} with {rows:,} orders ...", flush=True)
        started = time.monotonic()
        build_demo_database(database_file, rows)
        print(f"  done in {time.monotonic() - started:.1f} s")
    if args.force or not Path(catalog_file).exists():
        write_demo_catalog(Path(catalog_file))
        print(f"wrote the demo catalog {catalog_file}")
    database_from(args, upgrade_embedded=True).close()
    print("the job store is ready; try: reportexport export orders_by_day --param day=2024-03-05")
    return 0


def cmd_queries_list(args: argparse.Namespace) -> int:
    if args.server or os.environ.get("REPORTEXPORT_SERVER"):
        from reportexport import client

        return client.run(client.cmd_remote_queries, args)
    try:
        catalog = catalog_from(args)
    except CatalogError as exc:
        return _catalog_problems(exc)
    for query in catalog.queries.values():
        params = ", ".join(
            f"{spec.name}:{spec.type}{'' if spec.required else '?'}"
            for spec in query.parameters.values()
        )
        print(f"{query.name:24} {query.title}  ({params or 'no parameters'})")
    return 0


def cmd_queries_check(args: argparse.Namespace) -> int:
    try:
        catalog = catalog_from(args)
    except CatalogError as exc:
        return _catalog_problems(exc)
    except FileNotFoundError as exc:
        print(f"reportexport queries: {exc}", file=sys.stderr)
        return 1
    print(f"{catalog.path}: {len(catalog.queries)} saved queries, {len(catalog.sources)} sources")
    return 0


def _catalog_problems(exc: CatalogError) -> int:
    print(f"{exc.path}: the catalog has problems:", file=sys.stderr)
    for problem in exc.problems:
        print(f"  - {problem}", file=sys.stderr)
    return 1


def cmd_worker(args: argparse.Namespace) -> int:
    configure_logging()
    database = database_from(args)
    settings = WorkerSettings(
        concurrency=args.concurrency,
        lease_seconds=args.lease_seconds,
        retention_seconds=args.retention_days * 86400,
    )
    worker = Worker(database, catalog_from(args), objects_from(args), settings)
    try:
        worker.run_until_signal(grace_seconds=args.grace_seconds)
    finally:
        database.close()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Over the API when a server is named; otherwise here, with an in-process worker."""
    raw: dict[str, str] = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            print(f"--param takes NAME=VALUE, not {item!r}", file=sys.stderr)
            return 2
        raw[name] = value
    if args.server or os.environ.get("REPORTEXPORT_SERVER"):
        from reportexport import client

        return client.run(client.cmd_remote_export, args, raw)
    catalog = catalog_from(args)
    query = catalog.queries.get(args.query)
    if query is None:
        print(f"no saved query {args.query!r}; see: reportexport queries list", file=sys.stderr)
        return 2
    try:
        new = new_export(query, raw, owner=args.owner)
    except ParameterError as exc:
        print(f"reportexport export: {exc}", file=sys.stderr)
        return 2
    database = database_from(args, upgrade_embedded=True)
    objects = objects_from(args)
    worker = Worker(database, catalog, objects, WorkerSettings(concurrency=1))
    try:
        job, _ = database.create_job(new)
        print(f"job {job.id}: {job.status}", flush=True)
        worker.start()
        last = -1
        while True:
            detail = database.get_job(job.id)
            current = detail.job
            if current.bytes_written != last and current.status == "running":
                last = current.bytes_written
                print(f"  {current.status}: {current.bytes_written:,} bytes", flush=True)
            if current.finished_at is not None:
                break
            time.sleep(0.2)
    except StoreError as exc:
        print(f"reportexport export: {exc}", file=sys.stderr)
        return 1
    finally:
        worker.stop(grace_seconds=0)
    print(f"job {current.id}: {current.status}")
    if current.error_code:
        print(f"  {current.error_code}: {current.error_message}", file=sys.stderr)
        database.close()
        return 1
    if current.object_key is not None:
        print(
            f"  {current.object_rows or 0:,} rows, {current.object_bytes or 0:,} bytes, "
            f"sha256 {current.object_sha256}\n  object {current.object_key}"
        )
        if args.output:
            with objects.read(current.object_key) as source, open(args.output, "wb") as target:
                shutil.copyfileobj(source, target)
            print(f"  written to {args.output}")
    database.close()
    return 0 if current.status == "succeeded" else 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from reportexport.sweeper import sweep

    with closing(database_from(args)) as database:
        report = sweep(database, objects_from(args), dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    for key, why in report.deleted.items():
        print(f"{verb} {key}: {why}")
    print(f"{len(report.deleted)} {verb}, {report.kept} kept")
    return 0


def effects_context(database: Database, objects: ObjectStore) -> Context:
    return Context(
        store=database,
        objects=objects,
        client=httpx.Client(timeout=10.0, follow_redirects=False),
        allow_private=config.webhooks_allow_private(),
        public_url=config.public_url(),
    )


def cmd_effects(args: argparse.Namespace) -> int:
    from reportexport.effects.backoff import RetryPolicy
    from reportexport.effects.runner import EffectsRunner, RunnerSettings

    configure_logging()
    database = database_from(args)
    settings = RunnerSettings(
        batch=args.batch,
        claim_seconds=args.claim_seconds,
        policy=RetryPolicy(max_attempts=args.max_attempts),
    )
    context = effects_context(database, objects_from(args))
    try:
        runner = EffectsRunner(database, context, load_graph(args.graph), settings)
        if args.once:
            while runner.run_once():
                pass
        else:
            runner.run_until_signal()
    except RuntimeError as exc:  # a handler missing for a fixture effect, or the reverse
        print(f"reportexport effects: {exc}", file=sys.stderr)
        return 2
    finally:
        context.client.close()
        database.close()
    return 0


def cmd_effects_given_up(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        for row in database.given_up_side_effects():
            print(f"job {row.job_id} {row.effect}: {row.attempts} attempts, given up at "
                  f"{row.given_up_at:%Y-%m-%d %H:%M:%S}; last error: {row.last_error}")  # fmt: skip
    return 0


def cmd_effects_redrive(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        if not database.redrive_side_effect(args.job, args.effect, now=datetime.now(UTC)):
            print(f"job {args.job} has no given-up side effect {args.effect!r}", file=sys.stderr)
            return 1
    print(f"job {args.job} {args.effect}: due again")
    return 0


def cmd_webhooks_add(args: argparse.Namespace) -> int:
    from reportexport.webhooks.signing import new_secret
    from reportexport.webhooks.ssrf import UnsafeDestinationError, check_destination

    try:
        check_destination(args.url, allow_private=config.webhooks_allow_private())
    except UnsafeDestinationError as exc:
        print(f"reportexport webhooks: {exc}", file=sys.stderr)
        return 2
    with closing(database_from(args)) as database:
        endpoint = database.add_webhook_endpoint(
            owner=None if args.everyone else args.owner, url=args.url, secret=new_secret()
        )
    print(f"endpoint {endpoint.id} for {endpoint.owner or 'every owner'}: {endpoint.url}")
    print(f"secret (shown once): {endpoint.secret}")
    return 0


def cmd_webhooks_list(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        for e in database.list_webhook_endpoints(args.owner):
            state = (
                f"disabled {e.disabled_at:%Y-%m-%d} ({e.disabled_reason})"
                if e.disabled_at
                else "enabled"
            )
            print(f"{e.id:5} {e.owner or '(global)':16} {state:10} {e.url}")
    return 0


def cmd_webhooks_rotate(args: argparse.Namespace) -> int:
    from reportexport.webhooks.signing import new_secret

    with closing(database_from(args)) as database:
        until = datetime.now(UTC) + timedelta(hours=args.overlap_hours)
        endpoint = database.rotate_webhook_secret(args.id, secret=new_secret(), until=until)
    print(f"endpoint {endpoint.id}: new secret (shown once): {endpoint.secret}")
    print(f"the previous secret signs too until {until:%Y-%m-%d %H:%M} UTC")
    return 0


def cmd_webhooks_remove(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        removed = database.disable_webhook_endpoint(
            args.id, now=datetime.now(UTC), reason="removed by an operator"
        )
    print(f"endpoint {args.id}: {'removed' if removed else 'already removed or unknown'}")
    return 0 if removed else 1


def cmd_users_add(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        user, token = database.add_user(args.name, "operator" if args.operator else "user")
    print(f"{user.role} {user.name}: token (shown once, stored hashed): {token}")
    return 0


def cmd_users_list(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        for user in database.list_users():
            state = f"revoked {user.revoked_at:%Y-%m-%d}" if user.revoked_at else "active"
            print(f"{user.name:24} {user.role:9} {state}")
    return 0


def cmd_users_revoke(args: argparse.Namespace) -> int:
    with closing(database_from(args)) as database:
        revoked = database.revoke_user(args.name, now=datetime.now(UTC))
    print(f"{args.name}: {'revoked' if revoked else 'no active user of that name'}")
    return 0 if revoked else 1
