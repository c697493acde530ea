"""Every dashboard form and every query parameter, sent hostile values: nothing answers 500 or
logs a traceback, and a form's refusal is a page in the dashboard's style naming the field.

The forms are found as a browser finds them: by crawling the dashboard's pages (as an operator,
and signed out) and reading each `<form>` (fields tied to it by `form=` and buttons with their
own `formaction` included); every POST route of the dashboard must be reached by a form found,
so a new form is fuzzed the day it is written. The query parameters are those the application's
GET routes declare, the API's included.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote_from_bytes, urlsplit

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from reportexport.core.links import sign_unsubscribe
from reportexport.objects import ObjectStore
from reportexport.services.exports import Acting
from reportexport.store import Database
from reportexport.web.dashboard.session import CSRF_FIELD
from reportexport.web.problems import routes_of
from tests.dashboard_session import Signed, sign_in
from tests.helpers import API_QUERIES, DAILY, catalog_for, given_up, runtime_for

EVERY_KIND = {
    "source": "demo",
    "title": "Every kind of parameter",
    "sql": "SELECT :flag AS flag, :color AS color, :since AS since, :ratio AS ratio, "
    ":label AS label, :count AS count, :day AS day, :note AS note",
    "parameters": {
        "flag": {"type": "boolean", "default": True},
        "color": {"type": "enum", "choices": ["red", "green"], "default": "green"},
        "since": {"type": "timestamp", "default": "2024-03-05T10:00:00+01:00"},
        "ratio": {"type": "number", "default": 0.5, "min": 0, "max": 1},
        "label": {"type": "string", "default": "AB", "pattern": "[A-Z]+", "max_length": 50},
        "count": {"type": "integer", "default": 7, "min": 1, "max": 9},
        "day": {"type": "date", "default": "2024-02-29"},
        "note": {"type": "string", "required": False, "max_length": 5000},
    },
}
HOSTILE: dict[str, bytes] = {
    "undecodable byte": b"\xff",
    "truncated UTF-8": b"ab\xc3",
    "encoded surrogate": b"\xed\xa0\x80",
    "overlong UTF-8": b"\xc0\xaf",
    "empty": b"",
    "spaces": b"   ",
    "NUL": b"a\x00b",
    "control characters": b"\x1b[31m\r\n\t\x7f\x85",
    "bidi override": "evil\u202e txt".encode(),
    "astral": "\U0001f600".encode(),
    "very long": b"x" * 100_000,
    "very long, multibyte": ("\u00e9" * 30_000).encode(),
    "markup": b'"><script>alert(1)</script>',
    "huge number": b"-99999999999999999999999999",
    "NaN": b"NaN",
    "escaped byte": b"%FF",
    "path": b"../../etc/passwd",
}
# The fields that prove a form came from this site: a refusal says the form expired.
PROOFS = (CSRF_FIELD, "form_token")
HTML = "text/html; charset=utf-8"
# What fills a field the rendered form leaves empty, so the rest of the form is valid.
FILL_BY_TYPE = {
    "url": "https://hooks.example.com/fuzz",
    "date": "2024-01-05",
    "datetime-local": "2024-01-05T10:00",
    "number": "1",
}


@dataclass
class Control:
    name: str
    value: str
    kind: str = "text"  # an input's type, or select / textarea
    control_id: str = ""
    required: bool = False
    checked: bool = True  # sent by the untouched form (an unticked box is not)
    options: list[str] = field(default_factory=list)


@dataclass
class Form:
    page: str
    action: str
    controls: list[Control]
    labels: dict[str, str]  # a control's id -> its label's text

    @property
    def names(self) -> frozenset[str]:
        return frozenset(c.name for c in self.controls)

    def same_as(self, other: Form) -> bool:
        return (self.action, self.names) == (other.action, other.names)

    def sent(self, token: str, new_name: str) -> list[tuple[str, str]]:
        """What a person sends who fills what the form leaves empty (`token` in a password
        field, `new_name` in a text field that must not repeat)."""
        return [(c.name, _filled(c, token, new_name)) for c in self.controls if c.checked]


def _filled(control: Control, token: str, new_name: str) -> str:
    if control.value or not control.required:
        return control.value
    if control.kind == "select":
        return next(option for option in control.options if option)
    if control.kind == "password":
        return token
    return FILL_BY_TYPE.get(control.kind, new_name)


class _Forms(HTMLParser):
    """The forms of a page, the links it holds, and the text of its labels."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.page = page
        self.forms: dict[str, Form] = {}
        self.extra_actions: list[tuple[str, str]] = []  # (form key, formaction)
        self.links: list[str] = []
        self.labels: dict[str, str] = {}
        self._form: str | None = None
        self._select: Control | None = None
        self._option: str | None = None
        self._label: tuple[str, list[str]] | None = None
        self._count = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "a" and a.get("href", "").startswith("/"):
            self.links.append(a["href"])
        elif tag == "form" and a.get("method", "get").lower() == "post":
            self._count += 1
            key = a.get("id") or f"#{self._count}"
            self.forms[key] = Form(self.page, a.get("action", ""), [], self.labels)
            self._form = key
        elif tag == "label":
            self._label = (a.get("for", ""), [])
        elif tag in ("input", "select", "textarea", "button"):
            owner = a.get("form") or self._form
            if owner is None or owner not in self.forms:
                return
            if tag == "button" or a.get("type") == "submit":
                if a.get("formaction"):
                    self.extra_actions.append((owner, a["formaction"]))
                return
            control = Control(
                name=a.get("name", ""),
                value=a.get("value", ""),
                kind=tag if tag != "input" else a.get("type", "text").lower(),
                control_id=a.get("id", ""),
                required="required" in a,
                checked=a.get("type") not in ("checkbox", "radio") or "checked" in a,
            )
            if control.kind == "checkbox" and not control.value:
                control.value = "on"
            if control.name:
                self.forms[owner].controls.append(control)
            if tag == "select":
                self._select = control
                control.checked = True
        elif tag == "option" and self._select is not None:
            self._option = a.get("value", "")
            self._select.options.append(self._option)
            if "selected" in a or len(self._select.options) == 1:
                self._select.value = self._option

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self._label[1].append(data)

    def targets(self) -> list[Form]:
        """The page's forms, once more for each button with a target of its own."""
        return [
            *self.forms.values(),
            *(replace(self.forms[key], action=action) for key, action in self.extra_actions),
        ]

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None
        elif tag == "label" and self._label is not None:
            target, words = self._label
            if target:
                self.labels[target] = " ".join("".join(words).replace("*", "").split())
            self._label = None


