"""Runs of the fault suite: real processes, faults at seeded moments, invariants checked after.

A *lane* owns a throwaway PostgreSQL cluster (so restarting it harms nobody), an S3 server
(moto, as a process) with a proxy in front of it that can refuse with 503, a demo DuckDB source
and a template job store. A *run* gets a fresh job store (a PostgreSQL database cloned from the
template, or a SQLite file), a fresh object folder or bucket, and its own processes:
`reportexport serve` (API, a worker and an effects runner), two `reportexport worker` and two
`reportexport effects` processes, with a webhook receiver on loopback. A workload of exports
(short and long, some canceled by their owner through the API) runs while the run's faults
strike at moments drawn from its seed, and a watchdog samples the jobs that are running; once
every fault is over the system is given time to drain, every worker must be seen asking for
work again, the processes are stopped, `reportexport sweep` runs, and the invariants
(`invariants.py`) are checked by SQL, on disk or in the bucket, at the receiver and through
download links.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from psycopg.rows import dict_row

from frozen_lifecycle.graph import load_graph
from reportexport.objects import ObjectStore, is_temp, job_of, open_object_store
from reportexport.store import open_database
from reportexport.store.postgres import PREPARED_PREFIX
from tests.faults.infra import (
    AWS,
    BIN,
    MailServer,
    MotoServer,
    Process,
    Receiver,
    RefusingProxy,
    Supervisor,
    process_with_port,
)
from tests.faults.invariants import (
    FIXTURE,
    Facts,
    StoredObject,
    Violation,
    check_all,
    digest_and_rows,
    load_fixture,
)
from tests.helpers import poll, serving_url
from tests.postgres_server import ThrowawayCluster

LEASE_SECONDS = 3
# The reaper waits this long past a lease's expiry (WorkerSettings.reap_grace_seconds).
REAP_GRACE_SECONDS = 10
LINK_SECRET = "fault-suite-link-secret"
DRAIN_SECONDS = 180.0

LOCAL = "local"
S3 = "s3"
POSTGRES = "postgres"
SQLITE = "sqlite"
# A job running this long past its lease's expiry was neither renewed nor reaped: stuck (the
# reaper takes one REAP_GRACE_SECONDS after expiry, and runs every LEASE_SECONDS / 2).
STUCK_AFTER_SECONDS = REAP_GRACE_SECONDS + 6
# Once every fault is over, a worker that is not paused must have asked for work this recently.
ASKED_WITHIN_SECONDS = 12
# ... and it has this long to show it (the longest probe interval of the suite's short outages).
CLAIMS_AGAIN_SECONDS = 75.0
# The statement that ends a job, however a worker sends it: its text whole (`finish_jobs`, or the
# message that first prepares it), or, on a pooled connection that prepared it already,
# `EXECUTE reportexport_finish_job_<n>(...)` (`PostgresSession.together`).
FINISH_STATEMENT = re.compile(rf"\b{PREPARED_PREFIX}finish_job_\d+\b|\bobject_sha256\b")
# pg_stat_activity shows this many bytes of a statement (PostgreSQL's default: 1024): the
# message that prepares the claim before it finishes is longer than that.
QUERY_TEXT_BYTES = 65536


def is_finish(query: str | None) -> bool:
    """Whether a statement (as pg_stat_activity shows it) ends a job."""
    return FINISH_STATEMENT.search(query or "") is not None


# -- faults ----------------------------------------------------------------------------------------


class MissedError(Exception):
    """A fault that found nothing to strike (no export running, another statement than the
    one it waits for): the run goes on, counted as planned but not struck."""


@dataclass(frozen=True)
class Fault:
    name: str
    store: str | None  # the object store it needs, if any
    what: str
    database: str | None = None  # the job store it needs, if any
    outages: int = 1  # object store outages it makes (each may fail a pause's budget of jobs)


FAULTS = [
    Fault("kill_worker", None, "SIGKILL a worker (running an export if one does); restarted"),
    Fault("kill_effects", None, "SIGKILL an effects runner; restarted"),
    Fault("freeze_worker", None, "SIGSTOP a worker past its lease and the reaper, then SIGCONT"),
    Fault(
        "freeze_finish",
        None,
        "SIGSTOP a worker inside the statement that ends its job, past its lease and the reaper",
        POSTGRES,
    ),
    Fault("row_lock", None, "hold a running job's row lock in a transaction for seconds", POSTGRES),
    Fault("db_restart", None, "restart PostgreSQL (fast: every connection cut)", POSTGRES),
    Fault("db_pause", None, "stop PostgreSQL for seconds, then start it", POSTGRES),
    Fault(
        "db_restart_twice",
        None,
        "PostgreSQL stopped, back for seconds, then stopped again for longer than a lease",
        POSTGRES,
    ),
    Fault(
        "sqlite_frozen_writer",
        None,
        "a process holding SQLite's write lock frozen (SIGSTOP) for seconds, then SIGCONT",
        SQLITE,
    ),
    Fault("local_store_file", LOCAL, "the objects folder replaced by a regular file, then back"),
    Fault("local_store_symlink", LOCAL, "the objects folder replaced by a dangling symlink"),
    Fault("local_store_full", LOCAL, "no file of a worker may grow (RLIMIT_FSIZE 0), then room"),
    Fault(
        "local_store_flaky",
        LOCAL,
        "three times in a row, the objects folder refuses writes and deletes for seconds",
        outages=3,
    ),
    Fault("s3_paused", S3, "the S3 server frozen (SIGSTOP), then SIGCONT"),
    Fault("s3_503", S3, "the S3 endpoint answers 503 to everything, then recovers"),
    Fault(
        "s3_flaky", S3, "three times in a row, the S3 endpoint answers 503 for seconds", outages=3
    ),
    Fault("webhook_slow", None, "the webhook receiver answers after the sender's timeout"),
    Fault("webhook_down", None, "the webhook receiver stops listening, then comes back"),
    Fault("webhook_gone", None, "the webhook receiver answers 410 Gone for a while"),
    Fault("smtp_down", None, "the SMTP server stops listening for 20 s, then comes back"),
    Fault(
        "kill_effects_sending",
        None,
        "SIGKILL an effects runner whose e-mail the SMTP server has whole but has not answered "
        "yet; restarted",
    ),
]
FAULT_NAMES = [fault.name for fault in FAULTS]
BY_NAME = {fault.name: fault for fault in FAULTS}


@dataclass(frozen=True)
class Plan:
    index: int
    seed: int
    store: str
    faults: tuple[str, ...]
    database: str = POSTGRES
    # The workers' pause_after_failures: 1 holds most exports of an outage on their leases,
    # to run again once the store is back; 3 is the default.
    pause_after: int = 3


def plan_runs(runs: int, seed: int, only: Sequence[str] = ()) -> list[Plan]:
    """`runs` runs: faults in turn (each about equally often; with `only`, those alone), a
    second one now and then; the object store and job store the faults need, or ones drawn
    from the seed (a quarter of the runs on SQLite)."""
    plans = []
    turns = [fault for fault in FAULTS if not only or fault.name in only]
    for index in range(runs):
        rng = random.Random(seed * 1_000_003 + index)
        first = turns[index % len(turns)]
        store = first.store or rng.choice([LOCAL, S3])
        database = first.database or (SQLITE if rng.random() < 0.25 else POSTGRES)
        chosen = [first.name]
        if rng.random() < 0.35:
            others = [
                f.name
                for f in FAULTS
                if f.store in (None, store)
                and f.database in (None, database)
                and f.name not in chosen
            ]
            chosen.append(rng.choice(others))
        pause_after = rng.choice([1, 3])
        plans.append(
            Plan(index, rng.randrange(1 << 30), store, tuple(chosen), database, pause_after)
        )
    return plans


# A short run that covers every fault at least once (./scripts/test).
SHORT_PLANS = [
    Plan(0, 101, LOCAL, ("kill_worker", "local_store_file", "webhook_slow")),
    Plan(1, 202, S3, ("freeze_worker", "s3_503", "webhook_gone")),
    Plan(2, 303, LOCAL, ("row_lock", "kill_effects", "webhook_down", "local_store_full")),
    Plan(3, 404, S3, ("db_pause", "db_restart_twice", "s3_paused")),
    Plan(4, 505, LOCAL, ("db_restart", "local_store_symlink")),
    Plan(5, 606, LOCAL, ("freeze_finish", "local_store_flaky"), pause_after=1),
    Plan(6, 707, S3, ("sqlite_frozen_writer", "s3_flaky"), SQLITE, pause_after=1),
    Plan(7, 808, LOCAL, ("smtp_down", "kill_effects_sending")),
]


# -- results ---------------------------------------------------------------------------------------


@dataclass
class RunResult:
    plan: Plan
    violations: list[Violation]
    seconds: float
    outcomes: Counter[str] = field(default_factory=Counter)  # "failed:lease_expired" -> n
    notes: Counter[str] = field(default_factory=Counter)
    struck: frozenset[str] = frozenset()  # the run's faults that struck (planned: plan.faults)
    directory: Path | None = None
    odd: list[str] = field(default_factory=list)


# -- a lane ----------------------------------------------------------------------------------------


# Columns the store keeps as JSON (SQLite: as text).
JSON_COLUMNS = frozenset(
    {"parameters", "options", "columns", "column_types", "active_jobs", "paused_sources"}
)


def age_seconds(moment: Any) -> float:
    """Seconds since a moment as a job store gives it (PostgreSQL: a datetime; SQLite: text)."""
    when = moment if isinstance(moment, datetime) else datetime.fromisoformat(str(moment))
    return (datetime.now(UTC) - when).total_seconds()


def sql(
    url: str, query: str, params: Sequence[Any] | None = None, *, tries: float = 60
) -> list[Any]:
    """Rows of one statement on a fresh connection, retried while the database is away
    (a SQLite file's rows too, `?` placeholders, JSON columns decoded)."""
    if url.startswith("sqlite:///"):
        return _sqlite_rows(url.removeprefix("sqlite:///"), query, params or ())
    deadline = time.monotonic() + tries
    while True:
        try:
            with psycopg.connect(
                url, autocommit=True, row_factory=dict_row, connect_timeout=3
            ) as conn:
                cursor = conn.execute(query.encode(), params)
                return list(cursor.fetchall()) if cursor.description else []
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def longest_outage(outages: Sequence[tuple[float, float]], joined_within: float = 2.0) -> float:
    """The longest time the job store took no writes, outages less than `joined_within`
    seconds apart counted as one (a lease renewal needs a moment in between)."""
    longest = 0.0
    current: tuple[float, float] | None = None
    for began, ended in sorted(outages):
        if current is not None and began - current[1] < joined_within:
            current = (current[0], max(current[1], ended))
        else:
            current = (began, ended)
        longest = max(longest, current[1] - current[0])
    return longest


def _sqlite_rows(path: str, query: str, params: Sequence[Any]) -> list[Any]:
    """A read of a SQLite job store; WAL readers wait for no writer."""
    with contextlib.closing(sqlite3.connect(path, timeout=30)) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(row) for row in conn.execute(query, tuple(params))]
    for row in rows:
        for column in JSON_COLUMNS & row.keys():
            if isinstance(row[column], str):
                row[column] = json.loads(row[column])
    return rows


