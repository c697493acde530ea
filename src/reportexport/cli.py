"""The `reportexport` command.

Options that are settings (`--database`, `--catalog`, `--concurrency`, ...) default to nothing
here, so the environment and the configuration file apply unless the command line says
otherwise; the composition root builds the one `Settings` from all layers. The toolkit's
commands (`graph`, `gate`, `generate`) are `frozen-lifecycle`'s, lent to this parser: they take
any fixture with `--graph` (else `$REPORTEXPORT_GRAPH`, else this program's) and import nothing
but the standard library.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from frozen_lifecycle import cli as toolkit
from frozen_lifecycle.graph import GRAPH_ENV as TOOLKIT_GRAPH_ENV
from frozen_lifecycle.graph import InvalidGraphError
from reportexport.fixture import GRAPH_ENV, packaged_fixture_path
from reportexport.settings import FIELDS as SETTING_FIELDS

Handler = Callable[..., int]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="reportexport", description=__doc__.split("\n\n")[0])
    commands = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    toolkit.add_commands(
        commands,
        graph_envs=(GRAPH_ENV, TOOLKIT_GRAPH_ENV),
        graph_fallback=packaged_fixture_path(),
        names=("graph", "gate", "generate"),
    )

    db_cmd = commands.add_parser("db", help="build and check the job store's schema")
    db_actions = db_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    upgrade = _action(
        db_actions, "upgrade", "apply pending migrations and the fixture's graph (idempotent)"
    )
    _database_option(upgrade)
    upgrade.add_argument(
        "--service-role",
        metavar="ROLE",
        help="PostgreSQL: also create a login role that uses the tables without owning them",
    )
    check = _action(db_actions, "check", "exit 1 unless the schema and its guards are current")
    _database_option(check)
    check.add_argument(
        "--behaviour",
        action="store_true",
        help="also try every move and refusal on the live database (rolled back) against the "
        "fixture",
    )

    purge = _action(
        db_actions,
        "purge",
        "remove terminal jobs finished before a date, with their history (run as the tables' "
        "owner; the purge is recorded)",
    )
    _database_option(purge)
    purge.add_argument(
        "--before",
        required=True,
        metavar="WHEN",
        help="YYYY-MM-DD (midnight UTC) or a timestamp with its UTC offset",
    )
    purge.add_argument("--person", required=True, help="who asked for it, kept in its record")
    purge.add_argument(
        "--yes", action="store_true", help="purge; without it, only say what would go"
    )
    purges = _action(db_actions, "purges", "list every purge: when, by whom, what it removed")
    _database_option(purges)

    demo = _command(commands, "demo", "build the demo data set, its catalog and the job store")
    _service_options(demo)
    _setting(demo, "--rows", "demo_rows", int, "orders to generate")
    demo.add_argument("--force", action="store_true", help="rebuild even if the files exist")

    queries = commands.add_parser("queries", help="the saved-query catalog")
    query_actions = queries.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = _action(query_actions, "list", "list the saved queries")
    _catalog_option(listing)
    _remote_options(listing)
    checking = _action(query_actions, "check", "validate the catalog against its sources")
    _catalog_option(checking)

    worker = _command(commands, "worker", "claim and run exports until SIGTERM")
    _service_options(worker)
    _worker_options(worker)

    workers = _command(commands, "workers", "each process's heartbeat: exports, claims, pauses")
    _service_options(workers)
    workers.add_argument(
        "--stale-seconds", type=float, default=30.0, help="flag heartbeats older than this"
    )

    export = _command(
        commands, "export", "export a saved query (over the API when a server is named)"
    )
    _service_options(export)
    export.add_argument("query", help="the saved query's name")
    export.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="once per parameter"
    )
    export.add_argument("-o", "--output", type=Path, help="write the CSV here")
    _setting(export, "--owner", "owner", str, "the user who owns a local export")
    _remote_options(export)
    export.add_argument("--wait", action="store_true", help="follow the job until it ends")

    effects = _command(
        commands, "effects", "carry out side effects (webhooks, checks, clean-up) until SIGTERM"
    )
    _service_options(effects)
    _setting(effects, "--batch", "effects_batch", int, "side effects claimed at once")
    _setting(effects, "--claim-seconds", "effects_claim_seconds", float, "a claim's lease")
    _setting(effects, "--max-attempts", "effects_max_attempts", int, "attempts, then give up")
    effects.add_argument("--once", action="store_true", help="handle what is due, then exit")
    effect_actions = effects.add_subparsers(dest="action", metavar="ACTION")
    given_up = _action(effect_actions, "given-up", "list rows that ran out of attempts")
    _service_options(given_up)
    redrive = _action(effect_actions, "redrive", "try a given-up side effect again")
    _service_options(redrive)
    redrive.add_argument("job", type=int)
    redrive.add_argument("effect")

    webhooks = commands.add_parser("webhooks", help="webhook endpoints")
    hook_actions = webhooks.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = _action(hook_actions, "add", "register an endpoint; prints its secret once")
    _service_options(add)
    add.add_argument("url")
    receiver = add.add_mutually_exclusive_group(required=True)
    receiver.add_argument("--owner", dest="endpoint_owner", help="the user whose events it gets")
    receiver.add_argument("--global", dest="everyone", action="store_true", help="every event")
    hooks_list = _action(hook_actions, "list", "list endpoints (secrets are not shown)")
    _service_options(hooks_list)
    hooks_list.add_argument("--owner", dest="endpoint_owner")
    rotate = _action(hook_actions, "rotate", "new secret; the old one signs too for a while")
    _service_options(rotate)
    rotate.add_argument("id", type=int)
    rotate.add_argument("--overlap-hours", type=float, default=24.0)
    remove = _action(hook_actions, "remove", "stop sending to an endpoint")
    _service_options(remove)
    remove.add_argument("id", type=int)

    serve = _command(
        commands, "serve", "API, worker and effects runner in one process (builds the demo)"
    )
    _service_options(serve)
    _setting(serve, "--host", "host", str, "address to listen on")
    _setting(serve, "--port", "port", int, "port to listen on")
    _worker_options(serve)
    _setting(serve, "--demo-rows", "demo_rows", int, "orders in a new demo")

    users = commands.add_parser("users", help="people and their API tokens")
    user_actions = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    user_add = _action(user_actions, "add", "add a person; prints their token once")
    _service_options(user_add)
    user_add.add_argument("name")
    user_add.add_argument("--operator", action="store_true", help="sees and cancels every job")
    _service_options(_action(user_actions, "list", "list people (tokens are never shown)"))
    user_token = _action(
        user_actions, "token", "a new token for a person (to sign in again); the old one stops"
    )
    _service_options(user_token)
    user_token.add_argument("name")
    user_revoke = _action(
        user_actions, "revoke", "revoke a person for good; their dashboard sessions end"
    )
    _service_options(user_revoke)
    user_revoke.add_argument("name")
    token_revoke = _action(
        user_actions, "revoke-token", "a person's token stops working (`token` gives a new one)"
    )
    _service_options(token_revoke)
    token_revoke.add_argument("name")

    audit = _command(commands, "audit", "what operators did: who, what, which object, when")
    _service_options(audit)
    audit.add_argument("--person", help="only this operator's actions")
    audit.add_argument(
        "--action", dest="audit_action", help="only this action (redrive_side_effect, ...)"
    )
    audit.add_argument("--limit", type=int, default=50, help="newest first, this many")

    jobs = commands.add_parser("jobs", help="your exports on a server (over the API)")
    job_actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    job_list = _action(job_actions, "list", "newest first")
    job_list.add_argument("--status")
    job_commands = {
        "show": "a job and its history",
        "cancel": "cancel a job",
        "download": "download a job's file",
    }
    for action, text in job_commands.items():
        sub = _action(job_actions, action, text)
        sub.add_argument("id", type=int)
    job_actions.choices["download"].add_argument(
        "-o", "--output", type=Path, required=True, help="write the file here"
    )
    for sub in job_actions.choices.values():
        _remote_options(sub)

    schedules = commands.add_parser("schedules", help="scheduled exports (over the API)")
    schedule_actions = schedules.add_subparsers(dest="action", required=True, metavar="ACTION")
    _action(schedule_actions, "list", "your schedules with their next run")
    create = _action(schedule_actions, "create", "run a saved query on a cron, in a time zone")
    create.add_argument("query", help="the saved query's name")
    create.add_argument("--cron", required=True, help='e.g. "0 8 * * *" (minute hour day ...)')
    create.add_argument("--time-zone", required=True, help="an IANA time zone, e.g. Europe/Paris")
    create.add_argument(
        "--param", action="append", default=[], metavar="NAME=VALUE", help="once per parameter"
    )
    create.add_argument(
        "--relative", action="append", default=[], metavar="NAME=WORD",
        help="a date evaluated at each firing: yesterday, today, 'start of last week', ...",
    )  # fmt: skip
    create.add_argument("--ends-at", help="no firing after this moment (ISO 8601 with offset)")
    schedule_commands = {
        "show": "a schedule, its next times and its recent firings",
        "pause": "stop firing until resumed",
        "resume": "fire again from the next time after now",
        "run": "an export now, as a firing would make it",
        "delete": "never fire again (its exports stay)",
    }
    for action, text in schedule_commands.items():
        sub = _action(schedule_actions, action, text)
        sub.add_argument("id", type=int)
    for sub in schedule_actions.choices.values():
        _remote_options(sub)

    sweep = _command(commands, "sweep", "delete orphan, temp and expired objects")
    _service_options(sweep)
    sweep.add_argument("--dry-run", action="store_true")
    return p


def _command(
    commands: Any, name: str, text: str, *, module: str = "reportexport.commands"
) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(name, help=text)
    sub.set_defaults(handler=(module, f"cmd_{name}"))
    _config_option(sub)
    return sub


def _action(actions: Any, name: str, text: str) -> argparse.ArgumentParser:
    """A sub-command `PARENT NAME`, handled by `cmd_PARENT_NAME` in reportexport.commands."""
    sub: argparse.ArgumentParser = actions.add_parser(name, help=text)
    parent = sub.prog.split()[-2]
    sub.set_defaults(handler=("reportexport.commands", f"cmd_{parent}_{name.replace('-', '_')}"))
    _config_option(sub)
    return sub


def _setting(p: argparse.ArgumentParser, flag: str, name: str, kind: type, text: str) -> None:
    default = SETTING_FIELDS[name].default
    p.add_argument(flag, dest=name, type=kind, default=None, help=f"{text} (default: {default})")


def _config_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="a TOML settings file ($REPORTEXPORT_CONFIG)")


def _database_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--database",
        dest="database_url",
        metavar="URL",
        help="sqlite:///path or postgresql://... ($REPORTEXPORT_DATABASE_URL, "
        "else sqlite:///$REPORTEXPORT_HOME/reportexport.db)",
    )


def _catalog_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", type=Path, help="the catalog ($REPORTEXPORT_CATALOG)")


def _service_options(p: argparse.ArgumentParser) -> None:
    _database_option(p)
    _catalog_option(p)
    p.add_argument(
        "--objects",
        dest="objects_url",
        help="file:///dir or s3://bucket ($REPORTEXPORT_OBJECTS_URL)",
    )


def _worker_options(p: argparse.ArgumentParser) -> None:
    _setting(p, "--concurrency", "concurrency", int, "exports at once")
    _setting(p, "--lease-seconds", "lease_seconds", float, "a running export's lease")
    _setting(p, "--grace-seconds", "grace_seconds", float, "time to finish at shutdown")
    _setting(p, "--retention-days", "retention_days", float, "how long files are kept")


def _remote_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", help="the service's URL ($REPORTEXPORT_SERVER)")
    p.add_argument("--token", help="your API token ($REPORTEXPORT_TOKEN)")


def setting_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """What the command line says of the settings (options left out say nothing)."""
    given = {k: v for k, v in vars(args).items() if k in SETTING_FIELDS and v is not None}
    if getattr(args, "config", None):
        given["config"] = args.config
    return given


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "toolkit", None) is not None:
        return toolkit.run(args, f"reportexport {args.command}")
    try:
        return _run_with_runtime(args)
    except InvalidGraphError as exc:
        print(f"reportexport: {exc.source}: invalid job status graph:", file=sys.stderr)
        for defect in exc.defects:
            print(f"  - {defect}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"reportexport: {exc}", file=sys.stderr)
        return 1


def _run_with_runtime(args: argparse.Namespace) -> int:
    import importlib

    from reportexport import composition

    module, name = args.handler
    handler: Handler = getattr(importlib.import_module(module), name)
    command = " ".join(part for part in (args.command, getattr(args, "action", None)) if part)
    try:
        settings = composition.load_settings(setting_overrides(args))
        with composition.running(settings) as runtime:
            return int(handler(runtime, args))
    except composition.SetupError as exc:
        print(f"reportexport {command}: {exc.summary}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        message = composition.describe_failure(exc)
        if message is None:
            raise
        print(f"reportexport {command}: {message}", file=sys.stderr)
        return 2 if composition.refused_input(exc) else 1
