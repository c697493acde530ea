"""Find a PostgreSQL server for the tests, or start a throwaway one.

Order: $REPORTEXPORT_TEST_POSTGRES_URL; the server on 127.0.0.1:5432 (user postgres); a
cluster made with initdb/pg_ctl in a temporary directory. None when nothing works.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import queue
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def _reachable(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3):
            return True
    except psycopg.Error:
        return False


def _tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _unused_port() -> int:
    """A port nothing listens on now. `postgres -p` takes no 0, so another process may take
    this one before the cluster binds it: `ThrowawayCluster` checks that the server that
    answers there is its own."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NotOurServerError(RuntimeError):
    """The throwaway cluster did not start, or another server answers on its port."""


class ThrowawayCluster:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="reportexport-pg-"))
        self.port = _unused_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.pg_ctl = _tool("pg_ctl")
        self.prefix: list[str] = []

    def start(self) -> bool:
        initdb = _tool("initdb")
        if initdb is None or self.pg_ctl is None:
            return False
        data = self.directory / "data"
        if os.geteuid() == 0:  # initdb refuses root: run the cluster as the postgres user
            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                return False
            runuser = shutil.which("runuser")
            if runuser is None:
                return False
            self.prefix = [runuser, "-u", "postgres", "--"]
            os.chown(self.directory, account.pw_uid, account.pw_gid)
        done = subprocess.run(
            [*self.prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust"],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            return False
        self.pg_ctl_run("start")
        return True

    def pg_ctl_run(self, *args: str) -> None:
        """`pg_ctl ACTION` on this cluster (as the postgres user when we are root); after a
        start or restart, the server on its port must be this cluster."""
        assert self.pg_ctl is not None
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        done = subprocess.run(
            [*self.prefix, self.pg_ctl, "-D", str(self.directory / "data"), "-o", options, "-w",
             "-l", str(self.directory / "log"), *args],
            capture_output=True,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise NotOurServerError(
                f"pg_ctl {' '.join(args)} failed on port {self.port} "
                f"({done.stderr.decode(errors='replace').strip()}):\n{self.log_tail()}"
            )
        if "start" in args or "restart" in args:
            self.check_ours()

    def check_ours(self) -> None:
        """Fails unless the server answering on this cluster's port serves its data directory."""
        data = (self.directory / "data").resolve()
        try:
            with psycopg.connect(self.url, connect_timeout=10) as conn:
                row = conn.execute("SHOW data_directory").fetchone()
        except psycopg.Error as exc:
            raise NotOurServerError(f"{self.url}: {exc}\n{self.log_tail()}") from exc
        served = Path(str(row[0])).resolve() if row else None
        if served != data:
            raise NotOurServerError(
                f"the server on port {self.port} serves {served}, not this cluster's {data}"
            )

    def log_tail(self, characters: int = 4000) -> str:
        log = self.directory / "log"
        text = log.read_text(errors="replace") if log.exists() else "(no log)"
        return f"--- {log} ---\n{text[-characters:]}"

    def restart(self) -> None:
        """A fast restart: every connection is cut, as in a failover."""
        self.pg_ctl_run("-m", "fast", "restart")

    def pause(self) -> None:
        """The server down (fast shutdown) until `resume`."""
        self.pg_ctl_run("-m", "fast", "stop")

    def resume(self) -> None:
        self.pg_ctl_run("start")

    def stop(self) -> None:
        if self.pg_ctl:
            subprocess.run(
                [
                    *self.prefix,
                    self.pg_ctl,
                    "-D",
                    str(self.directory / "data"),
                    "-m",
                    "immediate",
                    "stop",
                ],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(self.directory, ignore_errors=True)


def find_postgres() -> tuple[str | None, ThrowawayCluster | None, str]:
    """(url, cluster to stop afterwards, how it was found)."""
    explicit = os.environ.get("REPORTEXPORT_TEST_POSTGRES_URL")
    if explicit:
        return (
            (explicit, None, "REPORTEXPORT_TEST_POSTGRES_URL")
            if _reachable(explicit)
            else (
                None,
                None,
                f"REPORTEXPORT_TEST_POSTGRES_URL={explicit} is not reachable",
            )
        )
    if _reachable(DEFAULT_URL):
        return DEFAULT_URL, None, "the server on 127.0.0.1:5432"
    cluster = ThrowawayCluster()
    if cluster.start():
        return cluster.url, cluster, "a throwaway cluster started with initdb/pg_ctl"
    cluster.stop()
    return None, None, "no server on 127.0.0.1:5432 and no usable initdb/pg_ctl"


@dataclass
class PostgresServer:
    admin_url: str
    template: str
    cluster: ThrowawayCluster | None

    def url_for(self, database: str) -> str:
        base, _, _ = self.admin_url.rpartition("/")
        return f"{base}/{database}"

    def execute(self, statement: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(statement.encode())


class Clones:
    """Databases made from a template ahead of the tests that take them. Making one
    (`CREATE DATABASE ... TEMPLATE`) takes 0.4-0.5 s, most of it the server writing the copy: a
    thread keeps `ahead` of them ready, so that this happens while other tests run; and drops
    each database a test gave back, so that its teardown does not wait for that either."""

    def __init__(self, server: PostgresServer, prefix: str, ahead: int = 2) -> None:
        self.server = server
        self.prefix = prefix
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._spent: queue.Queue[str | None] = queue.Queue()
        self._room = threading.Semaphore(ahead)
        self._stopping = threading.Event()
        self._names = itertools.count()
        self._failed_drops: list[str] = []
        self._maker = threading.Thread(target=self._make, name="clones-maker", daemon=True)
        self._dropper = threading.Thread(target=self._drop, name="clones-dropper", daemon=True)
        self._maker.start()
        self._dropper.start()

    def take(self) -> str:
        """A fresh copy of the template, for one test."""
        made = self._ready.get(timeout=120)
        self._room.release()
        if isinstance(made, BaseException):
            raise RuntimeError(f"no database made from {self.server.template}") from made
        return made

    def give_back(self, name: str) -> None:
        """Drop the database `name` (one of these, or any other a test is done with)."""
        self._spent.put(name)

    def close(self) -> None:
        self._stopping.set()
        self._room.release()
        self._maker.join(timeout=120)
        while not self._ready.empty():
            made = self._ready.get()
            if isinstance(made, str):
                self._spent.put(made)
        self._spent.put(None)
        self._dropper.join(timeout=120)
        if self._failed_drops:
            raise RuntimeError("databases not dropped: " + "; ".join(self._failed_drops))

    def _make(self) -> None:
        while True:
            self._room.acquire()
            if self._stopping.is_set():
                return
            name = f"{self.prefix}_{next(self._names)}_{uuid.uuid4().hex[:6]}"
            try:
                self.server.execute(f"CREATE DATABASE {name} TEMPLATE {self.server.template}")
            except Exception as exc:  # the test that takes it says so
                self._ready.put(exc)
            else:
                self._ready.put(name)

    def _drop(self) -> None:
        while (name := self._spent.get()) is not None:
            try:
                self.server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            except Exception as exc:  # said at the end of the session; the others still go
                self._failed_drops.append(f"{name}: {exc}")


# How the session's PostgreSQL was found, for the message of a test that cannot run without it.
SEARCH: dict[str, str] = {}


def require_postgres(server: PostgresServer | None) -> PostgresServer:
    if server is not None:
        return server
    message = f"PostgreSQL NOT FOUND ({SEARCH.get('how')}): PostgreSQL tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)
