"""The `reportexport` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from reportexport import config, gate, generated
from reportexport.graph import GRAPH_ENV, InvalidGraphError, load_graph
from reportexport.render import RENDERERS

Handler = Callable[[argparse.Namespace], int]
DATABASE_ENV = "REPORTEXPORT_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///$REPORTEXPORT_HOME/reportexport.db"


def _graph_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--graph", metavar="FILE", help=f"the fixture to use (default: ${GRAPH_ENV})")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="reportexport", description=__doc__)
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    graph_cmd = commands.add_parser("graph", help="render the lifecycle from the fixture")
    _graph_option(graph_cmd)
    graph_cmd.add_argument("--format", choices=sorted(RENDERERS), default="table")
    graph_cmd.set_defaults(handler=cmd_graph)

    gate_cmd = commands.add_parser("gate", help="fail when anything drifts from the fixture")
    gate.add_arguments(gate_cmd)
    gate_cmd.set_defaults(handler=gate.run)

    generate_cmd = commands.add_parser(
        "generate", help="rewrite the files and README regions generated from the fixture"
    )
    _graph_option(generate_cmd)
    generate_cmd.add_argument("--root", default=".", help="repository root")
    generate_cmd.set_defaults(handler=cmd_generate)

    db_cmd = commands.add_parser("db", help="build and check the job store's schema")
    db_actions = db_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade = db_actions.add_parser(
        "upgrade", help="apply pending migrations and the fixture's graph (idempotent)"
    )
    _database_options(upgrade)
    upgrade.add_argument(
        "--service-role",
        metavar="ROLE",
        help="PostgreSQL: also create a login role that uses the tables without owning them",
    )
    upgrade.set_defaults(handler=cmd_db_upgrade)
    check = db_actions.add_parser(
        "check", help="exit 1 unless the schema is current and built from this fixture"
    )
    _database_options(check)
    check.set_defaults(handler=cmd_db_check)

    demo = commands.add_parser("demo", help="build the demo data set and its catalog")
    _service_options(demo)
    demo.add_argument("--rows", type=int, default=None, help="orders to generate (default 2M)")
    demo.add_argument("--force", action="store_true", help="rebuild even if the files exist")
    demo.set_defaults(handler=_lazy("reportexport.commands", "cmd_demo"))

    queries = commands.add_parser("queries", help="the saved-query catalog")
    query_actions = queries.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (("list", "list the saved queries"), ("check", "validate the catalog")):
        sub = query_actions.add_parser(action, help=text)
        sub.add_argument("--catalog", type=Path, default=None, help="$REPORTEXPORT_CATALOG")
        sub.set_defaults(handler=_lazy("reportexport.commands", f"cmd_queries_{action}"))
    _remote_options(query_actions.choices["list"])

    worker = commands.add_parser("worker", help="claim and run exports until SIGTERM")
    _service_options(worker)
    worker.add_argument("--concurrency", type=int, default=2)
    worker.add_argument("--lease-seconds", type=float, default=30.0)
    worker.add_argument("--grace-seconds", type=float, default=30.0)
    worker.add_argument("--retention-days", type=float, default=7.0)
    worker.set_defaults(handler=_lazy("reportexport.commands", "cmd_worker"))

    export = commands.add_parser(
        "export", help="export a saved query here and now (a job run by an in-process worker)"
    )
    _service_options(export)
    export.add_argument("query", help="the saved query's name")
    export.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="repeatable"
    )
    export.add_argument("-o", "--output", type=Path, help="write the CSV here")
    export.add_argument("--owner", default=os.environ.get("USER", "cli"))
    _remote_options(export)
    export.add_argument("--wait", action="store_true", help="follow the job until it ends")
    export.set_defaults(handler=_lazy("reportexport.commands", "cmd_export"))

    effects = commands.add_parser(
        "effects", help="carry out side effects (webhooks, checks, clean-up) until SIGTERM"
    )
    _service_options(effects)
    effects.add_argument("--batch", type=int, default=10)
    effects.add_argument("--claim-seconds", type=float, default=60.0)
    effects.add_argument("--max-attempts", type=int, default=8)
    effects.add_argument("--once", action="store_true", help="handle what is due, then exit")
    effects.set_defaults(handler=_lazy("reportexport.commands", "cmd_effects"))
    effect_actions = effects.add_subparsers(dest="action", metavar="ACTION")
    given_up = effect_actions.add_parser("given-up", help="list rows that ran out of attempts")
    _service_options(given_up)
    given_up.set_defaults(handler=_lazy("reportexport.commands", "cmd_effects_given_up"))
    redrive = effect_actions.add_parser("redrive", help="try a given-up side effect again")
    _service_options(redrive)
    redrive.add_argument("job", type=int)
    redrive.add_argument("effect")
    redrive.set_defaults(handler=_lazy("reportexport.commands", "cmd_effects_redrive"))

    webhooks = commands.add_parser("webhooks", help="webhook endpoints")
    hook_actions = webhooks.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = hook_actions.add_parser("add", help="register an endpoint; prints its secret once")
    _service_options(add)
    add.add_argument("url")
    owner = add.add_mutually_exclusive_group(required=True)
    owner.add_argument("--owner", help="the user whose events it receives")
    owner.add_argument("--global", dest="everyone", action="store_true", help="every event")
    add.set_defaults(handler=_lazy("reportexport.commands", "cmd_webhooks_add"))
    listing = hook_actions.add_parser("list", help="list endpoints (secrets are not shown)")
    _service_options(listing)
    listing.add_argument("--owner")
    listing.set_defaults(handler=_lazy("reportexport.commands", "cmd_webhooks_list"))
    rotate = hook_actions.add_parser("rotate", help="new secret; the old one signs too for a while")
    _service_options(rotate)
    rotate.add_argument("id", type=int)
    rotate.add_argument("--overlap-hours", type=float, default=24.0)
    rotate.set_defaults(handler=_lazy("reportexport.commands", "cmd_webhooks_rotate"))
    remove = hook_actions.add_parser("remove", help="stop sending to an endpoint")
    _service_options(remove)
    remove.add_argument("id", type=int)
    remove.set_defaults(handler=_lazy("reportexport.commands", "cmd_webhooks_remove"))

    serve = commands.add_parser(
        "serve", help="API, worker and effects runner in one process (builds the demo if needed)"
    )
    _service_options(serve)
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--concurrency", type=int, default=2, help="exports at once")
    serve.add_argument("--grace-seconds", type=float, default=30.0)
    serve.add_argument("--retention-days", type=float, default=7.0)
    serve.add_argument("--demo-rows", type=int, default=None, help="orders in a new demo")
    serve.set_defaults(handler=_lazy("reportexport.serve", "cmd_serve"))

    users = commands.add_parser("users", help="people and their API tokens")
    user_actions = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    user_add = user_actions.add_parser("add", help="add a person; prints their token once")
    _service_options(user_add)
    user_add.add_argument("name")
    user_add.add_argument("--operator", action="store_true", help="sees and cancels every job")
    user_add.set_defaults(handler=_lazy("reportexport.commands", "cmd_users_add"))
    user_list = user_actions.add_parser("list", help="list people (tokens are never shown)")
    _service_options(user_list)
    user_list.set_defaults(handler=_lazy("reportexport.commands", "cmd_users_list"))
    user_revoke = user_actions.add_parser("revoke", help="revoke a person's token")
    _service_options(user_revoke)
    user_revoke.add_argument("name")
    user_revoke.set_defaults(handler=_lazy("reportexport.commands", "cmd_users_revoke"))

    jobs = commands.add_parser("jobs", help="your exports on a server (over the API)")
    job_actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    job_list = job_actions.add_parser("list", help="newest first")
    _remote_options(job_list)
    job_list.add_argument("--status")
    for action, text in (("show", "a job and its history"), ("cancel", "cancel a job")):
        sub = job_actions.add_parser(action, help=text)
        _remote_options(sub)
        sub.add_argument("id", type=int)
    for sub in job_actions.choices.values():
        sub.set_defaults(handler=_remote_jobs)

    sweep = commands.add_parser("sweep", help="delete orphan, temp and expired objects")
    _service_options(sweep)
    sweep.add_argument("--dry-run", action="store_true")
    sweep.set_defaults(handler=_lazy("reportexport.commands", "cmd_sweep"))
    return p


def _service_options(p: argparse.ArgumentParser) -> None:
    _database_options(p)
    p.add_argument("--catalog", type=Path, default=None, help="$REPORTEXPORT_CATALOG")
    p.add_argument(
        "--objects",
        default=None,
        help="file:///dir or s3://bucket (default: $REPORTEXPORT_OBJECTS_URL)",
    )


def _remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", help="the service's URL (default: $REPORTEXPORT_SERVER)")
    p.add_argument("--token", help="your API token (default: $REPORTEXPORT_TOKEN)")


def _remote_jobs(args: argparse.Namespace) -> int:
    from reportexport import client

    return client.run(client.cmd_jobs, args)


def _lazy(module: str, name: str) -> Handler:
    """Import a command's module only when it runs: the gate and graph stay dependency-free."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        handler: Handler = getattr(importlib.import_module(module), name)
        return _reporting_store_errors(handler)(args)

    return run


