"""The invariants a run must keep, checked on what the run left: rows read by SQL, objects listed
and read from the store, what the webhook receiver got, what download links gave.

Each check is a pure function over those facts and returns violations, each naming its
invariant; the suite attributes them to the faults of the run.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).resolve().parents[2] / "contracts" / "job-status-graph.json"

INVARIANTS = {
    "terminal": "every job terminal once the system drained",
    "history": "history rows form a legal chain queued -> ... -> the job's status, each a declared "
    "edge with its actor",
    "object": "a succeeded job has exactly one object at its key, with its size, SHA-256 and rows",
    "swept": "after a sweep, no object of a job that is not succeeded, no temp object, no orphan",
    "side_effects": "a terminal job has exactly its state's side-effect rows, each completed or "
    "given up",
    "webhook_ids": "one webhook-id per (job, effect) at the receiver, of the job's own event",
    "mail": "each e-mail destination of an ended job got its announcement (delivered, and "
    "received by the SMTP server), and every copy of one announcement carries the same "
    "Message-ID, which names that job and effect alone",
    "stale_worker": "a worker that lost its lease changes no status, writes no row, leaves no "
    "object and no link",
    "download": "a succeeded job's download link gives its object; other jobs get no link",
    "named_failures": "a job failed by the infrastructure says which part failed, never "
    "internal_error",
    "heartbeats": "every process still running has a loop beating: a heartbeat younger than 15 s "
    "once the run drained",
    "paced_failures": "an object store outage fails at most the pause limit of jobs per worker; "
    "the rest wait queued",
    "nothing_stuck": "no job stays running long past its lease's expiry: renewed, or reaped",
    "claims_again": "once every fault is over, every live worker asks for work again: its "
    "heartbeat shows a recent ask and no pause (a pause it states, with its reason, fails this "
    "check too)",
    "kept_leases": "no export of a worker that stayed alive is reaped when the job store was "
    "never away for as long as the reaper's grace",
    "kept_exports": "no job fails as publish_conflict: a job is claimed once, so an object at "
    "its key is its own earlier attempt's, and a finished export thrown away",
}
# The reaper takes a job this long after its lease expired (WorkerSettings.reap_grace_seconds);
# a worker renews within a second or two of the job store coming back.
REAP_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass(frozen=True)
class Graph:
    initial: str
    terminal: frozenset[str]
    edges: Mapping[tuple[str, str], str]  # (from, to) -> actor
    side_effects: Mapping[str, frozenset[str]]


def load_fixture(path: Path = FIXTURE) -> Graph:
    document = json.loads(path.read_text(encoding="utf-8"))
    return Graph(
        initial=document["initial"],
        terminal=frozenset(document["terminal"]),
        edges={(t["from"], t["to"]): t["actor"] for t in document["transitions"]},
        side_effects={
            state: frozenset(document["side_effects"].get(state, ()))
            for state in document["states"]
        },
    )


@dataclass
class StoredObject:
    key: str
    size: int
    sha256: str | None = None  # read back for objects of succeeded jobs only
    rows: int | None = None


@dataclass
class Facts:
    """What a run left behind."""

    jobs: dict[int, dict[str, Any]]
    history: dict[int, list[dict[str, Any]]]
    side_effects: dict[int, list[dict[str, Any]]]
    deliveries: list[dict[str, Any]]  # deliveries rows of webhook endpoints
    endpoints: dict[int, str]  # endpoint id -> the receiver path it posts to
    received: list[Any]  # infra.Delivery
    objects: list[StoredObject]  # after the sweep
    object_of_job: dict[int, list[StoredObject]] = field(default_factory=dict)
    mail_deliveries: list[dict[str, Any]] = field(default_factory=list)  # rows of addresses
    mails: list[Any] = field(default_factory=list)  # infra.Mail: what the SMTP server got
    orphans: list[str] = field(default_factory=list)
    # job id -> what the API's download gave: the SHA-256 of the file, or the HTTP status
    downloads: dict[int, str | int] = field(default_factory=dict)
    # Workers the suite froze past their lease: worker id -> the jobs they were running.
    frozen: dict[str, set[int]] = field(default_factory=dict)
    drained: bool = True
    store_outages: int = 0  # object store faults in the run
    silent: list[str] = field(default_factory=list)  # running processes with no fresh heartbeat
    pause_limit: int = 3  # the workers' pause_after_failures
    stuck: list[str] = field(default_factory=list)  # jobs the watchdog saw stuck running
    not_claiming: list[str] = field(default_factory=list)  # workers not asking for work at the end
    # Worker ids of processes alive all run long, never killed, frozen or restarted.
    undisturbed: set[str] = field(default_factory=set)
    longest_outage: float = 0.0  # seconds the job store took no writes, at most, at a stretch


def check_all(facts: Facts, graph: Graph) -> list[Violation]:
    found: list[Violation] = []
    for check in (
        check_terminal,
        check_history,
        check_objects,
        check_swept,
        check_side_effects,
        check_webhook_ids,
        check_mail,
        check_stale_workers,
        check_downloads,
        check_named_failures,
        check_paced_failures,
        check_heartbeats,
        check_nothing_stuck,
        check_claims_again,
        check_kept_leases,
        check_kept_exports,
    ):
        found.extend(check(facts, graph))
    return found


def check_terminal(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        if job["status"] not in graph.terminal:
            yield Violation("terminal", f"job {job_id} is still {job['status']}")


def check_history(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        rows = facts.history.get(job_id, [])
        where = f"job {job_id}"
        if job["status"] == graph.initial:
            if rows:
                yield Violation("history", f"{where}: queued with {len(rows)} history rows")
            continue
        if not rows:
            yield Violation("history", f"{where}: {job['status']} without history")
            continue
        expected_from = graph.initial
        claimed_by: str | None = None
        for row in rows:
            edge = (row["from_status"], row["to_status"])
            step = f"{where}: {edge[0]} -> {edge[1]} by {row['actor']}"
            if row["from_status"] != expected_from:
                yield Violation("history", f"{step}: the chain was at {expected_from}")
            actor = graph.edges.get(edge)
            if actor is None:
                yield Violation("history", f"{step}: not an edge of the graph")
            elif actor != row["actor"]:
                yield Violation("history", f"{step}: the edge's actor is {actor}")
            if row["actor"] == "worker" and not row["worker"]:
                yield Violation("history", f"{step}: no worker named")
            if row["actor"] == "user" and not row["person"]:
                yield Violation("history", f"{step}: no person named")
            if edge == (graph.initial, "running"):
                claimed_by = row["worker"]
            elif (
                row["actor"] == "worker"
                and row["reason"] != "lease_expired"
                and claimed_by is not None
                and row["worker"] != claimed_by
            ):
                yield Violation(
                    "history", f"{step}: ended by {row['worker']}, claimed by {claimed_by}"
                )
            expected_from = row["to_status"]
        if expected_from != job["status"]:
            yield Violation(
                "history", f"{where}: history ends at {expected_from}, the job is {job['status']}"
            )
        terminal_rows = [r for r in rows if r["to_status"] in graph.terminal]
        if len(terminal_rows) > 1:
            yield Violation("history", f"{where}: {len(terminal_rows)} terminal history rows")


def check_objects(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        if job["status"] != "succeeded":
            continue
        where = f"job {job_id}"
        published = [o for o in facts.object_of_job.get(job_id, []) if o.key.startswith("exports/")]
        if job["object_key"] is None:
            yield Violation("object", f"{where}: succeeded without an object key")
            continue
        if [o.key for o in published] != [job["object_key"]]:
            keys = [o.key for o in published]
            yield Violation("object", f"{where}: objects {keys}, recorded {job['object_key']}")
            continue
        (stored,) = published
        if stored.size != job["object_bytes"]:
            yield Violation(
                "object", f"{where}: {stored.size} bytes, recorded {job['object_bytes']}"
            )
        if stored.sha256 != job["object_sha256"]:
            yield Violation(
                "object", f"{where}: SHA-256 {stored.sha256}, recorded {job['object_sha256']}"
            )
        if stored.rows != job["object_rows"]:
            yield Violation(
                "object", f"{where}: {stored.rows} CSV rows, recorded {job['object_rows']}"
            )


def check_swept(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for key in facts.orphans:
        yield Violation("swept", f"{key}: no job of this run owns it, and the sweep kept it")
    for job_id, objects in sorted(facts.object_of_job.items()):
        job = facts.jobs.get(job_id)
        where = job["status"] if job else "no such job"
        for stored in objects:
            if not stored.key.startswith("exports/"):
                yield Violation(
                    "swept", f"job {job_id} ({where}): temp object {stored.key} survived the sweep"
                )
            elif where != "succeeded":
                yield Violation(
                    "swept", f"job {job_id} ({where}): object {stored.key} survived the sweep"
                )


def check_side_effects(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        rows = facts.side_effects.get(job_id, [])
        where = f"job {job_id} ({job['status']})"
        names = [row["effect"] for row in rows]
        expected = graph.side_effects.get(job["status"], frozenset())
        if len(names) != len(set(names)) or set(names) != expected:
            yield Violation(
                "side_effects", f"{where}: rows {sorted(names)}, expected {sorted(expected)}"
            )
        for row in rows:
            if row["status"] != job["status"]:
                yield Violation(
                    "side_effects", f"{where}: {row['effect']} written for {row['status']}"
                )
            alarm = (row["last_error"] or "").startswith("ALARM")
            if row["effect"] == "write_csv_object" and row["completed_at"] and alarm:
                yield Violation(
                    "side_effects",
                    f"{where}: write_csv_object raised an alarm ({row['last_error']})",
                )
            if row["completed_at"] is None and row["given_up_at"] is None:
                yield Violation(
                    "side_effects",
                    f"{where}: {row['effect']} neither completed nor "
                    f"given up after {row['attempts']} attempts "
                    f"({row['last_error']})",
                )


EVENT_OF = {"succeeded": "export.succeeded", "failed": "export.failed"}


def check_webhook_ids(facts: Facts, graph: Graph) -> Iterable[Violation]:
    ids: dict[tuple[str, int, str], set[str]] = defaultdict(set)
    owners: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for delivery in facts.received:
        ids[(delivery.path, delivery.job_id, delivery.event_type)].add(delivery.webhook_id)
        owners[delivery.webhook_id].add((delivery.job_id, delivery.event_type))
        job = facts.jobs.get(delivery.job_id)
        where = job["status"] if job else "no such job"
        if EVENT_OF.get(where) != delivery.event_type:
            yield Violation(
                "webhook_ids",
                f"job {delivery.job_id} ({where}) announced as {delivery.event_type}",
            )
    for (path, job_id, kind), seen in sorted(ids.items()):
        if len(seen) != 1:
            yield Violation("webhook_ids", f"job {job_id} {kind} at {path}: ids {sorted(seen)}")
    for webhook_id, events in sorted(owners.items()):
        if len(events) != 1:
            yield Violation("webhook_ids", f"{webhook_id} names {sorted(events)}")
    got = {(d.path, d.job_id) for d in facts.received}
    for row in facts.deliveries:
        path = facts.endpoints.get(row["endpoint_id"])
        if row["delivered_at"] is not None and (path, row["job_id"]) not in got:
            yield Violation(
                "webhook_ids",
                f"job {row['job_id']} {row['effect']}: recorded as "
                f"delivered to {path}, never received",
            )


MESSAGE_ID = re.compile(r"<reportexport\.(\d+)\.(\w+)\.[0-9a-f]+@[^>]+>")


def check_mail(facts: Facts, graph: Graph) -> Iterable[Violation]:
    copies: dict[tuple[str, str], list[str]] = defaultdict(list)  # (recipient, id) -> subjects
    ids: dict[tuple[int, str, str], set[str]] = defaultdict(set)
    for mail in facts.mails:
        named = MESSAGE_ID.fullmatch(mail.message_id)
        if named is None:
            yield Violation("mail", f"to {mail.recipient}: Message-ID {mail.message_id!r}")
            continue
        job_id, effect = int(named.group(1)), named.group(2)
        ids[(job_id, effect, mail.recipient.lower())].add(mail.message_id)
        copies[(mail.recipient.lower(), mail.message_id)].append(mail.subject)
    for (job_id, effect, recipient), seen in sorted(ids.items()):
        if len(seen) != 1:
            yield Violation("mail", f"job {job_id} {effect} to {recipient}: ids {sorted(seen)}")
    for (recipient, message_id), subjects in sorted(copies.items()):
        if len(set(subjects)) != 1:
            different = sorted(set(subjects))
            yield Violation("mail", f"{message_id} to {recipient}: subjects {different}")
    for row in facts.mail_deliveries:
        job = facts.jobs.get(row["job_id"])
        if job is None or job["status"] not in graph.terminal:
            continue
        where = f"job {row['job_id']} {row['effect']} to {row['address']}"
        if row["delivered_at"] is None:
            yield Violation(
                "mail",
                f"{where}: not delivered after {row['attempts']} attempts "
                f"({row['last_error']}; given up: {row['given_up_at'] is not None})",
            )
        elif not ids.get((row["job_id"], row["effect"], row["address"].lower())):
            yield Violation("mail", f"{where}: recorded as delivered, never received")


def check_stale_workers(facts: Facts, graph: Graph) -> Iterable[Violation]:
    """Jobs whose lease was lost: reaped ones, and those of workers the suite froze."""
    stale: dict[int, str] = {}
    for job_id, rows in facts.history.items():
        for row in rows:
            if row["reason"] == "lease_expired":
                stale[job_id] = facts.jobs[job_id]["lease_owner"] or ""
    for worker, jobs in facts.frozen.items():
        for job_id in jobs:
            rows = facts.history.get(job_id, [])
            if any(r["worker"] != worker and r["to_status"] in graph.terminal for r in rows):
                stale.setdefault(job_id, worker)
    for job_id, worker in sorted(stale.items()):
        job = facts.jobs[job_id]
        rows = facts.history.get(job_id, [])
        where = f"job {job_id} (lease of {worker})"
        ended = [i for i, r in enumerate(rows) if r["to_status"] in graph.terminal]
        if not ended:
            continue
        after = rows[ended[0] + 1 :]
        if after:
            yield Violation("stale_worker", f"{where}: {len(after)} history rows after its end")
        end = rows[ended[0]]
        if (
            end["reason"] != "lease_expired"
            and end["worker"] == worker
            and end["actor"] == "worker"
        ):
            continue  # the lease was not lost after all: its worker ended it
        if job["status"] == "succeeded" and end["worker"] != job["lease_owner"]:
            yield Violation("stale_worker", f"{where}: succeeded by {end['worker']}")
        if job["status"] != "succeeded":
            for stored in facts.object_of_job.get(job_id, []):
                yield Violation("stale_worker", f"{where}: {stored.key} survived the sweep")
            given = facts.downloads.get(job_id)
            if isinstance(given, str):
                yield Violation("stale_worker", f"{where}: a download link gave a file")


def check_downloads(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        given = facts.downloads.get(job_id)
        if given is None:
            continue
        if job["status"] == "succeeded":
            if given != job["object_sha256"]:
                yield Violation("download", f"job {job_id}: the link gave {given!r}")
        elif isinstance(given, str) or given in (200, 302, 307):
            yield Violation("download", f"job {job_id} ({job['status']}): a link was given")


def check_named_failures(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        if job["error_code"] == "internal_error":
            yield Violation(
                "named_failures", f"job {job_id}: internal_error ({job['error_message']})"
            )


def check_paced_failures(facts: Facts, graph: Graph) -> Iterable[Violation]:
    per_worker: Counter[str] = Counter(
        job["lease_owner"]
        for job in facts.jobs.values()
        if job["error_code"] == "storage_unavailable"
    )
    allowed = facts.pause_limit * max(1, facts.store_outages)
    for worker, failed in sorted(per_worker.items()):
        if failed > allowed:
            yield Violation(
                "paced_failures",
                f"worker {worker}: {failed} jobs failed as "
                f"storage_unavailable over {facts.store_outages} outages",
            )


def check_heartbeats(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for process in facts.silent:
        yield Violation("heartbeats", process)


def check_nothing_stuck(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for seen in facts.stuck:
        yield Violation("nothing_stuck", seen)


def check_claims_again(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for process in facts.not_claiming:
        yield Violation("claims_again", process)


def check_kept_leases(facts: Facts, graph: Graph) -> Iterable[Violation]:
    if facts.longest_outage >= REAP_GRACE_SECONDS - 1:
        return  # the reaper may take what a live worker could not renew in time
    for job_id, rows in sorted(facts.history.items()):
        claims = [r["worker"] for r in rows if r["to_status"] == "running"]
        reaped = [r for r in rows if r["reason"] == "lease_expired"]
        if reaped and claims and claims[0] in facts.undisturbed:
            yield Violation(
                "kept_leases",
                f"job {job_id}: reaped from {claims[0]}, alive all along, though the job "
                f"store was away {facts.longest_outage:.1f} s at most",
            )


def check_kept_exports(facts: Facts, graph: Graph) -> Iterable[Violation]:
    for job_id, job in sorted(facts.jobs.items()):
        if job["error_code"] == "publish_conflict":
            yield Violation(
                "kept_exports", f"job {job_id}: publish_conflict ({job['error_message']})"
            )


# -- reading objects back --------------------------------------------------------------------------


def digest_and_rows(data: bytes, options: Mapping[str, Any]) -> tuple[str, int]:
    """The SHA-256 of a stored file and its CSV data rows (header excluded)."""
    sha = hashlib.sha256(data).hexdigest()
    dialect = options.get("csv", {}) if isinstance(options, Mapping) else {}
    raw = gzip.decompress(data) if dialect.get("gzip") else data
    text = io.StringIO(raw.decode("utf-8-sig"), newline="")
    rows = sum(1 for _ in csv.reader(text, delimiter=dialect.get("delimiter", ","))) - 1
    return sha, max(rows, 0)
