"""More than one machine's shape: two `serve` behind HAProxy, 1, 2 and 4 workers, one PostgreSQL.

What a team runs once one machine is not enough (docs/how-to/operators/run-at-scale.md), all on
loopback: two `reportexport serve` processes behind HAProxy (round robin, each checked on
/readyz: the job store answers and is current), `reportexport worker` processes, one PostgreSQL
job store (a fresh database, dropped at the end) and moto's S3 server as the object store. The
exports wait on their source (a saved query on PostgreSQL that sleeps `--sleep` seconds and
returns a few rows), so what is measured is coordination (claims, the source's cap, the API in
front), not the 2 cores.

Per worker count in `--workers` (one round each, the serves, proxy and S3 server kept across
rounds): `--clients` clients create `--jobs` exports through the proxy with the bearer tokens of
a few people, and read their lists and single jobs through it until every export has ended.
Printed per round: the drain rate (exports over first created -> last finished, from the job
store), claim latency (created -> started_at), the API's latency through the proxy, errors (any
5xx or refused connection; the bench exits 1 on any), the most exports that ran at once against
the source's cap (from started_at and finished_at, as bench/caps.py does), and the ratios to the
1-worker round and to the ideal pace: jobs x sleep / min(cap, export slots).

`serve` always runs a worker of its own (its concurrency is at least 1), so every round has the
two serves' slots besides the workers'; they run here at concurrency 1 and the table says how
many exports they ran.

    ./scripts/bench scaleout [--jobs 600] [--workers 1,2,4] [--sleep 0.2] [--cap 8]

HAProxy comes from Debian: `apt-get install -y haproxy` (the bench says so if it is missing).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
from caps import most_at_once

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
BIN = Path(sys.executable).parent
BUCKET = "bench-exports"
PEOPLE = 5
SERVES = 2
AWS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
CATALOG = """
version = 1

[sources.warehouse]
url = "{url}"
max_concurrent = {cap}

[queries.slow]
source = "warehouse"
sql = "SELECT g AS n, 'row ' || g AS label FROM generate_series(1, 5) AS g, pg_sleep({sleep})"
"""
HAPROXY = """
global
    maxconn 2000

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    option forwardfor

frontend api
    bind 127.0.0.1:{front}
    default_backend serves

backend serves
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
{servers}

frontend stats
    bind 127.0.0.1:{stats}
    stats enable
    stats uri /stats
"""
SERVING = re.compile(r"reportexport is serving on http://127\.0\.0\.1:(\d+)")
MOTO_LISTENING = re.compile(r"Running on http://127\.0\.0\.1:(\d+)")
CREATE, LIST, VIEW = "create", "list", "view"


# -- processes, each in a group of its own so that nothing outlives the bench -------------------


class Processes:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.started: list[tuple[str, subprocess.Popen[bytes]]] = []

    def start(self, name: str, command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with open(self.log(name), "wb") as out:
            process = subprocess.Popen(
                command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.started.append((name, process))
        return process

    def log(self, name: str) -> Path:
        return self.work / f"{name}.log"

    def wait_for(self, name: str, process: subprocess.Popen[bytes], pattern: re.Pattern[str],
                 seconds: float = 120) -> int:  # fmt: skip
        """The port a process names in its log, once something answers there."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{name} ended ({process.returncode}); see {self.log(name)}")
            found = pattern.search(self.log(name).read_text(errors="replace"))
            if found and answers(int(found.group(1))):
                return int(found.group(1))
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not start in {seconds:.0f} s; see {self.log(name)}")

    def stop(self, *processes: subprocess.Popen[bytes], seconds: float = 30) -> None:
        """SIGTERM to each one's group, SIGKILL to what is left after `seconds`."""
        chosen = [p for _, p in self.started if p in processes] if processes else [
            p for _, p in reversed(self.started)
        ]  # fmt: skip
        for process in chosen:
            signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + seconds
        for process in chosen:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(process, signal.SIGKILL)  # not reaped yet: the group id is still its
                process.wait()
        self.started = [(n, p) for n, p in self.started if p not in chosen]


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A port free now; HAProxy needs it named in its configuration before it starts."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reportexport(*args: str) -> list[str]:
    return [sys.executable, "-m", "reportexport", *args]


