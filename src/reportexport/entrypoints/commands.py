"""The commands that act on this machine's service: demo, queries, export, worker, effects,
webhooks, users, audit, db, sweep, and the `jobs` group (over the API).

Each handler gets the process's `Runtime` (the composition root) and its arguments, asks the
runtime for the service or part it uses, and prints; refusals are one line on stderr with
exit 2 for what the person must change, 1 for what failed.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from reportexport.core.parameters import ParameterError, single_values
from reportexport.core.records import User
from reportexport.core.text import printable, quoted, unsafe_text
from reportexport.entrypoints.first_run import make_demo
from reportexport.services.access import Withdrawn
from reportexport.services.errors import InvalidInputError
from reportexport.services.exports import Acting

if TYPE_CHECKING:
    from reportexport.composition import Runtime

SHELL = Acting(name="command line", role="operator")  # whoever can reach the database


def say(message: str) -> None:
    print(message, file=sys.stderr)


# -- the demo -------------------------------------------------------------------------------------


def cmd_demo(runtime: Runtime, args: argparse.Namespace) -> int:
    make_demo(runtime, force=args.force)
    print("try: reportexport export orders_by_day --param day=2024-03-05 -o orders.csv")
    return 0


# -- saved queries --------------------------------------------------------------------------------


def cmd_queries_list(runtime: Runtime, args: argparse.Namespace) -> int:
    if runtime.settings.server:
        from reportexport.entrypoints import client

        return client.run(client.cmd_remote_queries, runtime.settings)
    for query in runtime.exports.saved_queries(SHELL):
        params = ", ".join(
            f"{spec.name}:{spec.type}{'' if spec.required else '?'}"
            for spec in query.parameters.values()
        )
        print(f"{query.name:24} {query.title}  ({params or 'no parameters'})")
    return 0


def cmd_queries_check(runtime: Runtime, args: argparse.Namespace) -> int:
    catalog = runtime.catalog
    problems = runtime.check_catalog() + runtime.check_access()
    for problem in problems:
        say(f"  - {problem}")
    if problems:
        say(f"{catalog.path}: {len(problems)} saved queries cannot run")
        return 1
    counts = f"{len(catalog.queries)} saved queries, {len(catalog.sources)} sources"
    print(f"{catalog.path}: {counts}; each described by its source")
    return 0


# -- exports --------------------------------------------------------------------------------------


def cmd_export(runtime: Runtime, args: argparse.Namespace) -> int:
    """Over the API when a server is named; otherwise here, with an in-process worker."""
    raw = parameters_from(args.param)
    if raw is None:
        return 2
    if args.output is not None and not writable_target(args.output):
        return 2
    if runtime.settings.server:
        from reportexport.entrypoints import client

        if args.owner is not None:
            say(
                "reportexport export: --owner is for exports run here; over the API the job "
                "belongs to the token's person"
            )
            return 2
        return client.run(client.cmd_remote_export, runtime.settings, args, raw)
    person = owner_of_local_exports(runtime)
    if person is None:
        return 2
    exports = runtime.exports
    try:
        job = exports.create(person, args.query, raw, from_text=True, notify=args.notify).job
    except InvalidInputError as exc:
        hint = "; see: reportexport queries list" if exc.field == "saved_query" else ""
        say(f"reportexport export: {exc.detail}{hint}")
        return 2
    except ParameterError as exc:
        say(f"reportexport export: {printable(str(exc))}")
        return 2
    print(f"job {job.id}: {job.status}", flush=True)
    worker = runtime.worker(beats=False)  # it lives as long as this export: no heartbeat
    worker.start()
    try:
        last = -1
        while True:
            job = exports.job(person, job.id).detail.job
            if job.status == "running" and job.bytes_written != last:
                last = job.bytes_written
                progress = f"{job.rows_written:,} rows, {job.bytes_written:,} bytes"
                print(f"  running: {progress}", flush=True)
            if job.finished_at is not None:
                break
            time.sleep(0.2)
    finally:
        # On a shared job store this worker may have taken other people's exports too: they
        # get the usual grace to finish rather than being ended with ours.
        worker.stop(grace_seconds=runtime.settings.grace_seconds)
    print(f"job {job.id}: {job.status}")
    if job.error_code:
        say(f"  {job.error_code}: {job.error_message}")
        return 1
    if job.object_key is None:
        return 1
    print(
        f"  {job.object_rows or 0:,} rows, {job.object_bytes or 0:,} bytes, sha256 "
        + f"{job.object_sha256}\n  object {job.object_key}"
    )
    if args.output:
        stored = exports.open_file(person, job.id)
        with stored.stream as source, open(args.output, "wb") as target:
            shutil.copyfileobj(source, target)
        print(f"  written to {args.output}")
    return 0 if job.status == "succeeded" else 1


def parameters_from(items: list[str]) -> dict[str, str] | None:
    """`NAME=VALUE` arguments as a mapping; None (after saying why) when one is wrong."""
    pairs = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            say(f"reportexport export: --param takes NAME=VALUE, not {quoted(item)}")
            return None
        for what, text in (("name", name), ("value", value)):
            problem = unsafe_text(text)
            if problem is not None:
                say(f"reportexport export: --param {quoted(name)}: the {what} {problem}")
                return None
        pairs.append((name, value))
    try:
        return single_values(pairs)
    except ParameterError as exc:
        say(f"reportexport export: --param {quoted(exc.parameter)} {exc.message}")
        return None


def writable_target(output: Path) -> bool:
    """Whether the CSV can be written at `output`, checked before any job is created."""
    from reportexport.entrypoints.client import output_problem

    problem = output_problem(output)
    if problem is not None:
        say(f"reportexport export: -o {problem}")
    return problem is None


def owner_of_local_exports(runtime: Runtime) -> User | None:
    name = runtime.settings.owner
    person = runtime.people.get(name)
    if person is None or person.revoked_at is not None:
        shown = quoted(name)
        say(
            f"reportexport export: local exports belong to a user, and there is no active user "
            f"{shown}: choose one with --owner or $REPORTEXPORT_OWNER, or add it with "
            f"`reportexport users add NAME`"
        )
        return None
    return person


def cmd_worker(runtime: Runtime, args: argparse.Namespace) -> int:
    from reportexport.core.logs import configure_logging

    configure_logging()
    worker = runtime.worker(restart_loops=False)  # this process's supervisor restarts it
    return worker.run_until_signal(grace_seconds=runtime.settings.grace_seconds)


def cmd_sweep(runtime: Runtime, args: argparse.Namespace) -> int:
    report = runtime.sweep(dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    for key, why in report.deleted.items():
        print(f"{verb} {key}: {why}")
    print(f"{len(report.deleted)} {verb}, {report.kept} kept")
    return 0


# -- side effects ---------------------------------------------------------------------------------


def cmd_effects(runtime: Runtime, args: argparse.Namespace) -> int:
    from reportexport.core.logs import configure_logging

    configure_logging()
    runner = runtime.effects_runner(restart_loops=False)  # this process's supervisor restarts it
    if args.once:
        while runner.run_once():
            pass
        return 0
    return runner.run_until_signal()


def cmd_workers(runtime: Runtime, args: argparse.Namespace) -> int:
    """Every process's last heartbeat: what it runs, when it last claimed, what it paused."""
    beats = runtime.heartbeats()
    if not beats:
        print("no process has reported yet")
    for beat in beats:
        stale = "  STALE" if (beat.age_seconds or 0) > args.stale_seconds else ""
        if beat.stopped_at is not None:
            stale = f"  stopped at {beat.stopped_at:%Y-%m-%d %H:%M:%S}"
        claimed = f"{beat.last_claim_at:%H:%M:%S}" if beat.last_claim_at else "-"
        polled = f"{beat.last_poll_at:%H:%M:%S}" if beat.last_poll_at else "-"
        seen = f"seen {beat.age_seconds or 0:6.1f} s ago{stale}"
        print(
            f"{beat.process:36} {beat.kind:7} {seen}; exports {list(beat.active_jobs)}; "
            + f"last claim {claimed}, last asked for work {polled}"
        )
        if beat.pause_reason:
            until = f"{beat.claims_paused_until:%H:%M:%S}" if beat.claims_paused_until else "-"
            sources = f" ({', '.join(beat.paused_sources)})" if beat.paused_sources else ""
            print(f"{'':36} claims paused: {beat.pause_reason}{sources}, next probe {until}")
    for cap in runtime.source_caps():
        taken = f"{cap.running} of {cap.max_concurrent} slots taken"
        print(f"source {cap.source}: {taken} (set by {cap.set_by} at {cap.set_at:%H:%M:%S})")
    return 0


