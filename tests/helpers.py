"""What tests of more than one module share: paths, the fixture's graph, waiting to a
deadline, `reportexport serve` on a port of its own choosing, the xdist worker's name, job
records, raw SQL, the CLI, the API's composition root, the sources and object stores of the
export tests, the effects runner's clock. Fixtures live in the tiers' conftest.py files (those
of every tier in tests/conftest.py); test modules import helpers from here, never from one
another."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psycopg
import pytest

from frozen_lifecycle.graph import Graph, load_graph
from reportexport.composition import Runtime
from reportexport.core.catalog import Catalog, parse_catalog
from reportexport.core.records import Schedule
from reportexport.core.settings import Settings
from reportexport.objects import ObjectStore, final_key
from reportexport.objects.s3 import S3ObjectStore
from reportexport.runners.effects.handlers import Context
from reportexport.runners.effects.runner import EffectsRunner, RunnerSettings
from reportexport.runners.worker import Worker, WorkerSettings
from reportexport.services.exports import Acting
from reportexport.store import (
    Database,
    Lease,
    NewJob,
    Outcome,
    OwnerLimits,
    PublishedObject,
    open_database,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
# Examples per property-based test over the entry points; .ci/run sets its CI profile, and a
# developer hunting for trouble raises it (REPORTEXPORT_EXAMPLES=1000 ./scripts/test).
EXAMPLES = int(os.environ.get("REPORTEXPORT_EXAMPLES", "50"))
FIXTURE_PATH = REPO_ROOT / "contracts" / "job-status-graph.json"
# The toolkit's source: the gate runs from it with the standard library alone (PYTHONPATH=...).
TOOLKIT_SRC = REPO_ROOT / "packages" / "frozen-lifecycle" / "src"
GRAPH = load_graph(FIXTURE_PATH)
T = TypeVar("T")


def gate_environ(*paths: Path) -> dict[str, str]:
    """The environment of a gate run from source: the toolkit (and `paths`) on PYTHONPATH, and
    no variable naming another fixture."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (TOOLKIT_SRC, *paths))}
    env.pop("REPORTEXPORT_GRAPH", None)
    env.pop("FROZEN_LIFECYCLE_GRAPH", None)
    return env


def graph_with_archived(tmp_path: Path) -> tuple[Path, Graph]:
    """A copy of the fixture with one more terminal state, as a lifecycle change would add."""
    document = json.loads(FIXTURE_PATH.read_text())
    document["states"].append("archived")
    document["terminal"].append("archived")
    document["transitions"].append({"from": "running", "to": "archived", "actor": "worker"})
    document["side_effects"]["archived"] = ["delete_temp_object"]
    path = tmp_path / "graph-with-archived.json"
    path.write_text(json.dumps(document, indent=2))
    return path, load_graph(path)


Mutation = Callable[[dict[str, Any]], None]


def edge(from_status: str, to_status: str, actor: str = "worker") -> dict[str, str]:
    return {"from": from_status, "to": to_status, "actor": actor}


# -- waiting ---------------------------------------------------------------------------------------


def poll(condition: Callable[[], T], seconds: float, every: float = 0.1) -> T:
    """`condition()` until it is true or `seconds` have passed; its last value."""
    deadline = time.monotonic() + seconds
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(every)


def wait_for(
    condition: Callable[[], T],
    seconds: float,
    what: str,
    *,
    every: float = 0.1,
    detail: Callable[[], str] | None = None,
) -> T:
    """`condition()`'s first true value; fails the test when there is none within `seconds`,
    saying `what` was awaited (and `detail()`, e.g. a server's log)."""
    value = poll(condition, seconds, every)
    if not value:
        message = f"waited {seconds:g} s in vain for: {what}"
        raise AssertionError(message + ("\n" + detail() if detail is not None else ""))
    return value


