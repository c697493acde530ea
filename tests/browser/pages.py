"""What the browser tests share: `reportexport serve` over a fresh demo, a watched page in a
headless Chromium at a viewport, axe-core, screenshots, signing in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import serving_url, start_serve, stop_serve, unused_port

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


SCREENSHOTS = Path(os.environ.get("REPORTEXPORT_SCREENSHOTS", "var/screenshots"))


VIEWPORTS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "has_touch": True,
        "device_scale_factor": 2,
    },
}


EXTRA_QUERIES = """
[queries.slow]
title = "A slow export"
source = "demo"
sql = "SELECT i, md5(CAST(i AS VARCHAR)) AS h FROM range(2000000000) AS t(i)"

[queries.broken]
title = "A broken export"
source = "demo"
sql = "SELECT no_such_column FROM orders"

[queries.every_kind]
title = "Every kind of parameter"
description = "One parameter of each type, each with a default."
source = "demo"
sql = \"\"\"
SELECT :flag AS flag, :color AS color, :since AS since, :ratio AS ratio, :label AS label,
       :count AS count, :day AS day, :note AS note
\"\"\"
parameters.flag = { type = "boolean", default = true, description = "On unless unticked" }
parameters.color = { type = "enum", choices = ["red", "green", "blue"], default = "green" }
parameters.since = { type = "timestamp", default = "2024-03-05T10:00:00+01:00" }
parameters.ratio = { type = "number", default = 0.5, min = 0, max = 1 }
parameters.label = { type = "string", default = "AB", pattern = "[A-Z]+", max_length = 5000 }
parameters.count = { type = "integer", default = 7, min = 1, max = 9 }
parameters.day = { type = "date", default = "2024-02-29" }
parameters.note = { type = "string", required = false, max_length = 5000 }
"""


def require_chromium() -> str:
    if CHROMIUM is not None:
        return CHROMIUM
    message = "Chromium NOT FOUND (apt-get install chromium): browser tests cannot run"
    if os.environ.get("CI") == "true":
        pytest.fail(message + " (a failure under CI=true)")
    pytest.skip(message)


@contextmanager
def serving(
    home: Path,
    edit_catalog: Callable[[str], str] = str,
    *,
    port_told: bool = False,
    **settings: str,
) -> Iterator[dict[str, Any]]:
    """`reportexport serve` over a fresh demo in `home` (its catalog as `edit_catalog` makes
    it), with these settings (environment variables without their REPORTEXPORT_ prefix); its
    base URL, read from the line serve prints, and the first people's tokens.

    serve takes a port of its own choosing (`--port 0`). Company sign-in names its redirect URI
    (`public_url`) before serve starts, so with `port_told` serve is told a port unused now
    (`unused_port`) and `public_url` is where it serves; should another process take that port
    first, serve ends at once naming it and `serving_url` fails saying so."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTEXPORT_")}
    env |= {
        "REPORTEXPORT_HOME": str(home),
        "REPORTEXPORT_MAX_EXPORTS_PER_MINUTE": "1000",
        "REPORTEXPORT_MAX_ACTIVE_EXPORTS": "1000",
    }
    env |= {f"REPORTEXPORT_{name.upper()}": value for name, value in settings.items()}
    demo = subprocess.run(
        [sys.executable, "-m", "reportexport", "demo", "--rows", "5000"],
        env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    tokens = dict(re.findall(r"created \w+ '(\w+)'; token \(shown once\): (\S+)", demo.stdout))
    catalog = home / "catalog.toml"
    catalog.write_text(edit_catalog(catalog.read_text()) + EXTRA_QUERIES)
    port = unused_port() if port_told else 0
    if port_told:
        env["REPORTEXPORT_PUBLIC_URL"] = f"http://127.0.0.1:{port}"
    log = home / "serve.log"
    server = start_serve(["--grace-seconds", "1"], env=env, log=log, port=port)
    try:
        base = serving_url(server, log, 60)
        yield {"base": base, "tokens": tokens, "home": home, "env": env}
    finally:
        stop_serve(server, log)


def api(service: dict[str, Any], method: str, path: str, who: str = "demo", **kw: Any) -> Any:
    headers = {"Authorization": f"Bearer {service['tokens'][who]}"}
    answer = httpx.request(method, service["base"] + path, headers=headers, timeout=30, **kw)
    answer.raise_for_status()
    return answer.json()


class Watched:
    """A page and what went wrong on it: script errors, CSP violations, JSON navigations."""

    def __init__(self, page: Any, viewport: str) -> None:
        self.page = page
        self.viewport = viewport
        self.troubles: list[str] = []
        self.json_pages: list[str] = []
        page.on("pageerror", lambda exc: self.troubles.append(f"page error: {exc}"))
        page.on("console", self._console)
        page.on("response", self._response)

    def _console(self, message: Any) -> None:
        text = message.text
        if "cdn.redoc.ly" in text:  # ReDoc's own logo from its CDN, refused on purpose
            return
        # An error page opened on purpose is not a trouble; a script's failure is.
        # gate: allow forbidden-alias -- Playwright's console message type, not a job status
        failure = message.type == "error" and "Failed to load resource" not in text
        if "Content Security Policy" in text or failure:
            self.troubles.append(f"console: {text}")

    def _response(self, response: Any) -> None:
        request = response.request
        if request.is_navigation_request() and request.frame == self.page.main_frame:
            kind = response.headers.get("content-type", "")
            disposition = response.headers.get("content-disposition", "")
            if "json" in kind and "attachment" not in disposition and response.status != 302:
                self.json_pages.append(response.url)


@contextmanager
def browsing(service: dict[str, Any], viewport: str, **options: Any) -> Iterator[Watched]:
    """A page in a fresh headless Chromium context at `viewport` (with context `options`,
    e.g. timezone_id: UTC unless told, whatever the machine's zone); it may reach this server
    only. Fails on any trouble seen on it."""
    from playwright.sync_api import sync_playwright

    options.setdefault("timezone_id", "UTC")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=require_chromium(),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"],
        )  # fmt: skip
        context = browser.new_context(
            base_url=service["base"],
            permissions=["notifications"],
            **VIEWPORTS[viewport],
            **options,
        )
        context.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
        context.route("**/__axe__.js", _serve_axe)
        context.add_init_script(NOTIFICATIONS_RECORDED)
        context.set_default_timeout(30_000)
        seen = Watched(context.new_page(), viewport)
        yield seen
        browser.close()
    assert seen.troubles == []
    assert seen.json_pages == []


