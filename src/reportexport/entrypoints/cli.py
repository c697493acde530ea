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
from reportexport.core.fixture import GRAPH_ENV, packaged_fixture_path
from reportexport.core.settings import FIELDS as SETTING_FIELDS
from reportexport.core.text import quoted, unsafe_text
from reportexport.entrypoints import commands as handlers

Handler = Callable[..., int]
# The commands that may make a SQLite job store where there is none; every other one says that
# there is none here, and makes nothing.
BUILD_A_STORE = frozenset({"demo", "serve", "db upgrade"})


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
        db_actions,
        "upgrade",
        handlers.cmd_db_upgrade,
        "apply pending migrations and the fixture's graph (idempotent)",
    )
    _database_option(upgrade)
    upgrade.add_argument(
        "--service-role",
        metavar="ROLE",
        help="PostgreSQL: also create a login role that uses the tables without owning them",
    )
    check = _action(
        db_actions,
        "check",
        handlers.cmd_db_check,
        "exit 1 unless the schema and its guards are current",
    )
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
        handlers.cmd_db_purge,
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
    purges = _action(
        db_actions,
        "purges",
        handlers.cmd_db_purges,
        "list every purge: when, by whom, what it removed",
    )
    _database_option(purges)

    demo = _command(
        commands,
        "demo",
        handlers.cmd_demo,
        "build the demo data set, its catalog and the job store",
    )
    _service_options(demo)
    _setting(demo, "--rows", "demo_rows", int, "orders to generate")
    demo.add_argument("--force", action="store_true", help="rebuild even if the files exist")

    queries = commands.add_parser("queries", help="the saved-query catalog")
    query_actions = queries.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = _action(query_actions, "list", handlers.cmd_queries_list, "list the saved queries")
    _catalog_option(listing)
    _remote_options(listing)
    checking = _action(
        query_actions,
        "check",
        handlers.cmd_queries_check,
        "validate the catalog against its sources",
    )
    _catalog_option(checking)

    worker = _command(
        commands, "worker", handlers.cmd_worker, "claim and run exports until SIGTERM"
    )
    _service_options(worker)
    _worker_options(worker)

    workers = _command(
        commands,
        "workers",
        handlers.cmd_workers,
        "each process's heartbeat: exports, claims, pauses",
    )
    _service_options(workers)
    workers.add_argument(
        "--stale-seconds", type=float, default=30.0, help="flag heartbeats older than this"
    )

    export = _command(
        commands,
        "export",
        handlers.cmd_export,
        "export a saved query (over the API when a server is named)",
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
    export.add_argument(
        "--notify",
        action="store_true",
        help="e-mail me when the export ends (at the address an operator set for me)",
    )

    effects = _command(
        commands,
        "effects",
        handlers.cmd_effects,
        "carry out side effects (webhooks, checks, clean-up) until SIGTERM",
    )
    _service_options(effects)
    _setting(effects, "--batch", "effects_batch", int, "side effects claimed at once")
    _setting(effects, "--claim-seconds", "effects_claim_seconds", float, "a claim's lease")
    _setting(effects, "--max-attempts", "effects_max_attempts", int, "attempts, then give up")
    effects.add_argument("--once", action="store_true", help="handle what is due, then exit")
    effect_actions = effects.add_subparsers(dest="action", metavar="ACTION")
    given_up = _action(
        effect_actions,
        "given-up",
        handlers.cmd_effects_given_up,
        "list rows that ran out of attempts, and destinations given up",
    )
    _service_options(given_up)
    redrive = _action(
        effect_actions, "redrive", handlers.cmd_effects_redrive, "try a given-up side effect again"
    )
    _service_options(redrive)
    redrive.add_argument("job", type=int)
    redrive.add_argument("effect")
    redrive_one = _action(
        effect_actions,
        "redrive-delivery",
        handlers.cmd_effects_redrive_delivery,
        "try one given-up destination of an announcement again, alone",
    )
    _service_options(redrive_one)
    redrive_one.add_argument("delivery", type=int, help="its id, as `given-up` lists it")

    webhooks = commands.add_parser("webhooks", help="webhook endpoints")
    hook_actions = webhooks.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = _action(
        hook_actions,
        "add",
        handlers.cmd_webhooks_add,
        "register an endpoint; prints its secret once",
    )
    _service_options(add)
    add.add_argument("url")
    receiver = add.add_mutually_exclusive_group(required=True)
    receiver.add_argument("--owner", dest="endpoint_owner", help="the user whose events it gets")
    receiver.add_argument("--global", dest="everyone", action="store_true", help="every event")
    hooks_list = _action(
        hook_actions, "list", handlers.cmd_webhooks_list, "list endpoints (secrets are not shown)"
    )
    _service_options(hooks_list)
    hooks_list.add_argument("--owner", dest="endpoint_owner")
    rotate = _action(
        hook_actions,
        "rotate",
        handlers.cmd_webhooks_rotate,
        "new secret; the old one signs too for a while",
    )
    _service_options(rotate)
    rotate.add_argument("id", type=int)
    rotate.add_argument("--overlap-hours", type=float, default=24.0)
    remove = _action(
        hook_actions, "remove", handlers.cmd_webhooks_remove, "stop sending to an endpoint"
    )
    _service_options(remove)
    remove.add_argument("id", type=int)

    chat = commands.add_parser("chat", help="chat channels announcements are posted to")
    chat_actions = chat.add_subparsers(dest="action", required=True, metavar="ACTION")
    chat_add = _action(
        chat_actions,
        "add",
        handlers.cmd_chat_add,
        "register a channel by its incoming-webhook URL (its host must be in chat_hosts)",
    )
    _service_options(chat_add)
    chat_add.add_argument("url")
    chat_add.add_argument("--name", required=True, help="how operators call it (#exports)")
    for_whom = chat_add.add_mutually_exclusive_group(required=True)
    for_whom.add_argument("--owner", dest="channel_owner", help="the person whose exports it gets")
    for_whom.add_argument("--global", dest="everyone", action="store_true", help="every export")
    chat_add.add_argument(
        "--schedules-only", action="store_true",
        help="only the announcements of the schedules it is added to (reportexport schedules "
        "channels ID --add CHANNEL), not every export of its owner (everyone's)",
    )  # fmt: skip
    chat_list = _action(
        chat_actions, "list", handlers.cmd_chat_list, "list channels (their URLs are not shown)"
    )
    _service_options(chat_list)
    chat_list.add_argument("--owner", dest="channel_owner")
    chat_remove = _action(
        chat_actions, "remove", handlers.cmd_chat_remove, "stop posting to a channel"
    )
    _service_options(chat_remove)
    chat_remove.add_argument("id", type=int)

    serve = _command(
        commands,
        "serve",
        handlers.cmd_serve,
        "API, worker and effects runner in one process (builds the demo)",
    )
    _service_options(serve)
    _setting(serve, "--host", "host", str, "address to listen on")
    _setting(serve, "--port", "port", int, "port to listen on")
    _worker_options(serve)
    _setting(serve, "--demo-rows", "demo_rows", int, "orders in a new demo")

    users = commands.add_parser("users", help="people and their API tokens")
    user_actions = users.add_subparsers(dest="action", required=True, metavar="ACTION")
    user_add = _action(
        user_actions, "add", handlers.cmd_users_add, "add a person; prints their token once"
    )
    _service_options(user_add)
    user_add.add_argument("name")
    user_add.add_argument("--operator", action="store_true", help="sees and cancels every job")
    user_add.add_argument(
        "--service", action="store_true", help="a service account: a token for the API only"
    )
    _service_options(
        _action(
            user_actions, "list", handlers.cmd_users_list, "list people (tokens are never shown)"
        )
    )
    user_token = _action(
        user_actions,
        "token",
        handlers.cmd_users_token,
        "a new token for a person (to sign in again); the old one stops",
    )
    _service_options(user_token)
    user_token.add_argument("name")
    user_revoke = _action(
        user_actions,
        "revoke",
        handlers.cmd_users_revoke,
        "revoke a person for good; their dashboard sessions end",
    )
    _service_options(user_revoke)
    user_revoke.add_argument("name")
    token_revoke = _action(
        user_actions,
        "revoke-token",
        handlers.cmd_users_revoke_token,
        "a person's token stops working (`token` gives a new one)",
    )
    _service_options(token_revoke)
    token_revoke.add_argument("name")

    user_email = _action(
        user_actions,
        "email",
        handlers.cmd_users_email,
        "set where a person's announcements by e-mail go",
    )
    _service_options(user_email)
    user_email.add_argument("name")
    user_email.add_argument("address", nargs="?", help="one mailbox: name@example.com")
    user_email.add_argument("--remove", action="store_true", help="no e-mail address")
    notify_always = _action(
        user_actions,
        "notify-always",
        handlers.cmd_users_notify_always,
        "e-mail a person when any of their exports ends (on), or only when asked (off)",
    )
    _service_options(notify_always)
    notify_always.add_argument("name")
    notify_always.add_argument("switch", choices=("on", "off"))
    person_actions: list[tuple[str, Handler, str, tuple[str, ...]]] = [
        ("access", handlers.cmd_users_access, "a person's groups and attributes", ("name",)),
        ("set", handlers.cmd_users_set, "set a person's attribute (bound parameters read it)",
         ("name", "attribute", "value")),
        ("unset", handlers.cmd_users_unset, "remove a person's attribute", ("name", "attribute")),
        ("suspend", handlers.cmd_users_suspend,
         "stop a person's token and sessions at once, ending their exports and schedules",
         ("name",)),
        ("resume", handlers.cmd_users_resume, "let a suspended person in again", ("name",)),
    ]  # fmt: skip
    for verb, handler, text, places in person_actions:
        made = _with_places(_action(user_actions, verb, handler, text), places)
        if verb == "suspend":
            made.add_argument("--reason", default="", help="said in the audit and to the jobs")

    groups = commands.add_parser("groups", help="groups, which saved queries' access names")
    group_actions = groups.add_subparsers(dest="action", required=True, metavar="ACTION")
    group_verbs: list[tuple[str, Handler, str, tuple[str, ...]]] = [
        ("list", handlers.cmd_groups_list, "every group and its number of members", ()),
        ("create", handlers.cmd_groups_create, "a new group", ("group",)),
        ("delete", handlers.cmd_groups_delete, "delete a group; its members lose its access",
         ("group",)),
        ("members", handlers.cmd_groups_members, "a group's members", ("group",)),
        ("add", handlers.cmd_groups_add, "a person joins a group", ("group", "name")),
        ("remove", handlers.cmd_groups_remove,
         "a person leaves a group, losing its access at once", ("group", "name")),
    ]  # fmt: skip
    for verb, handler, text, places in group_verbs:
        made = _with_places(_action(group_actions, verb, handler, text), places)
        if verb == "create":
            made.add_argument("--description", default="", help="what the group is for")

    audit = _command(
        commands, "audit", handlers.cmd_audit, "what operators did: who, what, which object, when"
    )
    _service_options(audit)
    audit.add_argument("--person", help="only this operator's actions")
    audit.add_argument(
        "--action", dest="audit_action", help="only this action (redrive_side_effect, ...)"
    )
    audit.add_argument("--limit", type=int, default=50, help="newest first, this many")

    jobs = commands.add_parser("jobs", help="your exports on a server (over the API)")
    job_actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    job_list = _action(job_actions, "list", handlers.cmd_jobs_list, "newest first")
    job_list.add_argument("--status")
    job_commands = {
        "show": (handlers.cmd_jobs_show, "a job and its history"),
        "cancel": (handlers.cmd_jobs_cancel, "cancel a job"),
        "notify": (handlers.cmd_jobs_notify, "e-mail me when my job ends"),
        "download": (handlers.cmd_jobs_download, "download a job's file"),
    }
    for action, (handler, text) in job_commands.items():
        sub = _action(job_actions, action, handler, text)
        sub.add_argument("id", type=int)
    job_actions.choices["download"].add_argument(
        "-o", "--output", type=Path, required=True, help="write the file here"
    )
    for sub in job_actions.choices.values():
        _remote_options(sub)

    schedules = commands.add_parser("schedules", help="scheduled exports (over the API)")
    schedule_actions = schedules.add_subparsers(dest="action", required=True, metavar="ACTION")
    _action(
        schedule_actions, "list", handlers.cmd_schedules_list, "your schedules with their next run"
    )
    create = _action(
        schedule_actions,
        "create",
        handlers.cmd_schedules_create,
        "run a saved query on a cron, in a time zone",
    )
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
    create.add_argument(
        "--ends-at",
        metavar="WHEN",
        help="no firing after this moment: an RFC 3339 date-time with its UTC offset "
        "(2027-01-31T18:00:00+01:00)",
    )
    preview = _action(schedule_actions, "preview", handlers.cmd_schedules_preview,
        "a cron expression in words, its next times and how close its firings come",
    )  # fmt: skip
    preview.add_argument("--cron", required=True, help='e.g. "0 8 * * *"')
    preview.add_argument("--time-zone", required=True, help="an IANA time zone, e.g. Europe/Paris")
    schedule_commands = {
        "show": (handlers.cmd_schedules_show, "a schedule, its next times and its recent firings"),
        "pause": (handlers.cmd_schedules_pause, "stop firing until resumed"),
        "resume": (handlers.cmd_schedules_resume, "fire again from the next time after now"),
        "run": (handlers.cmd_schedules_run, "an export now, as a firing would make it"),
        "delete": (handlers.cmd_schedules_delete, "never fire again (its exports stay)"),
    }
    for action, (handler, text) in schedule_commands.items():
        sub = _action(schedule_actions, action, handler, text)
        sub.add_argument("id", type=int)
    recipients = _action(schedule_actions, "recipients", handlers.cmd_schedules_recipients,
        "who gets each firing's announcement by e-mail besides its owner",
    )  # fmt: skip
    recipients.add_argument("id", type=int)
    recipients.add_argument(
        "--add", action="append", default=[], metavar="PERSON",
        help="a person who may run the saved query and has an address (once per person)",
    )  # fmt: skip
    recipients.add_argument(
        "--remove", action="append", default=[], metavar="PERSON",
        help="no more announcements for them (yourself, on another's schedule)",
    )  # fmt: skip
    channels = _action(schedule_actions, "channels", handlers.cmd_schedules_channels,
        "which chat channels get each firing's announcement",
    )  # fmt: skip
    channels.add_argument("id", type=int)
    channels.add_argument(
        "--add", action="append", default=[], type=int, metavar="CHANNEL",
        help="a chat channel's id (yours, or any for operators; see: reportexport chat list)",
    )  # fmt: skip
    channels.add_argument(
        "--remove", action="append", default=[], type=int, metavar="CHANNEL",
        help="no more announcements there",
    )  # fmt: skip
    addresses = _action(schedule_actions, "addresses", handlers.cmd_schedules_addresses,
        "which e-mail addresses outside this service's people get each firing's export",
    )  # fmt: skip
    addresses.add_argument("id", type=int)
    addresses.add_argument(
        "--add", action="append", default=[], metavar="ADDRESS",
        help="an e-mail address (operators); again: sets what it gets attached",
    )  # fmt: skip
    addresses.add_argument(
        "--attach-max-bytes", type=int, metavar="BYTES",
        help="with --add: attach the file when it is at most this size (after gzip with "
        "--gzip); left out: a download link alone",
    )  # fmt: skip
    addresses.add_argument(
        "--gzip", action="store_true", help="with --add: compress the attached file with gzip"
    )
    addresses.add_argument(
        "--remove", action="append", default=[], metavar="ADDRESS", help="no more e-mails there"
    )
    for sub in schedule_actions.choices.values():
        _remote_options(sub)

    sweep = _command(
        commands, "sweep", handlers.cmd_sweep, "delete orphan, temp and expired objects"
    )
    _service_options(sweep)
    sweep.add_argument("--dry-run", action="store_true")
    return p


def _command(commands: Any, name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
    sub: argparse.ArgumentParser = commands.add_parser(name, help=text)
    sub.set_defaults(handler=handler)
    _config_option(sub)
    return sub


def _action(actions: Any, name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
    """A sub-command `PARENT NAME`."""
    sub: argparse.ArgumentParser = actions.add_parser(name, help=text)
    sub.set_defaults(handler=handler)
    _config_option(sub)
    return sub


def _with_places(sub: argparse.ArgumentParser, places: tuple[str, ...]) -> argparse.ArgumentParser:
    """A command on the job store here, with its positional arguments."""
    _service_options(sub)
    for place in places:
        sub.add_argument(place)
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
    parser = build_parser()
    args = parser.parse_args(argv)
    refused = undecodable_argument(parser, args)
    if refused is not None:
        print(f"{_prog_of(args)}: {refused}", file=sys.stderr)
        return 2
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


def undecodable_argument(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """What is wrong with the first argument of the chosen command that no store, file name or
    request could carry (bytes that are not UTF-8 reach Python as lone surrogates, a NUL),
    naming the argument; None when every one is text."""
    for action in _chosen_actions(parser, args):
        value = getattr(args, action.dest, None)
        for item in value if isinstance(value, list | tuple) else [value]:
            if not isinstance(item, str | Path):
                continue
            problem = unsafe_text(str(item))
            if problem is not None:
                name = action.option_strings[-1] if action.option_strings else action.dest
                return f"{name} {quoted(str(item))} {problem}: give it as UTF-8 text"
    return None


def _chosen_actions(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> list[argparse.Action]:
    """The arguments of the parsers that read the command line: the program's, the command's
    and its action's."""
    found: list[argparse.Action] = []
    current: argparse.ArgumentParser | None = parser
    while current is not None:
        chosen = None
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
            else:
                found.append(action)
        current = chosen
    return found


def _prog_of(args: argparse.Namespace) -> str:
    words = (getattr(args, "command", None), getattr(args, "action", None))
    return " ".join(["reportexport", *(str(w) for w in words if isinstance(w, str))])


def _run_with_runtime(args: argparse.Namespace) -> int:
    from reportexport import composition

    handler: Handler = args.handler
    command = " ".join(part for part in (args.command, getattr(args, "action", None)) if part)
    try:
        settings = composition.load_settings(setting_overrides(args))
        with composition.running(settings, builds_store=command in BUILD_A_STORE) as runtime:
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
