"""`reportexport serve` on a fresh data directory: demo, first people, API, worker, downloads."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


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
    raise AssertionError(f"{base} did not come up in {seconds} s")


def test_serve_starts_the_whole_product_on_the_embedded_default(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "REPORTEXPORT_HOME": str(tmp_path / "var")}
    env.pop("REPORTEXPORT_DATABASE_URL", None)
    env.pop("REPORTEXPORT_CATALOG", None)
    env.pop("REPORTEXPORT_OBJECTS_URL", None)
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "reportexport", "serve", "--port", str(port),
             "--demo-rows", "5000", "--grace-seconds", "1"],
            env=env, stdout=output, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
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
            while client.get(f"/api/exports/{job_id}").json()["job"]["finished_at"] is None:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            job = client.get(f"/api/exports/{job_id}").json()["job"]
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