def cmd_effects_given_up(runtime: Runtime, args: argparse.Namespace) -> int:
    for row in runtime.exports.given_up_side_effects(SHELL):
        given_up = f"{row.given_up_at:%Y-%m-%d %H:%M:%S}" if row.given_up_at else "-"
        attempts = f"{row.attempts} attempts, given up at {given_up}"
        print(f"job {row.job_id} {row.effect}: {attempts}; last problem: {row.last_error}")
    for d in runtime.exports.given_up_deliveries(SHELL):
        given_up = f"{d.given_up_at:%Y-%m-%d %H:%M:%S}" if d.given_up_at else "-"
        attempts = f"{d.attempts} attempts, given up at {given_up}"
        print(
            f"  delivery {d.id} of job {d.job_id} {d.effect} to {printable(d.destination)}: "
            f"{attempts}; last problem: {printable(d.last_error or '')}"
        )
    return 0


def cmd_audit(runtime: Runtime, args: argparse.Namespace) -> int:
    """The operators' audit, newest first."""
    page = runtime.operators.audit(
        SHELL, person=args.person, action=args.audit_action, limit=args.limit
    )
    if not page.records:
        print("no operator action is recorded yet")
    for entry in page.records:
        what = f"{entry.action} {entry.object_kind} {entry.object_id}"
        detail = f": {printable(entry.detail)}" if entry.detail else ""
        print(f"{entry.at:%Y-%m-%d %H:%M:%S} {printable(entry.person):16} {what}{detail}")
    return 0


