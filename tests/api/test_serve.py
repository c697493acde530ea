"""`reportexport serve` on a fresh data directory: demo, first people, API, worker, downloads."""

from __future__ import annotations

import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from reportexport.composition import SetupError
from reportexport.entrypoints.serve import listen, listening_url
from tests.helpers import serving_url, start_serve, tail, wait_for


def test_serve_starts_the_whole_product_on_the_embedded_default(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    env = {**os.environ, "REPORTEXPORT_HOME": str(tmp_path / "var")}
    env.pop("REPORTEXPORT_DATABASE_URL", None)
    env.pop("REPORTEXPORT_CATALOG", None)
    env.pop("REPORTEXPORT_OBJECTS_URL", None)
    server = start_serve(
        ["--demo-rows", "5000", "--grace-seconds", "1"], env=env, log=log, cwd=tmp_path
    )
    try:
        base = serving_url(server, log)
        text = log.read_text()
        tokens = dict(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", text))
        assert set(tokens) == {"operator", "demo"}, text
        headers = {"Authorization": f"Bearer {tokens['demo']}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            assert client.get("/readyz").json() == {"healthy": True, "degraded": []}
            created = client.post(
                "/api/exports",
                json={"saved_query": "orders_by_day", "parameters": {"day": "2024-01-05"}},
            )
            assert created.status_code == 201, created.text
            job_id = created.json()["id"]
            job = wait_for(
                lambda: finished(client.get(f"/api/exports/{job_id}").json()["job"]),
                120,
                f"export {job_id} to finish",
                detail=lambda: tail(log),
            )
            assert job["status"] == "succeeded", job
            link = client.get(f"/api/exports/{job_id}/download")
            assert link.status_code == 302
            csv_file = client.get(link.headers["location"])
            assert csv_file.status_code == 200
            assert csv_file.text.startswith("order_id,ordered_at,customer,")

        # The command line over the same API.
        cli_env = {**env, "REPORTEXPORT_SERVER": base, "REPORTEXPORT_TOKEN": tokens["demo"]}
        target = tmp_path / "cli.csv"
        exported = subprocess.run(
            [sys.executable, "-m", "reportexport", "export", "orders_by_day",
             "--param", "day=2024-01-06", "-o", str(target)],
            env=cli_env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert exported.returncode == 0, exported.stderr
        assert "succeeded" in exported.stderr
        assert target.read_text().startswith("order_id,ordered_at,customer,")
        cli = [sys.executable, "-m", "reportexport"]
        listed = subprocess.run(
            [*cli, "jobs", "list"], env=cli_env, capture_output=True, text=True, check=False
        )
        assert listed.returncode == 0
        assert "orders_by_day" in listed.stdout
        queries = subprocess.run(
            [*cli, "queries", "list"], env=cli_env, capture_output=True, text=True, check=False
        )
        assert "orders_by_day            Orders of one day  (day:date)" in queries.stdout
        shown = subprocess.run(
            [*cli, "jobs", "show", str(job_id)],
            env=cli_env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert "queued -> running" in shown.stdout
        refused = subprocess.run(
            [sys.executable, "-m", "reportexport", "jobs", "cancel", str(job_id)],
            env=cli_env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.returncode == 1
        assert "HTTP 409" in refused.stderr
        bad = subprocess.run(
            [sys.executable, "-m", "reportexport", "export", "orders_by_day", "--param", "day=x"],
            env=cli_env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert bad.returncode == 2
        assert "parameter 'day': 'x' is not a date" in bad.stderr
        early = subprocess.run(
            [*cli, "export", "orders_by_day", "--param", "day=2019-01-01"],
            env=cli_env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert early.returncode == 2
        assert "HTTP 422" in early.stderr
        assert "must be at least 2024-01-01" in early.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=60) == 0, log.read_text()
    assert "token (shown once)" in log.read_text()
    # Its worker and effects runner stopped cleanly, and their heartbeats say so (the local
    # export's own worker wrote none).
    with sqlite3.connect(tmp_path / "var" / "reportexport.db") as conn:
        beats = conn.execute("SELECT kind, stopped_at IS NOT NULL FROM heartbeats").fetchall()
    assert sorted(beats) == [("effects", 1), ("serve", 1)]


def test_serve_on_a_busy_port_says_which_and_how_to_pick_another(tmp_path: Path) -> None:
    """The port is taken before anything is built or said: a busy one ends serve with exit 1,
    one message and no traceback, nothing built and no token printed."""
    env = {**os.environ, "REPORTEXPORT_HOME": str(tmp_path / "var")}
    for name in ("DATABASE_URL", "CATALOG", "OBJECTS_URL", "PORT", "HOST"):
        env.pop(f"REPORTEXPORT_{name}", None)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "reportexport", "serve", "--port", str(port)],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "Traceback" not in said
    assert "serving" not in said
    assert "token" not in said
    assert done.stderr.strip().splitlines() == [
        f"reportexport serve: port {port} on 127.0.0.1 is in use (another reportexport serve?): "
        "stop what listens there, or pick another port with `./scripts/run --port N` "
        "(`reportexport serve --port N`, or $REPORTEXPORT_PORT)"
    ]
    assert not (tmp_path / "var" / "demo.duckdb").exists()


def finished(job: dict[str, Any]) -> dict[str, Any] | None:
    return job if job["finished_at"] is not None else None


def test_serve_listens_on_a_port_of_its_choosing_and_names_a_port_in_use() -> None:
    with listen("127.0.0.1", 0) as listener:
        url = listening_url(listener)
        port = int(url.rsplit(":", 1)[1])
        assert url == f"http://127.0.0.1:{port}"
        assert port > 0
        with pytest.raises(SetupError, match=rf"^port {port} on 127\.0\.0\.1 is in use "):
            listen("127.0.0.1", port)