# Notifications are recorded rather than shown (the headless browser has no desktop).
NOTIFICATIONS_RECORDED = """
window.__notified = [];
window.Notification = class {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { window.__notified.push(title); }
};
"""


def _axe_source() -> str:
    return (resources.files("axe_playwright_python") / "axe.min.js").read_text(encoding="utf-8")


def _serve_axe(route: Any) -> None:
    route.fulfill(body=_axe_source(), content_type="application/javascript")


def accessible(page: Any) -> None:
    """axe-core on the page as it is: no serious or critical violation. Its script comes from
    this origin (a routed URL), so the page's own Content-Security-Policy stays on."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(url="/__axe__.js")
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    bad = [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]
    assert bad == [], f"{page.url}: {bad}"


def fits(page: Any) -> None:
    """Nothing makes the page wider than its viewport (long values wrap)."""
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"] + 1, f"{page.url} is {width} px wide"


def shot(seen: Watched, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    seen.page.screenshot(path=str(SCREENSHOTS / f"{name}-{seen.viewport}.png"), full_page=True)


def sign_in(page: Any, service: dict[str, Any], who: str = "demo") -> None:
    page.goto("/sign-in")
    accessible(page)
    page.fill("#token", service["tokens"][who])
    page.click("form button[type=submit]")
    page.wait_for_url("**/jobs")
    assert f"Signed in as {who}" in page.text_content("#flash")


def follow(page: Any, target: Any) -> None:
    """Click what loads another page (a link, a form's button, a confirming dialog's yes: a
    selector or a locator) and wait until that page has loaded. A click only starts the
    navigation: what is read right after it may still be the page before."""
    with page.expect_navigation():
        if isinstance(target, str):
            page.click(target)
        else:
            target.click()