def cmd_effects_redrive(runtime: Runtime, args: argparse.Namespace) -> int:
    runtime.exports.redrive(SHELL, args.job, args.effect)
    print(f"job {args.job} {args.effect}: due again")
    return 0


def cmd_effects_redrive_delivery(runtime: Runtime, args: argparse.Namespace) -> int:
    """One given-up destination again, alone (`effects given-up` lists them)."""
    delivery = runtime.exports.redrive_delivery(SHELL, args.delivery)
    print(
        f"delivery {delivery.id} of job {delivery.job_id} {delivery.effect} to "
        f"{printable(delivery.destination)}: due again"
    )
    return 0


# -- webhooks and people --------------------------------------------------------------------------


def cmd_webhooks_add(runtime: Runtime, args: argparse.Namespace) -> int:
    endpoint = runtime.webhooks.add(
        SHELL, args.url, everyone=args.everyone, owner=args.endpoint_owner
    )
    print(f"endpoint {endpoint.id} for {endpoint.owner or 'every owner'}: {endpoint.url}")
    print(f"secret (shown once): {endpoint.secret}")
    return 0


def cmd_webhooks_list(runtime: Runtime, args: argparse.Namespace) -> int:
    for e in runtime.webhooks.list(SHELL, args.endpoint_owner):
        state = (
            f"disabled {e.disabled_at:%Y-%m-%d} ({e.disabled_reason})"
            if e.disabled_at
            else "enabled"
        )
        print(f"{e.id:5} {e.owner or '(global)':16} {state:10} {e.url}")
    return 0


