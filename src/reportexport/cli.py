"""The `reportexport` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from reportexport import gate, generated
from reportexport.graph import GRAPH_ENV, InvalidGraphError, load_graph
from reportexport.render import RENDERERS

Handler = Callable[[argparse.Namespace], int]
DATABASE_ENV = "REPORTEXPORT_DATABASE_URL"
DEFAULT_DATABASE_URL = "sqlite:///var/reportexport.db"


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
    return p


def _database_options(p: argparse.ArgumentParser) -> None:
    _graph_option(p)
    p.add_argument(
        "--database",
        metavar="URL",
        default=os.environ.get(DATABASE_ENV, DEFAULT_DATABASE_URL),
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
        return int(args.handler(args))
    except OSError as exc:
        print(f"reportexport: {exc}", file=sys.stderr)
        return 1
    except InvalidGraphError as exc:
        print(f"reportexport: {exc.source}: invalid job status graph:", file=sys.stderr)
        for defect in exc.defects:
            print(f"  - {defect}", file=sys.stderr)
        return 2