def tail(path: Path, characters: int = 6000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return f"--- {path} (last {characters} characters) ---\n{text[-characters:]}"


# -- servers and their ports -----------------------------------------------------------------------
# A test never picks a free port for a server and hands it over later: another process may take
# it in between, and the test would then talk to that one. Servers bind port 0 themselves and the
# test reads back the port they took.

SERVING = re.compile(r"^reportexport is serving on (http://\S+)$", re.MULTILINE)


def unused_port() -> int:
    """A port nothing listens on now, for the one server that must be told its port before it
    starts (company sign-in's redirect URI names it). Another process may take it meanwhile:
    `serve` then ends at once naming the address, and `serving_url` fails saying so."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_command(*options: str, port: int = 0) -> list[str]:
    """`reportexport serve` on a port it chooses itself (see `serving_url`), or on `port`."""
    return [sys.executable, "-m", "reportexport", "serve", "--port", str(port), *options]


def start_serve(
    options: Sequence[str],
    *,
    env: Mapping[str, str],
    log: Path,
    cwd: Path | None = None,
    port: int = 0,
) -> subprocess.Popen[bytes]:
    """`reportexport serve --port 0 OPTIONS` (or `--port PORT`), its output (and errors) written
    to `log`."""
    with open(log, "wb") as output:
        return subprocess.Popen(
            serve_command(*options, port=port),
            env=dict(env),
            stdout=output,
            stderr=subprocess.STDOUT,
            cwd=cwd,
        )


def announced_url(output: Path) -> str | None:
    """The URL a `reportexport serve` wrote to `output` that it serves on, once it has."""
    found = SERVING.search(output.read_text(errors="replace")) if output.exists() else None
    return found.group(1) if found else None


def serving_url(
    process: subprocess.Popen[bytes],
    output: Path,
    seconds: float = 120,
    *,
    log: Path | None = None,
    path: str = "/healthz",
) -> str:
    """The base URL of the `reportexport serve` running as `process`, once it answers `path`
    with 200 there. The port is the one it wrote to `output`, so the answer is its own. Fails
    at once when the process ends first, and when `seconds` pass; with its log (`log`, else
    `output`)."""
    logs = log or output

    def answering() -> str | None:
        if process.poll() is not None:
            raise AssertionError(
                f"serve ended with exit code {process.returncode} before it answered\n" + tail(logs)
            )
        base = announced_url(output)
        if base is None:
            return None
        try:
            answered = httpx.get(base + path, timeout=5).status_code == 200
        except httpx.TransportError:
            return None
        return base if answered else None

    return wait_for(
        answering, seconds, f"serve (pid {process.pid}) to answer {path}", every=0.2,
        detail=lambda: tail(logs),
    )  # fmt: skip


def stop_serve(process: subprocess.Popen[bytes], log: Path, seconds: float = 60) -> None:
    """SIGTERM, and the process's end within `seconds`; else it is killed (so no later test
    meets it) and the test fails with its log, which says where the stop was stuck."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        pytest.fail(f"serve (pid {process.pid}) did not stop within {seconds} s of SIGTERM\n"
                    + tail(log))  # fmt: skip


# -- pytest-xdist ----------------------------------------------------------------------------------