def cmd_webhooks_rotate(runtime: Runtime, args: argparse.Namespace) -> int:
    endpoint = runtime.webhooks.rotate(SHELL, args.id, overlap_hours=args.overlap_hours)
    until = endpoint.previous_secret_until
    print(f"endpoint {endpoint.id}: new secret (shown once): {endpoint.secret}")
    if until is not None:
        print(f"the previous secret signs too until {until:%Y-%m-%d %H:%M} UTC")
    return 0


def cmd_webhooks_remove(runtime: Runtime, args: argparse.Namespace) -> int:
    if not runtime.webhooks.remove(SHELL, args.id):
        say(f"reportexport webhooks remove: endpoint {args.id} was removed already")
        return 1
    print(f"endpoint {args.id}: removed")
    return 0


def cmd_chat_add(runtime: Runtime, args: argparse.Namespace) -> int:
    owner = None if args.everyone else args.channel_owner
    only = args.schedules_only
    channel = runtime.chat.add(SHELL, args.url, args.name, owner=owner, schedules_only=only)
    if only:
        whose = f" of {channel.owner}" if channel.owner else ""
        meant = f"the schedules{whose} it is added to"
    else:
        meant = channel.owner or "everyone"
    print(f"chat channel {channel.id} ({channel.name}) on {channel.host} for {meant}")
    return 0


def cmd_chat_list(runtime: Runtime, args: argparse.Namespace) -> int:
    for c in runtime.chat.list(SHELL, args.channel_owner):
        state = (
            f"removed {c.disabled_at:%Y-%m-%d} ({c.disabled_reason})"
            if c.disabled_at
            else "enabled"
        )
        kind = " (schedules only)" if c.schedules_only else ""
        print(f"{c.id:5} {c.owner or '(global)':16} {state:10} {c.host} {quoted(c.name)}{kind}")
    return 0


def cmd_chat_remove(runtime: Runtime, args: argparse.Namespace) -> int:
    if not runtime.chat.remove(SHELL, args.id):
        say(f"reportexport chat remove: chat channel {args.id} was removed already")
        return 1
    print(f"chat channel {args.id}: removed")
    return 0


def cmd_users_add(runtime: Runtime, args: argparse.Namespace) -> int:
    role = "operator" if args.operator else "user"
    user, token = runtime.people.add(args.name, role, by=SHELL, service=args.service)
    what = f"service account ({user.role})" if user.is_service else user.role
    print(f"{what} {user.name}: token (shown once, stored hashed): {token}")
    return 0


def cmd_users_list(runtime: Runtime, args: argparse.Namespace) -> int:
    for user in runtime.people.list():
        state = f"revoked {user.revoked_at:%Y-%m-%d}" if user.revoked_at else "active"
        if user.revoked_at is None and user.token_revoked_at is not None:
            state = f"token revoked {user.token_revoked_at:%Y-%m-%d}"
        if user.revoked_at is None and user.suspended_at is not None:
            state = f"suspended {user.suspended_at:%Y-%m-%d} by {user.suspended_by}"
        kind = " (service)" if user.is_service else ""
        print(f"{user.name:24} {user.role + kind:19} {state}")
    return 0


def cmd_users_token(runtime: Runtime, args: argparse.Namespace) -> int:
    made = runtime.people.new_token(args.name, by=SHELL)
    if made is None:
        say(f"reportexport users token: no active user {quoted(args.name)}")
        return 1
    user, token = made
    print(f"{user.role} {user.name}: new token (shown once, stored hashed): {token}")
    print("the previous token no longer works; sign in to the dashboard with this one")
    return 0


def cmd_users_revoke(runtime: Runtime, args: argparse.Namespace) -> int:
    if not runtime.people.revoke(args.name, by=SHELL):
        say(f"reportexport users revoke: no active user {quoted(args.name)}")
        return 1
    print(f"{args.name}: revoked; their dashboard sessions ended")
    return 0