class _Problems(HTMLParser):
    """The text of a page's refusals (alerts, problems beside fields) and the names of the
    controls marked invalid."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.invalid: set[str] = set()
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if a.get("aria-invalid") == "true":
            self.invalid.add(a.get("name", ""))
        if self._depth:
            self._depth += tag not in ("input", "br", "img")
        elif a.get("role") == "alert" or "why" in a.get("class", "").split():
            self._depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.text.append(data)


def names_the_field(answer: Any, form: Form, name: str) -> bool:
    """Whether a refusal marks the field, or its words say which field it is."""
    found = _Problems()
    found.feed(answer.text)
    if name in found.invalid:
        return True
    said = " ".join(found.text).lower()
    words = {name, name.replace("-", " ").replace("_", " ")}
    words |= {w.removeprefix("schedule ") for w in words}
    for control in form.controls:
        if control.name == name and control.control_id in form.labels:
            words.add(form.labels[control.control_id].lower().removesuffix(" (optional)"))
    return any(word.lower() in said for word in words if word)


# An undecodable byte as Python keeps it (U+DC80 to U+DCFF), written as its escape, or any
# surrogate as itself: a page shows neither, it says which field is not valid UTF-8.
_SURROGATE = re.compile(r"\\+udc[89a-f][0-9a-f]|[\ud800-\udfff]", re.IGNORECASE)


def surrogate_shown(page: str) -> str:
    """The first surrogate a page shows (as an escape or as itself), in context, or ""."""
    text = unescape(page)
    found = _SURROGATE.search(text)
    return "" if found is None else ascii(text[max(found.start() - 80, 0) : found.end() + 20])


def body(pairs: list[tuple[str, bytes]]) -> bytes:
    return b"&".join(
        quote_from_bytes(k.encode()).encode() + b"=" + quote_from_bytes(v).encode()
        for k, v in pairs
    )


@pytest.fixture
def site(jobs_db: Database, local_objects: ObjectStore, sources_dir: Path) -> Iterator[Any]:
    """A dashboard with something on every page: exports queued, canceled and failed with a
    given-up webhook, a schedule firing and one paused, a webhook endpoint, people, a group."""
    catalog = catalog_for(
        sources_dir, None, {**API_QUERIES, "orders_of_day": DAILY, "every_kind": EVERY_KIND}
    )
    tokens = {
        name: jobs_db.users.add_user(name, role)[1]
        for name, role in (("alice", "user"), ("olga", "operator"))
    }
    plenty = 1_000_000  # no limit refuses a fuzzer's thousand forms for their number
    runtime = runtime_for(jobs_db, catalog, local_objects, max_active_exports=plenty,
                          max_exports_per_minute=plenty, sign_in_failures_per_minute=plenty,
                          max_schedules=plenty)  # fmt: skip
    olga = Acting(name="olga", role="operator")
    runtime.people.set_email("olga", "olga@example.com", by=olga)  # the "E-mail me" forms show
    exports = runtime.exports
    exports.create(olga, "products", {"category": "toys"})
    # A canceled export of each query: its page links to that query's form.
    for name, parameters in (("products", {"category": "books"}), ("every_kind", {}),
                             ("orders_of_day", {"day": "2024-01-05"})):  # fmt: skip
        stopped = exports.create(olga, name, parameters).job.id
        exports.cancel(olga, stopped)
    given_up({"db": jobs_db, "runtime": runtime})
    exports.create(olga, "products", {"category": "toys"})  # queued: "E-mail me when it ends"
    schedules = []
    for paused in (False, True):
        made = runtime.schedules.create(
            olga, "orders_of_day", {"day": {"relative": "yesterday"}}, cron="0 8 * * *",
            time_zone="UTC",
        )  # fmt: skip
        schedules.append(made.schedule.id)
        if paused:
            runtime.schedules.pause(olga, made.schedule.id)
    runtime.webhooks.add(olga, "https://hooks.example.com/exports", owner="alice")
    runtime.access.create_group(olga, "finance")
    runtime.access.add_member(olga, "finance", "alice")
    # Alice has an e-mail whenever an export ends: the link that stops it opens a form.
    runtime.people.set_email("alice", "alice@example.com", by=olga)
    runtime.people.set_notify_always("alice", True, by=olga)
    runtime.schedules.add_recipient(olga, schedules[0], "alice")  # a Remove button to press
    # Chat channels: one on the schedule (its Remove button), one offered to add.
    for name in ("#sales", "#finance"):
        channel = jobs_db.channels.add_chat_channel(
            owner=None, name=name, url="https://hooks.example.com/c", schedules_only=True
        )
        if name == "#sales":
            runtime.schedules.add_channel(olga, schedules[0], channel.id)
    # An outside address on the schedule: its Remove button.
    runtime.schedules.add_address(olga, schedules[0], "partner@example.com")
    token = sign_unsubscribe(runtime.link_secret, "alice", "alice@example.com")
    unsubscribe = f"/unsubscribe/{token}"
    with TestClient(runtime.app()) as client:
        yield {"client": client, "tokens": tokens, "stopped": stopped, "unsubscribe": unsubscribe}


class Sender:
    """Sends a form as a browser would: the page that shows it opened again (signed in, again
    if it signed out), its fields as shown, the empty ones filled, one field changed."""

    def __init__(self, client: TestClient, form: Form, token: str | None, fill: str) -> None:
        self.client = client
        self.form = form
        self.token = token
        self.fill = fill
        self.session: Signed | None = None
        self.sent = 0

    def send(self, changed: tuple[str, bytes] | None = None) -> Any:
        self.client.cookies.clear()
        headers = {"content-type": "application/x-www-form-urlencoded"}
        if self.token is not None and self.session is None:
            self.session = sign_in(self.client, self.token)
        shown = self.client.get(
            self.form.page, headers=self.session.headers if self.session else {}
        )
        self.client.cookies.clear()
        cookies = [f"{k}={v}" for k, v in shown.cookies.items()]
        if self.session is not None:
            cookies.append(self.session.headers["Cookie"])
        headers["cookie"] = "; ".join(cookies)
        again = _Forms(self.form.page)
        again.feed(shown.text)
        fresh = next((f for f in again.targets() if f.same_as(self.form)), self.form)
        self.sent += 1
        pairs = [(k, v.encode()) for k, v in fresh.sent(self.fill, f"fuzzed{self.sent}")]
        if changed is not None:
            pairs = [(k, v) for k, v in pairs if k != changed[0]] + [changed]
        answer = self.client.post(
            self.form.action, content=body(pairs), headers=headers, follow_redirects=False
        )
        if answer.headers.get("location", "").startswith("/sign-in"):
            self.session = None  # signed out: the next form is sent from a new session
        return answer


def crawl(client: TestClient, signed: Signed | None, start: list[str]) -> list[Form]:
    """Every form on the pages reachable from `start`: one of each target and set of fields."""
    headers = signed.headers if signed else {}
    seen: set[str] = set()
    queue = list(start)
    forms: dict[tuple[str, frozenset[str]], Form] = {}
    while queue and len(seen) < 400:
        path = queue.pop(0)
        where = urlsplit(path).path
        if (
            path in seen
            or where.startswith(("/api/", "/static/"))
            or where.endswith(("/download", "/schema", "/events"))
        ):
            continue
        seen.add(path)
        answer = client.get(path, headers=headers, follow_redirects=True)
        if "text/html" not in answer.headers.get("content-type", ""):
            continue
        parsed = _Forms(path)
        parsed.feed(answer.text)
        for found in parsed.targets():
            forms.setdefault((found.action, found.names), found)
        queue += parsed.links
    return list(forms.values())


def dashboard_routes(app: Any, method: str) -> list[Any]:
    return [
        route
        for route in api_routes(app, method)
        if not route.include_in_schema and not route.path.startswith("/api/")
    ]


def api_routes(app: Any, method: str) -> list[Any]:
    """The application's routes (those of its routers) that answer `method`."""
    return [
        route
        for route in routes_of(app)
        if isinstance(getattr(route, "original_route", route), APIRoute) and method in route.methods
    ]