def worker_name() -> str:
    """pytest-xdist's worker ("gw0", "gw1", ...), or "main" without xdist: names of things a
    database cluster shares between databases (roles) carry it, so workers never collide."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


# -- the command line ------------------------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reportexport", *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


# -- job records -----------------------------------------------------------------------------------


def new_job(owner: str = "alice", **overrides: object) -> NewJob:
    fields: dict[str, object] = {
        "owner": owner,
        "saved_query": "orders_by_day",
        "query_sql": "SELECT * FROM orders WHERE day = $day",
        "query_hash": "sha256:abc",
        "source": "demo",
        "parameters": {"day": "2026-01-31"},
        "options": {"delimiter": ","},
    }
    fields.update(overrides)
    return NewJob(**fields)  # type: ignore[arg-type]


def published(key: str = "exports/1.csv") -> PublishedObject:
    return PublishedObject(
        key=key,
        sha256="0" * 64,
        bytes=123,
        rows=4,
        columns=("id", "day"),
        file_name="orders.csv",
        expires_in_seconds=3600,
    )


def claim_one(db: Database, worker: str = "w1", lease_seconds: float = 30) -> Lease:
    (claim,) = db.queue.claim_jobs(worker, limit=1, lease_seconds=lease_seconds)
    return claim.lease


def lease_end(db: Database, job_id: int) -> datetime:
    """When the lease of a running job ends, as its last renewal set it."""
    job = db.jobs.get_job(job_id).job  # type: ignore[arg-type]
    assert job.lease_expires_at is not None, job
    return job.lease_expires_at


def limits(max_active: int = 10, max_recent: int = 60, since_hours: float = 1) -> OwnerLimits:
    return OwnerLimits(
        max_active=max_active,
        max_recent=max_recent,
        since=datetime.now(UTC) - timedelta(hours=since_hours),
    )


# -- the service role ------------------------------------------------------------------------------

# A role belongs to the whole cluster, not to one database: one per xdist worker.
SERVICE_ROLE = f"reportexport_test_service_{worker_name()}"


def service_role_url(owner_url: str) -> str:
    """The same database, as a login role created by `db upgrade --service-role`."""
    with closing(open_database(owner_url, GRAPH)) as owner_db:
        owner_db.schema.grant_service_role(SERVICE_ROLE)
    base, _, _ = owner_url.partition("://")
    rest = owner_url.split("@", 1)[1]
    return f"{base}://{SERVICE_ROLE}@{rest}"


# -- the API ---------------------------------------------------------------------------------------

API_QUERIES: dict[str, Any] = {
    "products": {
        "source": "demo",
        "title": "Products of a category",
        "sql": "SELECT * FROM products WHERE category = :category ORDER BY product_id",
        "parameters": {"category": {"type": "enum", "choices": ["toys", "books"]}},
    },
    "endless": {
        "source": "demo",
        "sql": "SELECT i FROM range(2000000000) AS t(i)",
    },
    "search": {
        "source": "demo",
        "title": "Products by a word of their name",
        "sql": "SELECT * FROM products WHERE name LIKE '%' || :term || '%' ORDER BY product_id",
        "parameters": {"term": {"type": "string", "max_length": 100}},
    },
}


def runtime_for(db: Database, catalog: Catalog, objects: ObjectStore, **settings: Any) -> Runtime:
    """The composition root over the test's own store, catalog and objects."""
    chosen = Settings.load(command_line={"link_secret": "secret", **settings}, environ={})
    return Runtime(chosen, graph=GRAPH, database=db, catalog=catalog, objects=objects)


def auth(api: dict[str, Any], who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api['tokens'][who]}"}


def create(api: dict[str, Any], who: str = "alice", **body: Any) -> Any:
    payload = {"saved_query": "products", "parameters": {"category": "toys"}, **body}
    return api["client"].post("/api/exports", json=payload, headers=auth(api, who))


def call(api: dict[str, Any], who: str, method: str, path: str, **kwargs: Any) -> Any:
    """One request to the API as `who`."""
    return api["client"].request(method, path, headers=auth(api, who), **kwargs)


def schedule_of(api: dict[str, Any], who: str) -> int:
    """A new daily schedule of `who`'s, made over the API: its id."""
    body = {"saved_query": "products", "parameters": {"category": "toys"},
            "cron": "0 8 * * *", "time_zone": "UTC"}  # fmt: skip
    made = call(api, who, "POST", "/api/schedules", json=body)
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


# -- raw SQL ---------------------------------------------------------------------------------------