def cmd_users_revoke_token(runtime: Runtime, args: argparse.Namespace) -> int:
    if not runtime.people.revoke_token(args.name, by=SHELL):
        say(f"reportexport users revoke-token: no active user {quoted(args.name)} with a token")
        return 1
    print(f"{args.name}: token revoked; their dashboard sessions ended")
    print(f"give them a new one with: reportexport users token {args.name}")
    return 0


# -- groups and attributes ------------------------------------------------------------------------


def cmd_users_access(runtime: Runtime, args: argparse.Namespace) -> int:
    access = runtime.access.access_of(SHELL, args.name)
    groups = ", ".join(f"{group} ({origin})" for group, origin in access.groups)
    print(f"{args.name}: groups {groups or 'none'}")
    for name, value, origin in access.attributes:
        print(f"  {name} = {value} ({origin})")
    return 0


def cmd_users_set(runtime: Runtime, args: argparse.Namespace) -> int:
    withdrawn = runtime.access.set_attribute(SHELL, args.name, args.attribute, args.value)
    print(f"{args.name}: {args.attribute} = {args.value}")
    return _say_withdrawn(args.name, withdrawn)


def cmd_users_unset(runtime: Runtime, args: argparse.Namespace) -> int:
    withdrawn = runtime.access.unset_attribute(SHELL, args.name, args.attribute)
    print(f"{args.name}: {args.attribute} removed")
    return _say_withdrawn(args.name, withdrawn)


def cmd_users_suspend(runtime: Runtime, args: argparse.Namespace) -> int:
    withdrawn = runtime.access.suspend(SHELL, args.name, args.reason)
    print(f"{args.name}: suspended; their token and dashboard sessions stopped")
    return _say_withdrawn(args.name, withdrawn)


def cmd_users_notify_always(runtime: Runtime, args: argparse.Namespace) -> int:
    """Whether a person gets an e-mail when any of their exports ends."""
    person = runtime.people.set_notify_always(args.name, args.switch == "on", by=SHELL)
    if person.notify_always:
        print(f"{person.name}: an e-mail to {person.email} when any of their exports ends")
    else:
        print(f"{person.name}: an e-mail only when they ask for one")
    return 0


def cmd_users_email(runtime: Runtime, args: argparse.Namespace) -> int:
    """Where a person's announcements by e-mail go (`--remove`: nowhere)."""
    address = None if args.remove else args.address
    if address is None and not args.remove:
        say("reportexport users email: give an ADDRESS, or --remove")
        return 2
    if not runtime.people.set_email(args.name, address, by=SHELL):
        say(f"reportexport users email: no active person {quoted(args.name)}")
        return 1
    print(f"{args.name}: " + (f"e-mail goes to {address}" if address else "no e-mail address"))
    return 0


def cmd_users_resume(runtime: Runtime, args: argparse.Namespace) -> int:
    runtime.access.resume(SHELL, args.name)
    print(f"{args.name}: resumed; their token works again (their schedules stay paused)")
    return 0


def cmd_groups_list(runtime: Runtime, args: argparse.Namespace) -> int:
    for group in runtime.access.list_groups(SHELL):
        members = f"{group.member_count} member{'' if group.member_count == 1 else 's'}"
        print(f"{group.name:24} {members:12} {group.description}")
    return 0


def cmd_groups_create(runtime: Runtime, args: argparse.Namespace) -> int:
    group = runtime.access.create_group(SHELL, args.group, args.description)
    print(f"group {group.name} created")
    return 0


def cmd_groups_delete(runtime: Runtime, args: argparse.Namespace) -> int:
    withdrawn = runtime.access.delete_group(SHELL, args.group)
    print(f"group {args.group} deleted")
    return _say_withdrawn("its members", withdrawn)