def route_of(routes: list[Any], action: str) -> str | None:
    return next((r.path for r in routes if r.path_regex.match(urlsplit(action).path)), None)


@pytest.mark.slow
def test_every_field_of_every_form_survives_hostile_values(
    site: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    client = site["client"]
    posts = dashboard_routes(client.app, "POST")
    starts = [r.path for r in dashboard_routes(client.app, "GET") if "{" not in r.path]
    olga = sign_in(client, site["tokens"]["olga"])
    found = [(f, None) for f in crawl(client, None, ["/sign-in", site["unsubscribe"]])]
    found += [(f, olga) for f in crawl(client, olga, starts)]
    reached = {route_of(posts, form.action) for form, _ in found}
    assert {r.path for r in posts} - reached == set(), "no page shows a form for these"
    caplog.set_level(logging.ERROR)
    troubles: list[str] = []
    sent = 0
    for form, who in found:
        if form.action == "/sign-in" and who is not None:
            continue  # the sign-in form is a signed-out person's
        token = site["tokens"]["olga"] if who else None
        sender = Sender(client, form, token, site["tokens"]["alice"])
        target = f"{form.action} (from {form.page})"
        baseline = sender.send()
        assert baseline.status_code < 400, (target, baseline.text[-3000:])
        for name in sorted(form.names):
            for what, value in HOSTILE.items():
                answer = sender.send((name, value))
                problem = trouble(answer, form, name)
                if problem:
                    troubles.append(f"{target} {name}={what}: {answer.status_code} {problem}")
        sent += sender.sent
    assert troubles == [], "\n".join(troubles)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    assert sent > 1000


def trouble(answer: Any, form: Form, name: str) -> str:
    """What is wrong with a form's answer ("" when nothing is)."""
    kind = answer.headers.get("content-type", "")
    status = answer.status_code
    if echoed := surrogate_shown(answer.text):
        return f"shows {echoed}"
    if status >= 500 or (status != 303 and kind != HTML):
        return f"{kind} {answer.text[:300]}"
    if status == 303:
        return "" if answer.headers["location"].startswith("/") else "leaves the site"
    if status >= 400 and name in PROOFS:
        return "" if "expired" in answer.text else "is no expired-form page"
    if status >= 400 and not names_the_field(answer, form, name):
        return "does not name the field"
    return ""


def test_every_query_parameter_of_every_get_route_survives_hostile_values(
    site: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    client = site["client"]
    olga = sign_in(client, site["tokens"]["olga"])
    bearer = {"Authorization": f"Bearer {site['tokens']['olga']}"}
    caplog.set_level(logging.ERROR)
    troubles: list[str] = []
    covered = 0
    for route in api_routes(client.app, "GET"):
        api = route.path.startswith("/api/") or route.include_in_schema
        for parameter in route.dependant.query_params:
            covered += 1
            name = parameter.alias
            for what, value in HOSTILE.items():
                if len(value) > 10_000:
                    value = value[:8_000]  # a URL, not a body: a long one, not a megabyte
                path = route.path.format(job_id=site["stopped"], schedule_id=1, name="products")
                url = f"{path}?{quote_from_bytes(name.encode())}={quote_from_bytes(value)}"
                headers = {**(bearer if api else olga.headers), "Accept": "text/html"}
                answer = client.get(url, headers=headers, follow_redirects=False)
                case = f"GET {route.path} {name}={what}: {answer.status_code}"
                kind = answer.headers.get("content-type", "")
                if answer.status_code >= 500:
                    troubles.append(f"{case} {answer.text[:300]}")
                elif shown := surrogate_shown(answer.text):
                    troubles.append(f"{case} shows {shown}")
                elif answer.status_code >= 400 and api and kind != "application/problem+json":
                    troubles.append(f"{case} is no problem: {kind}")
                elif answer.status_code >= 400 and not api and kind != HTML:
                    is_json = kind.startswith("application/")  # the live pages' own feeds
                    if not (is_json and route.path.startswith(("/jobs/", "/schedules/"))):
                        troubles.append(f"{case} is no page: {kind}")
    assert covered >= 20, covered
    assert troubles == [], "\n".join(troubles)
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []


def post_form(site: dict[str, Any], path: str, *pairs: tuple[str, bytes]) -> Any:
    client = site["client"]
    olga = sign_in(client, site["tokens"]["olga"])
    headers = {**olga.headers, "content-type": "application/x-www-form-urlencoded"}
    sent = body([(CSRF_FIELD, olga.csrf.encode()), *pairs])
    return client.post(path, content=sent, headers=headers, follow_redirects=False)


def test_a_refused_undecodable_value_comes_back_beside_its_field_without_an_escape(
    site: dict[str, Any],
) -> None:
    """The report's case: a byte that is not UTF-8 in a schedule's cron is refused, and the
    form comes back (422) with the problem beside the field, saying so; the value is shown as
    a browser shows such a byte (U+FFFD), never as an escape."""
    answer = post_form(site, "/schedules/new", ("saved-query", b"orders_of_day"),
                       ("day", b"2024-01-05"), ("schedule-cron", b"\xff"),
                       ("schedule-time-zone", b"UTC"))  # fmt: skip
    assert (answer.status_code, answer.headers["content-type"]) == (422, HTML)
    assert 'name="schedule-cron" value="\ufffd"' in answer.text
    found = _Problems()
    found.feed(answer.text)
    assert "schedule-cron" in found.invalid
    assert "the cron expression is not valid UTF-8 (byte 0xff at position 0)" in " ".join(
        found.text
    )
    assert surrogate_shown(answer.text) == ""


@pytest.mark.parametrize(
    ("path", "name", "said"),
    [
        ("/exports/new", "saved-query", "The saved query's name (saved-query) is not valid UTF-8"),
        (
            "/schedules/new",
            "saved-query",
            "The saved query's name (saved-query) is not valid UTF-8",
        ),
        ("/schedules/new", "schedule-cron", "the cron expression is not valid UTF-8"),
        ("/schedules/new", "schedule-time-zone", "the time zone is not valid UTF-8"),
        ("/schedules/new", "schedule-relative-day", "the relative date is not valid UTF-8"),
    ],
)
def test_an_undecodable_byte_is_said_to_be_no_utf8_naming_its_field_never_echoed(
    site: dict[str, Any], path: str, name: str, said: str
) -> None:
    """Each field that quoted a value back quoted an undecodable byte as `'\\udcff'`: the
    refusal says the field is not valid UTF-8 (and where), and no page shows the escape."""
    sent = {"saved-query": b"orders_of_day", "day": b"2024-01-05", "schedule-cron": b"0 8 * * *",
            "schedule-time-zone": b"UTC"}  # fmt: skip
    answer = post_form(site, path, *{**sent, name: b"x\xff"}.items())
    assert answer.status_code in (404, 422)
    assert answer.headers["content-type"] == HTML
    assert f"{said} (byte 0xff at position 1)" in unescape(answer.text)
    assert surrogate_shown(answer.text) == ""


def test_a_refused_form_key_is_named_and_replaced(site: dict[str, Any]) -> None:
    answer = post_form(site, "/exports/new", ("saved-query", b"products"),
                       ("category", b"toys"), ("form-key", b"\xff"))  # fmt: skip
    assert (answer.status_code, answer.headers["content-type"]) == (422, HTML)
    assert "The form's one-time key (form-key) is not valid UTF-8" in unescape(answer.text)
    again = _Forms("/exports/new")
    again.feed(answer.text)
    (key,) = [c.value for c in again.forms["export-form"].controls if c.name == "form-key"]
    assert len(key) > 16
    assert key.isascii()


def test_a_form_key_sent_again_with_other_values_says_so(site: dict[str, Any]) -> None:
    """The browser's Back button after an export, a value changed: no silent duplicate and no
    API words, but the export it made and a new key."""
    first = post_form(site, "/exports/new", ("saved-query", b"products"),
                      ("category", b"toys"), ("form-key", b"k-1"))  # fmt: skip
    assert first.status_code == 303
    made = first.headers["location"].rsplit("/", 1)[1]
    again = post_form(site, "/exports/new", ("saved-query", b"products"),
                      ("category", b"books"), ("form-key", b"k-1"))  # fmt: skip
    assert again.status_code == 409
    assert f"This form made export #{made} already, with other values" in unescape(again.text)
    assert 'value="k-1"' not in again.text