class RawSql:
    """A plain driver connection, as an operator in psql or the sqlite3 shell would have."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.sqlite = url.startswith("sqlite:")
        if self.sqlite:
            self.conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        else:
            self.conn = psycopg.connect(url, autocommit=True)

    def execute(self, statement: str) -> list[tuple[Any, ...]]:
        cursor = self.conn.execute(statement if self.sqlite else statement.encode())
        return list(cursor.fetchall()) if cursor.description else []

    def scalar(self, statement: str) -> Any:
        return self.execute(statement)[0][0]

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        return (sqlite3.DatabaseError,) if self.sqlite else (psycopg.Error,)

    def close(self) -> None:
        self.conn.close()


def rejected(raw: RawSql, statement: str, message: str) -> None:
    with pytest.raises(raw.errors) as raised:
        raw.execute(statement)
    assert message in str(raised.value)


def succeeded(db: Database) -> int:
    """A job that ran and succeeded."""
    db.jobs.create_job(new_job())
    lease = claim_one(db, lease_seconds=60)
    assert db.queue.finish_jobs([Outcome(lease=lease, to_status="succeeded")]) == [True]
    return lease.job_id


# An export that runs for minutes unless stopped: a slow, endless-looking stream of rows.
ENDLESS = "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)"


# The saved queries of the worker's infrastructure tests (database restarts, stalls).
WORKER_QUERIES: dict[str, Any] = {
    "small": {"source": "demo", "sql": "SELECT * FROM products ORDER BY product_id"},
    "seconds": {  # a few seconds of work, then done
        "source": "demo",
        "sql": "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(4000000) AS t(i)",
    },
    "endless": {
        "source": "demo",
        "sql": "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)",
    },
    "elsewhere": {"source": "typed_duckdb", "sql": "SELECT id FROM typed"},
}


DAILY = {
    "source": "demo",
    "title": "Orders of one day",
    "sql": "SELECT order_id FROM orders WHERE order_date = :day",
    "parameters": {"day": {"type": "date"}},
}


def given_up(dash: Any) -> int:
    """A failed export of alice's whose webhook ran out of attempts."""
    db = dash["db"]
    job = dash["runtime"].exports.create(Acting(name="alice"), "products", {"category": "toys"})
    (claim,) = db.queue.claim_jobs("w1", limit=1, lease_seconds=60)
    db.queue.finish_jobs([Outcome(lease=claim.lease, to_status="failed")])
    now = datetime.now(UTC)
    for claimed in db.effects.claim_side_effects("r", limit=10, now=now, claim_until=now):
        db.effects.retry_side_effect(
            claimed, now=now, error="HTTP 503 from the receiver", next_attempt_at=now, give_up=True
        )
    return int(job.job.id)


TEXTS = [
    "plain", "a,b", 'q"uote', "line\nbreak", "cr\rhere", "crlf\r\nhere", "", None,
    "=1+1", "+x", "-x", "@x", "\tx", "\rx", "\nx", "  =x", " plain", "Ünïcödé ✓ 日本",
    "a;b", "a\tb", "#hash", "'quoted'",
]  # fmt: skip


TYPED_COLUMNS = (
    "id INTEGER, t TEXT, d DECIMAL(10,2), f DOUBLE PRECISION, b BOOLEAN, day DATE, "
    "ts TIMESTAMP, tstz TIMESTAMPTZ"
)


def typed_rows() -> list[tuple[Any, ...]]:
    rows = []
    for i, text in enumerate(TEXTS, start=1):
        rows.append(
            (
                i,
                text,
                None if i % 7 == 0 else Decimal(f"{i}.{i % 10}0"),
                None if i % 5 == 0 else [0.1, 1.5, -2.25, 1e20, 123456.789][i % 5],
                None if i % 6 == 0 else i % 2 == 0,
                date(2024, 1, i),
                datetime(2024, 2, i, 13, 14, 15, 0 if i % 2 else 250_000),
                datetime(2024, 3, i, 23, 30, 0, 0 if i % 3 else 500_000, tzinfo=UTC),
            )
        )
    return rows