def cmd_groups_members(runtime: Runtime, args: argparse.Namespace) -> int:
    for name in runtime.access.members(SHELL, args.group):
        print(name)
    return 0


def cmd_groups_add(runtime: Runtime, args: argparse.Namespace) -> int:
    added = runtime.access.add_member(SHELL, args.group, args.name)
    print(f"{args.name} {'joined' if added else 'was already in'} {args.group}")
    return 0


def cmd_groups_remove(runtime: Runtime, args: argparse.Namespace) -> int:
    withdrawn = runtime.access.remove_member(SHELL, args.group, args.name)
    print(f"{args.name} left {args.group}")
    return _say_withdrawn(args.name, withdrawn)


def _say_withdrawn(whose: str, withdrawn: Withdrawn) -> int:
    if withdrawn.canceled:
        print(f"canceled, access withdrawn: export(s) {', '.join(map(str, withdrawn.canceled))}")
    if withdrawn.paused:
        print(f"paused, access withdrawn: schedule(s) {', '.join(map(str, withdrawn.paused))}")
    if not withdrawn.canceled and not withdrawn.paused:
        print(f"nothing of {whose} was queued, running or scheduled that this withdraws")
    return 0


# -- the job store's schema ------------------------------------------------------------------------


def cmd_db_upgrade(runtime: Runtime, args: argparse.Namespace) -> int:
    url = runtime.database_label
    database = runtime.unchecked_database()
    schema = database.schema
    before = schema.status()
    after = schema.upgrade()
    graphs = f"{_short(before.fingerprint)} -> {_short(after.fingerprint)}"
    print(f"{url}: schema version {before.version} -> {after.version}, graph {graphs}")
    for schedule, reason in runtime.pause_too_frequent_schedules(database):
        print(f"schedule {schedule.id} ({schedule.owner}) paused: {reason}")
    if args.service_role:
        if schema.driver.dialect != "postgres":
            say("--service-role applies to PostgreSQL only")
            return 2
        created = schema.grant_service_role(args.service_role)
        print(f"service role {args.service_role}: {'created' if created else 'updated'}")
    return 0


def cmd_db_purge(runtime: Runtime, args: argparse.Namespace) -> int:
    """Remove terminal jobs finished before a date with their rows; recorded in job_purges."""
    before = _purge_date(args.before)
    if before is None:
        say(f"--before {args.before!r}: give YYYY-MM-DD or a timestamp with its UTC offset")
        return 2
    if before > datetime.now(UTC):
        say(f"--before {args.before}: a purge removes what finished in the past")
        return 2
    person_problem = unsafe_text(args.person) or ("is blank" if not args.person.strip() else None)
    if person_problem:
        say(f"--person {quoted(args.person)}: {person_problem}; name who asked for the purge")
        return 2
    retention = runtime.unchecked_database().retention
    url = runtime.database_label
    count = retention.purgeable(before)
    if not args.yes:
        print(f"{url}: {count} terminal jobs finished before {before:%Y-%m-%d %H:%M:%S%z} would "
              "be removed with their history, side effects, deliveries and downloads")  # fmt: skip
        print("run again with --yes to purge them")
        return 0
    purge = retention.purge(before, person=args.person)
    print(f"{url}: purge {purge.id} removed {purge.jobs} jobs, {purge.history_rows} history rows, "
          f"{purge.side_effect_rows} side-effect rows, {purge.deliveries} deliveries and "
          f"{purge.downloads} download records")  # fmt: skip
    return 0


def cmd_db_purges(runtime: Runtime, args: argparse.Namespace) -> int:
    purges = runtime.unchecked_database().retention.purges()
    if not purges:
        print("no purge was ever made")
    for p in purges:
        role = f" as {p.database_role}" if p.database_role else ""
        print(f"purge {p.id}: at {p.started_at:%Y-%m-%d %H:%M:%S%z} by {p.requested_by} "
              f"({p.os_user or '?'}{role}): before {p.before:%Y-%m-%d %H:%M:%S%z}, "
              f"{p.jobs} jobs, {p.history_rows} history rows, {p.side_effect_rows} side-effect "
              f"rows, {p.deliveries} deliveries, {p.downloads} downloads")  # fmt: skip
    return 0