# -- the load through the proxy -------------------------------------------------------------------


@dataclass
class Load:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # 5xx, refused or cut connections
    refusals: list[str] = field(default_factory=list)  # 4xx: the bench asked wrongly
    created: list[int] = field(default_factory=list)
    creating_seconds: float = 0.0

    @property
    def all_latencies(self) -> list[float]:
        return sorted(value for found in self.latencies.values() for value in found)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


async def load(base: str, tokens: list[str], args: argparse.Namespace, store: str) -> Load:
    """Clients create `args.jobs` exports between them, and read lists and jobs (pausing
    `args.read_pause` s between reads) until the job store says every one has ended."""
    found = Load()
    to_create = args.jobs
    ended = asyncio.Event()
    began = time.monotonic()
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)

    async def client(index: int, http: httpx.AsyncClient) -> None:
        nonlocal to_create
        headers = {"Authorization": f"Bearer {tokens[index % len(tokens)]}"}
        rng = random.Random(index)
        mine: list[int] = []
        while not ended.is_set():
            if to_create > 0:
                to_create -= 1
                kind = CREATE
            else:
                kind = VIEW if mine and rng.random() < 0.4 else LIST
            started = time.perf_counter()
            try:
                if kind == CREATE:
                    body = {"saved_query": "slow", "parameters": {}}
                    answer = await http.post("/api/exports", json=body, headers=headers)
                elif kind == VIEW:
                    answer = await http.get(f"/api/exports/{rng.choice(mine)}", headers=headers)
                else:
                    answer = await http.get("/api/exports", params={"limit": 20}, headers=headers)
            except httpx.TransportError as exc:
                found.failures.append(f"{kind}: {type(exc).__name__}: {exc}")
                if kind == CREATE:
                    to_create += 1
                await asyncio.sleep(args.read_pause)
                continue
            found.latencies.setdefault(kind, []).append(time.perf_counter() - started)
            if answer.status_code >= 500:
                found.failures.append(f"{kind}: {answer.status_code} {answer.text[:200]}")
            elif answer.status_code >= 400:
                found.refusals.append(f"{kind}: {answer.status_code} {answer.text[:200]}")
            elif kind == CREATE:
                mine.append(int(answer.json()["id"]))
                found.created.append(mine[-1])
                if len(found.created) == args.jobs:
                    found.creating_seconds = time.monotonic() - began
                continue
            if answer.status_code >= 400 and kind == CREATE:
                to_create += 1
            await asyncio.sleep(args.read_pause)

    async def watch() -> None:
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            await asyncio.sleep(0.25)
            if len(found.created) < args.jobs:
                continue
            if await asyncio.to_thread(unfinished, store, found.created) == 0:
                ended.set()
                return
        ended.set()
        found.failures.append(f"the exports had not all ended after {args.timeout:.0f} s")

    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:
        await asyncio.gather(watch(), *(client(i, http) for i in range(args.clients)))
    return found


def unfinished(store: str, ids: list[int]) -> int:
    with psycopg.connect(store) as conn:
        row = conn.execute(
            "SELECT count(*) FROM jobs WHERE id = ANY(%s) AND finished_at IS NULL", (ids,)
        ).fetchone()
    return int(row[0]) if row else len(ids)


# -- one round: N workers --------------------------------------------------------------------------


@dataclass
class Round:
    workers: int
    slots: int
    load: Load
    jobs: list[dict[str, Any]]
    by_serve: int

    @property
    def ended(self) -> list[dict[str, Any]]:
        """The exports that started and ended (all of them, unless the round timed out)."""
        return [job for job in self.jobs if job["started_at"] and job["finished_at"]]

    def drain_seconds(self) -> float:
        if not self.ended:
            return float("nan")
        first = min(job["created_at"] for job in self.ended)
        last = max(job["finished_at"] for job in self.ended)
        return float((last - first).total_seconds())

    def rate(self) -> float:
        return len(self.ended) / self.drain_seconds() if self.ended else float("nan")

    def claim_latencies(self) -> list[float]:
        return [(job["started_at"] - job["created_at"]).total_seconds() for job in self.ended]

    def peak(self) -> int:
        return most_at_once(
            [(job["started_at"].timestamp(), job["finished_at"].timestamp()) for job in self.ended]
        )

    def statuses(self) -> set[str]:
        return {job["status"] for job in self.jobs}