class Lane:
    """What runs share: a PostgreSQL cluster, an S3 server and its proxy, the demo source."""

    def __init__(self, directory: Path, *, rows: int) -> None:
        self.directory = directory
        self.rows = rows
        self.cluster = ThrowawayCluster()
        self.moto = MotoServer(directory / "moto.log")
        self.proxy: RefusingProxy | None = None
        self.catalog = directory / "demo" / "catalog.toml"
        self.template = "faults_template"
        # pg_ctl runs one at a time: a restart waits for a pause to end, and the reverse.
        self.cluster_lock = threading.Lock()
        # Object store outages too: two in one run strike one after the other.
        self.store_lock = threading.Lock()

    def start(self) -> bool:
        """False when no PostgreSQL cluster can be made here (no initdb/pg_ctl)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for key, value in AWS.items():  # the suite reads the bucket itself too
            os.environ.setdefault(key, value)
        if not self.cluster.start():
            return False
        # Whole statements in pg_stat_activity, so that freeze_finish knows a finish it meets.
        sql(self.cluster.url, f"ALTER SYSTEM SET track_activity_query_size = {QUERY_TEXT_BYTES}")
        self.cluster.restart()
        sql(self.cluster.url, f"CREATE DATABASE {self.template}")
        database = open_database(self.url(self.template), load_graph(FIXTURE), check=False)
        try:
            database.schema.upgrade()
        finally:
            database.close()
        self.moto.start()
        self.proxy = RefusingProxy(self.moto.port)
        demo = self.directory / "demo"
        subprocess.run(
            [str(BIN / "reportexport"), "demo", "--rows", str(self.rows)],
            env={**clean_environment(), "REPORTEXPORT_HOME": str(demo)},
            cwd=self.directory,
            check=True,
            capture_output=True,
        )
        return True

    def url(self, database: str) -> str:
        return self.cluster.url.rsplit("/", 1)[0] + f"/{database}"

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.close()
        self.moto.stop()
        self.cluster.stop()


def clean_environment() -> dict[str, str]:
    """This process's environment without any REPORTEXPORT_ setting, plus S3 credentials."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    return {**env, **AWS}


# -- a run -----------------------------------------------------------------------------------------

MAILBOX = "user@example.com"
TOKEN_LINE = re.compile(r"created (\w+) '([^']+)'; token \(shown once\): (\S+)")
CATEGORIES = ["tools", "garden", "kitchen", "toys", "books"]
COUNTRIES = ["DE", "FR", "US", "JP", "BR", "IN"]


def _workload_item(rng: random.Random) -> tuple[str, dict[str, Any]]:
    kind = rng.choices(
        [
            "products_by_category",
            "orders_by_day",
            "customers_by_country",
            "all_orders",
            "all_orders_gzip",
        ],
        weights=[2, 4, 2, 2, 1],
    )[0]
    if kind == "products_by_category":
        return kind, {"category": rng.choice(CATEGORIES)}
    if kind == "orders_by_day":
        return kind, {"day": (date(2024, 1, 1) + timedelta(days=rng.randrange(731))).isoformat()}
    if kind == "customers_by_country":
        return kind, {"country": rng.choice(COUNTRIES)}
    return kind, {}