def catalog_for(sources_dir: Path, postgres: str | None, queries: dict[str, Any]) -> Catalog:
    sources: dict[str, Any] = {
        "demo": {"url": f"duckdb:///{sources_dir / 'demo.duckdb'}"},
        "typed_duckdb": {"url": f"duckdb:///{sources_dir / 'typed.duckdb'}"},
        "typed_sqlite": {"url": f"sqlite:///{sources_dir / 'typed.db'}"},
    }
    if postgres is not None:
        sources["typed_postgres"] = {"url": postgres}
    return parse_catalog(
        {"version": 1, "sources": sources, "queries": queries}, sources_dir / "c.toml"
    )


def new_bucket(endpoint: str) -> str:
    bucket = f"exports-{uuid.uuid4().hex[:10]}"
    store = S3ObjectStore(f"s3://{bucket}?endpoint_url={endpoint}")
    store.client.create_bucket(Bucket=bucket)
    return f"s3://{bucket}/reportexport?endpoint_url={endpoint}"


class Clock:
    """An injected clock: real time plus whatever the test skipped ahead, so the retry
    schedule is checked without sleeping (rows are written at the database's own now)."""

    def __init__(self) -> None:
        self.skipped = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.skipped

    def advance(self, seconds: float) -> None:
        self.skipped += timedelta(seconds=seconds)


def make_runner(
    db: Database,
    objects: ObjectStore,
    http: httpx.Client,
    clock: Any,
    *,
    link_seconds: int | None = None,
    **settings: Any,
) -> EffectsRunner:
    context = Context(
        store=db.endpoints,
        deliveries=db.deliveries,
        objects=objects,
        client=http,
        clock=clock,
        allow_private=True,
        channels=db.channels,
    )
    if link_seconds is not None:
        context.link_seconds = link_seconds
    return EffectsRunner(db, context, GRAPH, RunnerSettings(**settings), clock=clock)


def succeeded_job(
    db: Database,
    objects: ObjectStore,
    owner: str = "alice",
    *,
    file_name: str = "orders.csv",
    content: bytes = b"a,b\n1,2\n",
    **fields: object,
) -> int:
    """A job that succeeded with `content` published as `file_name`, kept an hour."""
    job = db.jobs.create_job(new_job(owner=owner, **fields))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    key = final_key(job.id, file_name)
    temp = objects.create_temp(job.id, claim.lease.token, key)
    temp.write(content)
    temp.publish()
    published = PublishedObject(
        key=key, sha256=hashlib.sha256(content).hexdigest(), bytes=len(content), rows=1,
        columns=("a", "b"), file_name=file_name, expires_in_seconds=3600,
        column_types=("integer", "text"), dialect_version=2,
    )  # fmt: skip
    assert db.queue.finish_jobs(
        [Outcome(lease=claim.lease, to_status="succeeded", published=published)]
    )
    return job.id


def run_by_a_worker(db: Database, catalog: Catalog, objects: ObjectStore, job_id: int) -> str:
    """A worker runs until the job ends; its end status."""
    worker = Worker(db, catalog, objects, WorkerSettings(poll_seconds=0.1))
    worker.start()
    try:
        wait_for(lambda: db.jobs.get_job(job_id).job.finished_at is not None, 60,
                 f"export {job_id} to end")  # fmt: skip
    finally:
        worker.stop(grace_seconds=0)
    return db.jobs.get_job(job_id).job.status


# -- schedules of the store's tests ---------------------------------------------------------------


def a_schedule(db: Database, owner: str = "alice") -> Schedule:
    created = db.schedules.create(
        owner=owner, saved_query="orders_by_day", parameters={}, cron="0 6 * * *",
        time_zone="UTC", ends_at=None, next_fire_at=datetime.now(UTC), created_by=owner,
        max_per_owner=5,
    )  # fmt: skip
    assert created is not None
    return created[0]


