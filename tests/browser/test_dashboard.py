"""Browser flows in a real headless Chromium (Debian's package) driven by Playwright."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = Path(os.environ.get("REPORTEXPORT_SCREENSHOTS", "var/screenshots"))
EXTRA_QUERIES = """
[queries.slow]
title = "A slow export"
source = "demo"
sql = "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)"

[queries.broken]
title = "A broken export"
source = "demo"
sql = "SELECT no_such_column FROM orders"
"""


def require_chromium() -> str:
    if CHROMIUM is not None:
        return CHROMIUM
    message = "Chromium NOT FOUND (apt-get install chromium): browser tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    require_chromium()
    home = tmp_path_factory.mktemp("dashboard") / "var"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env["REPORTEXPORT_HOME"] = str(home)
    demo = subprocess.run(
        [sys.executable, "-m", "reportexport", "demo", "--rows", "5000"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    tokens = dict(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", demo.stdout))
    with open(home / "catalog.toml", "a") as catalog:
        catalog.write(EXTRA_QUERIES)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = home / "serve.log"
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "reportexport", "serve", "--port", str(port),
             "--grace-seconds", "1"],
            env=env, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/healthz").status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    yield {"base": base, "tokens": tokens}
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=60)


@pytest.fixture
def page(service: dict[str, Any]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=require_chromium(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        context = browser.new_context(base_url=service["base"])
        yield context.new_page()
        browser.close()


def sign_in(page: Any, service: dict[str, Any], who: str = "demo") -> None:
    page.goto("/sign-in")
    page.fill("input[name=token]", service["tokens"][who])
    page.click("form button")
    page.wait_for_url("**/jobs")


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def export_from_form(page: Any, query: str, **values: str) -> None:
    page.goto(f"/exports/new?saved_query={query}")
    for name, value in values.items():
        page.fill(f"[name={name}]", value)
    page.click("#export-form button")
    page.wait_for_url(re.compile(r".*/jobs/\d+$"))


def wait_for_status(page: Any, *wanted: str) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = page.text_content("#status").strip()
        if status in wanted:
            return str(status)
        time.sleep(0.3)
        page.reload()
    raise AssertionError(f"status stayed {status}")


def test_export_progress_download(page: Any, service: dict[str, Any]) -> None:
    sign_in(page, service)
    export_from_form(page, "orders_by_day", day="2024-01-05")
    assert wait_for_status(page, "succeeded") == "succeeded"
    timeline = page.text_content("#timeline")
    for state in ("queued", "running", "succeeded"):
        assert state in timeline
    assert "emit_done_webhook" in page.text_content("#effects")
    with page.expect_download() as download:
        page.click("a:has-text('Download')")
    assert download.value.suggested_filename.startswith("orders_by_day-")
    schema = page.request.get(str(page.get_attribute("#schema", "href")))
    assert schema.ok
    assert {"name": "order_id", "type": "integer"} in schema.json()["columns"]
    page.goto("/jobs")
    assert "succeeded" in page.text_content("#jobs")
    shot(page, "export-progress-download")


def test_inline_validation_names_the_parameter(page: Any, service: dict[str, Any]) -> None:
    sign_in(page, service)
    page.goto("/exports/new?saved_query=customer_orders")
    page.fill("[name=customer_id]", "999999")
    page.click("#export-form button")
    assert page.get_attribute("[name=customer_id]", "aria-invalid") == "true"
    assert "must be at most 50000" in page.text_content("[role=alert]")
    shot(page, "inline-validation")


def test_cancel_a_running_export(page: Any, service: dict[str, Any]) -> None:
    sign_in(page, service)
    export_from_form(page, "slow")
    wait_for_status(page, "running")
    page.click("button:has-text('Cancel')")
    assert wait_for_status(page, "canceled") == "canceled"
    rows = page.text_content("#timeline")
    assert "canceled by its owner" in rows
    shot(page, "cancel-running-export")


def test_the_job_page_of_a_failed_export_explains_it(page: Any, service: dict[str, Any]) -> None:
    sign_in(page, service)
    export_from_form(page, "broken")
    assert wait_for_status(page, "failed") == "failed"
    assert "query_error" in page.text_content("#failure")
    assert "no_such_column" in page.text_content("#failure")
    assert "emit_failed_webhook" in page.text_content("#effects")
    shot(page, "failed-export")


def test_the_lifecycle_page_draws_the_fixture(page: Any, service: dict[str, Any]) -> None:
    page.goto("/lifecycle")
    states = page.eval_on_selector_all("svg [data-state]", "els => els.map(e => e.dataset.state)")
    assert sorted(states) == sorted(["queued", "running", "succeeded", "failed", "canceled"])
    assert "any retry" in page.text_content("#decision-table")
    shot(page, "lifecycle")


def test_an_operator_sees_everyone_and_filters(page: Any, service: dict[str, Any]) -> None:
    sign_in(page, service, who="operator")
    page.goto("/jobs?owner=demo")
    assert "demo" in page.text_content("#jobs")
    page.goto("/jobs?status=failed")
    cells = page.eval_on_selector_all("[data-field=status]", "els => els.map(e => e.textContent)")
    assert cells
    assert set(cells) == {"failed"}
    shot(page, "operator-filters")