class Run:
    def __init__(self, lane: Lane, plan: Plan, directory: Path) -> None:
        self.lane = lane
        self.plan = plan
        self.rng = random.Random(plan.seed)
        self.directory = directory
        self.database = f"run_{plan.index}_{plan.seed}"
        if plan.database == SQLITE:
            self.url = f"sqlite:///{directory / 'jobs.db'}"
        else:
            self.url = lane.url(self.database)
        self.receiver = Receiver()
        self.mail = MailServer()
        self.base = ""  # serve's, once it names the port it took
        self.bucket = f"run-{plan.index}-{plan.seed}"
        self.objects_root = directory / "objects"
        self.notes: Counter[str] = Counter()
        self.struck: set[str] = set()  # the faults that struck (a fault may find nothing to hit)
        self.frozen: dict[str, set[int]] = {}
        self.disturbed: set[str] = set()  # processes the faults killed or froze
        self.outages: list[tuple[float, float]] = []  # when the job store took no writes
        self.processes: list[Process] = []
        self.tokens: dict[str, str] = {}
        self.people: dict[str, str] = {}  # role -> the demo person's name
        self.endpoints: dict[int, str] = {}
        self.errors: list[str] = []
        self.stuck: dict[int, str] = {}  # jobs the watchdog saw running long past their lease
        self.not_claiming: list[str] = []  # workers not seen asking for work once it was over
        self.odd: list[str] = []  # worth a look, not a violation: the run's logs are kept
        self._lock = threading.Lock()
        self.started = time.monotonic()

    # -- set-up ------------------------------------------------------------------------------------

    @property
    def objects_url(self) -> str:
        if self.plan.store == LOCAL:
            return f"file://{self.objects_root}"
        assert self.lane.proxy is not None
        return (
            f"s3://{self.bucket}/rx?endpoint_url={self.lane.proxy.endpoint}"
            "&read_timeout=3&connect_timeout=2&max_attempts=2"
        )

    def direct_store(self) -> ObjectStore:
        """The run's object store as the suite reads it: S3 straight at moto, no proxy."""
        if self.plan.store == LOCAL:
            return open_object_store(
                f"file://{self.objects_root}", link_secret=LINK_SECRET.encode()
            )
        return open_object_store(f"s3://{self.bucket}/rx?endpoint_url={self.lane.moto.endpoint}")

    def environment(self) -> dict[str, str]:
        settings = {
            "DATABASE_URL": self.url,
            "CATALOG": str(self.lane.catalog),
            "OBJECTS_URL": self.objects_url,
            "HOME": str(self.directory / "home"),
            "LINK_SECRET": LINK_SECRET,
            "PORT": "0",
            "LEASE_SECONDS": str(LEASE_SECONDS),
            "GRACE_SECONDS": "2",
            "CONCURRENCY": "2",
            "WEBHOOKS_ALLOW_PRIVATE": "1",
            "MAX_ACTIVE_EXPORTS": "1000",
            "MAX_EXPORTS_PER_MINUTE": "1000",
            "EFFECTS_BATCH": "2",
            "EFFECTS_CLAIM_SECONDS": "20",
            # Six attempts span 77 s at least: an SMTP server away for 20 s loses nothing.
            "EFFECTS_MAX_ATTEMPTS": "6",
            "SMTP_HOST": "127.0.0.1",
            "SMTP_PORT": str(self.mail.port),
            "SMTP_SECURITY": "none",
            "SMTP_FROM": "reports@example.com",
            "SMTP_TIMEOUT_SECONDS": "5",
            "PAUSE_AFTER_FAILURES": str(self.plan.pause_after),
        }
        return {**clean_environment(), **{f"REPORTEXPORT_{k}": v for k, v in settings.items()}}

    def set_up(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.plan.database == SQLITE:
            database = open_database(self.url, load_graph(FIXTURE), check=False)
            try:
                database.schema.upgrade()
            finally:
                database.close()
        else:
            sql(
                self.lane.cluster.url,
                f"CREATE DATABASE {self.database} TEMPLATE {self.lane.template}",
            )
        if self.plan.store == S3:
            store = open_object_store(f"s3://{self.bucket}?endpoint_url={self.lane.moto.endpoint}")
            store.client.create_bucket(Bucket=self.bucket)  # type: ignore[attr-defined]
        else:
            self.objects_root.mkdir(parents=True)
        self.receiver.up()
        self.mail.up()
        env = self.environment()
        # serve's own effects runner names download links with the default public URL: its
        # port is known only once it runs. No invariant reads a webhook's download_url.
        serve = Process("serve", "serve", ["serve"], env, self.directory, supervised=False)
        serve.start()
        assert serve.popen is not None
        self.base = serving_url(
            serve.popen, serve.stdout, 90, log=self.directory / "serve.log", path="/readyz"
        )
        env = {**env, "REPORTEXPORT_PUBLIC_URL": self.base}
        self.processes = [serve]
        for number in (1, 2):
            self.processes.append(
                Process(f"worker{number}", "worker", ["worker"], env, self.directory)
            )
            self.processes.append(
                Process(f"effects{number}", "effects", ["effects"], env, self.directory)
            )
        for process in self.processes[1:]:
            process.start()
        for line in serve.stdout.read_text().splitlines():
            found = TOKEN_LINE.search(line)
            if found:
                self.tokens[found.group(1)] = found.group(3)
                self.people[found.group(1)] = found.group(2)
        # The user's exports are announced by e-mail too: an address, and "every export".
        person = self.people["user"]
        subprocess.run([str(BIN / "reportexport"), "users", "email", person, MAILBOX],
                       env=env, cwd=self.directory, check=True, capture_output=True,
                       timeout=60)  # fmt: skip
        with self.client() as client:
            for token, path, everyone in (
                ("user", "/hooks/user", False),
                ("operator", "/hooks/global", True),
            ):
                answer = client.post(
                    "/api/webhooks",
                    json={"url": self.receiver.url + path, "everyone": everyone},
                    headers=self.auth(token),
                )
                answer.raise_for_status()
                self.endpoints[int(answer.json()["id"])] = path
            answer = client.put(
                f"/api/people/{person}/notify-always",
                json={"notify_always": True},
                headers=self.auth("user"),
            )
            answer.raise_for_status()

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base, timeout=15)

    def auth(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}

    # -- the workload ------------------------------------------------------------------------------

    def workload(self) -> None:
        rng = random.Random(self.plan.seed ^ 0x5EED)
        count = rng.randint(6, 10)
        started = time.monotonic()
        # A long export first, so that a fault early in the run finds an export running.
        items = [(0.0, 0), *sorted((rng.uniform(0, 6), n) for n in range(1, count))]
        cancels: list[tuple[float, int]] = []
        with self.client() as client:
            for at, number in items:
                time.sleep(max(0.0, started + at - time.monotonic()))
                query, parameters = ("all_orders_gzip", {}) if number == 0 else _workload_item(rng)
                job_id = self._submit(client, query, parameters, f"run-{number}")
                if job_id is not None and rng.random() < 0.3:
                    cancels.append((time.monotonic() + rng.uniform(0.2, 4.0), job_id))
            for moment, job_id in sorted(cancels):
                time.sleep(max(0.0, moment - time.monotonic()))
                self._cancel(client, job_id)

    def _submit(
        self, client: httpx.Client, query: str, parameters: dict[str, Any], key: str
    ) -> int | None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                answer = client.post(
                    "/api/exports",
                    json={"saved_query": query, "parameters": parameters},
                    headers={**self.auth("user"), "Idempotency-Key": key},
                )
                if answer.status_code in (200, 201):
                    self.notes["jobs submitted"] += 1
                    self.event(f"job {answer.json()['id']} created: {query} {parameters}")
                    return int(answer.json()["id"])
                if answer.status_code < 500:
                    self.errors.append(f"submit {query}: {answer.status_code} {answer.text}")
                    return None
            except httpx.HTTPError:
                pass
            self.notes["submits retried"] += 1
            time.sleep(0.5)
        self.errors.append(f"submit {query}: no answer for a minute")
        return None

    def _cancel(self, client: httpx.Client, job_id: int) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                answer = client.post(f"/api/exports/{job_id}/cancel", headers=self.auth("user"))
                if answer.status_code == 200:
                    self.notes["cancels accepted"] += 1
                    self.event(f"job {job_id} canceled by its owner")
                    return
                if answer.status_code < 500:  # 409: it ended first
                    self.notes["cancels refused (ended)"] += 1
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)

    # -- the faults --------------------------------------------------------------------------------

    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.kind == "worker"]

    def worker_id(self, process: Process) -> str:
        return f"{socket.gethostname()}-{process.pid}"

    def running_jobs(self) -> list[dict[str, Any]]:
        try:
            return sql(
                self.url, "SELECT id, lease_owner FROM jobs WHERE status = 'running'", tries=5
            )
        except psycopg.Error:
            return []

    def busy_worker(self, wait: float = 8.0) -> Process:
        """A standalone worker that runs an export, if one does within `wait` seconds."""
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            owners = {row["lease_owner"] for row in self.running_jobs()}
            busy = [p for p in self.workers() if p.alive() and self.worker_id(p) in owners]
            if busy:
                return self.rng.choice(busy)
            time.sleep(0.2)
        return self.rng.choice(self.workers())

    def event(self, text: str) -> None:
        """A line of the run's timeline (faults.log in its folder)."""
        with self._lock, open(self.directory / "faults.log", "a") as log:
            log.write(f"{time.monotonic() - self.started:7.2f} s  {text}\n")

    def strike(self, name: str, delay: float) -> None:
        time.sleep(delay)
        rng = self.rng
        self.event(f"{name} begins")
        try:
            getattr(self, "_" + name)(rng)
            with self._lock:
                self.struck.add(name)
            self.notes[f"fault {name} struck"] += 1
        except MissedError as missed:
            self.notes[f"fault {name} missed: {missed}"] += 1
            self.event(f"{name} missed: {missed}")
        except Exception:
            self.errors.append(f"fault {name}: {traceback.format_exc()}")
        self.event(f"{name} ends")

    def _restart_later(self, process: Process, rng: random.Random) -> None:
        assert process.popen is not None
        process.popen.wait()
        time.sleep(rng.uniform(0.5, 3.0))
        process.start()
        self.event(f"{process.name} started again (pid {process.pid})")

    def _kill_worker(self, rng: random.Random) -> None:
        process = self.busy_worker()
        jobs = [r["id"] for r in self.running_jobs() if r["lease_owner"] == self.worker_id(process)]
        self.event(f"SIGKILL {process.name} (pid {process.pid}, running jobs {jobs})")
        self.disturbed.add(process.name)
        process.held = True
        process.signal(signal.SIGKILL)
        self._restart_later(process, rng)

    def _kill_effects(self, rng: random.Random) -> None:
        poll(lambda: bool(self._open_effects(tries=3)), 8, every=0.2)
        process = rng.choice([p for p in self.processes if p.kind == "effects"])
        self.event(f"SIGKILL {process.name} (pid {process.pid})")
        process.held = True
        process.signal(signal.SIGKILL)
        self._restart_later(process, rng)

    def _freeze_worker(self, rng: random.Random) -> None:
        process = self.busy_worker()
        worker = self.worker_id(process)
        self.disturbed.add(process.name)
        process.held = True
        process.signal(signal.SIGSTOP)
        jobs = {row["id"] for row in self.running_jobs() if row["lease_owner"] == worker}
        self.event(f"SIGSTOP {process.name} ({worker}, running jobs {sorted(jobs)})")
        with self._lock:
            self.frozen.setdefault(worker, set()).update(jobs)
        # Past the lease, the reaper's grace and two reaps, so its jobs are surely reaped.
        time.sleep(LEASE_SECONDS + REAP_GRACE_SECONDS + rng.uniform(3.0, 5.0))
        process.signal(signal.SIGCONT)
        process.held = False

    def _freeze_finish(self, rng: random.Random) -> None:
        """SIGSTOP a worker inside the statement that ends its job. A session of the suite
        holds the job's source slot (which that statement frees) until the worker's finish
        waits on it; the worker is stopped there, the slot let go, and the worker stays
        frozen past its lease and the reaper's grace. Nothing of the job may stay locked
        meanwhile: the watchdog sees a job stuck running if it does. A job that ends before
        its slot is held is passed over for another; while no standalone worker runs an
        export (the workload's may all have ended, or serve's worker took them), the fault
        creates a long one every 10 s."""
        began = time.monotonic()
        created = 0
        while time.monotonic() < began + 40:
            owners = {self.worker_id(p): p for p in self.workers() if p.alive()}
            candidates = [r for r in self.running_jobs() if r["lease_owner"] in owners]
            if not candidates:
                if time.monotonic() > began + 10 * (created + 1):
                    created += 1
                    with self.client() as client:
                        self._submit(client, "all_orders_gzip", {}, f"freeze_finish-{created}")
                time.sleep(0.2)
                continue
            job = rng.choice(candidates)
            if self._freeze_inside_finish(rng, job, owners[job["lease_owner"]]):
                return
            self.notes["freeze_finish: a job ended before its slot was held"] += 1
        raise MissedError("no running export")

    def _freeze_inside_finish(
        self, rng: random.Random, job: dict[str, Any], process: Process
    ) -> bool:
        """True once the worker was stopped inside its finish (and, past its lease and the
        reaper's grace, let go on); False if the job ended before its slot was held;
        MissedError otherwise."""
        stopped = False
        try:
            try:
                with psycopg.connect(self.url, connect_timeout=3) as conn:
                    stopped = self._stop_inside_finish(conn, job, process)
                    conn.rollback()  # the slot let go: the finish runs on, its worker stopped
            except psycopg.OperationalError:  # another fault restarted the database meanwhile
                if not stopped:
                    raise MissedError("cut short by the database") from None
                # Stopped: the slot's lock went with the connection all the same.
            if stopped:
                time.sleep(LEASE_SECONDS + REAP_GRACE_SECONDS + rng.uniform(10.0, 14.0))
        finally:
            if stopped:
                process.signal(signal.SIGCONT)
                process.held = False
        return stopped

    def _stop_inside_finish(
        self, conn: psycopg.Connection[Any], job: dict[str, Any], process: Process
    ) -> bool:
        """Hold the job's source slot until its worker's finish waits on it, then stop the
        worker there: True once stopped, False if the job has no slot (it ended already);
        MissedError otherwise (the slot is let go as the connection closes)."""
        slot = conn.execute(
            b"SELECT slot FROM source_slots WHERE job_id = %s FOR UPDATE", (job["id"],)
        ).fetchone()
        if slot is None:
            return False
        me = conn.info.backend_pid
        self.event(f"holding the slot of job {job['id']} of {process.name}")

        def blocked() -> list[Any]:
            return sql(
                self.url,
                "SELECT pid, query FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (me,),
                tries=5,
            )

        if not poll(lambda: bool(blocked()), 90, every=0.05):
            raise MissedError("the export did not end in time")
        waiting = blocked()
        if not any(is_finish(r["query"]) for r in waiting):
            shown = "; ".join((r["query"] or "")[:80] for r in waiting)
            raise MissedError(f"met another statement than the finish (a cancel?): {shown}")
        running = {r["id"] for r in self.running_jobs() if r["lease_owner"] == job["lease_owner"]}
        self.disturbed.add(process.name)
        process.held = True
        process.signal(signal.SIGSTOP)
        with self._lock:
            self.frozen.setdefault(job["lease_owner"], set()).update(running)
        self.event(f"SIGSTOP {process.name} inside the finish of job {job['id']}")
        return True

    def _row_lock(self, rng: random.Random) -> None:
        deadline = time.monotonic() + 8
        rows: list[dict[str, Any]] = []
        while not rows and time.monotonic() < deadline:
            rows = self.running_jobs()
            time.sleep(0.2)
        if not rows:
            raise MissedError("no running job")
        job_id = rng.choice(rows)["id"]
        held = rng.uniform(3.0, 9.0)
        self.event(f"row lock on job {job_id} for {held:.1f} s")
        locked = False
        try:
            with psycopg.connect(self.url, connect_timeout=3) as conn:
                conn.execute(b"SET lock_timeout = '5s'")
                conn.execute(
                    b"UPDATE jobs SET bytes_written = bytes_written WHERE id = %s", (job_id,)
                )
                locked = True
                with self.outage():  # for this job's lease: renewals skip a locked row
                    time.sleep(held)
                conn.rollback()
        except psycopg.OperationalError:  # another fault restarted the database meanwhile
            if not locked:
                raise MissedError("cut short by the database") from None
            self.notes["row_lock cut short by the database"] += 1

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The job store takes no writes (or none to a running job's row) while this lasts,
        recorded for `kept_leases`."""
        began = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self.outages.append((began, time.monotonic()))

    def _db_restart(self, rng: random.Random) -> None:
        with self.lane.cluster_lock, self.outage():
            self.lane.cluster.restart()

    def _db_pause(self, rng: random.Random) -> None:
        with self.lane.cluster_lock, self.outage():
            self.lane.cluster.pause()
            try:
                time.sleep(rng.uniform(2.0, 8.0))
            finally:
                self.lane.cluster.resume()

    def _db_restart_twice(self, rng: random.Random) -> None:
        """Two outages close together, the second longer than a lease: the leases of exports
        that end meanwhile must be kept up until the reaper's grace, over connections that
        come back as soon as the database does."""
        with self.lane.cluster_lock:
            for down, up in (
                (rng.uniform(2.0, 3.0), rng.uniform(3.0, 4.5)),
                (rng.uniform(5.0, 7.0), 0.0),
            ):
                with self.outage():
                    self.lane.cluster.pause()
                    try:
                        time.sleep(down)
                    finally:
                        self.lane.cluster.resume()
                time.sleep(up)

    def _sqlite_frozen_writer(self, rng: random.Random) -> None:
        """A process takes SQLite's write lock (a write transaction on a job's row) and is
        frozen there: every other writer waits out its lock timeout and tries again."""
        path = self.url.removeprefix("sqlite:///")
        script = (
            "import os, signal, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n"
            "conn.execute('BEGIN IMMEDIATE')\n"
            "conn.execute('UPDATE jobs SET bytes_written = bytes_written"
            " WHERE id = (SELECT max(id) FROM jobs)')\n"
            "print('locked', flush=True)\n"
            "os.kill(os.getpid(), signal.SIGSTOP)\n"
            "conn.rollback()\n"
        )
        with subprocess.Popen(
            [sys.executable, "-c", script, path], stdout=subprocess.PIPE, text=True
        ) as writer:  # leaving the block closes its pipe
            try:
                assert writer.stdout is not None
                if writer.stdout.readline().strip() != "locked":
                    self.errors.append("sqlite_frozen_writer: the writer did not take the lock")
                    raise MissedError("the writer did not take the lock")
                held = rng.uniform(3.0, 9.0)
                self.event(
                    f"a SQLite writer (pid {writer.pid}) frozen holding the lock, {held:.1f} s"
                )
                with self.outage():
                    time.sleep(held)
            finally:
                writer.send_signal(signal.SIGCONT)
                try:
                    writer.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    writer.kill()

    def _replace_objects_folder(
        self, rng: random.Random, make: Callable[[Path], None], *, times: int = 1
    ) -> None:
        """The objects folder replaced by something else for 3 to 8 s (`times` > 1: 2 to 4 s,
        with 1 to 3 s between): writes, links and deletes are refused alike."""
        root = self.objects_root
        aside = root.with_name("objects.aside")
        with self.lane.store_lock:
            for time_ in range(times):
                if time_:
                    time.sleep(rng.uniform(1.0, 3.0))
                root.rename(aside)
                make(root)
                try:
                    time.sleep(rng.uniform(3.0, 8.0) if times == 1 else rng.uniform(2.0, 4.0))
                finally:
                    root.unlink()
                    aside.rename(root)

    def _local_store_file(self, rng: random.Random) -> None:
        self._replace_objects_folder(rng, lambda root: root.write_text("not a folder"))

    def _local_store_symlink(self, rng: random.Random) -> None:
        self._replace_objects_folder(rng, lambda root: root.symlink_to(self.directory / "gone"))

    def _local_store_flaky(self, rng: random.Random) -> None:
        self._replace_objects_folder(
            rng,
            lambda root: root.write_text("not a folder"),
            times=BY_NAME["local_store_flaky"].outages,
        )

    def _local_store_full(self, rng: random.Random) -> None:
        """A full disk: every process that writes objects (the workers, serve) may not make a
        file grow (RLIMIT_FSIZE 0, set from outside with prlimit; Python ignores SIGXFSZ, so
        the write fails with EFBIG, as ENOSPC would), for 3 to 8 s."""
        with self.lane.store_lock:
            limited: list[tuple[int, tuple[int, int]]] = []
            for process in self.processes:
                if process.kind in ("worker", "serve") and process.alive():
                    with contextlib.suppress(ProcessLookupError):
                        before = resource.prlimit(process.pid, resource.RLIMIT_FSIZE)
                        resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (0, before[1]))
                        limited.append((process.pid, before))
            self.event(f"RLIMIT_FSIZE 0 for pids {[pid for pid, _ in limited]}")
            # A SQLite job store is a file these processes cannot grow either.
            full = self.outage() if self.plan.database == SQLITE else contextlib.nullcontext()
            try:
                with full:
                    time.sleep(rng.uniform(3.0, 8.0))
            finally:
                for pid, before in limited:
                    with contextlib.suppress(ProcessLookupError):
                        resource.prlimit(pid, resource.RLIMIT_FSIZE, before)

    def _s3_paused(self, rng: random.Random) -> None:
        with self.lane.store_lock:
            self.lane.moto.pause()
            try:
                time.sleep(rng.uniform(3.0, 8.0))
            finally:
                self.lane.moto.resume()

    def _s3_503(self, rng: random.Random) -> None:
        assert self.lane.proxy is not None
        with self.lane.store_lock:
            self.lane.proxy.refuse()
            try:
                time.sleep(rng.uniform(3.0, 8.0))
            finally:
                self.lane.proxy.accept_again()

    def _s3_flaky(self, rng: random.Random) -> None:
        assert self.lane.proxy is not None
        with self.lane.store_lock:
            for time_ in range(BY_NAME["s3_flaky"].outages):
                if time_:
                    time.sleep(rng.uniform(1.0, 3.0))
                self.lane.proxy.refuse()
                try:
                    time.sleep(rng.uniform(2.0, 4.0))
                finally:
                    self.lane.proxy.accept_again()

    def _webhook_mode(self, mode: str, seconds: float) -> None:
        self.receiver.mode = mode
        try:
            time.sleep(seconds)
        finally:
            self.receiver.mode = "ok"

    def _webhook_slow(self, rng: random.Random) -> None:
        self._webhook_mode("slow", rng.uniform(4.0, 10.0))

    def _webhook_gone(self, rng: random.Random) -> None:
        self._webhook_mode("gone", rng.uniform(1.0, 4.0))

    def _webhook_down(self, rng: random.Random) -> None:
        self.receiver.down()
        try:
            time.sleep(rng.uniform(3.0, 8.0))
        finally:
            self.receiver.up()

    def _smtp_down(self, rng: random.Random) -> None:
        self.mail.down()
        try:
            time.sleep(20.0)
        finally:
            self.mail.up()

    def _kill_effects_sending(self, rng: random.Random) -> None:
        """Hold the SMTP server's answer to a message it has whole until the effects runner
        that sent it is killed (serve's own runner is let go, and the next message held)."""
        deadline = time.monotonic() + 40
        victim = None
        while victim is None:
            self.mail.hold()
            try:
                port = poll(self.mail.held_sender, max(0.0, deadline - time.monotonic()))
                if port is None:
                    raise MissedError("no e-mail was sent by an effects process")
                runners = {p.pid: p for p in self.processes if p.kind == "effects" and p.alive()}
                pid = process_with_port(port, list(runners))
                if pid is not None:
                    victim = runners[pid]
                    self.event(f"SIGKILL {victim.name} (pid {pid}) while its e-mail is held")
                    victim.held = True
                    victim.signal(signal.SIGKILL)
                    assert victim.popen is not None
                    victim.popen.wait()
            finally:
                self.mail.release()
        self._restart_later(victim, rng)

    # -- draining, stopping, sweeping --------------------------------------------------------------

    def _open_effects(self, tries: float = 60) -> list[dict[str, Any]]:
        return sql(
            self.url,
            "SELECT job_id FROM job_side_effects"
            " WHERE completed_at IS NULL AND given_up_at IS NULL",
            tries=tries,
        )

    def drained(self) -> bool:
        unfinished = sql(
            self.url, "SELECT count(*) AS n FROM jobs WHERE status IN ('queued', 'running')"
        )
        return unfinished[0]["n"] == 0 and not self._open_effects()

    def silent_processes(self, wait: float = 20.0) -> list[str]:
        """Running processes whose loops do not beat: each expected heartbeat row (a worker's
        and an effects runner's, both for serve) must be younger than 15 s within `wait`."""
        host = socket.gethostname()
        kinds = {"serve": ("serve", "effects"), "worker": ("worker",), "effects": ("effects",)}

        def missing() -> list[str]:
            rows = sql(self.url, "SELECT process, seen_at FROM heartbeats")
            fresh = {r["process"] for r in rows if age_seconds(r["seen_at"]) < 15}
            return [
                f"{process.name} (pid {process.pid}): no fresh {kind} heartbeat"
                for process in self.processes
                if process.alive()
                for kind in kinds[process.kind]
                if f"{host}-{process.pid}-{kind}" not in fresh
            ]

        poll(lambda: not missing(), wait, every=0.5)
        return missing()

    def workers_not_claiming(self) -> list[str]:
        """Running processes with a worker (standalone ones, and serve's) that do not claim
        again: each must have asked for work lately and show no pause. Every fault is over, so
        a pause the heartbeat states, with its reason, counts against it too."""
        host = socket.gethostname()
        rows = sql(
            self.url, "SELECT process, last_poll_at, pause_reason, paused_sources FROM heartbeats"
        )
        beats = {row["process"]: row for row in rows}
        found = []
        for process in self.processes:
            if process.kind not in ("worker", "serve") or not process.alive():
                continue
            beat = beats.get(f"{host}-{process.pid}-{process.kind}")
            if beat is None:
                found.append(f"{process.name} (pid {process.pid}): no heartbeat")
            elif beat["pause_reason"]:
                paused = beat["paused_sources"] or []
                found.append(
                    f"{process.name} (pid {process.pid}): claims paused "
                    f"({beat['pause_reason']} {paused}) though every fault is over"
                )
            elif beat["last_poll_at"] is None:
                found.append(f"{process.name} (pid {process.pid}): never asked for work")
            elif (asked := age_seconds(beat["last_poll_at"])) > ASKED_WITHIN_SECONDS:
                found.append(
                    f"{process.name} (pid {process.pid}): last asked for work {asked:.0f} s "
                    "ago, and says nothing is paused"
                )
        return found

    def undisturbed_workers(self) -> set[str]:
        """The worker ids (a job's lease_owner) of processes that ran the whole run alive: never
        killed, frozen, restarted or exited by themselves."""
        return {
            self.worker_id(process)
            for process in self.processes
            if process.kind in ("worker", "serve")
            and process.starts == 1
            and not process.unexpected_exits
            and process.name not in self.disturbed
        }

    def claims_again(self) -> list[str]:
        """Every worker asks for work again once the faults are over, within its probes."""
        started = time.monotonic()
        poll(lambda: not self.workers_not_claiming(), CLAIMS_AGAIN_SECONDS, every=1.0)
        found = self.workers_not_claiming()
        if not found:
            self.event(f"every worker asks for work ({time.monotonic() - started:.1f} s)")
        return found

    def watch(self, stop: threading.Event) -> None:
        """The watchdog: a job left running long past its lease's expiry is stuck (a row
        locked by a frozen client, a reaper that cannot pass). Only counted once the job store
        has answered for a while, so that the reapers had their chance after an outage."""
        answering_since: float | None = None
        while not stop.wait(1.0):
            try:
                rows = sql(
                    self.url,
                    "SELECT id, lease_owner, lease_expires_at FROM jobs"
                    " WHERE status = 'running' AND lease_expires_at IS NOT NULL",
                    tries=0,
                )
            except (psycopg.Error, sqlite3.Error):
                answering_since = None
                continue
            now = time.monotonic()
            answering_since = answering_since or now
            if now - answering_since < STUCK_AFTER_SECONDS / 2:
                continue
            for row in rows:
                overdue = age_seconds(row["lease_expires_at"])
                if overdue > STUCK_AFTER_SECONDS and row["id"] not in self.stuck:
                    self.stuck[row["id"]] = (
                        f"job {row['id']} running {overdue:.0f} s past its lease "
                        f"(of {row['lease_owner']}), neither renewed nor reaped"
                    )
                    self.event(self.stuck[row["id"]])

    def stop_processes(self, kinds: Sequence[str]) -> None:
        for process in self.processes:
            if process.kind in kinds:
                # One restarted a moment ago may not handle SIGTERM yet; that would prove nothing.
                time.sleep(max(0.0, process.started_at + 3.0 - time.monotonic()))
                age = time.monotonic() - process.started_at
                code = process.stop()
                if code not in (0, None):
                    self.notes[f"{process.kind} exited {code} when stopped"] += 1
                    self.odd.append(f"{process.name} exited {code}, {age:.1f} s after its start")

    def sweep(self) -> None:
        done = subprocess.run(
            [str(BIN / "reportexport"), "sweep"],
            env=self.environment(),
            cwd=self.directory,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        (self.directory / "sweep.out").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            self.errors.append(f"reportexport sweep exited {done.returncode}: {done.stderr}")
        self.notes["objects swept"] += sum(
            1 for line in done.stdout.splitlines() if line.startswith("deleted ")
        )

    def downloads(self, jobs: dict[int, dict[str, Any]]) -> dict[int, str | int]:
        """What the API gives each job's owner who asks to download it."""
        given: dict[int, str | int] = {}
        with self.client() as client:
            for job_id in sorted(jobs):
                answer = client.get(f"/api/exports/{job_id}/download", headers=self.auth("user"))
                if answer.status_code != 302:
                    given[job_id] = answer.status_code
                    continue
                location = answer.headers["location"]
                url = self.base + location if location.startswith("/") else location
                digest = hashlib.sha256()
                with httpx.stream("GET", url, timeout=60) as file:
                    if file.status_code != 200:
                        given[job_id] = file.status_code
                        continue
                    for chunk in file.iter_bytes():
                        digest.update(chunk)
                given[job_id] = digest.hexdigest()
        return given

    # -- facts -------------------------------------------------------------------------------------

    def facts(self, downloads: dict[int, str | int], drained: bool, silent: list[str]) -> Facts:
        jobs = {r["id"]: r for r in sql(self.url, "SELECT * FROM jobs ORDER BY id")}
        history: dict[int, list[dict[str, Any]]] = {}
        for row in sql(self.url, "SELECT * FROM job_history ORDER BY job_id, id"):
            history.setdefault(row["job_id"], []).append(row)
        effects: dict[int, list[dict[str, Any]]] = {}
        for row in sql(self.url, "SELECT * FROM job_side_effects ORDER BY job_id, id"):
            effects.setdefault(row["job_id"], []).append(row)
        deliveries = sql(self.url, "SELECT * FROM deliveries WHERE endpoint_id IS NOT NULL")
        mail_deliveries = sql(self.url, "SELECT * FROM deliveries WHERE address IS NOT NULL")
        store = self.direct_store()
        listed = list(store.list_objects())
        by_job: dict[int, list[StoredObject]] = {}
        orphans: list[str] = []
        for info in listed:
            owner = job_of(info.key)
            if owner is None or owner not in jobs:
                orphans.append(info.key)
                continue
            stored = StoredObject(info.key, info.size)
            job = jobs[owner]
            if not is_temp(info.key) and job["status"] == "succeeded":
                with store.read(info.key) as handle:
                    data = handle.read()
                stored.sha256, stored.rows = digest_and_rows(data, job["options"])
            by_job.setdefault(owner, []).append(stored)
        with self._lock:
            frozen = {worker: set(ids) for worker, ids in self.frozen.items()}
        with self.receiver.lock:
            received = list(self.receiver.deliveries)
        with self.mail.lock:
            mails = list(self.mail.received)
        return Facts(
            jobs=jobs,
            history=history,
            side_effects=effects,
            deliveries=deliveries,
            endpoints=self.endpoints,
            received=received,
            mail_deliveries=mail_deliveries,
            mails=mails,
            objects=[s for stored in by_job.values() for s in stored],
            object_of_job=by_job,
            orphans=orphans,
            downloads=downloads,
            frozen=frozen,
            drained=drained,
            store_outages=sum(
                BY_NAME[name].outages for name in self.plan.faults if BY_NAME[name].store
            ),
            silent=silent,
            pause_limit=self.plan.pause_after,
            undisturbed=self.undisturbed_workers(),
            longest_outage=longest_outage(self.outages),
            stuck=[self.stuck[job_id] for job_id in sorted(self.stuck)],
            not_claiming=self.not_claiming,
        )

    # -- the whole run -----------------------------------------------------------------------------

    def execute(self) -> tuple[list[Violation], Counter[str]]:
        self.set_up()
        supervisor = Supervisor([p for p in self.processes if p.supervised])
        supervisor.start()
        watching = threading.Event()
        watchdog = threading.Thread(target=self.watch, args=(watching,), name="watchdog")
        watchdog.start()
        try:
            threads = [threading.Thread(target=self.workload, name="workload")]
            for name in self.plan.faults:
                delay = self.rng.uniform(0.5, 6.0)
                threads.append(threading.Thread(target=self.strike, args=(name, delay), name=name))
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            drained = poll(self.drained, DRAIN_SECONDS, every=0.5)
            self.event("drained" if drained else f"not drained after {DRAIN_SECONDS:.0f} s")
            watching.set()
            silent = self.silent_processes()
            self.not_claiming = self.claims_again()
        finally:
            watching.set()
            watchdog.join()
            supervisor.stop()
        for process in self.processes:
            self.notes[f"{process.kind} exits of their own"] += len(process.unexpected_exits)
            if process.unexpected_exits:  # not a violation (its supervisor restarts it): a look
                self.odd.append(f"{process.name} exited by itself {process.unexpected_exits}")
        self.stop_processes(("worker", "effects"))
        self.sweep()
        jobs = {r["id"]: r for r in sql(self.url, "SELECT id, status FROM jobs")}
        given = self.downloads(jobs)
        self.stop_processes(("serve",))
        self.receiver.down()
        self.mail.stop()
        facts = self.facts(given, drained, silent)
        violations = check_all(facts, load_fixture())
        outcomes: Counter[str] = Counter(
            f"{job['status']}:{job['error_code']}" if job["error_code"] else job["status"]
            for job in facts.jobs.values()
        )
        self.notes["leases lost by frozen workers"] += sum(
            1
            for ids in facts.frozen.values()
            for i in ids
            if facts.jobs[i]["error_code"] == "lease_expired"
        )
        copies = Counter((mail.recipient.lower(), mail.message_id) for mail in facts.mails)
        self.notes["e-mails received"] += len(copies)
        self.notes["e-mails received again (same Message-ID)"] += sum(copies.values()) - len(copies)
        self.notes["side effects given up"] += sum(
            1 for rows in facts.side_effects.values() for r in rows if r["given_up_at"]
        )
        for error in self.errors:
            violations.append(Violation("harness", error))
        return violations, outcomes

    def clean_up(self, keep: bool) -> None:
        for process in self.processes:
            if process.alive():
                process.stop(timeout=10)
        self.receiver.down()
        self.mail.stop()
        if self.plan.database == POSTGRES:
            with contextlib.suppress(Exception):
                sql(
                    self.lane.cluster.url,
                    f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)",
                    tries=30,
                )
        if self.plan.store == S3:
            with contextlib.suppress(Exception):
                store = self.direct_store()
                for info in list(store.list_objects()):
                    store.delete(info.key)
        if not keep:
            shutil.rmtree(self.directory, ignore_errors=True)


def run_one(lane: Lane, plan: Plan, directory: Path, *, keep: bool = False) -> RunResult:
    started = time.monotonic()
    run = Run(lane, plan, directory / f"run-{plan.index:04d}")
    outcomes: Counter[str] = Counter()
    try:
        violations, outcomes = run.execute()
    except Exception:
        violations = [Violation("harness", traceback.format_exc())]
    run.clean_up(keep=keep or bool(violations) or bool(run.odd))
    return RunResult(
        plan=plan,
        violations=violations,
        seconds=time.monotonic() - started,
        outcomes=outcomes,
        notes=run.notes,
        struck=frozenset(run.struck),
        directory=run.directory if (keep or violations or run.odd) else None,
        odd=run.odd,
    )


@contextlib.contextmanager
def lane_of(directory: Path, *, rows: int) -> Iterator[Lane | None]:
    """A started lane, or None when PostgreSQL cannot be started here."""
    lane = Lane(directory, rows=rows)
    try:
        yield lane if lane.start() else None
    finally:
        lane.stop()


def run_plans(
    plans: Sequence[Plan],
    *,
    lanes: int = 1,
    rows: int = 400_000,
    directory: Path | None = None,
    keep: bool = False,
    progress: Callable[[RunResult], None] | None = None,
) -> list[RunResult] | None:
    """Run `plans` over `lanes` lanes at once; None when no PostgreSQL cluster can be made."""
    base = directory or Path(tempfile.mkdtemp(prefix="reportexport-faults-"))
    queue = list(plans)
    results: list[RunResult] = []
    lock = threading.Lock()
    unavailable = threading.Event()

    def lane_loop(number: int) -> None:
        with lane_of(base / f"lane-{number}", rows=rows) as lane:
            if lane is None:
                unavailable.set()
                return
            while True:
                with lock:
                    if not queue:
                        return
                    plan = queue.pop(0)
                result = run_one(lane, plan, base / f"lane-{number}", keep=keep)
                with lock:
                    results.append(result)
                if progress is not None:
                    progress(result)

    threads = [threading.Thread(target=lane_loop, args=(n,)) for n in range(lanes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if unavailable.is_set() and not results:
        return None
    # Runs with a violation or an odd exit kept their logs: so does their folder.
    if directory is None and not keep and all(not (r.violations or r.odd) for r in results):
        shutil.rmtree(base, ignore_errors=True)
    return sorted(results, key=lambda r: r.plan.index)


# -- the report ------------------------------------------------------------------------------------


def report(results: Sequence[RunResult], wall_seconds: float) -> str:
    from tests.faults.invariants import INVARIANTS

    lines = []
    width = max(len(n) for n in FAULT_NAMES)
    # planned: runs that drew the fault; struck: runs in which it hit what it aims at (a
    # fault that finds nothing to strike is no test: `never struck` below names it).
    lines.append(f"{'fault':{width}}  planned  struck  runs with violations  violations")
    never = []
    for name in FAULT_NAMES:
        runs = [r for r in results if name in r.plan.faults]
        struck = sum(name in r.struck for r in runs)
        bad = [r for r in runs if r.violations]
        count = sum(len(r.violations) for r in runs)
        lines.append(f"{name:{width}}  {len(runs):7}  {struck:6}  {len(bad):20}  {count:10}")
        if runs and not struck:
            never.append(f"{name} (planned in {len(runs)})")
    if never:
        lines.append("NEVER STRUCK: " + ", ".join(never) + "; their reasons are in `events`")
    lines.append("")
    names = [*INVARIANTS, "harness"]
    width = max(len(n) for n in names)
    lines.append(f"{'invariant':{width}}  violations")
    for name in names:
        count = sum(1 for r in results for v in r.violations if v.invariant == name)
        lines.append(f"{name:{width}}  {count:10}")
    outcomes: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    for result in results:
        outcomes.update(result.outcomes)
        notes.update(result.notes)
    lines.append("")
    lines.append("job outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    lines.append("events: " + ", ".join(f"{k} {v}" for k, v in sorted(notes.items()) if v))
    total = sum(len(r.violations) for r in results)
    lines.append("")
    lines.append(
        f"{len(results)} runs, {total} violations, wall time {wall_seconds / 60:.1f} min "
        f"({wall_seconds:.0f} s)"
    )
    for result in results:
        for violation in result.violations:
            lines.append(
                f"  run {result.plan.index} seed {result.plan.seed} {result.plan.database} "
                f"{result.plan.store} pause-after {result.plan.pause_after} "
                f"{'+'.join(result.plan.faults)}: {violation.invariant}: {violation.detail}"
            )
        for odd in result.odd:
            lines.append(f"  run {result.plan.index}: {odd} (not a violation)")
        if (result.violations or result.odd) and result.directory is not None:
            lines.append(f"    logs kept in {result.directory}")
    return "\n".join(lines)


def as_json(results: Sequence[RunResult], wall_seconds: float) -> str:
    return json.dumps(
        {
            "wall_seconds": round(wall_seconds, 1),
            "runs": [
                {
                    "index": r.plan.index,
                    "seed": r.plan.seed,
                    "store": r.plan.store,
                    "database": r.plan.database,
                    "pause_after": r.plan.pause_after,
                    "faults": list(r.plan.faults),
                    "struck": sorted(r.struck),
                    "seconds": round(r.seconds, 1),
                    "violations": [[v.invariant, v.detail] for v in r.violations],
                    "outcomes": dict(r.outcomes),
                    "notes": dict(r.notes),
                }
                for r in results
            ],
        },
        indent=1,
    )