def ended_job_of(db: Database, schedule: Schedule, *, notify: bool = False) -> int:
    options = {"delimiter": ",", **({"notify": True} if notify else {})}
    job = db.jobs.create_job(new_job(owner=schedule.owner, schedule_id=schedule.id,
                                     options=options))[0]  # fmt: skip
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(lease=claim.lease, to_status="succeeded",
                      published=published(f"exports/{job.id}.csv"))  # fmt: skip
    assert db.queue.finish_jobs([outcome]) == [True]
    return job.id


def person(db: Database, name: str, email: str | None) -> None:
    user, _ = db.users.add_user(name, "user")
    if email is not None:
        db.users.set_email(user.id, email)


def failed_job(db: Database, owner: str = "alice", **fields: object) -> int:
    job = db.jobs.create_job(new_job(owner=owner, **fields))[0]
    (claim,) = db.queue.claim_jobs("w", limit=1, lease_seconds=60)
    outcome = Outcome(lease=claim.lease, to_status="failed", error_code="query_error",
                      error_message="column x does not exist")  # fmt: skip
    assert db.queue.finish_jobs([outcome])
    return job.id


# -- broken fixtures, one per validator rule -------------------------------------------------------

BROKEN: dict[str, tuple[Mutation, str]] = {
    "fails the schema": (
        lambda g: g.update(states="queued"),
        r"schema: \$\.states: expected array",
    ),
    "unexpected key": (lambda g: g.update(transition=[]), r"unexpected property 'transition'"),
    "edge names an unknown state": (
        lambda g: g["transitions"].append(edge("running", "archived")),
        r"transitions\[5\] running->archived: to names unknown state 'archived'",
    ),
    "initial is not a state": (
        lambda g: g.update(initial="waiting"),
        r"initial: 'waiting' is not a state",
    ),
    "terminal is not a subset of states": (
        lambda g: g["terminal"].append("archived"),
        r"terminal: 'archived' is not a state",
    ),
    "an edge leaves a terminal state": (
        lambda g: g["transitions"].append(edge("failed", "running")),
        r"transitions\[5\] failed->running: leaves terminal state 'failed'",
    ),
    "a state is unreachable from initial": (
        lambda g: (g["states"].append("archived"), g["terminal"].append("archived")),
        r"states: 'archived' is unreachable from initial 'queued'",
    ),
    "a non-terminal state has no path to a terminal state": (
        lambda g: (g["states"].append("stuck"), g["transitions"].append(edge("running", "stuck"))),
        r"states: 'stuck' has no path to a terminal state",
    ),
    "duplicate edges": (
        lambda g: g["transitions"].append(edge("queued", "running")),
        r"transitions\[5\] queued->running: duplicate edge",
    ),
    "an edge without an actor": (
        lambda g: g["transitions"][2].pop("actor"),
        r"schema: \$\.transitions\[2\]: missing required property 'actor'",
    ),
    "an edge with an empty actor": (
        lambda g: g["transitions"][2].update(actor=""),
        r"\$\.transitions\[2\]\.actor: '' does not match",
    ),
    "a side effect on a non-terminal state": (
        lambda g: g["side_effects"].update(running=["notify"]),
        r"side_effects\.running: side effects belong on terminal states only",
    ),
    "a side effect on an unknown state": (
        lambda g: g["side_effects"].update(archived=["notify"]),
        r"side_effects\.archived: 'archived' is not a state",
    ),
    "a forbidden alias that is also a state": (
        lambda g: g["forbidden_aliases"].append("queued"),
        r"forbidden_aliases: 'queued' is also a state",
    ),
    "an edge that does not change the status": (
        lambda g: g["transitions"].append(edge("running", "running")),
        r"transitions\[5\] running->running: an edge must change the status",
    ),
    "a name with a trailing newline": (
        lambda g: g.update(job_type="report_export\n"),
        r"job_type: 'report_export\\n' is not a plain lower-case name",
    ),
}
