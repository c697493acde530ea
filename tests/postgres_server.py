"""Find a PostgreSQL server for the tests, or start a throwaway one.

Order: $REPORTEXPORT_TEST_POSTGRES_URL; the server on 127.0.0.1:5432 (user postgres); a
cluster made with initdb/pg_ctl in a temporary directory. None when nothing works.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import psycopg

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayCluster:
    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="reportexport-pg-"))
        self.port = _free_port()
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
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        done = subprocess.run(
            [*self.prefix, self.pg_ctl, "-D", str(data), "-o", options, "-w",
             "-l", str(self.directory / "log"), "start"],
            capture_output=True,
            check=False,
        )  # fmt: skip
        return done.returncode == 0 and _reachable(self.url)

    def pg_ctl_run(self, *args: str) -> None:
        """`pg_ctl ACTION` on this cluster (as the postgres user when we are root)."""
        assert self.pg_ctl is not None
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            [*self.prefix, self.pg_ctl, "-D", str(self.directory / "data"), "-o", options, "-w",
             "-l", str(self.directory / "log"), *args],
            capture_output=True,
            check=True,
        )  # fmt: skip

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