def _database_options(p: argparse.ArgumentParser) -> None:
    _graph_option(p)
    p.add_argument(
        "--database",
        metavar="URL",
        default=None,
        help=f"sqlite:///path or postgresql://... (default: ${DATABASE_ENV}, "
        f"else {DEFAULT_DATABASE_URL})",
    )


def cmd_graph(args: argparse.Namespace) -> int:
    sys.stdout.write(RENDERERS[args.format](load_graph(args.graph)))
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    root = Path(args.root)
    graph = load_graph(args.graph or gate.resolve_fixture(root, None))
    for path in dict.fromkeys(generated.write(graph, root)):
        print(f"wrote {path}")
    return 0


def _reporting_store_errors(command: Callable[[argparse.Namespace], int]) -> Handler:
    """Store errors (unreachable database, schema mismatch) end the command with a message."""

    def run(args: argparse.Namespace) -> int:
        from reportexport.store.errors import StoreError

        try:
            return command(args)
        except StoreError as exc:
            print(f"reportexport {args.command}: {exc}", file=sys.stderr)
            return 1

    return run


@_reporting_store_errors
def cmd_db_upgrade(args: argparse.Namespace) -> int:
    from reportexport.store import open_database
    from reportexport.store.schema import redact

    args.database = args.database or config.default_database_url()
    database = open_database(args.database, load_graph(args.graph), check=False)
    try:
        before = database.schema_status()
        after = database.upgrade()
        print(
            f"{redact(args.database)}: schema version {before.version} -> {after.version}, "
            f"graph {_short(before.fingerprint)} -> {_short(after.fingerprint)}"
        )
        if args.service_role:
            grant = getattr(database, "grant_service_role", None)
            if grant is None:
                print("--service-role applies to PostgreSQL only", file=sys.stderr)
                return 2
            created = grant(args.service_role)
            print(f"service role {args.service_role}: {'created' if created else 'updated'}")
    finally:
        database.close()
    return 0


@_reporting_store_errors
def cmd_db_check(args: argparse.Namespace) -> int:
    from reportexport.store import open_database
    from reportexport.store.schema import redact

    args.database = args.database or config.default_database_url()
    database = open_database(args.database, load_graph(args.graph), check=False)
    try:
        status = database.schema_status()
    finally:
        database.close()
    problems = status.problems()
    for problem in problems:
        print(f"{redact(args.database)}: {problem}", file=sys.stderr)
    if problems:
        print(f"run: reportexport db upgrade --database {redact(args.database)}", file=sys.stderr)
        return 1
    print(
        f"{redact(args.database)}: schema version {status.version}, "
        f"graph {_short(status.fingerprint)}: current"
    )
    return 0


def _short(fingerprint: str | None) -> str:
    return fingerprint[:12] if fingerprint else "(none)"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config.apply_config_file()
        return int(args.handler(args))
    except config.ConfigError as exc:
        print(f"reportexport: configuration: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"reportexport: {exc}", file=sys.stderr)
        return 1
    except InvalidGraphError as exc:
        print(f"reportexport: {exc.source}: invalid job status graph:", file=sys.stderr)
        for defect in exc.defects:
            print(f"  - {defect}", file=sys.stderr)
        return 2