def _purge_date(text: str) -> datetime | None:
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


BEHAVIOUR_FINDINGS_SHOWN = 20


def cmd_db_check(runtime: Runtime, args: argparse.Namespace) -> int:
    """Exit 1 unless the schema is current, its guards are what this program's migrations and
    graph SQL make (built afresh: the digest `db upgrade` recorded is not trusted) and, with
    --behaviour, the live database refuses and accepts exactly what the fixture says."""
    url = runtime.database_label
    schema = runtime.unchecked_database().schema
    status = schema.status()
    problems = status.problems() + schema.drift(status.version)
    if args.behaviour and status.version:
        report = schema.probe()
        shown = report.findings[:BEHAVIOUR_FINDINGS_SHOWN]
        problems += [f"behaviour: {finding}" for finding in shown]
        if len(report.findings) > len(shown):
            problems.append(f"behaviour: and {len(report.findings) - len(shown)} more findings")
        if not report.findings:
            tried = f"{report.moves} moves and {report.refusals} refusals tried, all rolled back"
            print(f"{url}: behaves as the fixture says: {tried}")
    for problem in problems:
        say(f"{url}: {problem}")
    if problems:
        say(f"run: reportexport db upgrade --database {url}")
        return 1
    print(f"{url}: schema version {status.version}, graph {_short(status.fingerprint)}: current")
    return 0


def _short(fingerprint: str | None) -> str:
    return fingerprint[:12] if fingerprint else "(none)"


# -- the jobs group: over the API -----------------------------------------------------------------


def _remote(runtime: Runtime, args: argparse.Namespace) -> int:
    from reportexport.entrypoints import client

    return client.run(client.cmd_jobs, runtime.settings, args)


cmd_jobs_list = cmd_jobs_show = cmd_jobs_cancel = cmd_jobs_download = cmd_jobs_notify = _remote


def _remote_schedules(runtime: Runtime, args: argparse.Namespace) -> int:
    from reportexport.entrypoints import client

    if args.action == "create":
        raw = parameters_from(args.param)
        relative = relative_from(args.relative)
        if raw is None or relative is None:
            return 2
        both = sorted(set(raw) & set(relative))
        if both:
            say(
                f"reportexport schedules create: parameter {quoted(both[0])} is given by both "
                "--param and --relative; give it once, with one of them"
            )
            return 2
        args.raw_parameters, args.relative_parameters = raw, relative
    return client.run(client.cmd_schedules, runtime.settings, args)


def relative_from(items: list[str]) -> dict[str, str] | None:
    """`NAME=WORD` arguments of `--relative` as a mapping; None (after saying why) when one is
    wrong or a name is repeated."""
    pairs = []
    for item in items:
        name, sep, word = item.partition("=")
        if not sep or not name or not word.strip():
            say(f"reportexport schedules create: --relative takes NAME=WORD (day=yesterday), "
                f"not {quoted(item)}")  # fmt: skip
            return None
        pairs.append((name, word))
    try:
        return single_values(pairs)
    except ParameterError as exc:
        say(f"reportexport schedules create: --relative {quoted(exc.parameter)} {exc.message}")
        return None


cmd_schedules_list = cmd_schedules_create = cmd_schedules_show = _remote_schedules
cmd_schedules_pause = cmd_schedules_resume = cmd_schedules_run = _remote_schedules
cmd_schedules_delete = cmd_schedules_preview = cmd_schedules_recipients = _remote_schedules
cmd_schedules_channels = cmd_schedules_addresses = _remote_schedules


def cmd_serve(runtime: Runtime, args: argparse.Namespace) -> int:
    from reportexport.entrypoints.serve import serve

    return serve(runtime)