def run_round(
    count: int, procs: Processes, env: dict[str, str], base: str, tokens: list[str],
    store: str, args: argparse.Namespace,
) -> Round:  # fmt: skip
    worker_env = {
        **env,
        "REPORTEXPORT_CONCURRENCY": str(args.concurrency),
        "REPORTEXPORT_DB_POOL_SIZE": "4",
    }
    workers = [
        procs.start(f"worker-{count}-{i}", reportexport("worker"), worker_env) for i in range(count)
    ]
    try:
        deadline = time.monotonic() + 120
        pids = [w.pid for w in workers]
        while heartbeating(store, pids) < count:
            for i, worker in enumerate(workers):
                if worker.poll() is not None:
                    raise RuntimeError(f"worker-{count}-{i} ended; see its log")
            if time.monotonic() > deadline:
                raise RuntimeError("the workers did not all start")
            time.sleep(0.2)
        found = asyncio.run(load(base, tokens, args, store))
    finally:
        procs.stop(*workers, seconds=60)
    with psycopg.connect(store) as conn, conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        jobs = cur.execute(
            "SELECT id, status, created_at, started_at, finished_at FROM jobs WHERE id = ANY(%s)",
            (found.created,),
        ).fetchall()
        # A claim's history row names the worker as host-pid; a serve's heartbeat says its kind.
        row = conn.execute(
            "SELECT count(DISTINCT h.job_id) FROM job_history h JOIN heartbeats b "
            "ON h.worker = b.host || '-' || b.pid AND b.kind = 'serve' "
            "WHERE h.job_id = ANY(%s) AND h.to_status = 'running'",
            (found.created,),
        ).fetchone()
    slots = count * args.concurrency + SERVES * args.serve_concurrency
    return Round(count, slots, found, jobs, int(row[0]) if row else 0)


def heartbeating(store: str, pids: list[int]) -> int:
    with psycopg.connect(store) as conn:
        row = conn.execute(
            "SELECT count(*) FROM heartbeats WHERE pid = ANY(%s) AND stopped_at IS NULL", (pids,)
        ).fetchone()
    return int(row[0]) if row else 0


# -- the deployment --------------------------------------------------------------------------------


