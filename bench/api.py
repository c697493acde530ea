"""The service under load: clients listing, viewing and creating exports while exports run.

On SQLite and on PostgreSQL, `--clients` concurrent clients (50) each loop for `--seconds`:
list their exports (60 %), view one of them with its timeline (35 %), create one (5 %). The
same load then goes to the floor for this stack: a bare FastAPI app on uvicorn, one process,
synchronous endpoints in the thread pool like ours, answering the same three requests with the
same queries through the same driver on the same database, with no validation, limits or
models. A `reportexport worker` runs the exports the floor queues, as `serve`'s own worker does
for `serve`, so both sides answer while exports run. Sides are interleaved (serve, floor,
serve, floor ...) for `--repetitions` rounds; each round gives one ratio per figure and the
median is reported with its spread. Any error (a 4xx or 5xx, a refused connection, "database is
locked") counts, and the run exits 1 if `serve` had one.

    ./scripts/bench api [--clients 50] [--seconds 15] [--repetitions 3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import httpx
from fastapi import Body, FastAPI, Header, HTTPException
from ratios import Ratio, ratio

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
USERS = 10
DEMO_ROWS = 20_000
LIST, VIEW, CREATE = "list", "view", "create"


# -- the floor: the same requests, the same queries, nothing else --------------------------------


def floor_app(database_url: str) -> Any:
    store = FloorStore(database_url)
    app = FastAPI()

    def person(authorization: str | None) -> str:
        token = (authorization or "").removeprefix("Bearer ")
        name = store.user(hashlib.sha256(token.encode()).hexdigest())
        if name is None:
            raise HTTPException(401)
        return name

    @app.get("/healthz")
    def healthz() -> dict[str, bool]:
        return {"healthy": True}

    @app.get("/api/exports")
    def list_exports(limit: int = 20, authorization: str | None = Header(None)) -> Any:
        return {"jobs": store.jobs(person(authorization), limit), "next_cursor": None}

    @app.get("/api/exports/{job_id}")
    def view_export(job_id: int, authorization: str | None = Header(None)) -> Any:
        job = store.job(person(authorization), job_id)
        if job is None:
            raise HTTPException(404)
        return job

    @app.post("/api/exports", status_code=201)
    def create_export(
        body: Annotated[dict[str, Any], Body()], authorization: str | None = Header(None)
    ) -> Any:
        return store.create(person(authorization), body["parameters"])

    return app


class FloorStore:
    """The queries our store runs for these three requests, through the same drivers."""

    def __init__(self, url: str) -> None:
        self.sqlite = url.startswith("sqlite:")
        if self.sqlite:
            import sqlite3

            self.path = url.removeprefix("sqlite:///")
            self._local = threading.local()
            self._sqlite = sqlite3
        else:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool

            self.pool = ConnectionPool(url, min_size=1, max_size=8,
                                       kwargs={"row_factory": dict_row}, open=True)  # fmt: skip
        self.template = self._one(
            "SELECT saved_query, source, query_sql, query_hash, options FROM jobs "
            "WHERE saved_query = 'orders_by_day' ORDER BY id LIMIT 1",
            (),
        )

    @contextmanager
    def _conn(self) -> Iterator[Any]:
        if self.sqlite:
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._sqlite.connect(self.path, isolation_level=None, timeout=5)
                conn.row_factory = self._sqlite.Row
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                self._local.conn = conn
            yield conn
        else:
            with self.pool.connection() as conn:
                yield conn

    def _sql(self, text: str) -> str:
        return text if self.sqlite else text.replace("?", "%s")

    def _all(self, text: str, params: tuple[Any, ...]) -> list[dict[str, Any]]:
        with self._conn() as conn:
            return [dict(row) for row in conn.execute(self._sql(text), params).fetchall()]

    def _one(self, text: str, params: tuple[Any, ...]) -> dict[str, Any] | None:
        rows = self._all(text, params)
        return rows[0] if rows else None

    def user(self, token_hash: str) -> str | None:
        row = self._one(
            "SELECT name FROM users WHERE token_hash = ? AND revoked_at IS NULL", (token_hash,)
        )
        return None if row is None else str(row["name"])

    def jobs(self, owner: str, limit: int) -> list[dict[str, Any]]:
        return self._all(
            "SELECT * FROM jobs WHERE owner = ? ORDER BY id DESC LIMIT ?", (owner, limit + 1)
        )[:limit]

    def job(self, owner: str, job_id: int) -> dict[str, Any] | None:
        job = self._one("SELECT * FROM jobs WHERE id = ? AND owner = ?", (job_id, owner))
        if job is None:
            return None
        job["history"] = self._all(
            "SELECT * FROM job_history WHERE job_id = ? ORDER BY id", (job_id,)
        )
        job["side_effects"] = self._all(
            "SELECT * FROM job_side_effects WHERE job_id = ? ORDER BY id", (job_id,)
        )
        return job

    def create(self, owner: str, parameters: dict[str, Any]) -> dict[str, Any]:
        template = self.template or {}
        options = template.get("options")
        values = (
            owner, template.get("saved_query"), template.get("source"), template.get("query_sql"),
            template.get("query_hash"), json.dumps(parameters),
            options if isinstance(options, str) else json.dumps(options), owner,
        )  # fmt: skip
        insert = (
            "INSERT INTO jobs (owner, saved_query, source, query_sql, query_hash, parameters, "
            "options, status, turn) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', "
            "(SELECT count(*) FROM jobs WHERE owner = ? AND finished_at IS NULL)) RETURNING id"
        )
        with self._conn() as conn:
            if self.sqlite:
                conn.execute("BEGIN IMMEDIATE")
                row = conn.execute(insert, values).fetchone()
                conn.execute("COMMIT")
            else:
                row = conn.execute(self._sql(insert), values).fetchone()
        return {"id": row["id"] if not self.sqlite else row[0]}


def serve_floor(database_url: str, port: int) -> None:
    import uvicorn

    uvicorn.run(floor_app(database_url), host="127.0.0.1", port=port, log_level="warning")


# -- the load ------------------------------------------------------------------------------------


@dataclass
class Round:
    side: str
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def requests(self) -> int:
        return sum(len(found) for found in self.latencies.values())

    @property
    def all_latencies(self) -> list[float]:
        return sorted(value for found in self.latencies.values() for value in found)

    def percentile(self, share: float) -> float:
        values = self.all_latencies
        return values[min(len(values) - 1, int(len(values) * share))] if values else float("nan")


async def load(base: str, tokens: list[str], clients: int, seconds: float, side: str) -> Round:
    found = Round(side=side)
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client(index: int, http: httpx.AsyncClient) -> None:
        headers = {"Authorization": f"Bearer {tokens[index % len(tokens)]}"}
        rng = random.Random(index)
        mine: list[int] = []
        while time.monotonic() < deadline:
            draw = rng.random()
            kind = CREATE if draw < 0.05 else VIEW if draw < 0.40 and mine else LIST
            began = time.perf_counter()
            try:
                if kind == LIST:
                    answer = await http.get("/api/exports", params={"limit": 20}, headers=headers)
                elif kind == VIEW:
                    answer = await http.get(f"/api/exports/{rng.choice(mine)}", headers=headers)
                else:
                    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
                    body = {"saved_query": "orders_by_day", "parameters": {"day": day}}
                    answer = await http.post("/api/exports", json=body, headers=headers)
            except httpx.HTTPError as exc:
                found.errors.append(f"{kind}: {type(exc).__name__}: {exc}")
                continue
            found.latencies.setdefault(kind, []).append(time.perf_counter() - began)
            if answer.status_code >= 400:
                found.errors.append(f"{kind}: {answer.status_code} {answer.text[:200]}")
            elif kind == LIST:
                mine = [item["id"] for item in answer.json()["jobs"]][:20] or mine
            elif kind == CREATE:
                mine.append(answer.json()["id"])

    started = time.monotonic()
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=30) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    found.seconds = time.monotonic() - started
    return found


# -- processes -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(base: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"{base} did not come up in {seconds} s")


@contextmanager
def processes(*commands: list[str], env: dict[str, str], log: Path) -> Iterator[None]:
    with open(log, "ab") as output:
        started = [
            subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
            for command in commands
        ]
    try:
        yield
    finally:
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()


def reportexport(*args: str) -> list[str]:
    return [sys.executable, "-m", "reportexport", *args]


@dataclass
class Setup:
    backend: str
    env: dict[str, str]
    tokens: list[str]
    log: Path


def set_up(backend: str, work: Path, postgres: str) -> tuple[Setup, str | None]:
    home = work / backend
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env.update(
        REPORTEXPORT_HOME=str(home),
        REPORTEXPORT_DEMO_ROWS=str(DEMO_ROWS),
        REPORTEXPORT_MAX_ACTIVE_EXPORTS="1000000",
        REPORTEXPORT_MAX_EXPORTS_PER_MINUTE="1000000",
        REPORTEXPORT_LINK_SECRET="bench",
        REPORTEXPORT_GRACE_SECONDS="1",
    )
    created = None
    if backend == "postgresql":
        import psycopg

        created = f"reportexport_bench_api_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(postgres, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {created}".encode())
        env["REPORTEXPORT_DATABASE_URL"] = postgres.rsplit("/", 1)[0] + "/" + created
        env["REPORTEXPORT_OBJECTS_URL"] = f"file://{home / 'objects'}"
    subprocess.run(reportexport("demo"), env=env, check=True, capture_output=True)
    from reportexport.composition import Runtime
    from reportexport.core.settings import Settings

    runtime = Runtime(Settings.load(environ=env))
    people = [runtime.people.add(f"bench{i}", "user") for i in range(USERS)]
    tokens = [token for _, token in people]
    # One export made through the service, so the floor has the saved query's snapshot to copy.
    runtime.exports.create(people[0][0], "orders_by_day", {"day": "2024-03-05"})
    runtime.close()
    return Setup(backend, env, tokens, work / f"{backend}.log"), created


def database_url(setup: Setup) -> str:
    return setup.env.get(
        "REPORTEXPORT_DATABASE_URL",
        f"sqlite:///{Path(setup.env['REPORTEXPORT_HOME'])}/reportexport.db",
    )


def run_serve(setup: Setup, clients: int, seconds: float) -> Round:
    port = free_port()
    command = reportexport("serve", "--port", str(port))
    with processes(command, env=setup.env, log=setup.log):
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base)
        return asyncio.run(load(base, setup.tokens, clients, seconds, "serve"))


def run_floor(setup: Setup, clients: int, seconds: float) -> Round:
    port = free_port()
    floor = [sys.executable, __file__, "--floor", database_url(setup), "--port", str(port)]
    with processes(floor, reportexport("worker"), env=setup.env, log=setup.log):
        base = f"http://127.0.0.1:{port}"
        wait_until_up(base)
        return asyncio.run(load(base, setup.tokens, clients, seconds, "floor"))


# -- the run -------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--seconds", type=float, default=15.0)
    p.add_argument("--repetitions", type=int, default=3)
    p.add_argument("--backends", default="sqlite,postgresql")
    p.add_argument(
        "--postgres", default=os.environ.get("REPORTEXPORT_BENCH_POSTGRES", DEFAULT_POSTGRES)
    )
    p.add_argument("--floor", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.floor:
        serve_floor(args.floor, args.port)
        return 0

    work = Path(tempfile.mkdtemp(prefix="reportexport-bench-api-"))
    rounds: dict[str, list[Round]] = {}
    databases: list[str] = []
    try:
        for backend in args.backends.split(","):
            print(f"{backend}: setting up ({DEMO_ROWS:,} demo orders, {USERS} people)", flush=True)
            setup, created = set_up(backend, work, args.postgres)
            if created:
                databases.append(created)
            for repetition in range(args.repetitions):
                for side, run in (("serve", run_serve), ("floor", run_floor)):
                    found = run(setup, args.clients, args.seconds)
                    rounds.setdefault(f"{backend} {side}", []).append(found)
                    print(f"  [{repetition + 1}] {side:5} {found.requests / found.seconds:8.0f} "
                          f"req/s  p50 {found.percentile(0.5) * 1000:6.1f} ms  p99 "
                          f"{found.percentile(0.99) * 1000:6.1f} ms  errors {len(found.errors)}",
                          flush=True)  # fmt: skip
    finally:
        if databases:
            import psycopg

            with psycopg.connect(args.postgres, autocommit=True) as conn:
                for name in databases:
                    conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
        shutil.rmtree(work, ignore_errors=True)
    return report(rounds, args)


def rate(found: Round) -> float:
    return found.requests / found.seconds


def report(rounds: dict[str, list[Round]], args: argparse.Namespace) -> int:
    print()
    print(f"{args.clients} clients, {args.seconds:.0f} s per round, {args.repetitions} rounds "
          "per side, interleaved; latency as the clients saw it")  # fmt: skip
    print()
    print("| backend | server | requests/s | p50 ms | p99 ms | list p50 | view p50 | create p50 "
          "| errors |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, found in rounds.items():
        backend, side = name.split()

        def median(figure: Any, found: list[Round] = found) -> float:
            return statistics.median(figure(r) for r in found)

        def kind_p50(kind: str, r: Round) -> float:
            values = sorted(r.latencies.get(kind, []))
            return values[len(values) // 2] * 1000 if values else float("nan")

        print(
            f"| {backend} | {side} | {median(lambda r: r.requests / r.seconds):,.0f} "
            f"| {median(lambda r: r.percentile(0.5) * 1000):.1f} "
            f"| {median(lambda r: r.percentile(0.99) * 1000):.1f} "
            f"| {median(lambda r: kind_p50(LIST, r)):.1f} "
            f"| {median(lambda r: kind_p50(VIEW, r)):.1f} "
            f"| {median(lambda r: kind_p50(CREATE, r)):.1f} "
            f"| {sum(len(r.errors) for r in found)} |"
        )
    print()
    print("ratios to the floor, per round: median (lowest-highest, rounds)")
    serve_errors = 0
    for backend in dict.fromkeys(name.split()[0] for name in rounds):
        ours, floor = rounds[f"{backend} serve"], rounds[f"{backend} floor"]
        serve_errors += sum(len(r.errors) for r in ours)
        figures: list[tuple[str, Ratio]] = [
            ("floor requests/s / serve requests/s",
             ratio([rate(r) for r in floor], [rate(r) for r in ours])),
            ("serve p50 / floor p50",
             ratio([r.percentile(0.5) for r in ours], [r.percentile(0.5) for r in floor])),
            ("serve p99 / floor p99",
             ratio([r.percentile(0.99) for r in ours], [r.percentile(0.99) for r in floor])),
        ]  # fmt: skip
        for text, found in figures:
            print(f"{backend:10} {text:40} {found!s:>24}")
    for name, found in rounds.items():
        for error in sorted({e for r in found for e in r.errors})[:5]:
            print(f"  {name}: {error}")
    print(f"errors against serve: {serve_errors}" + ("" if serve_errors else " (none)"))
    return 1 if serve_errors else 0


if __name__ == "__main__":
    sys.exit(main())