@contextmanager
def deployment(args: argparse.Namespace, work: Path) -> Iterator[tuple[Processes, str, str]]:
    """Yields the processes, the job store's URL and the proxy's base URL; stops everything
    and drops the database on the way out, whatever happened."""
    name = f"bench_scaleout_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    store = args.postgres.rsplit("/", 1)[0] + f"/{name}"
    procs = Processes(work)
    try:
        yield procs, store, name
    finally:
        procs.stop(seconds=30)
        with psycopg.connect(args.postgres, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


def set_up(args: argparse.Namespace, work: Path, procs: Processes, store: str) -> tuple[
    dict[str, str], str, str, list[str]
]:  # fmt: skip
    """Starts the S3 server, the two serves and HAProxy; the environment, the proxy's URL, its
    statistics' URL and the people's tokens."""
    moto = procs.start("moto", [str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", "0"],
                       {**os.environ, **AWS})  # fmt: skip
    endpoint = f"http://127.0.0.1:{procs.wait_for('moto', moto, MOTO_LISTENING)}"
    import boto3

    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing",
                 ).create_bucket(Bucket=BUCKET)  # fmt: skip

    catalog = work / "catalog.toml"
    catalog.write_text(CATALOG.format(url=store, cap=args.cap, sleep=args.sleep))
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env.update(AWS)
    env.update(
        REPORTEXPORT_DATABASE_URL=store,
        REPORTEXPORT_CATALOG=str(catalog),
        REPORTEXPORT_OBJECTS_URL=f"s3://{BUCKET}/exports?endpoint_url={endpoint}",
        REPORTEXPORT_HOME=str(work / "var"),
        REPORTEXPORT_LINK_SECRET="bench",
        REPORTEXPORT_MAX_ACTIVE_EXPORTS="1000000",
        REPORTEXPORT_MAX_EXPORTS_PER_MINUTE="1000000",
        REPORTEXPORT_RUN_SCHEDULES="false",
        REPORTEXPORT_GRACE_SECONDS="10",
        REPORTEXPORT_TRUST_FORWARDED_HEADERS="true",
    )
    subprocess.run(reportexport("db", "upgrade"), env=env, check=True, capture_output=True)
    from reportexport.composition import Runtime
    from reportexport.core.settings import Settings

    runtime = Runtime(Settings.load(environ=env))
    try:
        tokens = [runtime.people.add(f"bench{i}", "user")[1] for i in range(PEOPLE)]
    finally:
        runtime.close()

    serve_env = {**env, "REPORTEXPORT_CONCURRENCY": str(args.serve_concurrency)}
    ports = []
    for i in range(SERVES):
        serve = procs.start(f"serve-{i}", reportexport("serve", "--port", "0"), serve_env)
        ports.append(procs.wait_for(f"serve-{i}", serve, SERVING))
    front, stats = free_port(), free_port()
    servers = "\n".join(
        f"    server serve{i} 127.0.0.1:{port} check inter 2s fall 2 rise 1"
        for i, port in enumerate(ports)
    )
    config = work / "haproxy.cfg"
    config.write_text(HAPROXY.format(front=front, stats=stats, servers=servers))
    haproxy = procs.start("haproxy", [args.haproxy, "-db", "-f", str(config)], env)
    base = f"http://127.0.0.1:{front}"
    deadline = time.monotonic() + 60
    while not healthy_behind(f"http://127.0.0.1:{stats}/stats;csv"):
        if haproxy.poll() is not None:
            raise RuntimeError(f"haproxy ended; see {procs.log('haproxy')}")
        if time.monotonic() > deadline:
            raise RuntimeError("HAProxy did not see both serves up within 60 s")
        time.sleep(0.3)
    return env, base, f"http://127.0.0.1:{stats}/stats;csv", tokens


def backend_rows(stats_url: str) -> list[dict[str, str]]:
    text = httpx.get(stats_url, timeout=5).text
    lines = text.lstrip("# ").splitlines()
    header = lines[0].split(",")
    return [
        dict(zip(header, line.split(","), strict=False))
        for line in lines[1:]
        if line.startswith("serves,serve")
    ]


def healthy_behind(stats_url: str) -> bool:
    """HAProxy's last check of every serve got a 200 from /readyz."""
    try:
        rows = backend_rows(stats_url)
        return len(rows) == SERVES and all(row["check_code"] == "200" for row in rows)
    except (httpx.TransportError, IndexError, KeyError):
        return False


# -- the run --------------------------------------------------------------------------------------


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--jobs", type=int, default=600, help="exports per round")
    p.add_argument("--workers", default="1,2,4", help="worker processes, one round each")
    p.add_argument("--sleep", type=float, default=0.2, help="seconds each export waits")
    p.add_argument("--cap", type=int, default=8, help="the source's max_concurrent")
    p.add_argument("--concurrency", type=int, default=2, help="exports a worker runs at once")
    p.add_argument("--serve-concurrency", type=int, default=1, help="each serve's own worker")
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--read-pause", type=float, default=0.1, help="seconds between reads")
    p.add_argument("--timeout", type=float, default=180, help="longest round, seconds")
    p.add_argument("--haproxy", default=shutil.which("haproxy") or "/usr/sbin/haproxy")
    p.add_argument(
        "--postgres", default=os.environ.get("REPORTEXPORT_BENCH_POSTGRES", DEFAULT_POSTGRES)
    )
    p.add_argument("--keep", action="store_true", help="keep the logs' folder")
    args = p.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    if not Path(args.haproxy).exists():
        print("haproxy is missing: apt-get install -y haproxy (Debian's), then run again")
        return 2

    # Ctrl-C and SIGTERM both unwind through the finally blocks below (SIGINT too when a
    # shell started the bench in the background, which would otherwise have it ignored).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(tempfile.mkdtemp(prefix="reportexport-bench-scaleout-"))
    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    rounds: list[Round] = []
    try:
        with deployment(args, work) as (procs, store, name):
            print(f"setting up: database {name}, moto's S3 server, {SERVES} serves, HAProxy",
                  flush=True)  # fmt: skip
            env, base, stats_url, tokens = set_up(args, work, procs, store)
            before = {row["svname"]: int(row["stot"]) for row in backend_rows(stats_url)}
            for count in counts:
                found = run_round(count, procs, env, base, tokens, store, args)
                rounds.append(found)
                print(f"  {count} worker(s): {len(found.jobs)} exports in "
                      f"{found.drain_seconds():.1f} s ({found.rate():.1f}/s), created in "
                      f"{found.load.creating_seconds:.1f} s, most at once {found.peak()}, "
                      f"errors {len(found.load.failures)}", flush=True)  # fmt: skip
            after = {row["svname"]: int(row["stot"]) for row in backend_rows(stats_url)}
    finally:
        if args.keep:
            print(f"logs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)
    shares = {server: after[server] - before.get(server, 0) for server in after}
    return report(rounds, args, shares)


def report(rounds: list[Round], args: argparse.Namespace, shares: dict[str, int]) -> int:
    one = next((r for r in rounds if r.workers == 1), rounds[0])
    print()
    print(f"{args.jobs} exports per round, each waiting {args.sleep} s on its source (cap "
          f"{args.cap}); workers at concurrency {args.concurrency}, {SERVES} serves at "
          f"{args.serve_concurrency} behind HAProxy; {args.clients} clients")  # fmt: skip
    print()
    print("| workers | export slots | exports/s | ideal/s | seconds / ideal | vs 1 worker "
          "| claim p50 / p99 s | API p50 / p99 ms | requests | errors | most at once / cap "
          "| run by serves |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    broken = []
    for r in rounds:
        ideal_rate = min(args.cap, r.slots) / args.sleep  # exports per second at the ideal pace
        ideal_seconds = max(1, len(r.ended)) / ideal_rate
        claims = r.claim_latencies()
        api = r.load.all_latencies
        peak = r.peak()
        if peak > args.cap:
            broken.append(f"{r.workers} worker(s): {peak} at once, cap {args.cap}")
        if r.statuses() != {"succeeded"} or len(r.jobs) != args.jobs:
            broken.append(f"{r.workers} worker(s): {len(r.jobs)} exports, "
                          f"{', '.join(sorted(r.statuses()))}")  # fmt: skip
        print(
            f"| {r.workers} | {r.slots} | {r.rate():.1f} | {ideal_rate:.1f} "
            f"| {r.drain_seconds() / ideal_seconds:.2f} | {r.rate() / one.rate():.2f} "
            f"| {percentile(claims, 0.5):.2f} / {percentile(claims, 0.99):.2f} "
            f"| {percentile(api, 0.5) * 1000:.0f} / {percentile(api, 0.99) * 1000:.0f} "
            f"| {len(api)} | {len(r.load.failures)} | {peak} / {args.cap} "
            f"| {r.by_serve} |"
        )
    print()
    print("API latency by request, p50 / p99 ms:")
    for r in rounds:
        parts = [
            f"{kind} {percentile(values, 0.5) * 1000:.0f} / {percentile(values, 0.99) * 1000:.0f}"
            f" (n={len(values)})"
            for kind, values in sorted(r.load.latencies.items())
        ]
        print(f"  {r.workers} worker(s): " + ", ".join(parts))
    print("requests per serve, through HAProxy: "
          + ", ".join(f"{server} {n}" for server, n in sorted(shares.items())))  # fmt: skip
    failures = [f for r in rounds for f in r.load.failures]
    refusals = [f for r in rounds for f in r.load.refusals]
    for text in sorted(set(failures))[:5] + sorted(set(refusals))[:5]:
        print(f"  {text}")
    print(f"errors (5xx, refused or cut connections): {len(failures)}; 4xx: {len(refusals)}")
    print("cap held in every round" if not broken else "BROKEN: " + "; ".join(broken))
    return 1 if failures or refusals or broken else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted: every process stopped and the database dropped", file=sys.stderr)
        sys.exit(130)
